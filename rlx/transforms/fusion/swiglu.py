"""SwiGLU patterns: `swiglu_dual_matmul` (silu(x@Wg) * (x@Wu)) and `swiglu` (the packed
halves of one tensor)."""

from __future__ import annotations

from xdsl.ir import SSAValue
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern

from rlx.dialects.rlx.base import bool_attr, shape_of
from rlx.dialects.rlx.compute import MatmulOp
from rlx.dialects.rlx.elementwise import MulOp, SiluOp
from rlx.dialects.rlx.shape import SliceOp
from rlx.transforms.fusion.common import make_op, only_user, producer


def silu_and_other(mul: MulOp) -> tuple[SiluOp, SSAValue] | None:
    """(silu op, other operand) for mul(silu(a), b) or mul(b, silu(a))."""
    for a, b in ((mul.lhs, mul.rhs), (mul.rhs, mul.lhs)):
        silu = producer(a, SiluOp)
        if silu is not None and a is not b:
            return silu, b
    return None


def dual_matmuls(mul: MulOp) -> tuple[SiluOp, MatmulOp, MatmulOp] | None:
    """(silu, gate matmul, up matmul) when `mul` is mul(silu(x@Wg), y@Wu) (any x, y)."""
    for a, b in ((mul.lhs, mul.rhs), (mul.rhs, mul.lhs)):
        silu = producer(a, SiluOp)
        up = producer(b, MatmulOp)
        gate = producer(silu.x, MatmulOp) if silu is not None else None
        if silu is not None and gate is not None and up is not None and gate is not up:
            return silu, gate, up
    return None


class FuseSwigluDualMatmul(RewritePattern):
    """mul(silu(x @ Wg), x @ Wu) -> rlx.fused_swiglu(x, Wg, Wu) (the 3-operand form)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, mul: MulOp, rewriter: PatternRewriter) -> None:
        found = dual_matmuls(mul)
        if found is None:
            return
        silu, gate, up = found
        if gate.a is not up.a:
            return
        if (
            only_user(gate.result, SiluOp) is not silu
            or only_user(silu.result, MulOp) is not mul
            or only_user(up.result, MulOp) is not mul
        ):
            return
        fused = make_op("rlx.fused_swiglu", [gate.a, gate.b, up.b], {}, like=mul)
        if fused is None or fused.results[0].type != mul.result.type:
            return
        rewriter.replace(mul, fused)
        rewriter.erase(silu)
        rewriter.erase(gate)
        rewriter.erase(up)


def _half(sl: SliceOp) -> tuple[SSAValue, int, int] | None:
    """(source, start, limit) of a unit-stride slice taking only part of the last axis."""
    shape = shape_of(sl.x.type)
    starts, limits = sl.starts, sl.limits
    strides = sl.strides or (1,) * len(shape)
    if not shape or starts is None or limits is None or strides is None:
        return None
    if any(s != 1 for s in strides):
        return None
    if any(a != 0 or b != d for a, b, d in zip(starts[:-1], limits[:-1], shape[:-1], strict=True)):
        return None
    return sl.x, starts[-1], limits[-1]


class FuseSwiglu(RewritePattern):
    """mul(slice_up(h), silu(slice_gate(h))), the slices being the two halves of h's last
    axis (either order) -> rlx.fused_swiglu(h) {gate_first}."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, mul: MulOp, rewriter: PatternRewriter) -> None:
        found = silu_and_other(mul)
        if found is None:
            return
        silu, up_val = found
        gate_sl, up_sl = producer(silu.x, SliceOp), producer(up_val, SliceOp)
        if gate_sl is None or up_sl is None:
            return
        g, u = _half(gate_sl), _half(up_sl)
        if g is None or u is None or g[0] is not u[0]:
            return
        h = g[0]
        n2 = shape_of(h.type)[-1]
        if n2 < 0 or n2 % 2:
            return
        n = n2 // 2
        if {(g[1], g[2]), (u[1], u[2])} != {(0, n), (n, n2)}:
            return
        if (
            only_user(gate_sl.result, SiluOp) is not silu
            or only_user(silu.result, MulOp) is not mul
            or only_user(up_sl.result, MulOp) is not mul
        ):
            return
        fused = make_op("rlx.fused_swiglu", [h], {"gate_first": bool_attr(g[1] == 0)}, like=mul)
        if fused is None or fused.results[0].type != mul.result.type:
            return
        rewriter.replace(mul, fused)
        rewriter.erase(silu)
        rewriter.erase(gate_sl)
        rewriter.erase(up_sl)
