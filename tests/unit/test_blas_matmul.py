"""The BLAS fast path of matmul / fused_matmul_bias_act (rlx.runtime.blas) against the
reference interpreter: batch broadcast, transposed operands, odd sizes, fused epilogue."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest
from test_rlx_to_linalg_harness import Compiled, rand, t

from rlx.interpreter import run
from rlx.runtime import blas


@pytest.fixture(autouse=True)
def _blas_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RLX_BLAS", "1")
    assert blas.register(), "scipy is installed but its BLAS was not found"


def _check(
    text: str, inputs: Sequence[np.ndarray], dtype: str = "f32", blas_used: bool = True
) -> None:
    c = Compiled(text)
    assert ("rlx_blas_" in c.jit.llvm_ir) == blas_used
    (ref,) = run(text, list(inputs))
    (got,) = c(inputs)
    tol = 1e-4 if dtype == "f32" else 1e-10
    scale = max(1.0, float(np.abs(ref).max()))
    np.testing.assert_allclose(got, ref, rtol=tol, atol=tol * scale)


def _mm(a: Sequence[int], b: Sequence[int], out: Sequence[int], e: str = "f32") -> str:
    return f"""
func.func @main(%a: {t(a, e)}, %b: {t(b, e)}) -> {t(out, e)} {{
  %y = rlx.matmul %a, %b : ({t(a, e)}, {t(b, e)}) -> {t(out, e)}
  func.return %y : {t(out, e)}
}}
"""


@pytest.mark.parametrize(
    ("a", "b", "out"),
    [
        ((64, 48), (48, 40), (64, 40)),
        ((7, 1023), (1023, 13), (7, 13)),
        ((13, 7), (7, 1023), (13, 1023)),
        ((1023, 13), (13, 7), (1023, 7)),
        ((3, 33, 40), (40, 50), (3, 33, 50)),  # one GEMM over all rows
        ((3, 33, 40), (3, 40, 50), (3, 33, 50)),  # per batch
        ((2, 1, 33, 40), (1, 3, 40, 50), (2, 3, 33, 50)),  # broadcast both ways
        ((33, 40), (4, 40, 50), (4, 33, 50)),  # a broadcast
    ],
)
def test_matmul_f32(a: tuple[int, ...], b: tuple[int, ...], out: tuple[int, ...]) -> None:
    _check(_mm(a, b, out), [rand(a, seed=1), rand(b, seed=2)])


def test_matmul_f64_uses_dgemm() -> None:
    text = _mm((31, 65), (65, 17), (31, 17), "f64")
    assert "rlx_blas_dgemm" in Compiled(text).jit.llvm_ir
    _check(text, [rand((31, 65), "f64", 1), rand((65, 17), "f64", 2)], "f64")


def test_transposed_operands() -> None:
    text = f"""
func.func @main(%a: {t((40, 33))}, %b: {t((50, 40))}) -> {t((33, 50))} {{
  %at = rlx.transpose %a {{permutation = array<i64: 1, 0>}} : ({t((40, 33))}) -> {t((33, 40))}
  %bt = rlx.transpose %b {{permutation = array<i64: 1, 0>}} : ({t((50, 40))}) -> {t((40, 50))}
  %y = rlx.matmul %at, %bt : ({t((33, 40))}, {t((40, 50))}) -> {t((33, 50))}
  func.return %y : {t((33, 50))}
}}
"""
    _check(text, [rand((40, 33), seed=3), rand((50, 40), seed=4)])


@pytest.mark.parametrize("act", ["none", "gelu", "relu", "silu"])
def test_fused_matmul_bias_act(act: str) -> None:
    x, w, b, o = (2, 13, 1023), (1023, 7), (7,), (2, 13, 7)
    text = f"""
func.func @main(%x: {t(x)}, %w: {t(w)}, %b: {t(b)}) -> {t(o)} {{
  %y = rlx.fused_matmul_bias_act %x, %w, %b {{activation = "{act}"}} : ({t(x)}, {t(w)}, {t(b)}) -> {t(o)}
  func.return %y : {t(o)}
}}
"""
    _check(text, [rand(x, seed=5), rand(w, seed=6), rand(b, seed=7)])


def test_small_and_integer_keep_the_loop_nest() -> None:
    _check(
        _mm((4, 5), (5, 6), (4, 6)), [rand((4, 5), seed=1), rand((5, 6), seed=2)], blas_used=False
    )
    text = _mm((40, 50), (50, 60), (40, 60), "i32")
    assert "rlx_blas_" not in Compiled(text).jit.llvm_ir


def test_rlx_blas_0_uses_the_loop_nest(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RLX_BLAS", "0")
    text = _mm((41, 50), (50, 60), (41, 60))
    _check(text, [rand((41, 50), seed=1), rand((50, 60), seed=2)], blas_used=False)


def test_fused_swiglu() -> None:
    x, w, o = (2, 13, 64), (64, 40), (2, 13, 40)
    text = f"""
func.func @main(%x: {t(x)}, %wg: {t(w)}, %wu: {t(w)}) -> {t(o)} {{
  %y = rlx.fused_swiglu %x, %wg, %wu : ({t(x)}, {t(w)}, {t(w)}) -> {t(o)}
  func.return %y : {t(o)}
}}
"""
    _check(text, [rand(x, seed=8), rand(w, seed=9), rand(w, seed=10)])


@pytest.mark.parametrize("e", ["f32", "f64"])
@pytest.mark.parametrize(
    ("a", "b", "out"),
    [
        ((310, 200), (200, 140), (310, 140)),  # split along C's rows
        ((140, 200), (200, 310), (140, 310)),  # split along C's columns
        ((2, 97, 300), (300, 151), (2, 97, 151)),  # one GEMM over both batches, odd sizes
    ],
)
def test_large_gemm_split_over_the_pool(
    e: str, a: tuple[int, ...], b: tuple[int, ...], out: tuple[int, ...]
) -> None:
    """GEMMs of at least THREADED_MACS multiply-adds run as blocks on RLX's pool (one
    OpenBLAS thread each): same result at 1, 2 and 3 pool threads."""
    from rlx.runtime import parallel

    assert np.prod(out) * a[-1] >= blas.THREADED_MACS
    before = parallel.get_num_threads()
    try:
        for threads in (1, 2, 3):
            parallel.set_num_threads(threads)
            _check(_mm(a, b, out, e), [rand(a, e, seed=3), rand(b, e, seed=4)], e)
    finally:
        parallel.set_num_threads(before)
