"""ONNX reductions (ReduceSum/Mean/Max/Min/Prod and the L1/L2/LogSum* family), CumSum,
Softmax and LogSoftmax."""

from __future__ import annotations

import numpy as np
from xdsl.ir import SSAValue

from rlx.dialects.rlx.base import DYN, is_bool, is_int
from rlx.frontends.onnx.node import Node, elem, norm_axis, shape
from rlx.frontends.onnx.registry import converter
from rlx.frontends.onnx.symbolic_ops import dyn_iota, sym_of

_KINDS = {
    "ReduceSum": "sum", "ReduceMean": "mean", "ReduceMax": "max", "ReduceMin": "min",
    "ReduceProd": "prod", "ReduceL1": "sum", "ReduceL2": "sum", "ReduceLogSum": "sum",
    "ReduceLogSumExp": "sum", "ReduceSumSquare": "sum",
}  # fmt: skip


def reduce_axes(n: Node, rank: int) -> list[int] | None:
    """The reduced axes (attribute or input #1); None means 'reduce nothing' (a no-op)."""
    if "axes" in n.attrs:
        axes = list(n.attr("axes"))
    else:
        a = n.const(1, "axes ")
        axes = [] if a is None else [int(v) for v in a.reshape(-1)]
    if not axes:
        return None if n.attr("noop_with_empty_axes", 0) else list(range(rank))
    return [a + rank if a < 0 else a for a in axes]


@converter(*_KINDS, attrs=("axes", "keepdims", "noop_with_empty_axes"))
def reduce_(n: Node) -> list[SSAValue]:
    x = n.input(0)
    axes = reduce_axes(n, len(shape(x)))
    op = n.op_type
    if op in ("ReduceL1",):
        x = n.emit("abs", x)
    elif op in ("ReduceL2", "ReduceSumSquare"):
        x = n.emit("mul", x, x)
    if axes is None:
        # noop_with_empty_axes: the input passes through (the elementwise prelude applied).
        y = x
        if op == "ReduceL2":
            y = n.emit("sqrt", y)
        elif op == "ReduceLogSum":
            y = n.emit("log", y)
        return [y]
    keep = bool(n.attr("keepdims", 1))
    if op == "ReduceLogSumExp":
        m = n.emit("reduce", x, kind="max", axes=axes, keepdims=True)
        m = n.emit("where", n.emit("compare", m, m, predicate="eq"), m, n.constant(0, m))
        m = n.emit(
            "where",
            n.emit("compare", n.emit("abs", m), n.constant(np.inf, m), predicate="eq"),
            n.constant(0, m),
            m,
        )
        s = n.emit(
            "reduce", n.emit("exp", n.emit("sub", x, m)), kind="sum", axes=axes, keepdims=keep
        )
        mk = m if keep else n.reshape(m, list(shape(s)))
        return [n.emit("add", n.emit("log", s), mk)]
    if is_bool(elem(x)) and op in ("ReduceMax", "ReduceMin"):
        y = n.emit("reduce", n.cast(x, "ui8"), kind=_KINDS[op], axes=axes, keepdims=keep)
        return [n.cast(y, "bool")]
    y = n.emit("reduce", x, kind=_KINDS[op], axes=axes, keepdims=keep)
    if op == "ReduceL2":
        y = n.emit("sqrt", y)
    elif op == "ReduceLogSum":
        y = n.emit("log", y)
    return [y]


@converter("CumSum", attrs=("exclusive", "reverse"))
def cumsum(n: Node) -> list[SSAValue]:
    x = n.input(0)
    axis = norm_axis(n, int(n.const(1, "axis ").reshape(())), len(shape(x)))
    excl = bool(n.attr("exclusive", 0))
    if not n.attr("reverse", 0):
        return [n.emit("cumsum", x, axis=axis, exclusive=excl)]
    dim = shape(x)[axis]
    if dim == DYN:
        raise n.error("reverse=1 needs a static size on the cumsum axis")
    flip = n.constant(np.arange(dim - 1, -1, -1, dtype=np.int64), "i64")
    y = n.emit("cumsum", n.emit("gather", x, flip, axis=axis), axis=axis, exclusive=excl)
    return [n.emit("gather", y, flip, axis=axis)]


