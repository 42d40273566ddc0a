"""Emitting rlx ops whose sizes are symbolic (`symbolic.Dim`): Reshape targets, slices
with symbolic bounds and `arange` of a symbolic length (a dynamic iota: the exclusive
cumsum of a `[count]` ones tensor whose size `bind-dims` resolves from `rlx.dims`), and
the symbolic dims of values computed by rlx ops (`sym_of`)."""

from __future__ import annotations

from math import prod

import numpy as np
from xdsl.ir import Operation, SSAValue

from rlx.dialects.rlx.base import DYN
from rlx.dialects.rlx.elementwise import BinaryOp, CompareOp, UnaryOp, WhereOp
from rlx.dialects.rlx.window import Conv2dOp, Pool2dOp, window_size
from rlx.frontends.onnx.node import Node, dims_text, shape
from rlx.frontends.onnx.registry import DYNAMIC_RESULT_HOOKS
from rlx.frontends.onnx.symbolic import Dim, mark, materialize_symbolic, size_min_max, sizes


def sym_shape(n: Node, i: int) -> list[int | Dim] | None:
    """Symbolic dims of input `i` (None if a dynamic dim has no known name): the
    importer's own record, ONNX shape inference's names, else derived from the rlx op
    that computed the value (`sym_of`)."""
    v = n.input(i)
    if v in n.ctx.ssa_dims:
        return n.ctx.ssa_dims[v]
    syms = n.ctx.sym_shapes.get(n.proto.input[i], [])
    out: list[int | Dim] = []
    for a, d in enumerate(shape(v)):
        if d != DYN:
            out.append(d)
        elif a < len(syms) and isinstance(syms[a], str):
            out.append(Dim(syms[a]))  # type: ignore[arg-type]
        else:
            return sym_of(n.ctx, v)
    return out


_SAME_SHAPE = frozenset(
    "rlx.cast rlx.cumsum rlx.softmax rlx.layer_norm rlx.rms_norm rlx.quantize rlx.dequantize".split()
)


def sym_of(ctx, v: SSAValue) -> list[int | Dim] | None:  # noqa: ANN001
    """Symbolic dims of `v` from the rlx ops that computed it (elementwise broadcasting,
    transpose, gather, reduce, matmul, concat, conv / pool windows, ...), walking back
    to values of known dims (iteratively: chains of any depth); None if unknown."""
    memo: dict[SSAValue, list[int | Dim] | None] = {}

    def known(u: SSAValue) -> bool:
        if u in memo:
            return True
        s = shape(u)
        if DYN not in s:
            memo[u] = list(s)
        elif u in ctx.ssa_dims:
            memo[u] = ctx.ssa_dims[u]
        elif not isinstance(u.owner, Operation):
            memo[u] = None
        else:
            return False
        return True

    stack = [v]
    while stack:
        u = stack[-1]
        if known(u):
            stack.pop()
            continue
        op = u.owner
        todo = [o for o in op.operands if not known(o)]  # type: ignore[union-attr]
        if todo:
            stack.extend(todo)
            continue
        stack.pop()
        memo[u] = _derive(ctx, u, [memo[o] for o in op.operands])  # type: ignore[union-attr]
    return memo[v]


def _derive(ctx, v: SSAValue, ins: list) -> list[int | Dim] | None:  # noqa: ANN001
    s = shape(v)
    out = _rule(v.owner, ins, len(s))  # type: ignore[arg-type]
    if out is None or len(out) != len(s):
        return None
    out = [d if d != DYN else None for d in out]  # type: ignore[misc]
    if any(d is None for d in out) or any(
        d0 != DYN and d0 != d for d0, d in zip(s, out, strict=True)
    ):
        return None
    ctx.ssa_dims[v] = out
    return out  # type: ignore[return-value]


