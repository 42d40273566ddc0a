"""Quantization: QuantizeLinear / DequantizeLinear (opsets 10-25: per tensor, per axis,
blocked; constant or run-time scales and zero points), DynamicQuantizeLinear (its
ONNX function body, through the run-time QuantizeLinear), MatMulInteger, ConvInteger,
QLinearMatMul and QLinearConv (opsets 10-25).

int8 with constant per-tensor / per-axis parameters maps onto `rlx.quantize` /
`rlx.dequantize`; every other case is float arithmetic (`div`, `round` half to even,
`add`, clamp to the target range, `cast`). Integer matmuls and convolutions run in
int32 after subtracting the zero points (`rlx.matmul` / `rlx.conv2d` on i32).
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
from onnx import helper
from xdsl.ir import SSAValue

from rlx.dtypes import numpy_dtype
from rlx.frontends.onnx import ops_window
from rlx.frontends.onnx.node import Node, elem, norm_axis, shape
from rlx.frontends.onnx.registry import converter

_QATTRS = ("axis", "saturate", "block_size", "output_dtype", "precision")


def _known(n: Node, i: int) -> np.ndarray | None:
    return n.ctx.known.get(n.proto.input[i]) if n.has(i) else None


def _int8_fast(n: Node, dt: np.dtype, rank: int) -> dict | None:
    """`rlx.quantize` / `rlx.dequantize` attributes for int8 with constant parameters."""
    scale, zp = _known(n, 1), _known(n, 2)
    if dt != np.int8 or n.attr("block_size", 0) or scale is None or (n.has(2) and zp is None):
        return None
    if scale.size == 1 and scale.ndim <= 1:
        attrs: dict = {"scale": float(scale.reshape(()))}
        if zp is not None:
            attrs["zero_point"] = int(zp.reshape(()))
        return attrs
    if scale.ndim != 1:
        return None
    attrs = {"scale": [float(v) for v in scale], "axis": norm_axis(n, n.attr("axis", 1), rank)}
    if zp is not None:
        attrs["zero_point"] = [int(v) for v in zp]
    return attrs


def _param(n: Node, i: int, x: SSAValue, dtype: str) -> SSAValue | None:
    """Input `i` (scale or zero point) broadcastable against `x`, cast to `dtype`."""
    if not n.has(i):
        return None
    v = n.cast(n.input(i), dtype)
    s, xs = shape(v), shape(x)
    rank = len(xs)
    if len(s) == 0 or (len(s) == 1 and s[0] == 1):
        return n.reshape(v, [])
    axis = norm_axis(n, n.attr("axis", 1), rank)
    block = n.attr("block_size", 0)
    if block:  # blocked: scale has ceil(dim / block) entries along axis
        want = [-(-d // block) if a == axis else d for a, d in enumerate(xs)]
        if block < 0 or list(s) != want:  # a [1, 2] scale of a [3, 4] input was broadcast
            raise n.error(
                f"blocked scale / zero point of shape {list(s)} must be {want} "
                f"(input {list(xs)}, axis {axis}, block_size {block})"
            )
        idx = np.arange(xs[axis]) // block
        return n.emit("gather", v, n.constant(idx, "i64"), axis=axis)
    if len(s) != 1:
        raise n.error(f"scale / zero point must be a scalar or 1-D, got shape {list(s)}")
    return n.reshape(v, [s[0] if a == axis else 1 for a in range(rank)])


def _out_dtype(n: Node) -> np.dtype:
    if n.has(2):
        zp = _known(n, 2)
        return zp.dtype if zp is not None else np.dtype(numpy_dtype(elem(n.input(2))))
    od = n.attr("output_dtype", 0)
    return np.dtype(helper.tensor_dtype_to_np_dtype(od)) if od else np.dtype(np.uint8)


def quantize_value(
    n: Node, x: SSAValue, scale: SSAValue, zp: SSAValue | None, dt: np.dtype
) -> SSAValue:
    """saturate(round(x / scale) + zp) as `dt` (float8: no rounding, optional saturation)."""
    xf = n.cast(x, "f32")
    q = n.emit("div", xf, scale)
    f8 = "float8" in dt.name
    if not f8:
        q = n.emit("round", q)
    if zp is not None:
        q = n.emit("add", q, zp)
    if f8:
        if n.attr("saturate", 1):
            big = float(ml_dtypes.finfo(dt).max)
            q = n.emit("min", n.emit("max", q, n.constant(-big, q)), n.constant(big, q))
        return n.cast(q, dt)
    if dt.kind not in "iu":
        raise n.error(f"quantizing to {dt} is not supported")
    info = np.iinfo(dt)
    q = n.emit("min", n.emit("max", q, n.constant(info.min, q)), n.constant(info.max, q))
    return n.cast(q, dt)


@converter("QuantizeLinear", attrs=_QATTRS)
def quantize(n: Node) -> list[SSAValue]:
    x = n.input(0)
    dt = _out_dtype(n)
    fast = _int8_fast(n, dt, len(shape(x)))
    if fast is not None:
        return [n.emit("quantize", x, **fast)]
    scale = _param(n, 1, x, "f32")
    zp = _param(n, 2, x, "f32")
    assert scale is not None
    return [quantize_value(n, x, scale, zp, dt)]


@converter("DequantizeLinear", attrs=("axis", "block_size", "output_dtype"))
def dequantize(n: Node) -> list[SSAValue]:
    x = n.input(0)
    known = _known(n, 1)
    out = known.dtype if known is not None else numpy_dtype(elem(n.input(1)))
    if n.attr("output_dtype", 0):
        out = helper.tensor_dtype_to_np_dtype(n.attr("output_dtype"))
    fast = _int8_fast(n, np.dtype(numpy_dtype(elem(x))), len(shape(x)))
    if fast is not None:
        try:
            return [n.ctx.g.dequantize(x, out, **fast)]
        except ValueError as e:
            raise n.error(str(e)) from None
    y = n.cast(x, "f32")
    zp = _param(n, 2, x, "f32")
    if zp is not None:
        y = n.emit("sub", y, zp)
    scale = _param(n, 1, x, "f32")
    assert scale is not None
    return [n.cast(n.emit("mul", y, scale), out)]


def _centered(n: Node, x: SSAValue, zp_i: int, axis: int) -> SSAValue:
    """int32 `x - zero_point` (input `zp_i`: scalar, or 1-D along `axis` of `x`)."""
    xi = n.cast(x, "i32")
    if not n.has(zp_i):
        return xi
    z = n.cast(n.input(zp_i), "i32")
    zs, rank = shape(z), len(shape(x))
    if len(zs) == 1 and zs[0] != 1:
        at = norm_axis(n, axis, rank)
        z = n.reshape(z, [zs[0] if a == at else 1 for a in range(rank)])
    elif len(zs) > 0:
        z = n.reshape(z, [])
    return n.emit("sub", xi, z)


@converter("MatMulInteger", attrs=())
def matmul_integer(n: Node) -> list[SSAValue]:
    a, b = n.input(0), n.input(1)
    return [n.emit("matmul", _centered(n, a, 2, -2), _centered(n, b, 3, -1))]


def _conv_i32(n: Node, x: SSAValue, w: SSAValue) -> SSAValue:
    """Conv of int32 operands with the node's pads, strides, groups (1-D to 3-D)."""
    return ops_window.conv_of(n, x, w, None)