def _coerced(n: Node, fn) -> list[SSAValue]:  # noqa: ANN001
    """Softmax / LogSoftmax / Hardmax: opset >= 13 works on `axis` (default -1); older
    opsets coerce the input to 2-D `[prod(s[:axis]), prod(s[axis:])]` (axis default 1)."""
    x = n.input(0)
    if n.ctx.opset >= 13:
        return [fn(n, x, n.attr("axis", -1))]
    s = shape(x)
    axis = n.attr("axis", 1) % max(len(s), 1)
    if DYN in s:
        raise n.error(f"opset {n.ctx.opset} {n.op_type} needs a static shape (coerced to 2-D)")
    x2 = n.reshape(x, [int(np.prod(s[:axis])), int(np.prod(s[axis:]))])
    return [n.reshape(fn(n, x2, 1), s)]


@converter("Softmax", "LogSoftmax", attrs=("axis",))
def softmax(n: Node) -> list[SSAValue]:
    return _coerced(n, _softmax)


def _softmax(n: Node, x: SSAValue, axis: int) -> SSAValue:
    if n.op_type == "Softmax":
        return n.emit("softmax", x, axis=axis)
    m = n.emit("reduce", x, kind="max", axes=[axis], keepdims=True)
    d = n.emit("sub", x, m)
    s = n.emit("reduce", n.emit("exp", d), kind="sum", axes=[axis], keepdims=True)
    return n.emit("sub", d, n.emit("log", s))


def _argext(n: Node, x: SSAValue, axis: int, last: bool, kind: str) -> SSAValue:
    """Index of the max/min along `axis` (keepdims), first or last occurrence, NaN first."""
    rank = len(shape(x))
    axis = norm_axis(n, axis, rank)
    dim = shape(x)[axis]
    m = n.emit("reduce", x, kind=kind, axes=[axis], keepdims=True)
    hit = n.emit("compare", x, m, predicate="eq")
    if not is_bool(elem(x)) and not is_int(elem(x)):
        x_nan = n.emit("compare", x, x, predicate="ne")
        m_nan = n.emit("compare", m, m, predicate="ne")
        hit = n.emit("where", m_nan, x_nan, hit)
    if dim == DYN:  # a dynamic iota over the axis' symbolic size
        size = (sym_of(n.ctx, x) or [None] * rank)[axis]
        if size is None:
            raise n.error("the reduced axis is dynamic and its size has no name (give dims=)")
        idx_v = n.reshape(dyn_iota(n, size), [DYN if i == axis else 1 for i in range(rank)])
        miss = -1 if last else 2**62
    else:
        idx = np.arange(dim, dtype=np.int64).reshape([dim if i == axis else 1 for i in range(rank)])
        idx_v, miss = n.constant(idx, "i64"), -1 if last else dim
    cand = n.emit("where", hit, idx_v, n.constant(miss, "i64"))
    return n.emit("reduce", cand, kind="max" if last else "min", axes=[axis], keepdims=True)


@converter("ArgMax", "ArgMin", attrs=("axis", "keepdims", "select_last_index"))
def argmax(n: Node) -> list[SSAValue]:
    x = n.input(0)
    axis = n.attr("axis", 0)
    kind = "max" if n.op_type == "ArgMax" else "min"
    if shape(x)[axis] == 0:  # was INT64_MAX; onnxruntime and NumPy refuse it
        raise n.error(f"{n.op_type} over an empty axis ({axis}) has no index")
    y = _argext(n, x, axis, bool(n.attr("select_last_index", 0)), kind)
    if not n.attr("keepdims", 1):
        a = axis + len(shape(x)) if axis < 0 else axis
        y = n.reshape(y, [d for i, d in enumerate(shape(y)) if i != a])
    return [y]


@converter("Hardmax", attrs=("axis",))
def hardmax(n: Node) -> list[SSAValue]:
    return _coerced(n, _hardmax)


def _hardmax(n: Node, x: SSAValue, axis: int) -> SSAValue:
    rank = len(shape(x))
    axis = norm_axis(n, axis, rank)
    am = _argext(n, x, axis, False, "max")
    dim = shape(x)[axis]
    idx = np.arange(dim, dtype=np.int64).reshape([dim if i == axis else 1 for i in range(rank)])
    return n.cast(n.emit("compare", n.constant(idx, "i64"), am, predicate="eq"), elem(x))
