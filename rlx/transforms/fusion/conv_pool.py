"""`conv_global_pool`: mean over H, W of a convolution -> the convolution with `reduce = "mean"`.

`rlx.reduce {kind = "mean", axes = [2, 3]}` (ONNX GlobalAveragePool, keepdims or not)
whose operand is an `rlx.conv2d` or `rlx.fused_conv2d_residual` (any epilogue, no
`reduce` yet) with that reduce as its only user becomes the convolution with
`reduce = "mean"`, result `[N, F, 1, 1]` (then an `rlx.reshape` to `[N, F]` without
keepdims). The lowering averages each activated output plane inside the convolution's
kernel, so the `[N, F, OH, OW]` planes are a kernel-local scratch buffer instead of a
graph value: no arena buffer, no separate kernel call, and the mean reads the planes
while they are hot in cache ([conv.md](../../../docs/conv.md#epilogues)). In a blocked
region, `blocked-layout` splits it again into the blocked conv and the blocked mean (the
blocked kernels are faster than the NCHW ones the fused form takes).
"""

from __future__ import annotations

from xdsl.ir import Operation
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern

from rlx.dialects.rlx.base import normalize_axis, shape_of, tensor
from rlx.dialects.rlx.compute import ReduceOp
from rlx.dialects.rlx.fused import FusedConv2dResidualOp
from rlx.dialects.rlx.shape import ReshapeOp
from rlx.dialects.rlx.window import Conv2dOp
from rlx.transforms.fusion.common import elem_type, float_tensor, sole_user

AnyConv = Conv2dOp | FusedConv2dResidualOp


def spatial_reduce(red: ReduceOp) -> bool:
    """`red` reduces exactly the two spatial axes [2, 3] of a rank-4 tensor."""
    rank = len(shape_of(red.x.type))
    if rank != 4 or red.axes is None:
        return False
    axes = [normalize_axis(a, rank) for a in red.axes]
    return sorted(axes) == [2, 3]


def pooled_conv(red: ReduceOp) -> AnyConv | None:
    """The convolution a global mean `red` reads, when the two can fuse: a float
    conv2d / fused_conv2d_residual without `reduce`, whose only user is `red`."""
    conv = red.x.owner
    if red.kind != "mean" or not spatial_reduce(red) or not isinstance(conv, AnyConv):
        return None
    if conv.reduce != "none" or not float_tensor(conv.result):
        return None
    return conv if sole_user(conv.result) is red else None


class FuseConvGlobalPool(RewritePattern):
    """reduce(mean, [2, 3])(conv) -> conv {reduce = "mean"} [-> reshape without keepdims]."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, red: ReduceOp, rewriter: PatternRewriter) -> None:
        conv = pooled_conv(red)
        if conv is None:
            return
        n, f = shape_of(conv.result.type)[:2]
        attrs = {**conv.attributes, **Conv2dOp.encode_attrs({"reduce": "mean"})}
        new = type(conv).create(
            operands=list(conv.operands),
            result_types=[tensor((n, f, 1, 1), elem_type(conv.result))],
            attributes=attrs,
        )
        new.location = conv.location
        ops: list[Operation] = [new]
        if not red.keepdims:
            ops.append(ReshapeOp.create(operands=[new.result], result_types=[red.result.type]))
        rewriter.replace(red, ops, [ops[-1].results[0]])
        rewriter.erase(conv)
