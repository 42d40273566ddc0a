"""`conv_input_scale`: conv(x · g) with a per-channel g -> conv(x, w · g).

A float `rlx.conv2d` / `rlx.fused_conv2d_residual` with one group whose input is the
single-user `rlx.mul(x, g)` (either order) by a per-input-channel `g` of shape
`[1, C, 1, 1]` or `[C, 1, 1]` (the same for every image) reads `x` directly with the
weights scaled instead: `Σ_c w[f, c, ·] · g[c] · x[c, ·] = Σ_c (w[f, c, ·] · g[c]) · x[c, ·]`
(zero padding stays zero). That is the squeeze-excite gate of EfficientNet / MobileNetV3
blocks at batch 1 (`x * sigmoid(fc(mean(x)))` feeding the projection conv): the gate
multiplies the `F·C·KH·KW` weights instead of the `N·C·H·W` activations, so it is done
only when the weights are fewer (EfficientNet-B0: 512 instead of 401k multiplies in its
first block; its 7×7 blocks, with more weights than pixels, keep the mul).
"""

from __future__ import annotations

from math import prod

from xdsl.ir import SSAValue
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern
from xdsl.rewriter import InsertPoint

from rlx.dialects.rlx.base import DYN, shape_of
from rlx.dialects.rlx.elementwise import MulOp
from rlx.dialects.rlx.fused import FusedConv2dResidualOp
from rlx.dialects.rlx.window import Conv2dOp
from rlx.transforms.fusion.common import float_tensor, sole_user

AnyConv = Conv2dOp | FusedConv2dResidualOp


def channel_gate(conv: AnyConv) -> tuple[MulOp, SSAValue, SSAValue] | None:
    """(mul, x, g) when `conv`'s input is a single-user mul of x [N, C, H, W] by a
    per-channel g ([1, C, 1, 1] or [C, 1, 1]) and scaling the weights is less work."""
    mul = conv.x.owner
    if not isinstance(mul, MulOp) or conv.groups != 1 or not float_tensor(conv.result):
        return None
    if sole_user(mul.result) is not conv:
        return None
    xs, ws = shape_of(conv.x.type), shape_of(conv.w.type)
    c = xs[1]
    if DYN in xs or DYN in ws:
        return None
    for x, g in ((mul.lhs, mul.rhs), (mul.rhs, mul.lhs)):
        if x.type == mul.result.type and shape_of(g.type) in ((1, c, 1, 1), (c, 1, 1)):
            return (mul, x, g) if prod(ws) < prod(xs) else None
    return None


class FuseConvInputScale(RewritePattern):
    """conv(mul(x, g)) -> conv(x, mul(w, g)) for a per-input-channel g."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, conv: AnyConv, rewriter: PatternRewriter) -> None:
        found = channel_gate(conv)
        if found is None:
            return
        mul, x, g = found
        scaled = MulOp.create(operands=[conv.w, g], result_types=[conv.w.type])
        scaled.location = mul.location
        rewriter.insert(scaled, InsertPoint.before(conv))
        conv.operands[0] = x
        conv.operands[1] = scaled.result
        rewriter.erase(mul)
        rewriter.handle_operation_modification(conv)