def _rule(op: Operation, ins: list, rank: int) -> list | None:  # noqa: ANN001
    name = op.name
    if name in _SAME_SHAPE or isinstance(op, UnaryOp | BinaryOp | CompareOp | WhereOp):
        return None if any(i is None for i in ins) else _rule_broadcast(ins)
    x = ins[0] if ins else None
    if x is None:
        return None
    if name == "rlx.reshape":
        out = list(shape(op.results[0]))
        res = _unit_reshape(x, out)
        if res is None and out.count(DYN) == 1:  # the one dynamic dim from the element count
            res = [d for d in out]
            res[out.index(DYN)] = _quotient(x, [d for d in out if d != DYN])
        return res if res is not None else _split_reshape(x, out)
    if name == "rlx.broadcast_to":
        out = shape(op.results[0])
        lead = [1] * (len(out) - len(x)) + list(x)
        if any(o == DYN and not isinstance(d, Dim) for d, o in zip(lead, out, strict=True)):
            return None
        return [d if o == DYN else o for d, o in zip(lead, out, strict=True)]
    if name == "rlx.transpose":
        return [x[p] for p in op.permutation]  # type: ignore[attr-defined]
    if name == "rlx.gather":
        idx = ins[1]
        ax = op.axis % len(x)  # type: ignore[attr-defined]
        return None if idx is None else [*x[:ax], *idx, *x[ax + 1 :]]
    if name == "rlx.reduce":
        axes = op.axes  # type: ignore[attr-defined]
        axes = range(len(x)) if axes is None else [a % len(x) for a in axes]
        keep = op.keepdims  # type: ignore[attr-defined]
        return [1 if a in axes else d for a, d in enumerate(x) if keep or a not in axes]
    if name == "rlx.matmul" and ins[1] is not None and len(x) >= 2 and len(ins[1]) >= 2:
        a, b = x, ins[1]
        batch = _rule_broadcast([a[:-2], b[:-2]])
        return None if batch is None else [*batch, a[-2], b[-1]]
    if name in ("rlx.conv2d", "rlx.pool2d") and len(x) == 4 and op.layout == "nchw":  # type: ignore[attr-defined]
        return _rule_window(op, x)
    if name == "rlx.slice":  # a dynamic axis is only ever sliced whole
        out = shape(op.results[0])
        return [d if out[a] == DYN else out[a] for a, d in enumerate(x)]
    if name in ("rlx.rope", "rlx.attention") and len(x) == rank:
        out = shape(op.results[0])  # q's dims (attention: but v's head_dim)
        return [d if out[a] == DYN and a < rank - 1 else out[a] for a, d in enumerate(x)]
    if name == "rlx.concat":
        ax = op.axis % len(x)  # type: ignore[attr-defined]
        if any(i is None for i in ins):
            return None
        tot: int | Dim = 0
        for i in ins:
            tot = tot + i[ax]
        return [tot if a == ax else d for a, d in enumerate(x)]
    return None


def _rule_window(op: Operation, x: list) -> list:  # noqa: ANN001
    """conv2d / pool2d (NCHW): the batch of `x`; output spatial sizes from the window
    (`window_size`, the verifiers' formula, on the symbolic input sizes)."""
    out = list(shape(op.results[0]))
    res: list = [x[0], out[1], out[2], out[3]]
    if isinstance(op, Conv2dOp):
        kernel = shape(op.w)[2:]
        strides, pad, dil = op.spatial()
    else:
        assert isinstance(op, Pool2dOp)
        kernel, dil = op.kernel, (1, 1)
        strides, pad = op.spatial()
    for i in (0, 1):
        if out[2 + i] == DYN:
            res[2 + i] = window_size(x[2 + i], kernel[i], strides[i], pad[i] + pad[2 + i], dil[i])
    return res


