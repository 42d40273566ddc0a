"""The score transforms and label helpers the `ai.onnx.ml` models share (linear models,
SVMs, tree ensembles): `post_transform` as onnxruntime applies it, the first-largest-score
label, and the two score columns of a one-score binary classifier."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from xdsl.ir import SSAValue

from rlx.frontends.onnx.node import Node, shape

# ---------------------------------------------------------------- score transforms
TRANSFORMS = ("NONE", "SOFTMAX", "LOGISTIC", "SOFTMAX_ZERO", "PROBIT")
"""The `post_transform` names, in the order TreeEnsemble-5's integer values index them."""


def transform_name(n: Node) -> str:
    """The node's `post_transform` (default NONE); an unknown name is an error
    (onnxruntime read every unknown one as PROBIT)."""
    how = n.attr("post_transform", "NONE")
    if how not in TRANSFORMS:
        raise n.error(f"post_transform '{how}' is not one of {', '.join(TRANSFORMS)}")
    return how


def post_transform(n: Node, s: SSAValue, how: str) -> SSAValue:
    """Scores [N, C] after `how`, as onnxruntime's `batched_update_scores_inplace`: over
    each row when C > 1; a single column gets PROBIT only (onnxruntime leaves it as is for
    the others, where onnx.reference's LinearClassifier applies them)."""
    if how == "NONE" or (shape(s)[-1] == 1 and how != "PROBIT"):
        return s
    if how == "LOGISTIC":
        return n.emit("sigmoid", s)
    if how == "SOFTMAX":
        return n.emit("softmax", s, axis=-1)
    if how == "SOFTMAX_ZERO":
        return softmax_zero(n, s)
    return probit(n, s)


def probit(n: Node, p: SSAValue) -> SSAValue:
    """`sqrt(2) * erfinv(2p - 1)` with the approximation both runtimes use (Winitzki's,
    a = 0.147), step by step in float32 with onnxruntime's constants. Near p = 0.5 its
    `-v + sqrt(v*v - v2)` cancels: a 1-ulp difference in the log (libms differ) moves the
    result by up to ~1e-5 (absolute) there. p = 0 or 1: -inf / inf (onnx.reference: 0)."""

    def c(v: float) -> SSAValue:
        return n.constant(v, p)

    f32 = np.float32
    x = n.emit("sub", n.emit("mul", p, c(2.0)), c(1.0))
    sgn = n.emit("where", n.emit("compare", x, c(0.0), predicate="lt"), c(-1.0), c(1.0))
    lg = n.emit("log", n.emit("mul", n.emit("sub", c(1.0), x), n.emit("add", c(1.0), x)))
    v = n.emit("add", c(f32(2) / (f32(np.pi) * f32(0.147))), n.emit("mul", c(0.5), lg))
    v2 = n.emit("mul", c(f32(1) / f32(0.147)), lg)
    v3 = n.emit("sub", n.emit("sqrt", n.emit("sub", n.emit("mul", v, v), v2)), v)
    return n.emit("mul", n.emit("mul", c(f32(np.sqrt(2.0))), sgn), n.emit("sqrt", v3))


def softmax_zero(n: Node, s: SSAValue) -> SSAValue:
    """onnxruntime's SOFTMAX_ZERO over each row: `exp(v - max)` for the scores with
    |v| > 1e-7, which alone make the sum; the others stay ~0 (`v * exp(-max)`). onnx.reference
    sums all and gives 0.5 to a row of zeros (onnxruntime: 0 / 0)."""
    m = n.emit("reduce", s, kind="max", axes=[-1], keepdims=True)
    live = n.emit("compare", n.emit("abs", s), n.constant(1e-7, s), predicate="gt")
    e = n.emit("where", live, n.emit("exp", n.emit("sub", s, m)),
               n.emit("mul", s, n.emit("exp", n.emit("neg", m))))  # fmt: skip
    tot = n.emit("reduce", n.emit("where", live, e, n.constant(0.0, s)), kind="sum", axes=[-1],
                 keepdims=True)  # fmt: skip
    return n.emit("div", e, tot)


# ---------------------------------------------------------------- labels and binary scores
def argmax_first(n: Node, s: SSAValue) -> SSAValue:
    """[N] i64: the first index of each row's largest score, as onnxruntime's `>` scan
    finds it: a NaN never wins, except at column 0, which then stays the pick."""
    c = shape(s)[-1]
    first = n.constant(np.arange(c) == 0, "bool")
    inf = n.constant(np.inf, s)
    nan = n.emit("compare", s, s, predicate="ne")
    t = n.emit("where", nan, n.emit("where", first, inf, n.emit("neg", inf)), s)
    m = n.emit("reduce", t, kind="max", axes=[-1], keepdims=True)
    return match_index(n, n.emit("compare", t, m, predicate="eq"), last=False)


def match_index(n: Node, hit: SSAValue, last: bool) -> SSAValue:
    """[...] i64 from a [..., K] mask: the index of the first (`last`: the last) true entry
    along the last axis; K (last: -1) where there is none."""
    k = shape(hit)[-1]
    iota = n.constant(np.arange(k), "i64")
    miss = n.constant(-1 if last else k, "i64")
    return n.emit("reduce", n.emit("where", hit, iota, miss), kind="max" if last else "min",
                  axes=[-1])  # fmt: skip


def pick(n: Node, labels: Sequence[int], at: SSAValue) -> SSAValue:
    """`labels[at]` (i64; `at` is in range by construction)."""
    return n.emit("gather", n.constant(np.array(labels, np.int64), "i64"), at, axis=0)


def binary_label(n: Node, s: SSAValue, threshold: float, neg: int, pos: int) -> SSAValue:
    """[N] i64 of a one-score binary classifier ([N, 1] scores): `pos` where s > threshold."""
    above = n.emit("compare", s, n.constant(threshold, s), predicate="gt")
    y = n.emit("where", above, n.constant(pos, "i64"), n.constant(neg, "i64"))
    return n.reshape(y, [shape(s)[0]])


def binary_scores(
    n: Node, s: SSAValue, how: str, complement: bool, probit_complement: bool = False
) -> SSAValue:
    """The [N, 2] scores of a one-score binary classifier as onnxruntime writes them:
    `[o, s]`, o = `1 - s` (`complement`) or `-s`; LOGISTIC `[sigmoid(-s), sigmoid(s)]`;
    SOFTMAX and SOFTMAX_ZERO not applied. PROBIT follows onnx.reference, the probits of
    `[1 - s, s]` (`probit_complement`) or `[-s, s]`: onnxruntime writes N probits into
    the first N of its 2N scores and leaves the rest uninitialized."""

    def other(one_minus: bool) -> SSAValue:
        return n.emit("sub", n.constant(1.0, s), s) if one_minus else n.emit("neg", s)

    if how == "PROBIT":
        return probit(n, n.emit("concat", other(probit_complement), s, axis=1))
    if how == "LOGISTIC":
        return n.emit("concat", n.emit("sigmoid", n.emit("neg", s)), n.emit("sigmoid", s), axis=1)
    return n.emit("concat", other(complement), s, axis=1)
