"""Index-addressed reads and writes by flat positions: GatherND (opsets 11-25),
ScatterND (11-25), ScatterElements (11-25), Scatter (9-10), TensorScatter (24-25),
MaxUnpool (9-25).

Every op computes, at run time, one flat position of the (static-shaped) data per
index row (`sum_j idx_j * stride_j`, negative indices wrapped). A gather is one
`rlx.gather` of the flattened data. A scatter compares the positions against
`arange(P)` (a `[K, P]` mask, so its cost is K x P: fine for masks and caches, not for
huge tensors) and picks, per data position, the last matching update (`none`) or
reduces all matching updates (`add`, `mul`, `max`, `min`) with `rlx.reduce`.
"""

from __future__ import annotations

from math import prod

import numpy as np
from xdsl.ir import SSAValue

from rlx.dialects.rlx.base import is_float
from rlx.dtypes import numpy_dtype
from rlx.frontends.onnx.node import Node, dims_text, elem, is_static, norm_axis, shape, static_shape
from rlx.frontends.onnx.ops_index import element_positions, wrap_index
from rlx.frontends.onnx.registry import converter
from rlx.frontends.onnx.symbolic import Dim, mark, materialize_symbolic
from rlx.frontends.onnx.symbolic_ops import iota, reshape_dims, sym_shape


def _flat_nd(n: Node, idx: SSAValue, dims: tuple[int, ...], batch: tuple[int, ...]) -> SSAValue:
    """Flat positions in `batch + dims` of the index rows `idx[..., len(dims)]`."""
    js = shape(idx)
    m = len(dims)
    full = (*batch, *dims)
    strides = [int(np.prod(full[i + 1 :])) for i in range(len(full))]
    flat: SSAValue | None = None
    for j in range(m):
        starts = [0] * len(js)
        limits = list(js)
        starts[-1], limits[-1] = j, j + 1
        col = n.reshape(n.emit("slice", idx, starts=starts, limits=limits), js[:-1])
        term = n.emit(
            "mul", wrap_index(n, col, dims[j]), n.constant(strides[len(batch) + j], "i64")
        )
        flat = term if flat is None else n.emit("add", flat, term)
    if flat is None:
        flat = n.typed("broadcast_to", n.constant(0, "i64"), js[:-1])
    if batch:
        b = len(batch)
        base = sum(
            np.arange(batch[i]).reshape([batch[i] if k == i else 1 for k in range(len(js) - 1)])
            * strides[i]
            for i in range(b)
        )
        flat = n.emit("add", flat, n.constant(np.broadcast_to(base, js[:-1]), "i64"))
    return flat


def scatter_rows(
    n: Node, data: SSAValue, pos: SSAValue, upd: SSAValue, reduction: str,
    dims: tuple[int | Dim, int | Dim] | None = None,
) -> SSAValue:  # fmt: skip
    """`data[P, R]` with rows `pos[K]` written (or reduced) from `upd[K, R]`; `dims` gives
    (P, K) when they are symbolic."""
    (p, r), k = shape(data), shape(pos)[0]
    if dims is not None:
        p, k = dims
    if isinstance(k, int) and k == 0:
        # no updates: `data` itself (the "none" path gathered row 0 of an empty `upd`,
        # an IndexError for an update-less ScatterND / ScatterElements / MaxUnpool)
        return data
    hit = n.emit(
        "compare",
        reshape_dims(n, pos, [k, 1]),
        reshape_dims(n, iota(n, p), [1, p]),
        predicate="eq",
    )  # [K, P]
    if reduction == "none":
        last = n.emit(
            "reduce",
            n.emit("where", hit, reshape_dims(n, iota(n, k), [k, 1]), n.constant(-1, "i64")),
            kind="max",
            axes=[0],
        )  # [P]: the last update of each row, -1 if none
        any_ = n.emit("compare", last, n.constant(0, "i64"), predicate="ge")
        rows = n.emit("gather", upd, n.emit("max", last, n.constant(0, "i64")), axis=0)
        return n.emit("where", reshape_dims(n, any_, [p, 1]), rows, data)
    dt = numpy_dtype(elem(data))
    big = np.inf if is_float(elem(data)) else np.iinfo(dt).max
    ident = {"add": 0, "mul": 1, "max": -big, "min": big}.get(reduction)
    if ident is None:
        raise n.error(f"reduction '{reduction}' is not supported")
    kind = {"add": "sum", "mul": "prod", "max": "max", "min": "min"}[reduction]
    m3 = reshape_dims(n, hit, [k, p, 1])
    vals = n.emit("where", m3, reshape_dims(n, upd, [k, 1, r]), n.constant(ident, data))
    red = n.emit("reduce", vals, kind=kind, axes=[0])  # [P, R]
    op = {"add": "add", "mul": "mul", "max": "max", "min": "min"}[reduction]
    out = n.emit(op, data, red)
    if reduction in ("max", "min"):
        any_ = n.emit("reduce", n.cast(hit, "i32"), kind="max", axes=[0])
        any_ = n.emit(
            "compare", reshape_dims(n, any_, [p, 1]), n.constant(0, "i32"), predicate="gt"
        )
        out = n.emit("where", any_, out, data)
    return out


