"""QuantizeLinear / DequantizeLinear with constant scales and zero points.

int8 maps onto `rlx.quantize` / `rlx.dequantize` (per tensor or per axis); uint8 (and
int32 for DequantizeLinear) are decomposed into float arithmetic and casts.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
from onnx import helper
from xdsl.ir import SSAValue

from rlx.dtypes import numpy_dtype
from rlx.frontends.onnx.importer import Node, elem, shape
from rlx.frontends.onnx.registry import converter


def _params(n: Node, rank: int) -> tuple[np.ndarray, np.ndarray | None, int | None]:
    """(scale, zero_point, axis or None for per-tensor)."""
    if n.attr("block_size", 0):
        raise n.error("blocked quantization (block_size) is not supported")
    scale = n.const(1, "scale ")
    zp = n.const(2, "zero_point ")
    if scale.size == 1 and scale.ndim <= 1:
        return scale.reshape(()), None if zp is None else zp.reshape(()), None
    if scale.ndim != 1:
        raise n.error(f"scale must be a scalar or 1-D, got shape {list(scale.shape)}")
    axis = n.attr("axis", 1)
    return scale, zp, axis + rank if axis < 0 else axis


def _bcast(scale: np.ndarray, axis: int | None, rank: int) -> np.ndarray:
    if axis is None:
        return scale
    s = [1] * rank
    s[axis] = scale.size
    return scale.reshape(s)


def _out_dtype(n: Node, zp: np.ndarray | None) -> np.dtype:
    if zp is not None:
        return zp.dtype
    od = n.attr("output_dtype", 0)
    return np.dtype(helper.tensor_dtype_to_np_dtype(od)) if od else np.dtype(np.uint8)


@converter("QuantizeLinear", attrs=("axis", "saturate", "block_size", "output_dtype", "precision"))
def quantize(n: Node) -> list[SSAValue]:
    x = n.input(0)
    rank = len(shape(x))
    scale, zp, axis = _params(n, rank)
    dt = _out_dtype(n, zp)
    if dt == np.int8:
        attrs: dict = {"scale": float(scale) if axis is None else [float(v) for v in scale]}
        if zp is not None:
            attrs["zero_point"] = int(zp) if axis is None else [int(v) for v in zp]
        if axis is not None:
            attrs["axis"] = axis
        return [n.emit("quantize", x, **attrs)]
    if "float8" in dt.name:
        q = n.emit("div", x, n.constant(_bcast(scale, axis, rank), x))
        if zp is not None:
            q = n.emit("add", q, n.constant(_bcast(zp.astype(np.float32), axis, rank), x))
        if n.attr("saturate", 1):
            big = float(ml_dtypes.finfo(dt).max)
            q = n.emit("min", n.emit("max", q, n.constant(-big, q)), n.constant(big, q))
        return [n.cast(q, dt)]
    if dt != np.uint8:
        raise n.error(f"quantizing to {dt} is not supported (int8, uint8, float8 are)")
    q = n.emit("round", n.emit("div", x, n.constant(_bcast(scale, axis, rank), x)))
    if zp is not None:
        q = n.emit("add", q, n.constant(_bcast(zp, axis, rank), x))
    q = n.emit("min", n.emit("max", q, n.constant(0, x)), n.constant(255, x))
    return [n.cast(q, "ui8")]


@converter("DequantizeLinear", attrs=("axis", "block_size", "output_dtype"))
def dequantize(n: Node) -> list[SSAValue]:
    x = n.input(0)
    rank = len(shape(x))
    scale, zp, axis = _params(n, rank)
    xdt = numpy_dtype(elem(x))
    out = scale.dtype
    if xdt == np.int8:
        attrs: dict = {"scale": float(scale) if axis is None else [float(v) for v in scale]}
        if zp is not None:
            attrs["zero_point"] = int(zp) if axis is None else [int(v) for v in zp]
        if axis is not None:
            attrs["axis"] = axis
        try:
            return [n.ctx.g.dequantize(x, out, **attrs)]
        except ValueError as e:
            raise n.error(str(e)) from None
    if xdt not in (np.uint8, np.int32) and "float8" not in xdt.name:
        raise n.error(f"dequantizing {xdt} is not supported (int8, uint8, int32, float8 are)")
    y = n.cast(x, "f32")
    if zp is not None:
        y = n.emit("sub", y, n.constant(_bcast(zp.astype(np.float32), axis, rank), y))
    y = n.cast(y, out)
    return [n.emit("mul", y, n.constant(_bcast(scale, axis, rank), y))]
