"""Einsum (opsets 12-25) as diagonals, reductions and batched `rlx.matmul`s.

The equation is parsed (with `...` broadcast dims, implicit outputs); each operand first
takes the diagonal of repeated labels (multiply by an identity mask, sum one axis) and
sums out labels no one else needs; operands are then contracted pairwise, left to right,
as `[batch, left, contracted] @ [batch, contracted, right]` matmuls; the result is
transposed to the output order.
"""

from __future__ import annotations

import numpy as np
from xdsl.ir import SSAValue

from rlx.dialects.rlx.base import DYN
from rlx.frontends.onnx import symbolic
from rlx.frontends.onnx.node import Node, dims_text, shape
from rlx.frontends.onnx.registry import converter
from rlx.frontends.onnx.symbolic_ops import reshape_dims, sym_of

_ELL = [chr(0x391 + i) for i in range(24)]  # Greek capitals: never einsum letters


def _parse(n: Node, eq: str, ranks: list[int]) -> tuple[list[list[str]], list[str]]:
    eq = eq.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(ranks):
        raise n.error(f"equation '{eq}' has {len(terms)} operands, got {len(ranks)} inputs")
    ell = max(
        (r - (len(t) - 3) for t, r in zip(terms, ranks, strict=True) if "..." in t), default=0
    )
    out_terms = []
    for t, r in zip(terms, ranks, strict=True):
        if "..." in t:
            a, _, b = t.partition("...")
            k = r - len(a) - len(b)
            out_terms.append([*a, *_ELL[ell - k : ell], *b])
        else:
            out_terms.append(list(t))
        if len(out_terms[-1]) != r:
            raise n.error(f"term '{t}' does not match an operand of rank {r}")
    if arrow:
        a, _, b = rhs.partition("...")
        out = [*a, *(_ELL[:ell] if "..." in rhs else []), *b]
    else:
        letters = [c for t in terms for c in t if c.isalpha()]
        out = [*_ELL[:ell], *sorted(c for c in set(letters) if letters.count(c) == 1)]
    return out_terms, out


def _diag_and_sum(
    n: Node, x: SSAValue, labels: list[str], keep: set[str]
) -> tuple[SSAValue, list[str]]:
    """Take diagonals of repeated labels, then sum labels outside `keep`."""
    labels = list(labels)
    while len(set(labels)) < len(labels):
        a1 = next(i for i, c in enumerate(labels) if labels.count(c) > 1)
        a2 = labels.index(labels[a1], a1 + 1)
        d = shape(x)[a1]
        if d == DYN or shape(x)[a2] == DYN:
            raise n.error(f"Einsum: a repeated label on a dynamic axis ('{labels[a1]}')")
        if shape(x)[a2] != d:  # the identity mask would broadcast a size-1 axis
            raise n.error(
                f"Einsum: label '{labels[a1]}' repeated on axes of sizes {d} and {shape(x)[a2]}"
            )
        eye = np.eye(d).reshape([d if i in (a1, a2) else 1 for i in range(len(labels))])
        x = n.emit("reduce", n.emit("mul", x, n.constant(eye, x)), kind="sum", axes=[a2])
        labels.pop(a2)
    drop = [i for i, c in enumerate(labels) if c not in keep]
    if drop:
        x = n.emit("reduce", x, kind="sum", axes=drop)
        labels = [c for c in labels if c in keep]
    return x, labels


def _arrange(
    n: Node, x: SSAValue, labels: list[str], order: list[str], sizes: dict[str, int]
) -> SSAValue:
    perm = [labels.index(c) for c in order]
    if perm != list(range(len(perm))):
        x = n.emit("transpose", x, permutation=perm)
    want = [sizes[c] for c in order]
    if _dims(n, x) == want:
        return x
    y = n.typed("broadcast_to", x, symbolic.sizes(want))
    symbolic.mark(n.ctx, y, want)
    return y


def _contract(n: Node, a, la, b, lb, keep: set[str]):  # noqa: ANN001,ANN202
    a, la = _diag_and_sum(n, a, la, keep | set(lb))
    b, lb = _diag_and_sum(n, b, lb, keep | set(la))
    da, db = _dims(n, a), _dims(n, b)
    sizes = {c: _bigger(d, dict(zip(lb, db, strict=True)).get(c, d))
             for c, d in zip(la, da, strict=True)}  # fmt: skip
    sizes.update({c: d for c, d in zip(lb, db, strict=True) if c not in sizes})
    for c, d in [*zip(la, da, strict=True), *zip(lb, db, strict=True)]:
        if not _fits(d, sizes[c]):
            raise n.error(f"Einsum: label '{c}' has sizes {d} and {sizes[c]} (only 1 broadcasts)")
    batch = [c for c in la if c in lb and c in keep]
    contr = [c for c in la if c in lb and c not in keep]
    left = [c for c in la if c not in lb]
    right = [c for c in lb if c not in la]

    def p(cs: list[str]) -> int | symbolic.Dim:
        out: int | symbolic.Dim = 1
        for c in cs:
            out = out * sizes[c]
        return out

    a3 = reshape_dims(
        n, _arrange(n, a, la, batch + left + contr, sizes), [p(batch), p(left), p(contr)]
    )
    b3 = reshape_dims(
        n, _arrange(n, b, lb, batch + contr + right, sizes), [p(batch), p(contr), p(right)]
    )
    y = n.emit("matmul", a3, b3)
    return reshape_dims(n, y, [sizes[c] for c in batch + left + right]), batch + left + right


def _dims(n: Node, x: SSAValue) -> list:  # noqa: ANN001
    """Sizes of `x`, symbolic (`Dim`) for named dynamic dims."""
    d = sym_of(n.ctx, x)
    if d is None:
        raise n.error(f"Einsum of {dims_text(shape(x))}: a dynamic dim has no name (give dims=)")
    return d


def _fits(d, size):  # noqa: ANN001,ANN202
    """Whether an operand axis of size `d` broadcasts to the label's `size`."""
    return symbolic.Dim in (type(d), type(size)) or d in (1, size)


def _bigger(a, b):  # noqa: ANN001,ANN202
    """The broadcast size of a label (1 broadcasts)."""
    return b if not isinstance(a, symbolic.Dim) and a == 1 else a


@converter("Einsum", attrs=("equation",))
def einsum(n: Node) -> list[SSAValue]:
    xs = n.inputs()
    for x in xs:
        _dims(n, x)  # dynamic dims need names
    terms, out = _parse(n, n.attr("equation"), [len(shape(x)) for x in xs])
    keep_after = [set(out).union(*terms[i + 1 :]) for i in range(len(terms))]
    cur, lc = _diag_and_sum(n, xs[0], terms[0], keep_after[0])
    for i in range(1, len(xs)):
        cur, lc = _contract(n, cur, lc, xs[i], terms[i], keep_after[i])
    cur, lc = _diag_and_sum(n, cur, lc, set(out))
    missing = [c for c in out if c not in lc]
    if missing:
        raise n.error(f"output labels {missing} do not occur in the inputs")
    perm = [lc.index(c) for c in out]
    return [cur if perm == list(range(len(perm))) else n.emit("transpose", cur, permutation=perm)]
