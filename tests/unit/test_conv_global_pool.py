"""The `conv_global_pool` fusion end to end: mean over H, W of a convolution (bias,
residual, activation fused first) becomes the convolution with `reduce = "mean"`; the
compiled graph is checked against the reference interpreter of the unfused graph on the
generated implicit GEMM, the direct kernel (depthwise), im2col + OpenBLAS (`RLX_BLAS=1`,
and f64 always), in f32 / f16 / bf16, batch 2, odd sizes, keepdims or not."""

from __future__ import annotations

import numpy as np
import pytest
from conv_tolerances import CONV_TOL

import rlx
from rlx.dtypes import numpy_dtype
from rlx.interpreter import parse_module, run

GRAPH = """
func.func @main(%x: tensor<2x8x11x9xT>, %w: tensor<16x8x3x3xT>, %b: tensor<16x1x1xT>,
                %r: tensor<2x16x11x9xT>, %dw: tensor<8x1x3x3xT>)
    -> (tensor<2x16x1x1xT>, tensor<2x8xT>) {
  %c = rlx.conv2d %x, %w {padding = array<i64: 1, 1, 1, 1>} : (tensor<2x8x11x9xT>, tensor<16x8x3x3xT>) -> tensor<2x16x11x9xT>
  %a = rlx.add %c, %b : (tensor<2x16x11x9xT>, tensor<16x1x1xT>) -> tensor<2x16x11x9xT>
  %s = rlx.add %a, %r : (tensor<2x16x11x9xT>, tensor<2x16x11x9xT>) -> tensor<2x16x11x9xT>
  %y = rlx.relu %s : (tensor<2x16x11x9xT>) -> tensor<2x16x11x9xT>
  %m = rlx.reduce %y {kind = "mean", axes = array<i64: 2, 3>, keepdims = true} : (tensor<2x16x11x9xT>) -> tensor<2x16x1x1xT>
  %d = rlx.conv2d %x, %dw {strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, groups = 8 : i64} : (tensor<2x8x11x9xT>, tensor<8x1x3x3xT>) -> tensor<2x8x6x5xT>
  %g = rlx.sigmoid %d : (tensor<2x8x6x5xT>) -> tensor<2x8x6x5xT>
  %t = rlx.mul %d, %g : (tensor<2x8x6x5xT>, tensor<2x8x6x5xT>) -> tensor<2x8x6x5xT>
  %n = rlx.reduce %t {kind = "mean", axes = array<i64: -1, -2>, keepdims = false} : (tensor<2x8x6x5xT>) -> tensor<2x8xT>
  func.return %m, %n : tensor<2x16x1x1xT>, tensor<2x8xT>
}
"""

SHAPES = [(2, 8, 11, 9), (16, 8, 3, 3), (16, 1, 1), (2, 16, 11, 9), (8, 1, 3, 3)]
TOL = CONV_TOL["rounded twice"]


def _case(dtype: str) -> tuple[str, list[np.ndarray]]:
    rng = np.random.default_rng(11)
    npdt = numpy_dtype(dtype)
    vals = [(rng.standard_normal(s) * 0.5).astype(npdt) for s in SHAPES]
    return GRAPH.replace("xT>", f"x{dtype}>"), vals


def _check(compiled: rlx.CompiledGraph, vals: list[np.ndarray], want: list[np.ndarray],
           dtype: str) -> None:  # fmt: skip
    tol = TOL[dtype]
    for got, ref in zip(compiled.run(*vals), want, strict=True):
        assert got.shape == ref.shape and got.dtype == ref.dtype
        g, r = got.astype(np.float64), ref.astype(np.float64)
        np.testing.assert_allclose(g, r, rtol=tol, atol=tol * max(1.0, np.abs(r).max()))


