"""Compiled NCHWc ops (rlx.to_nchwc / rlx.from_nchwc copies, and the fallback lowering of
layout = "nchwc" conv2d / fused_conv2d_residual / pool2d) against the reference
interpreter: strides, asymmetric padding, dilation, groups 1 and depthwise, odd sizes,
batch 2, f32 / f16 / bf16, blocks 4 / 8 / 16."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from reference_helpers import assert_close

import rlx
from rlx.interpreter import parse_module, run

DTYPES = {"f32": np.float32, "f16": np.float16, "bf16": ml_dtypes.bfloat16}
TOL = {"f32": 2e-5, "f16": 2e-3, "bf16": 1.6e-2}


def _t(shape: tuple[int, ...], dt: str) -> str:
    return "tensor<" + "x".join(map(str, shape)) + f"x{dt}>"


def _arr(v: list[int] | tuple[int, ...]) -> str:
    return "array<i64: " + ", ".join(map(str, v)) + ">"


def _check(text: str, shapes: list[tuple[int, ...]], dt: str) -> None:
    rng = np.random.default_rng(len(text))
    vals = [rng.standard_normal(s).astype(DTYPES[dt]) for s in shapes]
    want = run(parse_module(text), vals)
    got = rlx.compile(text).run(*vals)
    for g, w in zip(got, want, strict=True):
        assert g.shape == w.shape and g.dtype == w.dtype
        assert_close(g, w, TOL[dt])


@pytest.mark.parametrize("dt", ["f32", "bf16"])
@pytest.mark.parametrize("block", [4, 16])
def test_conversions(dt: str, block: int) -> None:
    x = (2, 16, 3, 5)
    xb = (2, 16 // block, 3, 5, block)
    text = f"""func.func @main(%x: {_t(x, dt)}, %y: {_t(xb, dt)}) -> ({_t(xb, dt)}, {_t(x, dt)}) {{
  %a = rlx.to_nchwc %x {{block = {block} : i64}} : ({_t(x, dt)}) -> {_t(xb, dt)}
  %b = rlx.from_nchwc %y : ({_t(xb, dt)}) -> {_t(x, dt)}
  func.return %a, %b : {_t(xb, dt)}, {_t(x, dt)}
}}"""
    _check(text, [x, xb], dt)


def _conv_text(
    x: tuple[int, ...], f: int, k: tuple[int, int], attrs: dict, dt: str, block: int,
    bias: bool, residual: bool,
) -> tuple[str, list[tuple[int, ...]]]:  # fmt: skip
    """NCHW in/out: to_nchwc, the blocked conv (weight given blocked), from_nchwc."""
    n, c, h, w = x
    groups = attrs.get("groups", 1)
    dw = groups > 1
    w6 = (f // block, 1 if dw else c // block, *k, 1 if dw else block, block)
    sh, sw = attrs.get("strides", (1, 1))
    pt, pl, pb, pr = attrs.get("padding", (0, 0, 0, 0))
    dh, dwl = attrs.get("dilations", (1, 1))
    oh = (h + pt + pb - dh * (k[0] - 1) - 1) // sh + 1
    ow = (w + pl + pr - dwl * (k[1] - 1) - 1) // sw + 1
    xb, yb, y = (n, c // block, h, w, block), (n, f // block, oh, ow, block), (n, f, oh, ow)
    a = [f"{key} = {_arr(v)}" for key, v in attrs.items() if key != "groups"]
    a += [f"groups = {groups} : i64"] if dw else []
    a += ['activation = "relu"', 'layout = "nchwc"']
    args = [f"%x: {_t(x, dt)}", f"%w: {_t(w6, dt)}"]
    shapes = [x, w6]
    ops, types = ["%xb", "%w"], [_t(xb, dt), _t(w6, dt)]
    pre = ""
    if residual:
        args.append(f"%r: {_t(y, dt)}")
        shapes.append(y)
        pre = f"  %rb = rlx.to_nchwc %r {{block = {block} : i64}} : ({_t(y, dt)}) -> {_t(yb, dt)}\n"
        ops.append("%rb")
        types.append(_t(yb, dt))
    if bias:
        args.append(f"%b: {_t((f,), dt)}")
        shapes.append((f,))
        ops.append("%b")
        types.append(_t((f,), dt))
    name = "rlx.fused_conv2d_residual" if residual else "rlx.conv2d"
    text = f"""func.func @main({", ".join(args)}) -> {_t(y, dt)} {{
  %xb = rlx.to_nchwc %x {{block = {block} : i64}} : ({_t(x, dt)}) -> {_t(xb, dt)}
{pre}  %c = {name} {", ".join(ops)} {{{", ".join(a)}}} : ({", ".join(types)}) -> {_t(yb, dt)}
  %y = rlx.from_nchwc %c : ({_t(yb, dt)}) -> {_t(y, dt)}
  func.return %y : {_t(y, dt)}
}}"""
    return text, shapes


CONVS = [
    # (x, filters, kernel, attrs, block)
    ((2, 16, 9, 7), 16, (3, 3), {"padding": (1, 1, 1, 1)}, 8),
    ((1, 8, 11, 13), 16, (3, 2), {"strides": (2, 1), "padding": (0, 2, 1, 0)}, 8),
    ((1, 16, 9, 9), 8, (3, 3), {"dilations": (2, 2), "padding": (2, 2, 2, 2)}, 8),
    ((2, 8, 5, 7), 8, (1, 1), {}, 4),
    ((2, 16, 7, 9), 16, (3, 3), {"groups": 16, "padding": (1, 1, 1, 1)}, 8),
    ((1, 32, 9, 11), 32, (5, 3), {"groups": 32, "strides": (2, 2), "padding": (2, 1, 1, 1)}, 16),
    ((1, 8, 8, 8), 8, (3, 3), {"groups": 8, "dilations": (2, 1), "padding": (2, 1, 2, 1)}, 4),
]


@pytest.mark.parametrize("case", range(len(CONVS)))
def test_nchwc_conv2d_f32(case: int) -> None:
    x, f, k, attrs, block = CONVS[case]
    _check(*_conv_text(x, f, k, attrs, "f32", block, bias=case % 2 == 0, residual=False), "f32")


@pytest.mark.parametrize("dt", ["f16", "bf16"])
@pytest.mark.parametrize("case", [0, 4])
def test_nchwc_conv2d_low_precision(case: int, dt: str) -> None:
    x, f, k, attrs, block = CONVS[case]
    _check(*_conv_text(x, f, k, attrs, dt, block, bias=True, residual=False), dt)


@pytest.mark.parametrize("dt", ["f32", "f16"])
def test_nchwc_fused_conv2d_residual(dt: str) -> None:
    x, f, k, attrs, block = CONVS[1]
    _check(*_conv_text(x, f, k, attrs, dt, block, bias=True, residual=True), dt)


@pytest.mark.parametrize(
    ("dt", "kind", "kernel", "strides", "pads"),
    [
        ("f32", "max", (3, 3), (2, 2), (1, 1, 1, 1)),
        ("f32", "avg", (2, 3), (1, 2), (0, 1, 1, 0)),
        ("bf16", "avg", (3, 3), (1, 1), (1, 1, 1, 1)),
        ("f16", "max", (2, 2), (2, 2), (0, 0, 0, 0)),
    ],
)
def test_nchwc_pool2d(dt: str, kind: str, kernel, strides, pads) -> None:  # type: ignore[no-untyped-def]
    n, c, h, w, b = 2, 16, 9, 7, 8
    oh = (h + pads[0] + pads[2] - kernel[0]) // strides[0] + 1
    ow = (w + pads[1] + pads[3] - kernel[1]) // strides[1] + 1
    x, xb, yb, y = (n, c, h, w), (n, c // b, h, w, b), (n, c // b, oh, ow, b), (n, c, oh, ow)
    attrs = (
        f'kind = "{kind}", kernel = {_arr(kernel)}, strides = {_arr(strides)}, '
        f'padding = {_arr(pads)}, layout = "nchwc"'
    )
    text = f"""func.func @main(%x: {_t(x, dt)}) -> {_t(y, dt)} {{
  %xb = rlx.to_nchwc %x {{block = {b} : i64}} : ({_t(x, dt)}) -> {_t(xb, dt)}
  %p = rlx.pool2d %xb {{{attrs}}} : ({_t(xb, dt)}) -> {_t(yb, dt)}
  %y = rlx.from_nchwc %p : ({_t(yb, dt)}) -> {_t(y, dt)}
  func.return %y : {_t(y, dt)}
}}"""
    _check(text, [x], dt)


def test_large_nchwc_pool_is_chunked_and_correct() -> None:
    """A pool big enough to be split into row chunks over [N, C/B] (rlx_rt.parallel_call)."""
    n, c, h, w, b = 1, 64, 32, 32, 8
    x, xb, yb, y = (n, c, h, w), (n, c // b, h, w, b), (n, c // b, 16, 16, b), (n, c, 16, 16)
    text = f"""func.func @main(%x: {_t(x, "f32")}) -> {_t(y, "f32")} {{
  %xb = rlx.to_nchwc %x {{block = {b} : i64}} : ({_t(x, "f32")}) -> {_t(xb, "f32")}
  %p = rlx.pool2d %xb {{kind = "max", kernel = {_arr((2, 2))}, layout = "nchwc"}} : ({_t(xb, "f32")}) -> {_t(yb, "f32")}
  %y = rlx.from_nchwc %p : ({_t(yb, "f32")}) -> {_t(y, "f32")}
  func.return %y : {_t(y, "f32")}
}}"""
    _check(text, [x], "f32")
