"""``convert-to-llvm``: func, cf, arith, math and memref -> llvm in a single walk.

Runs the patterns of ``convert-func-to-llvm``, ``convert-cf-to-llvm``,
``convert-arith-to-llvm``, ``convert-math-to-llvm`` and ``convert-memref-to-llvm`` together
(one walk over the IR instead of five; they are independent thanks to the cast bridges),
plus a direct lowering of the ``affine.apply`` index computations that
``convert-linalg-to-loops`` leaves for non-identity indexing maps (broadcasts, windows).
Follow it with ``reconcile-unrealized-casts``.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import affine, llvm
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, i1, i64
from xdsl.ir import Operation, SSAValue
from xdsl.ir.affine import (
    AffineBinaryOpExpr,
    AffineBinaryOpKind,
    AffineConstantExpr,
    AffineDimExpr,
    AffineExpr,
    AffineSymExpr,
)
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    RewritePattern,
    op_type_rewrite_pattern,
)

from rlx.lowering.convert_arith_to_llvm import DIALECTS as ARITH
from rlx.lowering.convert_arith_to_llvm import arith_to_llvm_patterns
from rlx.lowering.convert_cf_to_llvm import DIALECTS as CF
from rlx.lowering.convert_cf_to_llvm import cf_to_llvm_patterns
from rlx.lowering.convert_func_to_llvm import DIALECTS as FUNC
from rlx.lowering.convert_func_to_llvm import func_to_llvm_patterns
from rlx.lowering.convert_math_to_llvm import DIALECTS as MATH
from rlx.lowering.convert_math_to_llvm import math_to_llvm_patterns
from rlx.lowering.convert_memref_to_llvm import DIALECTS as MEMREF
from rlx.lowering.convert_memref_to_llvm import memref_to_llvm_patterns
from rlx.lowering.llvm_common import (
    NO_FASTMATH,
    NSW,
    constant,
    convert_module,
    llvm_operands,
    make,
    replace_with_llvm,
)


def _affine_expr(
    expr: AffineExpr, dims: list[SSAValue], syms: list[SSAValue], new_ops: list[Operation]
) -> SSAValue:
    """i64 llvm ops computing an affine expression (mod/floordiv/ceildiv: rhs > 0)."""
    if isinstance(expr, AffineConstantExpr):
        return _add(new_ops, constant(expr.value, i64))
    if isinstance(expr, AffineDimExpr):
        return dims[expr.position]
    if isinstance(expr, AffineSymExpr):
        return syms[expr.position]
    assert isinstance(expr, AffineBinaryOpExpr)
    lhs = _affine_expr(expr.lhs, dims, syms, new_ops)
    rhs = _affine_expr(expr.rhs, dims, syms, new_ops)
    match expr.kind:
        case AffineBinaryOpKind.Add:
            return _add(new_ops, make(llvm.AddOp, (lhs, rhs), (i64,), {"overflowFlags": NSW}))
        case AffineBinaryOpKind.Mul:
            return _add(new_ops, make(llvm.MulOp, (lhs, rhs), (i64,), {"overflowFlags": NSW}))
        case _:
            zero = _add(new_ops, constant(0, i64))
            if expr.kind is AffineBinaryOpKind.CeilDiv:  # -floordiv(-a, b)
                lhs = _add(new_ops, make(llvm.SubOp, (zero, lhs), (i64,), {"overflowFlags": NSW}))
            rem = _add(new_ops, make(llvm.SRemOp, (lhs, rhs), (i64,)))
            neg = _add(new_ops, make(llvm.ICmpOp, (rem, zero), (i1,), {"predicate": _SLT}))
            if expr.kind is AffineBinaryOpKind.Mod:  # result in [0, rhs)
                fixed = _add(new_ops, make(llvm.AddOp, (rem, rhs), (i64,), {"overflowFlags": NSW}))
                return _add(new_ops, make(llvm.SelectOp, (neg, fixed, rem), (i64,), _NO_FMF))
            quot = _add(new_ops, make(llvm.SDivOp, (lhs, rhs), (i64,)))
            adj = _add(new_ops, make(llvm.SExtOp, (neg,), (i64,)))  # -1 if rem < 0
            floor = _add(new_ops, make(llvm.AddOp, (quot, adj), (i64,), {"overflowFlags": NSW}))
            if expr.kind is AffineBinaryOpKind.FloorDiv:
                return floor
            return _add(new_ops, make(llvm.SubOp, (zero, floor), (i64,), {"overflowFlags": NSW}))


def _add(new_ops: list[Operation], op: Operation) -> SSAValue:
    new_ops.append(op)
    return op.results[0]


_SLT = IntegerAttr(2, i64)
_NO_FMF = {"fastmathFlags": NO_FASTMATH}


class AffineApplyLowering(RewritePattern):
    """affine.apply -> i64 llvm arithmetic (what ``lower-affine`` + arith lowering give)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: affine.ApplyOp, rewriter: PatternRewriter, /) -> None:
        amap = op.map.data
        new_ops: list[Operation] = []
        operands = llvm_operands(op.mapOperands, new_ops)
        dims, syms = operands[: amap.num_dims], operands[amap.num_dims :]
        res = _affine_expr(amap.results[0], dims, syms, new_ops)
        replace_with_llvm(rewriter, op, new_ops, [res])


@dataclass(frozen=True)
class ConvertToLLVMPass(ModulePass):
    """Lower func, cf, arith, math and memref ops to the llvm dialect in one walk."""

    name = "convert-to-llvm"

    entry_align: int = 64
    """Alignment promised for memref arguments of public functions (0: none)."""

    noalias: bool = True
    """Mark memref arguments of public functions ``noalias``."""

    private_noinline: bool = False
    """Mark private definitions ``noinline`` (see ``convert-func-to-llvm``)."""

    expand_exp: bool = True
    """Expand f32 ``math.exp`` into a vectorizable polynomial instead of ``llvm.exp``."""

    max_alloca_bytes: int = 16384
    """memref.alloc of at most this many bytes that does not escape goes on the stack."""

    max_stack_bytes: int = 131072
    """Stack budget per function for such promoted allocs (the rest uses aligned_alloc)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        patterns = [
            *func_to_llvm_patterns(self.entry_align, self.noalias, self.private_noinline),
            *cf_to_llvm_patterns(),
            *memref_to_llvm_patterns(self.max_alloca_bytes, self.max_stack_bytes),
            *arith_to_llvm_patterns(),
            *math_to_llvm_patterns(self.expand_exp),
            AffineApplyLowering(),
        ]
        dialects = (*FUNC, *CF, *ARITH, *MATH, *MEMREF, "affine")
        convert_module(op, patterns, dialects, self.name, dce=True)
