"""1×1 convolutions on tiny planes (squeeze-excite: 1×1 maps) take the direct kernel's
per-pixel channel reduction (`conv_small.body_pointwise`) even when they are large
enough for the generated implicit GEMM, whose 32-pixel column panels would be 1/32 full
(EfficientNet-B0's 1152 -> 48 and 48 -> 1152 convs: 0.060 -> 0.006 / 0.014 ms). Checked
against the reference interpreter: bias, residual, activations, batch 2, f32 / f16 /
bf16 / f64."""

from __future__ import annotations

import numpy as np
import pytest
from conv_tolerances import CONV_TOL

import rlx
from rlx.dtypes import numpy_dtype
from rlx.interpreter import parse_module, run

GRAPH = """
func.func @main(%x: tensor<2x256x1x1xT>, %w: tensor<160x256x1x1xT>, %b: tensor<160xT>,
                %w2: tensor<256x160x1x1xT>, %r: tensor<2x256x1x1xT>)
    -> (tensor<2x256x1x1xT>, tensor<2x256x1x1xT>) {
  %s = rlx.conv2d %x, %w, %b {activation = "silu"} : (tensor<2x256x1x1xT>, tensor<160x256x1x1xT>, tensor<160xT>) -> tensor<2x160x1x1xT>
  %g = rlx.conv2d %s, %w2 {activation = "sigmoid"} : (tensor<2x160x1x1xT>, tensor<256x160x1x1xT>) -> tensor<2x256x1x1xT>
  %k = rlx.fused_conv2d_residual %s, %w2, %r {activation = "clip", clip = array<f64: -0.5, 0.75>} : (tensor<2x160x1x1xT>, tensor<256x160x1x1xT>, tensor<2x256x1x1xT>) -> tensor<2x256x1x1xT>
  func.return %g, %k : tensor<2x256x1x1xT>, tensor<2x256x1x1xT>
}
"""

SHAPES = [(2, 256, 1, 1), (160, 256, 1, 1), (160,), (256, 160, 1, 1), (2, 256, 1, 1)]
TOL = CONV_TOL["rounded twice"]


@pytest.mark.parametrize("dtype", ["f32", "f16", "bf16", "f64"])
def test_squeeze_excite_convs_take_the_pointwise_kernel(dtype: str) -> None:
    text = GRAPH.replace("xT>", f"x{dtype}>")
    rng = np.random.default_rng(7)
    vals = [(rng.standard_normal(s) * 0.5).astype(numpy_dtype(dtype)) for s in SHAPES]
    want = run(parse_module(text), vals)
    compiled = rlx.compile(text)
    report = compiled.dispatch_report()
    assert "conv2d ×2: direct" in report and "fused_conv2d_residual ×1: direct" in report
    assert compiled.ir("linalg").count("conv direct pointwise") >= 1
    tol = TOL[dtype]
    for got, ref in zip(compiled.run(*vals), want, strict=True):
        assert got.dtype == ref.dtype
        g, r = got.astype(np.float64), ref.astype(np.float64)
        np.testing.assert_allclose(g, r, rtol=tol, atol=tol * max(1.0, np.abs(r).max()))


def test_larger_planes_keep_the_generated_gemm() -> None:
    """A 1×1 conv on a 5×5 plane (25 > 16 pixels) still takes the implicit GEMM."""
    text = """
func.func @main(%x: tensor<1x256x5x5xf32>, %w: tensor<160x256x1x1xf32>) -> tensor<1x160x5x5xf32> {
  %a = rlx.conv2d %x, %w : (tensor<1x256x5x5xf32>, tensor<160x256x1x1xf32>) -> tensor<1x160x5x5xf32>
  func.return %a : tensor<1x160x5x5xf32>
}
"""
    assert "generated implicit GEMM" in rlx.compile(text).dispatch_report()
