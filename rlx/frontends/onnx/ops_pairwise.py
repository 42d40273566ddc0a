"""Ops decomposed through pairwise comparisons along one static axis of length L:
TopK (opsets 10-25) and CumProd (26).

TopK ranks every element by counting the elements that precede it in the sort order
(larger first, or smaller with `largest=0`; ties by lower index, as ONNX specifies; NaN
above every number, as NumPy sorts) and
picks the element of rank `p` for `p < K`; CumProd multiplies over a triangular mask.
Both cost O(L^2) per row (fine for the small axes of detection heads and masks).
"""

from __future__ import annotations

import numpy as np
from xdsl.ir import SSAValue

from rlx.dialects.rlx.base import DYN, is_float
from rlx.frontends.onnx.node import Node, elem, norm_axis, shape
from rlx.frontends.onnx.registry import converter


def _to_last(n: Node, x: SSAValue, axis: int) -> tuple[SSAValue, list[int]]:
    """`x` with `axis` moved last, and the permutation (its own inverse is computed by callers)."""
    rank = len(shape(x))
    perm = [a for a in range(rank) if a != axis] + [axis]
    return (x if perm == list(range(rank)) else n.emit("transpose", x, permutation=perm)), perm


def _from_last(n: Node, x: SSAValue, perm: list[int]) -> SSAValue:
    inv = [perm.index(a) for a in range(len(perm))]
    return x if inv == list(range(len(perm))) else n.emit("transpose", x, permutation=inv)


def _axis(n: Node, x: SSAValue, default: int) -> tuple[int, int]:
    s = shape(x)
    axis = norm_axis(n, n.attr("axis", default), len(s))
    if s[axis] == DYN:
        raise n.error(f"needs a static size on axis {axis}")
    return axis, s[axis]


@converter("TopK", attrs=("axis", "largest", "sorted"))
def topk(n: Node) -> list[SSAValue]:
    x = n.input(0)
    k = int(np.asarray(n.const(1, "K ")).reshape(-1)[0])
    axis, length = _axis(n, x, -1)
    if not 0 <= k <= length:
        raise n.error(f"K = {k} is outside [0, {length}] (the length of axis {axis})")
    xt, perm = _to_last(n, x, axis)
    lead = list(shape(xt)[:-1])
    xi = n.reshape(xt, [*lead, length, 1])
    xj = n.reshape(xt, [*lead, 1, length])
    largest = n.attr("largest", 1)
    better = n.emit("compare", xj, xi, predicate="gt" if largest else "lt")
    same = n.emit("compare", xj, xi, predicate="eq")
    if is_float(elem(x)):
        # NaN sorts above every number (NumPy's order; onnxruntime's too): NaN compares
        # false with everything, so ranks repeated and the picked index went out of range
        ni, nj = (n.emit("compare", v, v, predicate="ne") for v in (xi, xj))
        yes, no = n.constant(True, "bool"), n.constant(False, "bool")
        first, second = (nj, ni) if largest else (ni, nj)
        nan_wins = n.emit("where", first, n.emit("where", second, no, yes), no)
        better = n.emit("where", nan_wins, yes, better)
        same = n.emit("where", ni, nj, same)
    tie = n.emit(
        "where",
        same,
        n.constant(np.tri(length, k=-1, dtype=bool), "bool"),  # j < i
        n.constant(False, "bool"),
    )
    before = n.emit("where", better, n.constant(True, "bool"), tie)
    rank = n.emit("reduce", n.cast(before, "i64"), kind="sum", axes=[len(lead) + 1])  # [.., L]
    sel = n.emit(
        "compare",
        n.reshape(rank, [*lead, length, 1]),
        n.constant(np.arange(k).reshape(1, k), "i64"),
        predicate="eq",
    )  # [.., L, K]
    idx = n.emit(
        "reduce",
        n.emit("where", sel, n.constant(np.arange(length).reshape(length, 1), "i64"),
               n.constant(0, "i64")),
        kind="sum",
        axes=[len(lead)],
    )  # fmt: skip
    rows = int(np.prod(lead))
    flat = n.emit(
        "add",
        n.reshape(idx, [rows, k]),
        n.constant((np.arange(rows) * length).reshape(rows, 1), "i64"),
    )
    vals = n.reshape(n.emit("gather", n.reshape(xt, [rows * length]), flat, axis=0), [*lead, k])
    return [_from_last(n, vals, perm), _from_last(n, idx, perm)]


@converter("CumProd", attrs=("exclusive", "reverse"))
def cumprod(n: Node) -> list[SSAValue]:
    x = n.input(0)
    a = n.const(1, "axis ")
    rank = len(shape(x))
    axis = int(np.asarray(a).reshape(-1)[0]) % rank
    length = shape(x)[axis]
    if length == DYN:
        raise n.error(f"needs a static size on axis {axis}")
    xt, perm = _to_last(n, x, axis)
    lead = list(shape(xt)[:-1])
    i, j = np.arange(length).reshape(length, 1), np.arange(length).reshape(1, length)
    excl, rev = n.attr("exclusive", 0), n.attr("reverse", 0)
    mask = (j >= i if rev else j <= i) & ((j != i) if excl else True)
    vals = n.emit(
        "where", n.constant(mask, "bool"), n.reshape(xt, [*lead, 1, length]), n.constant(1, x)
    )
    y = n.emit("reduce", vals, kind="prod", axes=[len(lead) + 1])
    return [_from_last(n, y, perm)]
