"""`canonicalize` for rlx, and the rlx simplification pattern table it shares with
`constant-folding` (`SIMPLIFY_PATTERNS`). An `rlx.if` on a constant condition becomes its
taken region.

Every pattern is exact: it never changes a value bit (except the sign of a zero in
`x + 0.0`), so `x - x` and float `x * 0` are not simplified (NaN / inf / -0).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    Float32Type,
    Float64Type,
    ModuleOp,
    TensorType,
)
from xdsl.ir import SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint
from xdsl.transforms.canonicalize import CanonicalizationRewritePattern
from xdsl.transforms.dead_code_elimination import region_dce

from rlx.dialects.rlx.base import DYN, ints_attr, is_int, shape_of
from rlx.dialects.rlx.control import IfOp, YieldOp
from rlx.dialects.rlx.elementwise import (
    AddOp,
    CastOp,
    DivOp,
    MulOp,
    NegOp,
    ReluOp,
    SigmoidOp,
    SiluOp,
    SubOp,
)
from rlx.dialects.rlx.leaves import ConstantOp
from rlx.dialects.rlx.shape import BroadcastToOp, ConcatOp, ReshapeOp, SliceOp, TransposeOp
from rlx.dtypes import numpy_dtype
from rlx.interpreter import to_numpy
from rlx.transforms.dce import RemoveDeadOp
from rlx.transforms.expansion import dense


def const_value(v: SSAValue) -> np.ndarray | None:
    """The array of an `rlx.constant` result, else None. A splat is a read-only broadcast
    view of its one element: `dense<0.0> : tensor<1099511627776xf32>` is not 4 TiB."""
    if not isinstance(v.owner, ConstantOp):
        return None
    attr = v.owner.value
    shape, et = tuple(attr.get_shape()), attr.get_element_type()
    if math.prod(shape) > 1 and len(attr.data.data) == numpy_dtype(et).itemsize:
        one = to_numpy(DenseIntOrFPElementsAttr(TensorType(et, []), attr.data))
        return np.broadcast_to(one, shape)
    return to_numpy(attr)


def _all_equal(v: SSAValue, x: float) -> bool:
    a = const_value(v)
    if a is None or a.size == 0:
        return False
    if a.strides and not any(a.strides):  # a splat: its one element
        return bool(a.reshape(-1)[:1] == x)
    return bool(np.all(a == x))


def _static_or_single_dyn(t: TensorType) -> bool:
    return sum(d == DYN for d in shape_of(t)) <= 1


# ----------------------------------------------------------------------------- arithmetic identities


class IdentityArith(RewritePattern):
    """x+0, 0+x, x-0, x*1, 1*x, x/1 -> x when the constant does not change x's type."""

    @op_type_rewrite_pattern
    def match_and_rewrite(
        self, op: AddOp | SubOp | MulOp | DivOp, rewriter: PatternRewriter
    ) -> None:
        unit = 0.0 if isinstance(op, AddOp | SubOp) else 1.0
        lhs, rhs = op.lhs, op.rhs
        for x, c, ok in ((lhs, rhs, True), (rhs, lhs, isinstance(op, AddOp | MulOp))):
            if ok and x.type == op.result.type and _all_equal(c, unit):
                rewriter.replace(op, [], [x])
                return


class IntMulByZero(RewritePattern):
    """x*0 -> zeros for integer types only (for floats NaN/inf/-0 make it inexact)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: MulOp, rewriter: PatternRewriter) -> None:
        t = op.result.type
        assert isinstance(t, TensorType)
        if not is_int(t.element_type) or DYN in shape_of(t):
            return
        if _all_equal(op.lhs, 0) or _all_equal(op.rhs, 0):
            rewriter.replace(op, ConstantOp(dense(0, t)))


class DoubleNeg(RewritePattern):
    """neg(neg(x)) -> x."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: NegOp, rewriter: PatternRewriter) -> None:
        inner = op.x.owner
        if isinstance(inner, NegOp):
            rewriter.replace(op, [], [inner.x])


class ReluOfRelu(RewritePattern):
    """relu(relu(x)) -> relu(x)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: ReluOp, rewriter: PatternRewriter) -> None:
        if isinstance(op.x.owner, ReluOp):
            rewriter.replace(op, [], [op.x])


class MulSigmoidToSilu(RewritePattern):
    """f32/f64 x * sigmoid(x) (either order; that sigmoid used only here) -> silu(x): silu's
    formula is that product (`formula.silu`), so the values are the same, and a convolution
    or matmul epilogue can absorb it (ONNX exports SiLU as Sigmoid + Mul). Not for f16/bf16,
    where the separate ops round sigmoid(x) to the type and silu does not."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: MulOp, rewriter: PatternRewriter) -> None:
        t = op.result.type
        if not isinstance(t, TensorType) or not isinstance(
            t.element_type, Float32Type | Float64Type
        ):
            return
        for x, s in ((op.lhs, op.rhs), (op.rhs, op.lhs)):
            sig = s.owner
            if isinstance(sig, SigmoidOp) and sig.x is x and x.type == op.result.type:
                if len(list(s.uses)) == 1:
                    rewriter.replace(op, SiluOp(x))
                    return