def _scatter_flat(n: Node, data: SSAValue, pos: SSAValue, upd: SSAValue, red: str) -> SSAValue:
    """Scatter elements of `upd` to the flat positions `pos` (same shape) of `data`."""
    ds = shape(data)
    k = int(np.prod(shape(pos)))
    out = scatter_rows(
        n, n.reshape(data, [int(np.prod(ds)), 1]), n.reshape(pos, [k]), n.reshape(upd, [k, 1]), red
    )
    return n.reshape(out, ds)


@converter("GatherND", attrs=("batch_dims",))
def gather_nd(n: Node) -> list[SSAValue]:
    x, idx = n.input(0), n.input(1)
    b = n.attr("batch_dims", 0)
    if not (is_static(shape(x)) and is_static(shape(idx))) and b == 0:
        return [_gather_nd_symbolic(n, x, idx)]
    xs, js = static_shape(n, x, "GatherND data"), static_shape(n, idx, "GatherND indices")
    m = js[-1]
    flat = _flat_nd(n, idx, xs[b : b + m], xs[:b])
    rest = xs[b + m :]
    return [n.emit("gather", n.reshape(x, [int(np.prod(xs[: b + m])), *rest]), flat, axis=0)]


def _gather_nd_symbolic(n: Node, x: SSAValue, idx: SSAValue) -> SSAValue:
    """GatherND of data or indices with named dynamic dims (GPT-J's position table
    indexed by `arange(seq)`): the strides are computed at run time."""
    xs, js, m, flat = _symbolic_nd(n, x, idx)
    rows = reshape_dims(n, x, [prod(xs[:m]), *xs[m:]])
    return n.emit("gather", rows, flat, axis=0)


def _flat_symbolic(n: Node, idx: SSAValue, xs: list, js: list, m: int) -> SSAValue:  # noqa: ANN001
    """Flat positions in `xs[:m]` (sizes or symbolic sizes) of the index rows of `idx`."""
    flat: SSAValue | None = None
    for j in range(m):
        stride = prod(xs[j + 1 : m])
        col = n.emit("gather", idx, n.constant(np.array(j), "i64"), axis=len(js) - 1)
        mark(n.ctx, col, js[:-1])
        term = n.emit("mul", wrap_index(n, col, xs[j]), _size_value(n, stride))
        flat = term if flat is None else n.emit("add", flat, term)
    if flat is None:
        raise n.error("index rows of length 0 with dynamic dims are not supported")
    return flat


def _size_value(n: Node, d: int | Dim) -> SSAValue:
    """A size as an i64 scalar (a symbolic one computed at run time)."""
    if isinstance(d, Dim):
        return materialize_symbolic(n.ctx, np.array(d, dtype=object))
    return n.constant(d, "i64")


def _scatter_elements_symbolic(
    n: Node, x: SSAValue, idx: SSAValue, upd: SSAValue, axis: int
) -> SSAValue:
    """ScatterElements with named dynamic dims (`select_scatter` of a dynamo export):
    flat positions from run-time strides and per-axis iotas, then a symbolic mask."""
    xs, js = sym_shape(n, 0), sym_shape(n, 1)
    if xs is None or js is None:
        raise n.error(
            f"ScatterElements of {dims_text(shape(x))} by {dims_text(shape(idx))}: unnamed dynamic dims"
        )
    rank = len(xs)
    strides = [prod(xs[i + 1 :]) for i in range(rank)]
    own = wrap_index(n, idx, xs[axis])
    flat = n.emit("mul", own, _size_value(n, strides[axis]))
    for i in range(rank):
        if i != axis:
            step = n.emit("mul", iota(n, js[i]), _size_value(n, strides[i]))
            flat = n.emit(
                "add", flat, reshape_dims(n, step, [js[i] if a == i else 1 for a in range(rank)])
            )
    mark(n.ctx, flat, list(js))
    k, p = prod(js), prod(xs)
    out = scatter_rows(
        n, reshape_dims(n, x, [p, 1]), reshape_dims(n, flat, [k]), reshape_dims(n, upd, [k, 1]),
        n.attr("reduction", "none"), (p, k),
    )  # fmt: skip
    return reshape_dims(n, out, list(xs))


def _scatter_nd_symbolic(n: Node, x: SSAValue, idx: SSAValue, upd: SSAValue) -> SSAValue:
    """ScatterND with named dynamic dims (BART's `shift_tokens_right` writes into a
    `[batch, seq]` buffer): run-time strides and a `[K, P]` mask of symbolic sizes."""
    xs, js, m, flat = _symbolic_nd(n, x, idx)
    k, p, r = prod(js[:-1]), prod(xs[:m]), prod(xs[m:])
    out = scatter_rows(
        n, reshape_dims(n, x, [p, r]), reshape_dims(n, flat, [k]), reshape_dims(n, upd, [k, r]),
        n.attr("reduction", "none"), (p, k),
    )  # fmt: skip
    return reshape_dims(n, out, list(xs))


