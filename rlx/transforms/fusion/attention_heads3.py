"""Rank-3 multi-head attention (batch 1 written without its batch dim) -> rlx.attention.

    q = transpose(q3, [1, 0, 2])              q3, k3, v3: [S, H, D] (e.g. reshapes of the
    kT = transpose(k3, [1, 2, 0])             q/k/v projections [S, H*D]); kT may also be
    v = transpose(v3, [1, 0, 2])              transpose(transpose(k3, [1, 0, 2]), [0, 2, 1])
    o = softmax(q @ kT * c) @ v               c a scalar constant (or 1; q / kT may carry
                                              scalar multiplies, as for rank 4)
becomes `rlx.attention {layout = "bshd"}` of `reshape(x3, [1, S, H, D])` (free views),
and `o` (or the transpose(o, [1, 0, 2]) back to [S, H, D] reading it) a reshape of its
result: the flash kernel reads the projections in place and no [H, S, S] scores buffer
is made. Only this head layout is lifted: rank-3 q/k/v that are plain batched operands
(function arguments, no head transposes) stay a matmul / softmax / matmul chain, and so
do biased (masked) scores and one-element-param scales (the rank-4 pattern handles those).
"""

from __future__ import annotations

from xdsl.dialects.builtin import StringAttr, TensorType
from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter
from xdsl.rewriter import InsertPoint

from rlx.dialects.rlx.base import f64_attr, ints_attr, shape_of, tensor
from rlx.dialects.rlx.compute import MatmulOp, SoftmaxOp
from rlx.dialects.rlx.shape import TransposeOp
from rlx.transforms.fusion.common import make_op, only_user, producer, rank

SWAP = (1, 0, 2)
"""[S, H, D] <-> [H, S, D]."""


def _heads(x: SSAValue, user: Operation) -> tuple[SSAValue, TransposeOp] | None:
    """(the [S, H, D] source, the transpose) for x = transpose(x3, SWAP) read by `user`."""
    tr = producer(x, TransposeOp)
    if tr is None or tr.permutation != SWAP or rank(tr.x) != 3:
        return None
    return tr.x, tr


def _keys(kt: SSAValue, user: Operation) -> tuple[SSAValue, list[TransposeOp]] | None:
    """(the [S, H, D] k source, the transposes) for kᵀ = transpose(k3, [1, 2, 0]) or
    transpose(transpose(k3, SWAP), [0, 2, 1])."""
    tr = producer(kt, TransposeOp)
    if tr is None or only_user(tr.result, type(user)) is not user or rank(tr.x) != 3:
        return None
    if tr.permutation == (1, 2, 0):
        return tr.x, [tr]
    if tr.permutation == (0, 2, 1):
        inner = _heads(tr.x, tr)
        if inner is not None:
            return inner[0], [tr, inner[1]]
    return None


def fuse_heads3(
    out: MatmulOp, rewriter: PatternRewriter, scaled: object, prescaled: object
) -> bool:
    """Rewrite the chain ending at `out` (module docstring); True if done. `scaled` and
    `prescaled` are the rank-4 pattern's matchers of the score scale and of scalar
    multiplies of q / kᵀ (`attention._scaled_scores`, `attention._prescaled`)."""
    sm = producer(out.a, SoftmaxOp)
    if sm is None or only_user(sm.result, MatmulOp) is not out or rank(out.b) != 3:
        return False
    if sm.axis not in (-1, 2):
        return False
    found = scaled(sm.x)  # type: ignore[operator]
    if found is None:
        return False
    scores, scale, scale_op, dynamic = found
    if dynamic is not None:
        return False
    last: Operation = sm if scale_op is None else scale_op
    if only_user(scores.result, type(last)) is not last:
        return False
    if scale_op is not None and only_user(scale_op.results[0], SoftmaxOp) is not sm:
        return False
    q, qscale, qmul = prescaled(scores.a, scores)  # type: ignore[operator]
    kt, kscale, kmul = prescaled(scores.b, scores)  # type: ignore[operator]
    hq = _heads(q, qmul or scores)
    hk = _keys(kt, kmul or scores)
    hv = _heads(out.b, out)
    if hq is None or hk is None or hv is None:
        return False
    srcs = [hq[0], hk[0], hv[0]]
    shapes = [shape_of(s.type) for s in srcs]
    if any(len(s) != 3 for s in shapes) or shapes[1] != shapes[2] or shapes[0][1:] != shapes[1][1:]:
        return False
    lifted: list[Operation] = []
    for s, sh in zip(srcs, shapes, strict=True):
        t = s.type
        assert isinstance(t, TensorType)
        r = make_op("rlx.reshape", [s], {}, [tensor((1, *sh), t.element_type)], like=out)
        if r is None:
            return False
        lifted.append(r)
    attrs = {"scale": f64_attr(scale * qscale * kscale), "mask_kind": StringAttr("none"),
             "layout": StringAttr("bshd")}  # fmt: skip
    fused = make_op("rlx.attention", [r.results[0] for r in lifted], attrs, like=out)
    if fused is None:
        return False
    back = only_user(out.result, TransposeOp)
    if back is not None and back.permutation != SWAP:
        back = None
    target: Operation = out if back is None else back
    t = target.results[0].type
    assert isinstance(t, TensorType)
    flat = make_op("rlx.reshape", [fused.results[0]], {}, [tensor(shape_of(lifted[0].results[0].type)[1:], t.element_type)], like=out)  # fmt: skip
    if flat is None:
        return False
    tail: list[Operation] = [flat]
    if back is None:  # o itself is read: [S, H, D] back to [H, S, D]
        swap = make_op(
            "rlx.transpose", [flat.results[0]], {"permutation": ints_attr(list(SWAP))}, like=out
        )
        if swap is None or swap.results[0].type != out.result.type:
            return False
        tail.append(swap)
    elif flat.results[0].type != t:
        return False
    rewriter.insert([*lifted, fused, *tail[:-1]], InsertPoint.before(target))
    rewriter.replace(target, tail[-1])
    dead: list[Operation | None] = [out if back is not None else None, sm, scale_op, scores,
                                    kmul, qmul, *hk[1], hq[1], hv[1]]  # fmt: skip
    for op in dead:
        if op is not None and op.parent is not None and all(not r.uses for r in op.results):
            rewriter.erase(op)
    return True
