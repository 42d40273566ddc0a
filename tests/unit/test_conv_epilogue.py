"""Fused convolution epilogues end to end against the reference interpreter of the
unfused graph: conv + bias [+ residual] [+ relu / relu6 (Clip) / hard_swish / gelu], on
the generated implicit GEMM (regular convs), the direct kernel (depthwise) and
im2col + OpenBLAS (`RLX_BLAS=1`), f32 and f16, fused and with `conv_bias_act` off."""

from __future__ import annotations

import numpy as np
import pytest

import rlx
from rlx.interpreter import parse_module, run

GRAPH = """
func.func @main(%x: tensor<2x8x11x9xT>, %w: tensor<16x8x3x3xT>, %dw: tensor<8x1x3x3xT>,
                %b: tensor<16x1x1xT>, %b8: tensor<1x8x1x1xT>, %r: tensor<2x16x11x9xT>,
                %r8: tensor<2x8x11x9xT>) -> (tensor<2x16x11x9xT>, tensor<2x8x11x9xT>) {
  %c = rlx.conv2d %x, %w {padding = array<i64: 1, 1, 1, 1>} : (tensor<2x8x11x9xT>, tensor<16x8x3x3xT>) -> tensor<2x16x11x9xT>
  %a = rlx.add %c, %b : (tensor<2x16x11x9xT>, tensor<16x1x1xT>) -> tensor<2x16x11x9xT>
  %s = RES1
  %y = ACT1
  %d = rlx.conv2d %x, %dw {padding = array<i64: 1, 1, 1, 1>, groups = 8 : i64} : (tensor<2x8x11x9xT>, tensor<8x1x3x3xT>) -> tensor<2x8x11x9xT>
  %e = rlx.add %b8, %d : (tensor<1x8x1x1xT>, tensor<2x8x11x9xT>) -> tensor<2x8x11x9xT>
  %t = RES2
  %z = ACT2
  func.return %y, %z : tensor<2x16x11x9xT>, tensor<2x8x11x9xT>
}
"""

T16, T8 = "tensor<2x16x11x9xT>", "tensor<2x8x11x9xT>"


def _graph(residual: bool, act: str, dtype: str) -> str:
    text = GRAPH
    for res, src, rv, t in (("RES1", "a", "r", T16), ("RES2", "e", "r8", T8)):
        if residual:
            body = f"rlx.add %{src}, %{rv} : ({t}, {t}) -> {t}"
        else:  # no residual: a no-op reshape keeps the value names
            body = f"rlx.reshape %{src} : ({t}) -> {t}"
        text = text.replace(res, body)
    for name, v, out, t in (("ACT1", "s", "y", T16), ("ACT2", "t", "z", T8)):
        if act == "relu6":
            body = (f"rlx.max %{v}, %zero : ({t}, tensor<T>) -> {t}\n"
                    f"  %{out} = rlx.min %{out}0, %hi : ({t}, tensor<T>) -> {t}")  # fmt: skip
            text = text.replace(f"%{out} = {name}", f"%{out}0 = {body}")
        else:
            text = text.replace(name, f"rlx.{act} %{v} : ({t}) -> {t}")
    consts = (
        "  %zero = rlx.constant dense<0.0> : tensor<T>\n  %hi = rlx.constant dense<0.5> : "
        "tensor<T>\n"
    )
    text = text.replace("  %c = rlx.conv2d", consts + "  %c = rlx.conv2d", 1)
    return text.replace("xT>", f"x{dtype}>").replace("<T>", f"<{dtype}>")


def _values(dtype: str) -> list[np.ndarray]:
    npdt = np.float32 if dtype == "f32" else np.float16
    rng = np.random.default_rng(3)
    shapes = [(2, 8, 11, 9), (16, 8, 3, 3), (8, 1, 3, 3), (16, 1, 1), (1, 8, 1, 1),
              (2, 16, 11, 9), (2, 8, 11, 9)]  # fmt: skip
    return [(rng.standard_normal(s) * 0.5).astype(npdt) for s in shapes]


