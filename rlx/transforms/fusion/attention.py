"""`attention`: softmax(q @ kᵀ · scale [+ bias]) @ v -> rlx.attention."""

from __future__ import annotations

from xdsl.dialects.builtin import StringAttr
from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern

from rlx.dialects.rlx.base import f64_attr
from rlx.dialects.rlx.compute import MatmulOp, SoftmaxOp
from rlx.dialects.rlx.elementwise import AddOp, DivOp, MulOp
from rlx.dialects.rlx.shape import TransposeOp
from rlx.transforms.fusion.common import make_op, only_user, producer, rank, scalar_constant


def _single(value: SSAValue, user: Operation) -> bool:
    return only_user(value, type(user)) is user


def _scaled_scores(v: SSAValue) -> tuple[MatmulOp, float, Operation] | None:
    """(scores matmul, scale, scaling op) for mul(s, c), mul(c, s) or div(s, c)."""
    op = v.owner
    if isinstance(op, MulOp):
        pairs = ((op.lhs, op.rhs), (op.rhs, op.lhs))
    elif isinstance(op, DivOp):
        pairs = ((op.lhs, op.rhs),)
    else:
        return None
    for s, c in pairs:
        mm, value = producer(s, MatmulOp), scalar_constant(c)
        if mm is None or value is None or not _single(mm.result, op) or rank(c) > 4:
            continue
        if isinstance(op, DivOp):
            if value == 0:
                return None
            value = 1.0 / value
        return mm, value, op
    return None


class FuseAttention(RewritePattern):
    """matmul(softmax(scale(matmul(q, transpose(k))) [+ bias]), v) on rank-4 q/k/v."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, out: MatmulOp, rewriter: PatternRewriter) -> None:
        sm = producer(out.a, SoftmaxOp)
        if sm is None or not _single(sm.result, out):
            return
        axis = sm.axis
        if axis not in (-1, rank(sm.result) - 1):
            return
        chain: list[Operation] = [sm]
        bias: SSAValue | None = None
        pre = sm.x
        add = producer(pre, AddOp)
        if add is not None:
            if not _single(add.result, sm):
                return
            for s, b in ((add.lhs, add.rhs), (add.rhs, add.lhs)):
                if _scaled_scores(s) is not None:
                    pre, bias = s, b
                    break
            else:
                return
            chain.append(add)
        found = _scaled_scores(pre)
        if found is None:
            return
        scores, scale, scale_op = found
        if not _single(scale_op.results[0], chain[-1]):
            return
        tr = producer(scores.b, TransposeOp)
        if tr is None or not _single(tr.result, scores) or rank(tr.x) != 4:
            return
        if tr.permutation != (0, 1, 3, 2):
            return
        q, k, v = scores.a, tr.x, out.b
        if rank(q) != 4 or rank(v) != 4:
            return
        attrs = {
            "scale": f64_attr(scale),
            "mask_kind": StringAttr("none" if bias is None else "bias"),
        }
        operands = [q, k, v] + ([] if bias is None else [bias])
        fused = make_op("rlx.attention", operands, attrs, like=out)
        if fused is None or fused.results[0].type != out.result.type:
            return
        rewriter.replace(out, fused)
        for op in [*chain, scale_op, scores, tr]:
            rewriter.erase(op)
