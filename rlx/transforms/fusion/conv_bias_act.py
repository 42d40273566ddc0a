"""`conv_bias_act`: act(conv2d(x, w) + bias [+ residual]) -> one convolution op.

A single-user convolution with activation "none" absorbs, in this order and each
optional:

1. an `rlx.add` of a per-channel bias (a tensor of shape [F, 1, 1] or [1, F, 1, 1],
   reshaped to [F]) when it has no bias yet;
2. an `rlx.add` of a tensor of the result's type (a residual shortcut): the result
   becomes `rlx.fused_conv2d_residual(x, w, residual[, bias])`;
3. an activation: a unary op in `CONV_EPILOGUES` (relu, gelu, gelu_tanh, silu, sigmoid,
   hard_swish), or `rlx.max` by a scalar constant followed by `rlx.min` by a scalar
   constant (ONNX Clip, relu6), or `rlx.relu` followed by `rlx.min` by a constant: the
   `clip` activation with `clip = [min, max]`; or `x * sigmoid(x)` (silu as ONNX
   exports it: the value's only users are the sigmoid and the mul).

Each absorbed op must be the only user of the value before it (the silu pair: both). The lowering applies the
whole epilogue to each output block while it is hot.
"""

from __future__ import annotations

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern
from xdsl.rewriter import InsertPoint

from rlx.dialects.rlx.base import shape_of, tensor
from rlx.dialects.rlx.elementwise import AddOp, MaxOp, MinOp, MulOp, ReluOp, SigmoidOp, UnaryOp
from rlx.dialects.rlx.fused import FusedConv2dResidualOp
from rlx.dialects.rlx.shape import ReshapeOp
from rlx.dialects.rlx.window import CONV_ACTIVATIONS, Conv2dOp
from rlx.transforms.fusion.common import float_tensor, only_user, scalar_constant

CONV_EPILOGUES: dict[str, str] = {
    f"rlx.{a}": a for a in CONV_ACTIVATIONS if a not in ("none", "clip")
}
"""Unary op name -> the conv2d activation that absorbs it."""


def channel_bias(conv: Conv2dOp, add: AddOp) -> SSAValue | None:
    """The other operand of `add` when it is a per-channel [F, 1, 1] / [1, F, 1, 1] bias."""
    other = add.rhs if add.lhs is conv.result else add.lhs
    f = shape_of(conv.result.type)[1]
    if other is conv.result or shape_of(other.type) not in ((f, 1, 1), (1, f, 1, 1)):
        return None
    return other


def residual_operand(value: SSAValue, add: AddOp) -> SSAValue | None:
    """The other operand of `add` when it has `value`'s type (a residual shortcut)."""
    other = add.rhs if add.lhs is value else add.lhs
    if other is value or other.type != value.type:
        return None
    return other


def _scalar_other(op: Operation, value: SSAValue) -> float | None:
    other = op.operands[1] if op.operands[0] is value else op.operands[0]
    return None if other is value else scalar_constant(other)


def clip_chain(value: SSAValue) -> tuple[list[Operation], tuple[float, float]] | None:
    """(ops, [min, max]) when `value` feeds max(·, c0) -> min(·, c1) or relu -> min(·, c1)
    (each the only user of the value before it, constant scalars), else None."""
    first = only_user(value, (MaxOp, ReluOp))
    if first is None:
        return None
    lo = 0.0 if isinstance(first, ReluOp) else _scalar_other(first, value)
    second = only_user(first.results[0], MinOp)
    if lo is None or second is None:
        return None
    hi = _scalar_other(second, first.results[0])
    if hi is None or lo > hi:
        return None
    return [first, second], (lo, hi)


def silu_pair(value: SSAValue) -> tuple[Operation, Operation] | None:
    """(sigmoid, mul) when `value`'s only users are sigmoid(value) and
    mul(value, sigmoid(value)) (either order): silu as ONNX exports it (Sigmoid + Mul)."""
    uses = [u.operation for u in value.uses]
    if len(uses) != 2:
        return None
    sig = next((u for u in uses if isinstance(u, SigmoidOp)), None)
    mul = next((u for u in uses if isinstance(u, MulOp)), None)
    if sig is None or mul is None or only_user(sig.results[0], MulOp) is not mul:
        return None
    if {id(o) for o in mul.operands} != {id(value), id(sig.results[0])}:
        return None
    return sig, mul


def _rebuild(
    conv: Conv2dOp,
    bias: SSAValue | None,
    residual: SSAValue | None,
    act: str,
    clip: tuple[float, float] | None,
    like: Operation,
) -> Operation:
    epi = {"activation": act if act != "none" else None, "clip": clip}
    attrs = {**conv.attributes, **Conv2dOp.encode_attrs(epi)}
    b = [bias] if bias is not None else []
    cls: type[Operation] = Conv2dOp if residual is None else FusedConv2dResidualOp
    operands = [conv.x, conv.w, *b] if residual is None else [conv.x, conv.w, residual, *b]
    new = cls.create(operands=operands, result_types=[conv.result.type], attributes=attrs)
    new.location = like.location
    return new


class FuseConvBiasAct(RewritePattern):
    """conv2d -> [add(per-channel bias)] -> [add(residual)] -> [activation or clip]."""

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
        residual = None
        add = only_user(last.results[0], AddOp)
        if add is not None and (r := residual_operand(last.results[0], add)) is not None:
            residual = r
            erased.append(last)
            last = add
        act, clip = "none", None
        act_op = only_user(last.results[0], UnaryOp)
        chain = clip_chain(last.results[0])
        swish = silu_pair(last.results[0])
        if chain is not None:
            act, clip = "clip", chain[1]
            erased += [last, chain[0][0]]
            last = chain[0][1]
        elif swish is not None:
            act = "silu"
            erased += [last, swish[0]]
            last = swish[1]
        elif act_op is not None and act_op.name in CONV_EPILOGUES:
            act = CONV_EPILOGUES[act_op.name]
            erased.append(last)
            last = act_op
        if last is conv:
            return
        new = _rebuild(conv, bias, residual, act, clip, last)
        if new.results[0].type != last.results[0].type:
            new.erase()
            return
        if reshape is not None:  # before `last`: the bias may be defined after the conv
            rewriter.insert(reshape, InsertPoint.before(last))
        rewriter.replace(last, new)
        for op in reversed(erased):
            rewriter.erase(op)
