"""ONNX ops whose results are compile-time values: Shape, Size, Constant,
ConstantOfShape and Range (known arrays, symbolic size vectors, or `?`-sized ops with
`rlx.dims` when their sizes are symbolic). Sizes are bounded before anything is
allocated (`MAX_CONSTANT_ELEMENTS`): `Range(0, 1e12, 1)` made the reference evaluator
allocate terabytes."""

from __future__ import annotations

from math import prod

import numpy as np
from onnx import numpy_helper
from xdsl.ir import SSAValue

from rlx.dialects.rlx.base import DYN
from rlx.frontends.onnx.node import Node, dims_text, shape, static_shape
from rlx.frontends.onnx.registry import converter
from rlx.frontends.onnx.symbolic import Dim, is_symbolic, mark, sizes
from rlx.frontends.onnx.symbolic_ops import dyn_iota, sym_shape

Out = list[SSAValue | np.ndarray | None]


@converter("Shape", attrs=("start", "end"))
def shape_(n: Node) -> Out:
    s = shape(n.input(0))
    sel = s[slice(n.attr("start", 0), n.attr("end", None))]
    if DYN in sel:
        syms = sym_shape(n, 0)
        if syms is None:
            raise n.error(f"Shape of {dims_text(s)}: a dynamic dim has no name (give dims=)")
        return [np.array(syms[slice(n.attr("start", 0), n.attr("end", None))], dtype=object)]
    return [np.array(sel, np.int64)]


@converter("Size", attrs=())
def size(n: Node) -> Out:
    return [np.array(prod(static_shape(n, n.input(0), "Size")), np.int64)]


@converter("Constant", attrs=(
    "value", "value_float", "value_floats", "value_int", "value_ints",
))  # fmt: skip
def constant(n: Node) -> Out:
    if len(n.attrs) != 1:  # the spec: exactly one (the first one was taken)
        raise n.error(f"needs exactly one value attribute, got {sorted(n.attrs) or 'none'}")
    ((name, v),) = n.attrs.items()
    if name == "value":
        return [numpy_helper.to_array(v)]
    dt = np.float32 if "float" in name else np.int64
    return [np.array(v, dt)]


@converter("ConstantOfShape", attrs=("value",))
def constant_of_shape(n: Node) -> Out:
    t = n.const(0, "shape ")
    v = n.attr("value")
    fill = numpy_helper.to_array(v).reshape(()) if v is not None else np.float32(0)
    if is_symbolic(t):
        syms = list(t.reshape(-1).tolist())
        y = n.typed(
            "broadcast_to", n.constant(np.full([1] * len(syms), fill), fill.dtype), sizes(syms)
        )
        mark(n.ctx, y, syms)
        return [y]
    dims = [int(d) for d in t]
    bounded(n, dims)
    return [np.full(dims, fill, dtype=fill.dtype)]


MAX_CONSTANT_ELEMENTS = 1 << 28
"""Most elements a constant made at import time (ConstantOfShape, Range) may have (1 GiB
of f32): a model asking for more is refused instead of allocating it."""


def bounded(n: Node, dims: list[int]) -> None:
    """Refuse a constant (or import-time table) of shape `dims` over `MAX_CONSTANT_ELEMENTS`
    or with a negative dimension, naming the node, before anything is allocated."""
    if any(d < 0 for d in dims):
        raise n.error(f"negative dimension in shape {dims}")
    if prod(dims) > MAX_CONSTANT_ELEMENTS:
        raise n.error(
            f"a constant of shape {dims} ({prod(dims)} elements) is larger than the "
            f"importer makes ({MAX_CONSTANT_ELEMENTS} elements)"
        )


@converter("Range", attrs=())
def range_(n: Node) -> Out:
    start, limit, delta = (n.const(i, "") for i in range(3))
    if any(is_symbolic(v) for v in (start, limit, delta)):
        s0, l0, d0 = (np.asarray(v).reshape(()).item() for v in (start, limit, delta))
        if isinstance(s0, Dim) or isinstance(d0, Dim) or int(d0) <= 0:
            raise n.error("Range with a symbolic limit needs constant start and a positive delta")
        count = (l0 - int(s0) + (int(d0) - 1)) // int(d0) if int(d0) != 1 else l0 - int(s0)
        dt = np.asarray(start).dtype if not is_symbolic(start) else np.dtype(np.int64)
        r = n.cast(dyn_iota(n, count), dt)
        if int(d0) != 1:
            r = n.emit("mul", r, n.constant(int(d0), r))
        return [n.emit("add", r, n.constant(int(s0), r)) if int(s0) else r]
    s, lim, d = (np.asarray(v, dtype=np.float64) for v in (start, limit, delta))
    if s.size == lim.size == d.size == 1:
        s, lim, d = (float(v.reshape(-1)[0]) for v in (s, lim, d))
        if not all(np.isfinite([s, lim, d])) or d == 0:
            raise n.error(
                f"Range({s:g}, {lim:g}, {d:g}): start, limit and delta must be finite and "
                "delta nonzero"
            )
        bounded(n, [max(0, int(np.ceil((lim - s) / d)))])
    a, b, c = (np.asarray(v).reshape(-1)[0] for v in (start, limit, delta))  # scalars or [1]
    return [np.arange(a, b, c).astype(start.dtype)]
