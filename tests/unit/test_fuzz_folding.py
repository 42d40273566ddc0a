"""Constant folding (and canonicalize) on constants it must not evaluate: the pass
finishes quickly, exit 0, and leaves the op as it is (the compiled code, which checks
indices and runs in bounded memory, decides at run time). docs/fuzzing.md, session 7.

Were: a 4 TiB splat operand materialized by `to_numpy` (MemoryError, an internal error
of `constant-folding` / `canonicalize`); a 2^30-long matmul, a 2^40-step scan and a conv
of two 1000x1000 planes hung the pass (the interpreter ran them).
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import pytest

import rlx
from rlx.tools.rlx_opt import main

BIG = 1 << 40
CASES = {
    "huge splat operand of a reduce": (f"""func.func @f() -> tensor<f32> {{
  %x = rlx.constant dense<1.0> : tensor<{BIG}xf32>
  %r = rlx.reduce %x {{kind = "sum", axes = array<i64: 0>}} : (tensor<{BIG}xf32>) -> tensor<f32>
  func.return %r : tensor<f32>
}}""", "rlx.reduce"),
    "matmul with K = 2^30": ("""func.func @f() -> tensor<1x1xf32> {
  %x = rlx.constant dense<1.0> : tensor<1x1073741824xf32>
  %y = rlx.constant dense<1.0> : tensor<1073741824x1xf32>
  %r = rlx.matmul %x, %y : (tensor<1x1073741824xf32>, tensor<1073741824x1xf32>) -> tensor<1x1xf32>
  func.return %r : tensor<1x1xf32>
}""", "rlx.matmul"),
    "scan of 2^40 steps": (f"""func.func @f() -> tensor<8xf32> {{
  %init = rlx.constant dense<1.0> : tensor<8xf32>
  %c = rlx.scan (%init) over () {{length = {BIG} : i64}} : (tensor<8xf32>), () -> (tensor<8xf32>) {{
  ^bb0(%carry: tensor<8xf32>):
    %n = rlx.add %carry, %carry : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
    rlx.yield %n : tensor<8xf32>
  }}
  func.return %c : tensor<8xf32>
}}""", "rlx.scan"),
    "conv of two 1000x1000 planes": ("""func.func @f() -> tensor<1x1x1000x1000xf32> {
  %x = rlx.constant dense<1.0> : tensor<1x1x1000x1000xf32>
  %w = rlx.constant dense<1.0> : tensor<1x1x999x999xf32>
  %r = rlx.conv2d %x, %w {strides = array<i64: 1, 1>, padding = array<i64: 499, 499, 499, 499>} : (tensor<1x1x1000x1000xf32>, tensor<1x1x999x999xf32>) -> tensor<1x1x1000x1000xf32>
  func.return %r : tensor<1x1x1000x1000xf32>
}""", "rlx.conv2d"),
    "gather out of range": ("""func.func @f() -> tensor<2x3xf32> {
  %x = rlx.constant dense<1.0> : tensor<2x8xf32>
  %i = rlx.constant dense<[1, 9, -20]> : tensor<3xi64>
  %r = rlx.gather %x, %i {axis = 1 : i64} : (tensor<2x8xf32>, tensor<3xi64>) -> tensor<2x3xf32>
  func.return %r : tensor<2x3xf32>
}""", "rlx.gather"),
}  # fmt: skip
IDENTITY_ON_HUGE_SPLATS = f"""func.func @f(%x: tensor<{BIG}xf32>) -> tensor<{BIG}xf32> {{
  %z = rlx.constant dense<0.0> : tensor<{BIG}xf32>
  %r = rlx.add %x, %z : (tensor<{BIG}xf32>, tensor<{BIG}xf32>) -> tensor<{BIG}xf32>
  %o = rlx.constant dense<1.0> : tensor<{BIG}xf32>
  %q = rlx.mul %r, %o : (tensor<{BIG}xf32>, tensor<{BIG}xf32>) -> tensor<{BIG}xf32>
  func.return %q : tensor<{BIG}xf32>
}}"""


@contextmanager
def within(seconds: float) -> Iterator[None]:
    def fail(signum: int, frame: object) -> None:
        raise TimeoutError(f"over {seconds} s")

    old = signal.signal(signal.SIGALRM, fail)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def opt(tmp_path, capsys, text: str, passes: str) -> tuple[int, str, str]:  # type: ignore[no-untyped-def]
    path = tmp_path / "in.mlir"
    path.write_text(text)
    with within(30):
        code = main([str(path), "-p", passes])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("passes", ["constant-folding", "canonicalize"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_folding_leaves_what_it_cannot_evaluate(tmp_path, capsys, case: str, passes: str) -> None:
    text, op = CASES[case]
    code, out, err = opt(tmp_path, capsys, text, passes)
    assert code == 0 and "error" not in err, err
    assert op in out


@pytest.mark.parametrize("passes", ["constant-folding", "canonicalize"])
def test_identities_of_huge_splats_fold_without_materializing(tmp_path, capsys, passes) -> None:  # type: ignore[no-untyped-def]
    code, out, err = opt(tmp_path, capsys, IDENTITY_ON_HUGE_SPLATS, passes)
    assert code == 0, err
    assert "rlx.add" not in out and "rlx.mul" not in out and "return %x" in out, out


def test_small_contractions_still_fold(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    """A 64^3 matmul and a small conv are within the work bound and fold (vs NumPy)."""
    rng = np.random.default_rng(0)
    a = rng.integers(-3, 4, (64, 64)).astype(np.float32)
    g = rlx.Graph()
    ca, cb = g.constant(a), g.constant(a.T.copy())
    g.output(g.op("matmul", ca, cb))
    text = str(g.finish())
    code, out, err = opt(tmp_path, capsys, text, "constant-folding")
    assert code == 0 and "rlx.matmul" not in out, err
    np.testing.assert_array_equal(rlx.compile(out).run()[0], a @ a.T)
