"""Index-driven ONNX ops built from one-hot masks and flat gathers: GatherElements,
OneHot, NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss."""

from __future__ import annotations

import numpy as np
from xdsl.ir import SSAValue

from rlx.dialects.rlx.base import DYN
from rlx.frontends.onnx.node import Node, dims_text, is_static, shape
from rlx.frontends.onnx.registry import converter
from rlx.frontends.onnx.symbolic import Dim
from rlx.frontends.onnx.symbolic_ops import iota, reshape_dims, sym_shape


def _iota(n: Node, dim: int, axis: int, rank: int) -> SSAValue:
    """`arange(dim)` laid along `axis` of a rank-`rank` i64 tensor."""
    return n.constant(np.arange(dim).reshape([dim if i == axis else 1 for i in range(rank)]), "i64")


def wrap_index(n: Node, idx: SSAValue, dim: int | Dim, negative: bool = True) -> SSAValue:
    """Indices in [-dim, dim) as positions in [0, dim): a gather from [0, 1, ..., dim - 1],
    whose own bounds check makes an out-of-range index a run-time `IndexError` (ONNX: "an
    error"), never a silently misplaced element. A symbolic `dim` (a named dynamic size)
    gets its `arange` as an exclusive cumsum of `dim` ones, which `bind-dims` sizes and
    constant folding turns into a constant: the check is the same as for a static size.
    `negative=False`: only [0, dim) is valid (ops whose spec has no negative indices:
    MaxUnpool, RotaryEmbedding's position ids, TensorScatter's write indices,
    ReverseSequence's lengths; onnxruntime refuses negatives there): the indices are
    gathered as ui64, which `rlx.gather` does not wrap, so -1 is an IndexError naming -1."""
    wide = n.cast(idx, "i64")
    return n.emit("gather", iota(n, dim), wide if negative else n.cast(wide, np.uint64), axis=0)


def element_positions(
    n: Node, idx: SSAValue, xs: tuple[int, ...], axis: int, negative: bool = True
) -> SSAValue:
    """Flat positions in `xs` of `idx` read along `axis` (GatherElements addressing; the
    indices are checked by `wrap_index`, negative ones wrapped unless `negative=False`)."""
    js = shape(idx)
    rank = len(xs)
    strides = [int(np.prod(xs[i + 1 :])) for i in range(rank)]
    base = sum(
        (np.arange(js[i]).reshape([js[i] if k == i else 1 for k in range(rank)]) * strides[i]
         for i in range(rank) if i != axis),
        np.zeros([1] * rank, np.int64),
    )  # fmt: skip
    flat = n.emit("mul", wrap_index(n, idx, xs[axis], negative), n.constant(strides[axis], "i64"))
    return n.emit("add", flat, n.constant(np.broadcast_to(base, js), "i64"))


@converter("GatherElements", attrs=("axis",))
def gather_elements(n: Node) -> list[SSAValue]:
    x, idx = n.input(0), n.input(1)
    xs, js = shape(x), shape(idx)
    rank = len(xs)
    axis = n.attr("axis", 0)
    axis = axis + rank if axis < 0 else axis
    if not (is_static(xs) and is_static(js)):
        return [_gather_elements_onehot(n, x, idx, axis)]
    flat = element_positions(n, idx, xs, axis)
    return [n.emit("gather", n.reshape(x, [int(np.prod(xs))]), flat, axis=0)]


def _gather_elements_onehot(n: Node, x: SSAValue, idx: SSAValue, axis: int) -> SSAValue:
    """GatherElements with dynamic dims: `sum_d where(idx == d, x[.., d], 0)` along a
    static `axis` (the other axes of `x` must broadcast against the indices')."""
    rank, d = len(shape(x)), shape(x)[axis]
    sx, si = sym_shape(n, 0), sym_shape(n, 1)
    if d == DYN or sx is None or si is None:
        raise n.error(
            "GatherElements with dynamic shapes needs named dims and a static gathered axis"
        )
    perm = [a for a in range(rank) if a != axis] + [axis]
    inv = [perm.index(a) for a in range(rank)]
    xt = n.emit("transpose", x, permutation=perm)
    it = n.emit("transpose", wrap_index(n, idx, d), permutation=perm)
    hit = n.emit(
        "compare",
        _unsq(n, it, [si[a] for a in perm], rank),
        _iota(n, d, rank, rank + 1),
        predicate="eq",
    )
    vals = n.emit("where", hit, _unsq(n, xt, [sx[a] for a in perm], rank - 1), n.constant(0, x))
    return n.emit("transpose", n.emit("reduce", vals, kind="sum", axes=[rank]), permutation=inv)


def _unsq(n: Node, v: SSAValue, dims: list, at: int) -> SSAValue:  # noqa: ANN001
    """`v` (symbolic dims `dims`) with a unit axis inserted at `at`."""
    return reshape_dims(n, v, [*dims[:at], 1, *dims[at:]])