def _split_reshape(x: list, out: list[int]) -> list | None:  # noqa: ANN001
    """A reshape that keeps leading / trailing dims (dynamic ones to `?`) and regroups
    static dims between them (splitting heads: `[b, s, 32] -> [?, ?, 2, 16]`)."""

    def same(d: int | Dim, o: int) -> bool:
        return (o == DYN) == isinstance(d, Dim) and (o == DYN or d == o)

    n = min(len(x), len(out))
    i = 0
    while i < n and same(x[i], out[i]):
        i += 1
    j = 0
    while j < n - i and same(x[-1 - j], out[-1 - j]):
        j += 1
    mid_x, mid_o = x[i : len(x) - j], out[i : len(out) - j]
    if DYN in mid_o or any(isinstance(d, Dim) for d in mid_x) or prod(mid_x) != prod(mid_o):
        return None
    return [*x[:i], *mid_o, *x[len(x) - j :]]


def _unit_reshape(x: list, out: list[int]) -> list | None:  # noqa: ANN001
    """A reshape that only inserts or drops unit dims keeps the other dims in order."""
    src = [d for d in x if isinstance(d, Dim) or d != 1]
    pos = [i for i, d in enumerate(out) if d != 1]
    if len(src) != len(pos):
        return None
    res: list = [1] * len(out)
    for i, d in zip(pos, src, strict=True):
        if out[i] != DYN and (isinstance(d, Dim) or d != out[i]):
            return None
        res[i] = d
    return res


def _rule_broadcast(shapes: list) -> list | None:  # noqa: ANN001
    r = max(len(s) for s in shapes)
    out = []
    for a in range(r):
        pick: int | Dim = 1
        for s in shapes:
            k = a - (r - len(s))
            if k >= 0 and (isinstance(s[k], Dim) or s[k] != 1):
                pick = s[k]
        out.append(pick)
    return out


def _quotient(num: list[int | Dim], den: list[int | Dim]) -> int | Dim:
    """prod(num) // prod(den) with common symbolic factors cancelled."""
    syms = [d for d in num if isinstance(d, Dim)]
    top = prod(d for d in num if not isinstance(d, Dim))
    bottom = prod(d for d in den if not isinstance(d, Dim))
    rest: list[Dim] = []
    for d in (d for d in den if isinstance(d, Dim)):
        hit = next((k for k, s in enumerate(syms) if s.expr == d.expr), None)
        if hit is None:
            rest.append(d)
        else:
            syms.pop(hit)
    if rest or top % bottom:
        q: int | Dim = top
        for d in syms:
            q = q * d
        for d in [bottom, *rest]:
            q = q // d
        return q
    q = top // bottom
    for d in syms:
        q = q * d
    return q


def symbolic_reshape(n: Node, x: SSAValue, target: np.ndarray) -> SSAValue:
    src = sym_shape(n, 0)
    if src is None:
        raise n.error(
            f"the target shape is symbolic but input {dims_text(shape(x))} has unnamed dynamic dims"
        )
    allowzero = n.attr("allowzero", 0)
    out: list[int | Dim] = [src[i] if (not isinstance(d, Dim) and d == 0 and not allowzero) else d
                            for i, d in enumerate(target.tolist())]  # fmt: skip
    holes = [i for i, d in enumerate(out) if not isinstance(d, Dim) and d == -1]
    if len(holes) > 1:
        raise n.error("more than one -1 in the shape")
    if holes:
        out[holes[0]] = _quotient(src, [d for i, d in enumerate(out) if i != holes[0]])
    return reshape_dims(n, x, out)


def reshape_dims(n: Node, x: SSAValue, dims: list[int | Dim]) -> SSAValue:
    """`x` reshaped to `dims` (ints and symbolic `Dim`s), the sizes recorded for
    `bind-dims` (`mark`)."""
    y = n.reshape(x, sizes(dims))
    mark(n.ctx, y, dims)
    return y


def dyn_iota(n: Node, count: int | Dim, dtype: str = "i64") -> SSAValue:
    """`arange(count)` for a symbolic `count`: an exclusive cumsum of a `[count]` ones
    tensor whose size `bind-dims` resolves from `rlx.dims`."""
    ones = n.typed("broadcast_to", n.constant(np.ones([1]), dtype), sizes([count]))
    mark(n.ctx, ones, [count])
    out = n.emit("cumsum", ones, axis=0, exclusive=True)
    mark(n.ctx, out, [count])
    return out