# ----------------------------------------------------------------------------- data movement


def _perm(op: TransposeOp) -> tuple[int, ...]:
    p = op.permutation
    assert p is not None
    return p


class SimplifyTranspose(RewritePattern):
    """Identity transpose -> x; transpose(transpose(x)) -> one transpose (or x)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: TransposeOp, rewriter: PatternRewriter) -> None:
        perm = _perm(op)
        if list(perm) == sorted(perm):
            rewriter.replace(op, [], [op.x])
            return
        inner = op.x.owner
        if not isinstance(inner, TransposeOp):
            return
        first = _perm(inner)
        composed = [first[p] for p in perm]
        if composed == sorted(composed):
            rewriter.replace(op, [], [inner.x])
            return

        new = TransposeOp.create(
            operands=[inner.x],
            result_types=[op.result.type],
            attributes={"permutation": ints_attr(composed)},
        )
        rewriter.replace(op, new)


class SimplifyReshape(RewritePattern):
    """reshape to the same type -> x; reshape(reshape(x)) -> one reshape."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: ReshapeOp, rewriter: PatternRewriter) -> None:
        t = op.result.type
        assert isinstance(t, TensorType)
        if op.x.type == t and _static_or_single_dyn(t):
            rewriter.replace(op, [], [op.x])
            return
        inner = op.x.owner
        if isinstance(inner, ReshapeOp):
            rewriter.replace(op, ReshapeOp.create(operands=[inner.x], result_types=[t]))


class SameTypeNoop(RewritePattern):
    """cast / broadcast_to to the operand's own (static) type -> x."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: CastOp | BroadcastToOp, rewriter: PatternRewriter) -> None:
        t = op.result.type
        if op.x.type == t and (isinstance(op, CastOp) or DYN not in shape_of(t)):
            rewriter.replace(op, [], [op.x])


class BroadcastSplat(RewritePattern):
    """broadcast_to of a one-element constant -> a splat constant of the target type."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: BroadcastToOp, rewriter: PatternRewriter) -> None:
        a = const_value(op.x)
        t = op.result.type
        assert isinstance(t, TensorType)
        if a is None or a.size != 1 or DYN in shape_of(t):
            return
        rewriter.replace(op, ConstantOp(dense(a.reshape(()), t)))


class FullSlice(RewritePattern):
    """A slice covering the whole (static) operand with stride 1 -> x."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: SliceOp, rewriter: PatternRewriter) -> None:
        s = shape_of(op.x.type)
        starts, limits = op.starts, op.limits
        strides = op.strides or (1,) * len(s)
        if DYN in s or starts is None or limits is None or strides is None:
            return
        if all(a == 0 for a in starts) and tuple(limits) == s and all(st == 1 for st in strides):
            rewriter.replace(op, [], [op.x])


class SingleConcat(RewritePattern):
    """concat of one operand -> the operand."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: ConcatOp, rewriter: PatternRewriter) -> None:
        if len(op.xs) == 1 and op.xs[0].type == op.result.type:
            rewriter.replace(op, [], [op.xs[0]])


class ConstantIf(RewritePattern):
    """rlx.if on an rlx.constant condition -> the taken region's ops, inlined before it."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: IfOp, rewriter: PatternRewriter) -> None:
        c = const_value(op.cond)
        if c is None or c.size != 1:
            return
        block = (op.then_region if bool(c.reshape(-1)[0]) else op.else_region).block
        term = block.last_op
        assert isinstance(term, YieldOp)
        values = list(term.operands)
        rewriter.erase_op(term)
        rewriter.inline_block(block, InsertPoint.before(op))
        rewriter.replace_op(op, [], values)


SIMPLIFY_PATTERNS: tuple[type[RewritePattern], ...] = (
    IdentityArith,
    IntMulByZero,
    DoubleNeg,
    ReluOfRelu,
    MulSigmoidToSilu,
    SimplifyTranspose,
    SimplifyReshape,
    SameTypeNoop,
    BroadcastSplat,
    FullSlice,
    SingleConcat,
    ConstantIf,
)
"""The rlx simplification table (shared by canonicalize and constant-folding)."""


def simplify_patterns() -> list[RewritePattern]:
    return [p() for p in SIMPLIFY_PATTERNS]


@dataclass(frozen=True)
class RlxCanonicalizePass(ModulePass):
    """rlx simplifications + xDSL canonicalization patterns and folders + dead-op removal.

    Like MLIR's canonicalizer it erases dead ops, including unused params (an ABI change)
    and unused rng ops; constants are not evaluated (that is `constant-folding`).
    """

    name = "canonicalize"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        pattern = GreedyRewritePatternApplier(
            [RemoveDeadOp(), *simplify_patterns(), CanonicalizationRewritePattern()],
            ctx=ctx,
            folding_enabled=True,
        )
        PatternRewriteWalker(pattern, post_walk_func=region_dce).rewrite_module(op)
