"""conv2d's GEMM paths against the reference interpreter: strides, padding (asymmetric),
dilations, groups, 1×1, bias, batch > 1, odd sizes; f32 / f16 / bf16 on the generated
implicit GEMM (default), f32 with `RLX_BLAS=1` and f64 on im2col + OpenBLAS; and the cases
that take the direct kernel (depthwise, tiny) still agree."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from conv_tolerances import CONV_TOL

import rlx
from rlx.interpreter import parse_module, run


def _ints(*v: int) -> str:
    return "array<i64: " + ", ".join(map(str, v)) + ">"


NP = {"f32": np.float32, "f64": np.float64, "f16": np.float16, "bf16": ml_dtypes.bfloat16}


def _case(x, w, bias, attrs, dtype="f32"):  # type: ignore[no-untyped-def]
    """MLIR of one conv2d, its output shape (from the verifier) and random inputs."""

    g = rlx.Graph()
    gx = g.input("x", x, dtype=NP[dtype])
    gw = g.input("w", w, dtype=gx.type.element_type)
    args = [gx, gw]
    if bias:
        args.append(g.input("b", (w[0],), dtype=gx.type.element_type))
    g.output(g.conv2d(*args, **attrs))
    rng = np.random.default_rng(sum(x) + sum(w))
    npdt = NP[dtype]
    vals = [rng.standard_normal(s).astype(npdt) for s in (x, w, (w[0],))[: len(args)]]
    return g.module, vals


CASES = [
    # (x shape, w shape, bias, attrs)
    ((2, 8, 16, 16), (16, 8, 3, 3), True, {}),
    ((1, 8, 17, 13), (16, 8, 3, 3), False, {"strides": [2, 2], "padding": [1, 1, 1, 1]}),
    ((3, 6, 15, 11), (12, 6, 3, 2), True, {"padding": [2, 0, 1, 3], "dilations": [2, 1]}),
    ((2, 8, 12, 12), (16, 4, 3, 3), True, {"groups": 2, "padding": [1, 1, 1, 1]}),
    ((2, 16, 9, 9), (32, 16, 1, 1), True, {}),  # 1x1: the planes are the GEMM operand
    ((1, 16, 10, 10), (24, 16, 1, 1), False, {"strides": [2, 2]}),  # 1x1 strided: im2col
    ((1, 5, 31, 29), (7, 5, 5, 5), True, {"strides": [3, 2], "padding": [2, 2, 2, 2]}),
    # filters not a multiple of the tile's rows: the last panel's own microkernel
    ((2, 8, 9, 11), (20, 8, 3, 3), True, {"padding": [1, 1, 1, 1]}),
    ((1, 12, 7, 13), (52, 12, 1, 1), False, {}),
]


TOL = CONV_TOL["conv"]


@pytest.mark.parametrize("dtype", ["f32", "f64"])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_conv_gemm_matches_reference(case: int, dtype: str) -> None:
    x, w, bias, attrs = CASES[case]
    module, vals = _case(x, w, bias, attrs, dtype)
    text = str(module)
    (want,) = run(parse_module(text), vals)
    compiled = rlx.compile(text)
    (got,) = compiled.run(*vals)
    tol = TOL[dtype]
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * np.abs(want).max())


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
@pytest.mark.parametrize("case", [1, 3, 4])
def test_generated_conv_gemm_low_precision(case: int, dtype: str) -> None:
    """f16/bf16 operands are widened by the loader and accumulated in f32."""
    x, w, bias, attrs = CASES[case]
    module, vals = _case(x, w, bias, attrs, dtype)
    text = str(module)
    (want,) = run(parse_module(text), vals)
    compiled = rlx.compile(text)
    assert "conv gemm" in compiled.ir("linalg")
    (got,) = compiled.run(*vals)
    g64, w64 = got.astype(np.float64), want.astype(np.float64)
    tol = TOL[dtype]
    np.testing.assert_allclose(g64, w64, rtol=tol, atol=tol * np.abs(w64).max())


def test_generated_path_is_the_default_for_f32() -> None:
    module, _ = _case((2, 8, 16, 16), (16, 8, 3, 3), True, {"padding": [1, 1, 1, 1]})
    ir = rlx.compile(str(module)).ir("linalg")
    assert "conv gemm" in ir and "rlx_blas_sgemm" not in ir


def test_blas_path_is_taken_for_f32_with_rlx_blas(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RLX_BLAS", "1")
    module, vals = _case((2, 8, 16, 16), (16, 8, 3, 3), True, {"padding": [1, 1, 1, 1]})
    text = str(module)
    compiled = rlx.compile(text)
    assert "rlx_blas_sgemm" in compiled.ir("linalg")
    (want,) = run(parse_module(text), vals)
    np.testing.assert_allclose(compiled.run(*vals)[0], want, rtol=2e-5, atol=1e-4)


@pytest.mark.parametrize(
    "x,w,attrs,dtype",
    [
        ((2, 8, 12, 12), (8, 1, 3, 3), {"groups": 8, "padding": [1, 1, 1, 1]}, "f32"),
        ((1, 8, 10, 10), (16, 8, 3, 3), {}, "f16"),
    ],
)
def test_loop_nest_cases_still_agree(x, w, attrs, dtype) -> None:  # type: ignore[no-untyped-def]
    module, vals = _case(x, w, False, attrs, dtype)
    text = str(module)
    (want,) = run(parse_module(text), vals)
    compiled = rlx.compile(text)
    assert "rlx_blas" not in compiled.ir("linalg")
    (got,) = compiled.run(*vals)
    tol = 1e-5 if dtype == "f32" else 2e-3
    np.testing.assert_allclose(
        got.astype(np.float64), want.astype(np.float64), rtol=tol, atol=tol * 8
    )


FUSED = """
func.func @main(%x: tensor<2x8x12x12xf32>, %w: tensor<16x8x3x3xf32>, %b: tensor<16x1x1xf32>,
                %dw: tensor<8x1x3x3xf32>) -> (tensor<2x16x12x12xf32>, tensor<2x8x12x12xf32>) {
  %c = rlx.conv2d %x, %w {padding = array<i64: 1, 1, 1, 1>} : (tensor<2x8x12x12xf32>, tensor<16x8x3x3xf32>) -> tensor<2x16x12x12xf32>
  %a = rlx.add %c, %b : (tensor<2x16x12x12xf32>, tensor<16x1x1xf32>) -> tensor<2x16x12x12xf32>
  %r = rlx.ACT %a : (tensor<2x16x12x12xf32>) -> tensor<2x16x12x12xf32>
  %d = rlx.conv2d %x, %dw {padding = array<i64: 1, 1, 1, 1>, groups = 8 : i64} : (tensor<2x8x12x12xf32>, tensor<8x1x3x3xf32>) -> tensor<2x8x12x12xf32>
  %s = rlx.ACT %d : (tensor<2x8x12x12xf32>) -> tensor<2x8x12x12xf32>
  func.return %r, %s : tensor<2x16x12x12xf32>, tensor<2x8x12x12xf32>
}
"""


@pytest.mark.parametrize("act", ["relu", "silu", "gelu", "hard_swish", "sigmoid"])
def test_fused_conv_bias_act_matches_reference(act: str) -> None:
    """Fused (GEMM epilogue and loop-nest epilogue) and unfused compiles against the
    reference of the unfused graph."""
    text = FUSED.replace("ACT", act)
    rng = np.random.default_rng(7)
    vals = [rng.standard_normal(s).astype(np.float32)
            for s in ((2, 8, 12, 12), (16, 8, 3, 3), (16, 1, 1), (8, 1, 3, 3))]  # fmt: skip
    want = run(parse_module(text), vals)
    fused = rlx.compile(text)
    assert f'activation = "{act}"' in fused.ir("rlx")
    unfused = rlx.compile(text, rlx.CompileOptions(fusion_opts={"conv_bias_act": False}))
    assert "activation" not in unfused.ir("rlx")
    for compiled in (fused, unfused):
        for got, ref in zip(compiled.run(*vals), want, strict=True):
            np.testing.assert_allclose(got, ref, rtol=2e-5, atol=2e-5 * np.abs(ref).max())


def test_dispatch_report_names_each_conv_path(monkeypatch: pytest.MonkeyPatch) -> None:
    g = rlx.Graph()
    x = g.input("x", (1, 16, 20, 20))
    w, dw = g.param("w", (32, 16, 3, 3)), g.param("dw", (16, 1, 3, 3))
    g.output(g.conv2d(x, w, padding=[1, 1, 1, 1]), g.conv2d(x, dw, groups=16))
    text = str(g.module)
    report = rlx.compile(text).dispatch_report()
    assert "conv2d ×1: generated implicit GEMM" in report and "conv2d ×1: direct" in report
    monkeypatch.setenv("RLX_BLAS", "1")
    assert "conv2d ×1: openblas (im2col)" in rlx.compile(text).dispatch_report()