@pytest.mark.parametrize(
    ("residual", "act", "dtype"),
    [
        (True, "relu", "f32"),
        (True, "relu6", "f32"),
        (False, "relu6", "f32"),
        (True, "hard_swish", "f32"),
        (True, "gelu", "f32"),
        (True, "relu6", "f16"),
    ],
)
def test_fused_epilogue_matches_reference(residual: bool, act: str, dtype: str) -> None:
    text = _graph(residual, act, dtype)
    vals = _values(dtype)
    want = run(parse_module(text), vals)
    fused = rlx.compile(text)
    ir = fused.ir("rlx")
    assert ("rlx.fused_conv2d_residual" in ir) == residual
    assert ('activation = "clip"' in ir) == (act == "relu6")
    unfused = rlx.compile(text, rlx.CompileOptions(fusion_opts={"conv_bias_act": False}))
    assert "fused_conv2d_residual" not in unfused.ir("rlx")
    tol = 2e-5 if dtype == "f32" else 4e-3
    for compiled in (fused, unfused):
        for got, ref in zip(compiled.run(*vals), want, strict=True):
            g, r = got.astype(np.float64), ref.astype(np.float64)
            np.testing.assert_allclose(g, r, rtol=tol, atol=tol * max(1.0, np.abs(r).max()))


def test_fused_residual_on_blas_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RLX_BLAS", "1")
    text = _graph(True, "relu6", "f32")
    vals = _values("f32")
    want = run(parse_module(text), vals)
    compiled = rlx.compile(text)
    assert "rlx_blas_sgemm" in compiled.ir("linalg")
    for got, ref in zip(compiled.run(*vals), want, strict=True):
        np.testing.assert_allclose(got, ref, rtol=2e-5, atol=2e-5 * np.abs(ref).max())


SWISH = """
func.func @main(%x: tensor<2x8x11x9xf32>, %w: tensor<16x8x3x3xf32>, %b: tensor<16xf32>,
                %dw: tensor<8x1x3x3xf32>) -> (tensor<2x16x11x9xf32>, tensor<2x8x11x9xf32>) {
  %c = rlx.conv2d %x, %w, %b {padding = array<i64: 1, 1, 1, 1>} : (tensor<2x8x11x9xf32>, tensor<16x8x3x3xf32>, tensor<16xf32>) -> tensor<2x16x11x9xf32>
  %s = rlx.sigmoid %c : (tensor<2x16x11x9xf32>) -> tensor<2x16x11x9xf32>
  %y = rlx.mul %c, %s : (tensor<2x16x11x9xf32>, tensor<2x16x11x9xf32>) -> tensor<2x16x11x9xf32>
  %d = rlx.conv2d %x, %dw {padding = array<i64: 1, 1, 1, 1>, groups = 8 : i64} : (tensor<2x8x11x9xf32>, tensor<8x1x3x3xf32>) -> tensor<2x8x11x9xf32>
  %t = rlx.sigmoid %d : (tensor<2x8x11x9xf32>) -> tensor<2x8x11x9xf32>
  %z = rlx.mul %t, %d : (tensor<2x8x11x9xf32>, tensor<2x8x11x9xf32>) -> tensor<2x8x11x9xf32>
  func.return %y, %z : tensor<2x16x11x9xf32>, tensor<2x8x11x9xf32>
}
"""


def test_onnx_style_swish_fuses_as_silu() -> None:
    """x * sigmoid(x) after a conv (how ONNX exports SiLU) becomes activation silu."""
    rng = np.random.default_rng(5)
    vals = [rng.standard_normal(s).astype(np.float32)
            for s in ((2, 8, 11, 9), (16, 8, 3, 3), (16,), (8, 1, 3, 3))]  # fmt: skip
    want = run(parse_module(SWISH), vals)
    compiled = rlx.compile(SWISH)
    assert compiled.ir("rlx").count('activation = "silu"') == 2
    for got, ref in zip(compiled.run(*vals), want, strict=True):
        np.testing.assert_allclose(got, ref, rtol=2e-5, atol=2e-5 * np.abs(ref).max())
