"""Emitting rlx ops whose sizes are symbolic (`symbolic.Dim`): Reshape targets, slices
with symbolic bounds and `arange` of a symbolic length (a dynamic iota: the exclusive
cumsum of a `[count]` ones tensor whose size `bind-dims` resolves from `rlx.dims`)."""

from __future__ import annotations

from math import prod

import numpy as np
from xdsl.ir import SSAValue

from rlx.dialects.rlx.base import DYN
from rlx.frontends.onnx.importer import Node, dims_text, shape
from rlx.frontends.onnx.symbolic import Dim, mark, sizes


def sym_shape(n: Node, i: int) -> list[int | Dim] | None:
    """Symbolic dims of input `i` (None if a dynamic dim has no known name)."""
    v = n.input(i)
    s = shape(v)
    if v in n.ctx.ssa_dims:
        return n.ctx.ssa_dims[v]
    syms = n.ctx.sym_shapes.get(n.proto.input[i], [])
    out: list[int | Dim] = []
    for a, d in enumerate(s):
        if d != DYN:
            out.append(d)
        elif a < len(syms) and isinstance(syms[a], str):
            out.append(Dim(syms[a]))  # type: ignore[arg-type]
        else:
            return None
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
        raise n.error(f"the target shape is symbolic but input {dims_text(shape(x))} has unnamed dynamic dims")
    allowzero = n.attr("allowzero", 0)
    out: list[int | Dim] = [src[i] if (not isinstance(d, Dim) and d == 0 and not allowzero) else d
                            for i, d in enumerate(target.tolist())]  # fmt: skip
    holes = [i for i, d in enumerate(out) if not isinstance(d, Dim) and d == -1]
    if len(holes) > 1:
        raise n.error("more than one -1 in the shape")
    if holes:
        out[holes[0]] = _quotient(src, [d for i, d in enumerate(out) if i != holes[0]])
    y = n.reshape(x, sizes(out))
    mark(n.ctx, y, out)
    return y


def dyn_iota(n: Node, count: int | Dim, dtype: str = "i64") -> SSAValue:
    """`arange(count)` for a symbolic `count`: an exclusive cumsum of a `[count]` ones
    tensor whose size `bind-dims` resolves from `rlx.dims`."""
    ones = n.typed("broadcast_to", n.constant(np.ones([1]), dtype), sizes([count]))
    mark(n.ctx, ones, [count])
    return n.emit("cumsum", ones, axis=0, exclusive=True)


def symbolic_slice(n: Node, x: SSAValue, axis: int, start, end, step: int) -> SSAValue:  # noqa: ANN001
    """`x[start:end:step]` on `axis` with a symbolic bound (in range, step > 0)."""
    syms = sym_shape(n, 0) or []
    dim = syms[axis] if axis < len(syms) else shape(x)[axis]
    if step <= 0 or (not isinstance(start, Dim) and start < 0) or (not isinstance(end, Dim) and end < 0):
        raise n.error("a slice with a symbolic bound needs a positive step and non-negative bounds")
    if not isinstance(end, Dim) and end >= 2**31 - 1:
        end = dim
    if not isinstance(start, Dim) and start == 0 and step == 1 and isinstance(end, Dim) and isinstance(dim, Dim) and end.expr == dim.expr:
        return x
    count = (end - start + (step - 1)) // step if step != 1 else end - start
    idx = dyn_iota(n, count)
    if step != 1:
        idx = n.emit("mul", idx, n.constant(step, "i64"))
    if isinstance(start, Dim) or start:
        idx = n.emit("add", idx, n.constant(start, "i64") if not isinstance(start, Dim) else _scalar(n, start))
    y = n.emit("gather", x, idx, axis=axis)
    if syms:
        mark(n.ctx, y, [count if a == axis else d for a, d in enumerate(syms)])
    return y


def _scalar(n: Node, d: Dim) -> SSAValue:
    raise n.error(f"a slice starting at the symbolic size '{d}' is not supported")

