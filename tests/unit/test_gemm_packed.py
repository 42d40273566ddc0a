"""pack-weights + rlx.pack_rhs / rlx.packed_matmul against the reference interpreter:
the reference before and after the pass agree, the compiled graph (weights packed in
@prepare, generated GEMM) matches the reference at tile edges and in f16/bf16, and
`set_params` re-packs."""

from __future__ import annotations

import numpy as np
import pytest
from test_rlx_to_linalg_harness import TOL, Compiled, rand, t
from xdsl.dialects.builtin import ModuleOp

import rlx
from rlx.interpreter import parse_module, run
from rlx.lowering.pack_weights import pack_weights
from rlx.runtime.options import CompileOptions


@pytest.fixture(autouse=True)
def _generated(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RLX_BLAS", "0")
    monkeypatch.setenv("RLX_CACHE", "0")


def _graph(x: tuple[int, ...], k: int, n: int, e: str, act: str | None) -> str:
    w, o = (k, n), (*x[:-1], n)
    if act is None:
        body = f"%y = rlx.matmul %x, %w : ({t(x, e)}, {t(w, e)}) -> {t(o, e)}"
    else:
        body = (f'%y = rlx.fused_matmul_bias_act %x, %w, %b {{activation = "{act}"}}'
                f" : ({t(x, e)}, {t(w, e)}, {t((n,), e)}) -> {t(o, e)}")  # fmt: skip
    return f"""
func.func @main(%x: {t(x, e)} {{rlx.name = "x"}}) -> {t(o, e)} {{
  %w = rlx.param "w" : {t(w, e)}
  %b = rlx.param "b" : {t((n,), e)}
  {body}
  func.return %y : {t(o, e)}
}}
"""


def _run_split(m: ModuleOp, inputs: dict[str, np.ndarray], params: dict) -> list[np.ndarray]:
    prepared = run(m, (), params, entry="prepare")
    return run(m, dict(inputs) | {f"__rlx_prep_{i}": v for i, v in enumerate(prepared)}, params)


def _close(got: np.ndarray, ref: np.ndarray, e: str) -> None:
    rtol, atol = TOL[e]
    scale = max(1.0, float(np.abs(ref.astype(np.float32)).max()))
    np.testing.assert_allclose(got.astype(np.float32), ref.astype(np.float32),
                               rtol=rtol, atol=atol * scale * 4)  # fmt: skip


CASES = [((1, 256), 256, 130, "f32", None), ((37, 29), 29, 41, "f32", "relu"),
         ((2, 13, 300), 300, 70, "f32", "gelu"), ((3, 7, 64), 64, 80, "f16", "silu"),
         ((19, 64), 64, 32, "bf16", None)]  # fmt: skip


@pytest.mark.parametrize("x,k,n,e,act", CASES)
def test_reference_before_and_after(
    x: tuple[int, ...], k: int, n: int, e: str, act: str | None
) -> None:
    text = _graph(x, k, n, e, act)
    params = {"w": rand((k, n), e, seed=2), "b": rand((n,), e, seed=3)}
    inputs = {"x": rand(x, e, seed=1)}
    (before,) = run(text, inputs, params)
    m = parse_module(text)
    assert pack_weights(m, width=16) == 1
    assert "rlx.packed_matmul" in str(m) and "rlx.pack_rhs" in str(m)
    (after,) = _run_split(m, inputs, params)
    _close(after, before, e)


@pytest.mark.parametrize("x,k,n,e,act", CASES)
def test_compiled_matches_reference(
    x: tuple[int, ...], k: int, n: int, e: str, act: str | None
) -> None:
    text = _graph(x, k, n, e, act)
    params = {"w": rand((k, n), e, seed=4), "b": rand((n,), e, seed=5)}
    xv = rand(x, e, seed=6)
    g = rlx.compile(text, CompileOptions(cache_param_invariant=True))
    assert "rlx.packed_matmul" in str(g.ir("rlx"))
    g.set_params(params)
    (ref,) = run(text, {"x": xv}, params)
    _close(g.run(xv)[0], ref, e)
    # new weights: @prepare runs again and re-packs them
    params2 = {"w": rand((k, n), e, seed=7), "b": params["b"]}
    g.set_params(params2)
    (ref2,) = run(text, {"x": xv}, params2)
    _close(g.run(xv)[0], ref2, e)
    assert g.prepare_runs == 2


def test_rlx_blas_1_keeps_matmul(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RLX_BLAS", "1")
    m = parse_module(_graph((8, 64), 64, 64, "f32", None))
    assert pack_weights(m, width=16) == 0
    assert "rlx.packed_matmul" not in str(m)


def test_foreign_width_is_unpacked() -> None:
    """Panels of another width than the host tile's still lower correctly."""
    x, k, n = (5, 64), 64, 40
    text = f"""
func.func @main(%x: {t(x)}, %w: {t((k, n))}, %b: {t((n,))}) -> {t((5, n))} {{
  %p = rlx.pack_rhs %w {{width = 3 : i64}} : ({t((k, n))}) -> {t((14, k, 3))}
  %y = rlx.packed_matmul %x, %p, %b {{n = {n} : i64, activation = "relu"}}
      : ({t(x)}, {t((14, k, 3))}, {t((n,))}) -> {t((5, n))}
  func.return %y : {t((5, n))}
}}
"""
    ins = [rand(x, seed=8), rand((k, n), seed=9), rand((n,), seed=10)]
    (ref,) = run(text, ins)
    (got,) = Compiled(text)(ins)
    _close(got, ref, "f32")
    np.testing.assert_allclose(ref, np.maximum(ins[0] @ ins[1] + ins[2], 0), rtol=1e-5, atol=1e-5)


def test_reference_rejects_bad_packed_operand() -> None:
    text = f"""
func.func @main(%x: {t((5, 4))}, %p: {t((2, 4, 3))}) -> {t((5, 6))} {{
  %y = "rlx.packed_matmul"(%x, %p) {{n = 6 : i64, activation = "tanh"}}
      : ({t((5, 4))}, {t((2, 4, 3))}) -> {t((5, 6))}
  func.return %y : {t((5, 6))}
}}
"""
    with pytest.raises(Exception, match="activation"):
        run(text, [rand((5, 4), seed=1), rand((2, 4, 3), seed=2)])


def test_f64_weights_are_not_packed() -> None:
    """The panels are f32: an f64 matmul stays a matmul (keeping its f64 precision)."""
    text = _graph((16, 64), 64, 48, "f64", None)
    m = parse_module(text)
    assert pack_weights(m, width=16) == 0
    params = {"w": rand((64, 48), "f64", seed=2), "b": rand((48,), "f64", seed=3)}
    xv = rand((16, 64), "f64", seed=1)
    g = rlx.compile(text, CompileOptions(cache_param_invariant=True))
    assert "rlx.packed_matmul" not in str(g.ir("rlx"))
    g.set_params(params)
    (ref,) = run(text, {"x": xv}, params)
    np.testing.assert_allclose(g.run(xv)[0], ref, rtol=1e-12, atol=1e-12)
