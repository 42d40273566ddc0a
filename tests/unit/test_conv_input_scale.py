"""The `conv_input_scale` fusion end to end: a squeeze-excite block at batch 1 (global
mean -> 1×1 convs -> sigmoid gate -> x * gate -> projection conv with residual and
activation) compiles with the gate on the projection weights, and matches the
reference interpreter of the unfused graph in f32 / f16 / bf16; a 3×3 padded projection
too (padding stays zero)."""

from __future__ import annotations

import numpy as np
import pytest
from conv_tolerances import CONV_TOL

import rlx
from rlx.dtypes import numpy_dtype
from rlx.interpreter import parse_module, run

GRAPH = """
func.func @main(%x: tensor<1x24x13x11xT>, %w1: tensor<6x24x1x1xT>, %w2: tensor<24x6x1x1xT>,
                %wp: tensor<8x24xKxKxT>, %b: tensor<8xT>, %r: tensor<1x8x13x11xT>)
    -> tensor<1x8x13x11xT> {
  %m = rlx.reduce %x {kind = "mean", axes = array<i64: 2, 3>, keepdims = true} : (tensor<1x24x13x11xT>) -> tensor<1x24x1x1xT>
  %s = rlx.conv2d %m, %w1 {activation = "silu"} : (tensor<1x24x1x1xT>, tensor<6x24x1x1xT>) -> tensor<1x6x1x1xT>
  %g = rlx.conv2d %s, %w2 {activation = "sigmoid"} : (tensor<1x6x1x1xT>, tensor<24x6x1x1xT>) -> tensor<1x24x1x1xT>
  %y = rlx.mul %x, %g : (tensor<1x24x13x11xT>, tensor<1x24x1x1xT>) -> tensor<1x24x13x11xT>
  %p = rlx.conv2d %y, %wp, %b {padding = array<i64: P, P, P, P>} : (tensor<1x24x13x11xT>, tensor<8x24xKxKxT>, tensor<8xT>) -> tensor<1x8x13x11xT>
  %a = rlx.add %r, %p : (tensor<1x8x13x11xT>, tensor<1x8x13x11xT>) -> tensor<1x8x13x11xT>
  %o = rlx.hard_swish %a : (tensor<1x8x13x11xT>) -> tensor<1x8x13x11xT>
  func.return %o : tensor<1x8x13x11xT>
}
"""
TOL = CONV_TOL["rounded twice"]


@pytest.mark.parametrize(("dtype", "k"), [("f32", 1), ("f16", 1), ("bf16", 1), ("f32", 3)])
def test_gate_on_weights_matches_reference(dtype: str, k: int) -> None:
    text = GRAPH.replace("xKxKx", f"x{k}x{k}x").replace("P", str(k // 2))
    text = text.replace("xT>", f"x{dtype}>")
    rng = np.random.default_rng(k)
    shapes = [(1, 24, 13, 11), (6, 24, 1, 1), (24, 6, 1, 1), (8, 24, k, k), (8,),
              (1, 8, 13, 11)]  # fmt: skip
    vals = [(rng.standard_normal(s) * 0.5).astype(numpy_dtype(dtype)) for s in shapes]
    want = run(parse_module(text), vals)
    compiled = rlx.compile(text)
    ir = compiled.ir("rlx")
    assert "rlx.mul %wp" in ir and "rlx.mul %x" not in ir
    off = rlx.compile(text, rlx.CompileOptions(fusion_opts={"conv_input_scale": False}))
    tol = TOL[dtype]
    for c in (compiled, off):
        (got,) = c.run(*vals)
        g, r = got.astype(np.float64), want[0].astype(np.float64)
        np.testing.assert_allclose(g, r, rtol=tol, atol=tol * max(1.0, np.abs(r).max()))


BLOCKED = """
func.func @main(%x0: tensor<1x16x13x15xf32>, %w0: tensor<16x16x3x3xf32>, %w1: tensor<8x16x1x1xf32>,
                %w2: tensor<16x8x1x1xf32>, %wp: tensor<16x16xKxKxf32>, %b: tensor<16xf32>)
    -> tensor<1x16x13x15xf32> {
  %x = rlx.conv2d %x0, %w0 {padding = array<i64: 1, 1, 1, 1>, activation = "relu"} : (tensor<1x16x13x15xf32>, tensor<16x16x3x3xf32>) -> tensor<1x16x13x15xf32>
  %m = rlx.reduce %x {kind = "mean", axes = array<i64: 2, 3>, keepdims = true} : (tensor<1x16x13x15xf32>) -> tensor<1x16x1x1xf32>
  %s = rlx.conv2d %m, %w1 {activation = "silu"} : (tensor<1x16x1x1xf32>, tensor<8x16x1x1xf32>) -> tensor<1x8x1x1xf32>
  %g = rlx.conv2d %s, %w2 {activation = "sigmoid"} : (tensor<1x8x1x1xf32>, tensor<16x8x1x1xf32>) -> tensor<1x16x1x1xf32>
  %y = rlx.mul %x, %g : (tensor<1x16x13x15xf32>, tensor<1x16x1x1xf32>) -> tensor<1x16x13x15xf32>
  %p = rlx.conv2d %y, %wp, %b {padding = array<i64: P, P, P, P>} : (tensor<1x16x13x15xf32>, tensor<16x16xKxKxf32>, tensor<16xf32>) -> tensor<1x16x13x15xf32>
  %a = rlx.add %x, %p : (tensor<1x16x13x15xf32>, tensor<1x16x13x15xf32>) -> tensor<1x16x13x15xf32>
  func.return %a : tensor<1x16x13x15xf32>
}
"""


@pytest.mark.parametrize("k", [1, 3])
def test_gate_on_blocked_weights(k: int) -> None:
    """Blocked (`blocked-layout`): the gate scales the blocked weights (a 6-D mul by the
    gate reshaped `[1, C/B, 1, 1, B, 1]`), so only the weights are reordered (prepared
    when they are params), never their product on every run."""
    text = BLOCKED.replace("xKxKx", f"x{k}x{k}x").replace("P", str(k // 2))
    rng = np.random.default_rng(k)
    shapes = [(1, 16, 13, 15), (16, 16, 3, 3), (8, 16, 1, 1), (16, 8, 1, 1), (16, 16, k, k), (16,)]
    vals = [(rng.standard_normal(s) * 0.5).astype(np.float32) for s in shapes]
    (want,) = run(parse_module(text), vals)
    spec = "blocked-layout{block=8 min-convs=1}"
    compiled = rlx.compile(text, rlx.CompileOptions(extra_passes={"after:fusion": spec}))
    ir = compiled.ir("rlx")
    assert "fused_conv2d_residual" in ir and "x1x1x8x1xf32>) -> tensor<2x2x" in ir, ir
    (got,) = compiled.run(*vals)
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5 * max(1.0, np.abs(want).max()))