@converter(
    "ConvInteger", attrs=("auto_pad", "dilations", "group", "kernel_shape", "pads", "strides")
)
def conv_integer(n: Node) -> list[SSAValue]:
    x, w = n.input(0), n.input(1)
    return [_conv_i32(n, _centered(n, x, 2, 1), _centered(n, w, 3, 0))]


def _requant(n: Node, acc: SSAValue, scale: SSAValue, ys: int, yzp: int, axis: int) -> SSAValue:
    """Requantize an int32 accumulator of real scale `scale` onto inputs `ys` / `yzp`."""
    r = len(shape(acc))
    q = n.emit(
        "round", n.emit("div", n.emit("mul", n.cast(acc, "f32"), scale), _scale(n, ys, r, axis))
    )
    q = n.emit("add", q, _scale(n, yzp, r, axis))
    info = np.iinfo(np.dtype(numpy_dtype(elem(n.input(yzp)))))
    q = n.emit("min", n.emit("max", q, n.constant(info.min, q)), n.constant(info.max, q))
    return n.cast(q, elem(n.input(yzp)))


def _scale(n: Node, i: int, rank: int, axis: int) -> SSAValue:
    s = n.cast(n.input(i), "f32")
    ss = shape(s)
    if len(ss) == 1 and ss[0] != 1:
        at = norm_axis(n, axis, rank)
        return n.reshape(s, [ss[0] if a == at else 1 for a in range(rank)])
    return n.reshape(s, [])


@converter("QLinearMatMul", attrs=())
def qlinear_matmul(n: Node) -> list[SSAValue]:
    a, b = n.input(0), n.input(3)
    acc = n.emit("matmul", _centered(n, a, 2, -2), _centered(n, b, 5, -1))
    r = len(shape(acc))
    scale = n.emit("mul", _scale(n, 1, r, -2), _scale(n, 4, r, -1))
    return [_requant(n, acc, scale, 6, 7, -1)]


@converter(
    "QLinearConv", attrs=("auto_pad", "dilations", "group", "kernel_shape", "pads", "strides")
)
def qlinear_conv(n: Node) -> list[SSAValue]:
    x, w = n.input(0), n.input(3)
    acc = _conv_i32(n, _centered(n, x, 2, 1), _centered(n, w, 5, 0))
    r = len(shape(acc))
    if n.has(8):
        bias = n.cast(n.input(8), "i32")
        acc = n.emit("add", acc, n.reshape(bias, [1, shape(bias)[0]] + [1] * (r - 2)))
    scale = n.emit("mul", _scale(n, 1, r, 1), _scale(n, 4, r, 1))
    return [_requant(n, acc, scale, 6, 7, 1)]