def iota(n: Node, count: int | Dim) -> SSAValue:
    """`arange(count)` as i64: a constant for a static size, `dyn_iota` for a symbolic one."""
    return dyn_iota(n, count) if isinstance(count, Dim) else n.constant(np.arange(count), "i64")


def symbolic_slice(n: Node, x: SSAValue, axis: int, start, end, step: int) -> SSAValue:  # noqa: ANN001
    """`x[start:end:step]` on `axis` with a symbolic bound (in range, step > 0)."""
    syms = sym_shape(n, 0) or []
    dim = syms[axis] if axis < len(syms) else shape(x)[axis]
    if (
        step <= 0
        or (not isinstance(start, Dim) and start < 0)
        or (not isinstance(end, Dim) and end < 0)
    ):
        raise n.error("a slice with a symbolic bound needs a positive step and non-negative bounds")
    if not isinstance(end, Dim) and end >= 2**31 - 1:
        end = dim
    if (
        not isinstance(start, Dim)
        and start == 0
        and step == 1
        and isinstance(end, Dim)
        and isinstance(dim, Dim)
        and end.expr == dim.expr
    ):
        return x
    count = (end - start + (step - 1)) // step if step != 1 else end - start
    return gather_range(n, x, axis, start, count, step, syms)


def gather_range(n: Node, x: SSAValue, axis: int, start, count, step: int, syms=None) -> SSAValue:  # noqa: ANN001
    """`count` elements of `x` along `axis` from `start` by `step` (either may be symbolic:
    the indices are a dynamic iota, the start a run-time scalar), as a `gather`."""
    syms = syms if syms is not None else (sym_of(n.ctx, x) or [])
    idx = iota(n, count)
    if step != 1:
        idx = n.emit("mul", idx, n.constant(step, "i64"))
    if isinstance(start, Dim) or start:
        idx = n.emit(
            "add",
            idx,
            n.constant(start, "i64") if not isinstance(start, Dim) else _scalar(n, start),
        )
    y = n.emit("gather", x, idx, axis=axis)
    if syms:
        mark(n.ctx, y, [count if a == axis else d for a, d in enumerate(syms)])
    return y


def dynamic_slice(n: Node, x: SSAValue, axis: int, start: int, end: int, step: int) -> SSAValue:
    """`x[start:end:step]` on a dynamic axis with static bounds (step > 0): bounds
    counted from the end (negative, or `end` past any size) become symbolic."""
    syms = sym_of(n.ctx, x)
    dim = syms[axis] if syms is not None else None
    if dim is None:
        raise n.error(f"slicing the dynamic axis {axis}: its size has no name (give dims=)")
    to_end = end >= 2**31 - 1
    if step <= 0 or not (to_end or end < 0) or (start < 0 and not to_end):
        raise n.error(
            f"slicing the dynamic axis {axis} [{start}:{end}:{step}] needs a static size"
            " (supported: a positive step and an end counted from the end)"
        )
    if start < 0:  # the last -start elements, all of them on a shorter axis (ONNX clamps)
        first, size = size_min_max("Max", dim + start, 0), size_min_max("Min", dim, -start)
        return gather_range(n, x, axis, first, (size + (step - 1)) // step, step, syms)
    stop = dim if to_end else dim + end
    count = (stop - start + (step - 1)) // step if step != 1 else stop - start
    return gather_range(n, x, axis, start, count, step, syms)


def _scalar(n: Node, d: Dim) -> SSAValue:
    """A symbolic size as a run-time i64 scalar."""
    return materialize_symbolic(n.ctx, np.array(d, dtype=object))


def _record(ctx, v: SSAValue) -> None:  # noqa: ANN001
    """Put the symbols `sym_of` derives on a reshape the importer emitted (`rlx.dims`)."""
    if v in ctx.ssa_dims:
        return
    dims = sym_of(ctx, v)
    if dims is not None:
        ctx.ssa_dims.pop(v, None)
        mark(ctx, v, dims)


DYNAMIC_RESULT_HOOKS.append(_record)