def _symbolic_nd(n: Node, x: SSAValue, idx: SSAValue) -> tuple[list, list, int, SSAValue]:
    """(data sizes, index sizes, index depth m, flat row positions) of a GatherND /
    ScatterND whose operands have named dynamic dims; refused if any is unnamed or the
    index depth itself is dynamic."""
    xs, js = sym_shape(n, 0), sym_shape(n, 1)
    if xs is None or js is None or isinstance(js[-1], Dim):
        raise n.error(
            f"{n.op_type} of {dims_text(shape(x))} by {dims_text(shape(idx))}: unnamed dynamic dims"
        )
    m = int(js[-1])
    return xs, js, m, _flat_symbolic(n, idx, xs, js, m)


@converter("ScatterND", attrs=("reduction",))
def scatter_nd(n: Node) -> list[SSAValue]:
    x, idx, upd = n.input(0), n.input(1), n.input(2)
    if not (is_static(shape(x)) and is_static(shape(idx))):
        return [_scatter_nd_symbolic(n, x, idx, upd)]
    xs, js = static_shape(n, x, "ScatterND data"), static_shape(n, idx, "ScatterND indices")
    m = js[-1]
    flat = _flat_nd(n, idx, xs[:m], ())
    k, p, r = int(np.prod(js[:-1])), int(np.prod(xs[:m])), int(np.prod(xs[m:]))
    out = scatter_rows(
        n, n.reshape(x, [p, r]), n.reshape(flat, [k]), n.reshape(upd, [k, r]),
        n.attr("reduction", "none"),
    )  # fmt: skip
    return [n.reshape(out, xs)]


@converter("ScatterElements", "Scatter", attrs=("axis", "reduction"))
def scatter_elements(n: Node) -> list[SSAValue]:
    x, idx, upd = n.input(0), n.input(1), n.input(2)
    if not (is_static(shape(x)) and is_static(shape(idx))):
        axis = norm_axis(n, n.attr("axis", 0), len(shape(x)))
        return [_scatter_elements_symbolic(n, x, idx, upd, axis)]
    xs = static_shape(n, x, "data")
    axis = norm_axis(n, n.attr("axis", 0), len(xs))
    static_shape(n, idx, "indices")
    pos = element_positions(n, idx, xs, axis)
    return [_scatter_flat(n, x, pos, upd, n.attr("reduction", "none"))]


@converter("TensorScatter", attrs=("axis", "mode"))
def tensor_scatter(n: Node) -> list[SSAValue]:
    cache, upd = n.input(0), n.input(1)
    cs, us = static_shape(n, cache, "past_cache"), static_shape(n, upd, "update")
    rank = len(cs)
    axis = norm_axis(n, n.attr("axis", -2), rank)
    fits = len(us) == rank and us[axis] <= cs[axis]
    if not fits or any(u != c for i, (u, c) in enumerate(zip(us, cs, strict=True)) if i != axis):
        raise n.error(
            f"update of shape {list(us)} does not fit past_cache {list(cs)} (axis {axis})"
        )
    t = np.arange(us[axis]).reshape([us[axis] if i == axis else 1 for i in range(rank)])
    pos = n.constant(np.broadcast_to(t, us), "i64")
    if n.has(2):  # per-batch write offsets
        w = n.reshape(n.cast(n.input(2), "i64"), [cs[0]] + [1] * (rank - 1))
        pos = n.emit("add", pos, w)
    if n.attr("mode", "linear") == "circular":
        pos = n.emit("sub", pos, n.emit("mul", n.emit("div", pos, n.constant(cs[axis], "i64")),
                                        n.constant(cs[axis], "i64")))  # fmt: skip
    # a write past max_seq or at a negative offset is an IndexError (as in onnxruntime)
    flat = element_positions(n, pos, cs, axis, negative=False)
    return [_scatter_flat(n, cache, flat, upd, "none")]


@converter("MaxUnpool", attrs=("kernel_shape", "pads", "strides"))
def max_unpool(n: Node) -> list[SSAValue]:
    x, idx = n.input(0), n.input(1)
    xs = static_shape(n, x, "X")
    k = list(n.attr("kernel_shape"))
    d = len(k)
    st = list(n.attr("strides", [1] * d))
    p = list(n.attr("pads", [0] * 2 * d))
    out = [*xs[:2], *((xs[2 + i] - 1) * st[i] + k[i] - p[i] - p[d + i] for i in range(d))]
    zeros = n.typed("broadcast_to", n.constant(0, x), out)
    flat = wrap_index(n, n.reshape(idx, [int(np.prod(xs))]), int(np.prod(out)), negative=False)
    y = _scatter_flat(n, zeros, n.reshape(flat, shape(idx)), x, "none")
    if n.has(2):  # indices address the default shape; a larger output_shape pads at the end
        for a, size in enumerate(int(v) for v in n.const(2, "output_shape ")):
            cur = list(shape(y))
            if size < cur[a]:
                raise n.error(f"output_shape {size} on axis {a} is below the unpooled {cur[a]}")
            if size > cur[a]:
                cur[a] = size - cur[a]
                y = n.emit("concat", y, n.typed("broadcast_to", n.constant(0, x), cur), axis=a)
    return [y]
