"""The blocked channel layout NCHWc: conversion ops and the shape rules of blocked convs.

A blocked activation is a rank-5 tensor `[N, C/B, H, W, B]` holding NCHW channel
`cb*B + j` at `[n, cb, h, w, j]`; the block `B` is a power of two and divides `C` (no
padding lanes). `rlx.to_nchwc` / `rlx.from_nchwc` convert between the layouts; the
`layout = "nchwc"` attribute of `rlx.conv2d`, `rlx.fused_conv2d_residual` and
`rlx.pool2d` makes them read and write blocked tensors (`blocked_conv_types` states the
operand shapes: a conv's x may be blocked by 1, `[N, C, H, W, 1]`, an NCHW tensor
reshaped, when its channels are not blockable). The `blocked-layout` pass produces all of these (docs/layout.md).
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute, Operation
from xdsl.irdl import irdl_op_definition, operand_def, result_def, traits_def
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern
from xdsl.traits import HasCanonicalizationPatternsTrait, Pure

from rlx.dialects.rlx.base import DYN, RlxOp, fmt_shape, require, shape_of, tensor
from rlx.dialects.rlx.fields import AttrValues, int_def
from rlx.dialects.rlx.traits import DataMovement

Types = Sequence[TensorType]
Attrs = AttrValues
Given = Sequence[Attribute] | None

LAYOUTS = ("nchw", "nchwc")
"""Values of the `layout` attribute of conv2d, fused_conv2d_residual and pool2d."""


def is_pow2(n: int) -> bool:
    return n >= 1 and n & (n - 1) == 0


def blocked_shape(s: Sequence[int], block: int) -> tuple[int, ...]:
    """`[N, C, H, W]` -> `[N, C/B, H, W, B]`."""
    return (s[0], s[1] // block, s[2], s[3], block)


def unblocked_shape(s: Sequence[int]) -> tuple[int, ...]:
    """`[N, C/B, H, W, B]` -> `[N, C, H, W]`."""
    return (s[0], DYN if s[1] == DYN else s[1] * s[4], s[2], s[3])


def check_blocked(t: TensorType, what: str = "x") -> int:
    """The block of a blocked activation type (rank 5, last dim a power of two)."""
    s = shape_of(t)
    require(
        len(s) == 5,
        f"{what} must be NCHWc [N, C/B, H, W, B] (rank 5), got tensor<{fmt_shape(s)}>",
    )
    require(is_pow2(s[4]), f"the block (last dim of {what}) must be a power of two, got {s[4]}")
    return s[4]


def blocked_weight_shape(w: Sequence[int], block: int, depthwise: bool) -> tuple[int, ...]:
    """`[F, C/groups, KH, KW]` -> `[F/B, C/(groups·B), KH, KW, B, B]` ("OIhw{B}i{B}o"),
    or for a depthwise weight `[C, 1, KH, KW]` -> `[C/B, 1, KH, KW, 1, B]`."""
    bi = 1 if depthwise else block
    return (w[0] // block, w[1] // bi, w[2], w[3], bi, block)


def blocked_conv_types(operand_types: Types, groups: int) -> tuple[list[TensorType], int]:
    """The NCHW operand types (x, w[, bias]) equivalent to blocked conv operands, and the
    result's block, after checking the blocked shapes: x `[N, C/Bi, H, W, Bi]`, w `[F/B,
    C/Bi, KH, KW, Bi, B]` (groups = 1: the input block Bi is x's, the output block B is
    w's last dim; Bi = 1 reads an NCHW x reshaped, the stem form) or `[C/B, 1, KH, KW, 1,
    B]` (depthwise: groups = C = F, B = Bi); the result is `[N, F/B, OH, OW, B]`."""
    x, w = operand_types[:2]
    bx = check_blocked(x)
    xs, ws = shape_of(x), shape_of(w)
    require(
        xs[1] != DYN, f'layout "nchwc" needs a static channel count, got tensor<{fmt_shape(xs)}>'
    )
    c = xs[1] * bx
    require(
        len(ws) == 6,
        f'w must be [F/B, C/B, KH, KW, B, B] (rank 6) for layout "nchwc", got tensor<{fmt_shape(ws)}>',
    )
    depthwise = groups == c and groups > 1
    require(
        groups == 1 or depthwise,
        f'layout "nchwc" needs groups == 1 or a depthwise conv (groups == channels == filters), '
        f"got groups = {groups} with {c} channels",
    )
    require(
        depthwise or is_pow2(ws[5]),
        f"the output block (last dim of w) must be a power of two, got {ws[5]}",
    )
    block = bx if depthwise else ws[5]
    want = (
        (ws[0], 1, ws[2], ws[3], 1, block) if depthwise else (ws[0], xs[1], ws[2], ws[3], bx, block)
    )
    require(
        tuple(ws) == want,
        f"w must be tensor<{fmt_shape(want)}> for x tensor<{fmt_shape(xs)}> with groups = {groups} "
        f"(block {bx}), got tensor<{fmt_shape(ws)}>",
    )
    f = ws[0] * block
    require(
        not depthwise or f == c, f"a depthwise nchwc conv needs filters == channels ({c}), got {f}"
    )
    x4 = tensor(unblocked_shape(xs), x.element_type)
    w4 = tensor((f, 1 if depthwise else c, ws[2], ws[3]), w.element_type)
    return [x4, w4, *operand_types[2:]], block


def blocked(t: TensorType, block: int) -> TensorType:
    """The blocked type of an NCHW type."""
    return tensor(blocked_shape(shape_of(t), block), t.element_type)


# ----------------------------------------------------------------------------- ops


class CancelConversionPair(RewritePattern):
    """`from_nchwc(to_nchwc(x))` -> x and `to_nchwc(from_nchwc(y))` -> y (same block)."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if not isinstance(op, ToNchwcOp | FromNchwcOp):
            return
        inner = op.operands[0].owner
        want = FromNchwcOp if isinstance(op, ToNchwcOp) else ToNchwcOp
        if not isinstance(inner, want):
            return
        src = inner.operands[0]
        if src.type != op.results[0].type:  # a different block
            return
        rewriter.replace_op(op, [], [src])


class _Canonicalize(HasCanonicalizationPatternsTrait):
    @classmethod
    def get_canonicalization_patterns(cls) -> tuple[RewritePattern, ...]:
        return (CancelConversionPair(),)


@irdl_op_definition
class ToNchwcOp(RlxOp):
    """NCHW `[N, C, H, W]` -> blocked `[N, C/B, H, W, B]`: out[n, cb, h, w, j] = x[n,
    cb·B + j, h, w]."""

    name = "rlx.to_nchwc"
    x = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure(), DataMovement, _Canonicalize())
    block = int_def(doc="Channels per block B (a power of two dividing C).")

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs, given: Given = None) -> list[TensorType]:
        (t,) = operand_types
        s = shape_of(t)
        require(len(s) == 4, f"to_nchwc needs an NCHW operand (rank 4), got tensor<{fmt_shape(s)}>")
        b = attrs.block
        require(is_pow2(b), f"block must be a power of two, got {b}")
        require(s[1] != DYN, f"to_nchwc needs a static channel count, got tensor<{fmt_shape(s)}>")
        require(s[1] % b == 0, f"channels ({s[1]}) not divisible by block ({b})")
        return [blocked(t, b)]


@irdl_op_definition
class FromNchwcOp(RlxOp):
    """Blocked `[N, C/B, H, W, B]` -> NCHW `[N, C, H, W]` (the inverse of rlx.to_nchwc)."""

    name = "rlx.from_nchwc"
    x = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure(), DataMovement, _Canonicalize())

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs, given: Given = None) -> list[TensorType]:
        (t,) = operand_types
        check_blocked(t, "from_nchwc's operand")
        return [tensor(unblocked_shape(shape_of(t)), t.element_type)]
