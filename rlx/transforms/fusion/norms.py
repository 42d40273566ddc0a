"""Normalization patterns: `residual_layer_norm`, `residual_rms_norm`, `rms_norm_reshape`."""

from __future__ import annotations

from math import prod

from xdsl.dialects.builtin import TensorType
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern
from xdsl.rewriter import InsertPoint

from rlx.dialects.rlx.base import tensor
from rlx.dialects.rlx.compute import LayerNormOp, RmsNormOp
from rlx.dialects.rlx.elementwise import AddOp
from rlx.dialects.rlx.shape import ReshapeOp
from rlx.transforms.fusion.common import make_op, only_user, producer, static_shape


def _residual_add(norm: LayerNormOp | RmsNormOp) -> AddOp | None:
    """The add feeding the norm's x when it may be absorbed: single user (the norm, so not
    a graph output) and both operands of the result's type (no broadcasting)."""
    add = producer(norm.x, AddOp)
    if add is None or only_user(add.result, type(norm)) is not norm:
        return None
    if norm.gamma is add.result or getattr(norm, "beta", None) is add.result:
        return None
    t = add.result.type
    return add if add.lhs.type == t and add.rhs.type == t else None


class FuseResidualLayerNorm(RewritePattern):
    """layer_norm(a + b, gamma, beta) -> rlx.fused_residual_layer_norm(a, b, gamma, beta)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, norm: LayerNormOp, rewriter: PatternRewriter) -> None:
        add = _residual_add(norm)
        if add is None:
            return
        fused = make_op(
            "rlx.fused_residual_layer_norm",
            [add.lhs, add.rhs, norm.gamma, norm.beta],
            dict(norm.attributes),
            like=norm,
        )
        if fused is None:
            return
        rewriter.replace(norm, fused)
        rewriter.erase(add)


class FuseResidualRmsNorm(RewritePattern):
    """rms_norm(a + b, gamma[, beta]) -> rlx.fused_residual_rms_norm(a, b, gamma[, beta])."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, norm: RmsNormOp, rewriter: PatternRewriter) -> None:
        add = _residual_add(norm)
        if add is None:
            return
        beta = [] if norm.beta is None else [norm.beta]
        fused = make_op(
            "rlx.fused_residual_rms_norm",
            [add.lhs, add.rhs, norm.gamma, *beta],
            dict(norm.attributes),
            like=norm,
        )
        if fused is None:
            return
        rewriter.replace(norm, fused)
        rewriter.erase(add)


class FuseRmsNormReshape(RewritePattern):
    """reshape(rms_norm(x)) flattening the leading dims ([..., H] -> [prod, H]) becomes
    rms_norm(reshape(x)): the reshape moves onto the input (a free view) and the norm
    writes the flattened result directly."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, norm: RmsNormOp, rewriter: PatternRewriter) -> None:
        reshape = only_user(norm.result, ReshapeOp)
        if reshape is None:
            return
        src, dst = static_shape(norm.result), static_shape(reshape.result)
        if src is None or dst is None or len(src) == 2 or not src:
            return
        if dst != (prod(src[:-1]), src[-1]):
            return
        rt = reshape.result.type
        assert isinstance(rt, TensorType)
        flat = make_op("rlx.reshape", [norm.x], {}, [tensor(dst, rt.element_type)], like=reshape)
        if flat is None:
            return
        beta = [] if norm.beta is None else [norm.beta]
        new_norm = make_op(
            "rlx.rms_norm", [flat.results[0], norm.gamma, *beta], dict(norm.attributes), like=norm
        )
        if new_norm is None:
            return
        rewriter.insert(flat, InsertPoint.before(norm))
        rewriter.replace(reshape, new_norm)
        rewriter.erase(norm)