@pytest.mark.parametrize("dtype", ["f32", "f16", "bf16", "f64"])
def test_pooled_conv_matches_reference(dtype: str) -> None:
    text, vals = _case(dtype)
    want = run(parse_module(text), vals)
    fused = rlx.compile(text)
    ir = fused.ir("rlx")
    assert ir.count('reduce = "mean"') == 2 and "rlx.reduce" not in ir
    assert "rlx.fused_conv2d_residual" in ir
    _check(fused, vals, want, dtype)
    # the fused op itself, through the reference interpreter, agrees too
    _check_reference_after_pass(ir, vals, want, dtype)
    unfused = rlx.compile(text, rlx.CompileOptions(fusion_opts={"conv_global_pool": False}))
    assert 'reduce = "mean"' not in unfused.ir("rlx")
    _check(unfused, vals, want, dtype)


def _check_reference_after_pass(ir: str, vals: list[np.ndarray], want: list[np.ndarray],
                                dtype: str) -> None:  # fmt: skip
    got = run(parse_module(ir), vals)
    tol = TOL[dtype]
    for g, r in zip(got, want, strict=True):
        assert g.shape == r.shape
        np.testing.assert_allclose(g.astype(np.float64), r.astype(np.float64), rtol=tol,
                                   atol=tol * max(1.0, float(np.abs(r.astype(np.float64)).max())))  # fmt: skip


def test_pooled_conv_on_blas_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RLX_BLAS", "1")
    text, vals = _case("f32")
    want = run(parse_module(text), vals)
    compiled = rlx.compile(text)
    assert "rlx_blas_sgemm" in compiled.ir("linalg")
    assert 'reduce = "mean"' in compiled.ir("rlx")
    _check(compiled, vals, want, "f32")


def test_dispatch_report_names_the_unreduced_path() -> None:
    """The report's kernel choice is the one of the unreduced convolution."""
    text, _ = _case("f32")
    report = rlx.compile(text).dispatch_report()
    assert "fused_conv2d_residual ×1: generated implicit GEMM" in report
    assert "conv2d ×1: direct" in report


BLOCKED = """
func.func @main(%x: tensor<2x8x11x9xf32>, %w: tensor<16x8x3x3xf32>, %w2: tensor<16x16x3x3xf32>,
                %w3: tensor<16x16x1x1xf32>) -> tensor<2x16x1x1xf32> {
  %c = rlx.conv2d %x, %w {padding = array<i64: 1, 1, 1, 1>, activation = "relu"} : (tensor<2x8x11x9xf32>, tensor<16x8x3x3xf32>) -> tensor<2x16x11x9xf32>
  %d = rlx.conv2d %c, %w2 {padding = array<i64: 1, 1, 1, 1>, activation = "relu"} : (tensor<2x16x11x9xf32>, tensor<16x16x3x3xf32>) -> tensor<2x16x11x9xf32>
  %e = rlx.conv2d %d, %w3 {activation = "silu"} : (tensor<2x16x11x9xf32>, tensor<16x16x1x1xf32>) -> tensor<2x16x11x9xf32>
  %m = rlx.reduce %e {kind = "mean", axes = array<i64: 2, 3>, keepdims = true} : (tensor<2x16x11x9xf32>) -> tensor<2x16x1x1xf32>
  func.return %m : tensor<2x16x1x1xf32>
}
"""


def test_pooled_conv_with_blocked_layout() -> None:
    """`blocked-layout` (after fusion) blocks the convs before a pooled conv, and the
    pooled one as a blocked conv and a blocked mean (the [N, F, 1, 1] result a reshape of
    it); the numbers hold."""
    rng = np.random.default_rng(2)
    vals = [(rng.standard_normal(s) * 0.3).astype(np.float32)
            for s in ((2, 8, 11, 9), (16, 8, 3, 3), (16, 16, 3, 3), (16, 16, 1, 1))]  # fmt: skip
    want = run(parse_module(BLOCKED), vals)
    compiled = rlx.compile(BLOCKED, rlx.CompileOptions(blocked_layout=True))
    ir = compiled.ir("rlx")
    assert ir.count('layout = "nchwc"') == 3 and 'reduce = "mean"' not in ir
    assert ir.count("rlx.reduce") == 1 and "rlx.from_nchwc" not in ir
    _check(compiled, vals, want, "f32")