@converter("OneHot", attrs=("axis",))
def one_hot(n: Node) -> list[SSAValue]:
    idx = n.input(0)
    depth = int(np.asarray(n.const(1, "depth ")).reshape(()))
    if depth < 0:
        raise n.error(f"depth must be non-negative, got {depth}")  # was an empty axis
    values = n.input(2)
    rank = len(shape(idx)) + 1
    axis = n.attr("axis", -1)
    axis = axis + rank if axis < 0 else axis
    s = list(shape(idx))
    s.insert(axis, 1)
    # OneHot's spec maps an index outside [-depth, depth) to an all-off row: no check.
    neg = n.emit("compare", n.cast(idx, "i64"), n.constant(0, "i64"), predicate="lt")
    wrapped = n.emit("where", neg, n.emit("add", n.cast(idx, "i64"), n.constant(depth, "i64")),
                     n.cast(idx, "i64"))  # fmt: skip
    hit = n.emit("compare", n.reshape(wrapped, s), _iota(n, depth, axis, rank), predicate="eq")
    off = n.reshape(n.emit("slice", values, starts=[0], limits=[1]), [])
    on = n.reshape(n.emit("slice", values, starts=[1], limits=[2]), [])
    return [n.emit("where", hit, on, off)]


def _nll(n: Node, logp: SSAValue, target: SSAValue, weight: SSAValue | None) -> SSAValue:
    """NLL loss of log-probabilities `[N, C, ...]` and class indices `[N, ...]`."""
    s = shape(logp)
    rank, c = len(s), s[1]
    want = [s[0], *s[2:]]
    ts0 = shape(target)
    fits = len(ts0) == len(want) and all(
        a == b or DYN in (a, b) for a, b in zip(ts0, want, strict=True)
    )
    if not fits:  # a [1] target of a batch of 3 was broadcast
        raise n.error(
            f"target of shape {dims_text(ts0)} does not fit input {dims_text(s)} "
            f"(needs {dims_text(want)})"
        )
    if weight is not None and shape(weight) not in ((c,), (DYN,)) and c != DYN:
        raise n.error(f"weight of shape {dims_text(shape(weight))} must be [{c}] (one per class)")
    t = n.cast(target, "i64")
    ts = list(shape(t))
    ts.insert(1, 1)
    ii = n.attr("ignore_index")
    picked_t = t  # a class index outside [-C, C) is an IndexError (onnxruntime: an error)
    if ii is not None:
        ignored = n.emit("compare", t, n.constant(ii, "i64"), predicate="eq")
        picked_t = n.emit("where", ignored, n.constant(0, "i64"), t)
    t1 = n.reshape(wrap_index(n, picked_t, c), ts)
    hit = n.emit("compare", t1, _iota(n, c, 1, rank), predicate="eq")
    zero = n.constant(0, logp)
    picked = n.emit("reduce", n.emit("where", hit, logp, zero), kind="sum", axes=[1])
    loss = n.emit("neg", picked)
    w = n.typed("broadcast_to", n.constant(1, logp), shape(t)) if weight is None else None
    if weight is not None:
        wc = n.reshape(weight, [c] + [1] * (rank - 2))
        w = n.emit("reduce", n.emit("where", hit, wc, zero), kind="sum", axes=[1])
    if ii is not None:
        keep = n.emit("compare", t, n.constant(ii, "i64"), predicate="ne")
        w = n.emit("where", keep, w, n.constant(0, logp))
    if weight is not None or ii is not None:
        loss = n.emit("mul", loss, w)
    red = n.attr("reduction", "mean")
    if red == "none":
        return loss
    total = n.emit("reduce", loss, kind="sum")
    if red == "sum":
        return total
    if red != "mean":
        raise n.error(f"reduction='{red}' is not supported")
    return n.emit("div", total, n.emit("reduce", w, kind="sum"))


@converter("NegativeLogLikelihoodLoss", attrs=("ignore_index", "reduction"))
def nll_loss(n: Node) -> list[SSAValue]:
    return [_nll(n, n.input(0), n.input(1), n.opt(2))]


@converter("SoftmaxCrossEntropyLoss", attrs=("ignore_index", "reduction"))
def softmax_ce(n: Node) -> list[SSAValue | None]:
    x = n.input(0)
    m = n.emit("reduce", x, kind="max", axes=[1], keepdims=True)
    d = n.emit("sub", x, m)
    lse = n.emit("log", n.emit("reduce", n.emit("exp", d), kind="sum", axes=[1], keepdims=True))
    logp = n.emit("sub", d, lse)
    loss = _nll(n, logp, n.input(1), n.opt(2))
    return [loss, logp if n.wants(1) else None]
