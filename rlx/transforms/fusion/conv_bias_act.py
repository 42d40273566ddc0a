"""`conv_bias_act`: act(conv2d(x, w) + bias) -> rlx.conv2d(x, w, bias) {activation}.

A single-user convolution without a bias absorbs an `rlx.add` of a per-channel bias (a
tensor of shape [F, 1, 1] or [1, F, 1, 1], reshaped to [F]); a single-user convolution
with activation "none" then absorbs a following activation (relu, gelu, gelu_tanh, silu,
sigmoid, hard_swish), which the lowering applies to each output block while it is hot.
"""

from __future__ import annotations

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern
from xdsl.rewriter import InsertPoint

from rlx.dialects.rlx.base import shape_of, tensor
from rlx.dialects.rlx.compute import CONV_ACTIVATIONS, Conv2dOp
from rlx.dialects.rlx.elementwise import AddOp, UnaryOp
from rlx.dialects.rlx.shape import ReshapeOp
from rlx.transforms.fusion.common import float_tensor, only_user

CONV_EPILOGUES: dict[str, str] = {f"rlx.{a}": a for a in CONV_ACTIVATIONS if a != "none"}
"""Unary op name -> the conv2d activation that absorbs it."""


def channel_bias(conv: Conv2dOp, add: AddOp) -> SSAValue | None:
    """The other operand of `add` when it is a per-channel [F, 1, 1] / [1, F, 1, 1] bias."""
    other = add.rhs if add.lhs is conv.result else add.lhs
    f = shape_of(conv.result.type)[1]
    if other is conv.result or shape_of(other.type) not in ((f, 1, 1), (1, f, 1, 1)):
        return None
    return other


def _rebuild(conv: Conv2dOp, bias: SSAValue | None, act: str, like: Operation) -> Conv2dOp:
    operands = [conv.x, conv.w, *([bias] if bias is not None else [])]
    new = Conv2dOp.create(
        operands=operands,
        result_types=[conv.result.type],
        attributes={**conv.attributes, **Conv2dOp.encode_attrs({"activation": act})},
    )
    new.location = like.location
    return new


class FuseConvBiasAct(RewritePattern):
    """conv2d -> add(per-channel bias) [-> activation], or conv2d -> activation."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, conv: Conv2dOp, rewriter: PatternRewriter) -> None:
        if conv.activation != "none" or not float_tensor(conv.result):
            return
        bias, last, erased = conv.bias, conv, []
        reshape: ReshapeOp | None = None
        add = only_user(conv.result, AddOp) if bias is None else None
        if add is not None and (b := channel_bias(conv, add)) is not None:
            f = shape_of(conv.result.type)[1]
            t = b.type
            assert isinstance(t, TensorType)
            reshape = ReshapeOp.create(operands=[b], result_types=[tensor((f,), t.element_type)])
            bias, last = reshape.result, add
            erased.append(conv)
        act_op = only_user(last.results[0], UnaryOp)
        act = CONV_EPILOGUES.get(act_op.name, "none") if act_op is not None else "none"
        if act != "none":
            erased.append(last)
            last = act_op  # type: ignore[assignment]
        if last is conv:
            return
        new = _rebuild(conv, bias, act, last)
        if new.result.type != last.results[0].type:
            new.erase()
            return
        if reshape is not None:
            rewriter.insert_op(reshape, InsertPoint.before(conv))
        rewriter.replace(last, new)
        for op in reversed(erased):
            rewriter.erase(op)
