"""``convert-arith-to-llvm``: scalar arith ops -> llvm ops, keeping fast-math flags.

``index`` values become ``i64``. Ops without a one-to-one LLVM instruction are mapped to
intrinsics (``minimumf`` -> ``llvm.minimum``, ``maxsi`` -> ``llvm.smax``, ``fptosi`` ->
``llvm.fptosi.sat``: out-of-range inputs saturate instead of being poison) or expanded
(``uitofp`` from i64, ``floordivsi``, ``ceildivsi``, ``ceildivui``).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, llvm
from xdsl.dialects.builtin import (
    FloatAttr,
    IndexType,
    IntegerAttr,
    ModuleOp,
    i1,
    i32,
    i64,
)
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    RewritePattern,
    op_type_rewrite_pattern,
)

from rlx.lowering.arith_casts_to_llvm import (
    BitcastOpLowering,
    FloatCastOpLowering,
    FloatToIntOpLowering,
    IntCastOpLowering,
    IntToFloatOpLowering,
)
from rlx.lowering.llvm_common import (
    NO_FASTMATH,
    call_intrinsic,
    constant,
    convert_module,
    convert_type,
    fail,
    fastmath,
    int_attr,
    intrinsic_suffix,
    llvm_operands,
    make,
    replace_with_llvm,
)


@functools.cache
def llvm_fastmath(attr: arith.FastMathFlagsAttr) -> llvm.FastMathAttr:
    """The llvm.fastmath attribute with the same flags as an arith.fastmath one."""
    return fastmath(frozenset(f.value for f in attr.data))


class ConstantOpLowering(RewritePattern):
    """arith.constant (scalar int/index/float) -> llvm.mlir.constant."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.ConstantOp, rewriter: PatternRewriter, /) -> None:
        typ = convert_type(op.result.type)
        value = op.value
        if isinstance(value, IntegerAttr):
            if isinstance(value.type, IndexType):
                value = int_attr(value.value.data, typ)
        elif not isinstance(value, FloatAttr):
            fail(op, f"convert-arith-to-llvm: only scalar constants are supported, got {op.value}")
        new = make(llvm.ConstantOp, (), (typ,), {"value": value})
        replace_with_llvm(rewriter, op, [new], [new.result])


_OVERFLOW_INT_BINOPS: dict[type[Operation], type[llvm.ArithmeticBinOpOverflow]] = {
    arith.AddiOp: llvm.AddOp,
    arith.SubiOp: llvm.SubOp,
    arith.MuliOp: llvm.MulOp,
    arith.ShLIOp: llvm.ShlOp,
}

_PLAIN_INT_BINOPS: dict[type[Operation], type[Operation]] = {
    arith.DivSIOp: llvm.SDivOp,
    arith.DivUIOp: llvm.UDivOp,
    arith.RemSIOp: llvm.SRemOp,
    arith.RemUIOp: llvm.URemOp,
    arith.AndIOp: llvm.AndOp,
    arith.OrIOp: llvm.OrOp,
    arith.XOrIOp: llvm.XOrOp,
    arith.ShRUIOp: llvm.LShrOp,
    arith.ShRSIOp: llvm.AShrOp,
}

_INT_MINMAX: dict[type[Operation], str] = {
    arith.MaxSIOp: "llvm.smax",
    arith.MinSIOp: "llvm.smin",
    arith.MaxUIOp: "llvm.umax",
    arith.MinUIOp: "llvm.umin",
}


class IntBinaryOpLowering(RewritePattern):
    """Integer/index binary arith ops -> llvm add/sub/.../smax (overflow flags kept)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(
        self,
        op: arith.AddiOp
        | arith.SubiOp
        | arith.MuliOp
        | arith.ShLIOp
        | arith.DivSIOp
        | arith.DivUIOp
        | arith.RemSIOp
        | arith.RemUIOp
        | arith.AndIOp
        | arith.OrIOp
        | arith.XOrIOp
        | arith.ShRUIOp
        | arith.ShRSIOp
        | arith.MaxSIOp
        | arith.MinSIOp
        | arith.MaxUIOp
        | arith.MinUIOp,
        rewriter: PatternRewriter,
        /,
    ) -> None:
        new_ops: list[Operation] = []
        lhs, rhs = llvm_operands((op.lhs, op.rhs), new_ops)
        kind = type(op)
        new: Operation
        if (ovf_cls := _OVERFLOW_INT_BINOPS.get(kind)) is not None:
            flags = op.properties.get("overflowFlags")
            bits = 0
            if isinstance(flags, arith.IntegerOverflowAttr):
                names = {f.value for f in flags.data}
                bits = (1 if "nsw" in names else 0) | (2 if "nuw" in names else 0)
            new = make(ovf_cls, (lhs, rhs), (lhs.type,), {"overflowFlags": int_attr(bits, i32)})
        elif (plain_cls := _PLAIN_INT_BINOPS.get(kind)) is not None:
            new = make(plain_cls, (lhs, rhs), (lhs.type,))
        else:
            name = f"{_INT_MINMAX[kind]}.{intrinsic_suffix(lhs.type)}"
            new = call_intrinsic(name, [lhs, rhs], lhs.type)
        new_ops.append(new)
        replace_with_llvm(rewriter, op, new_ops, [new.results[0]])


_FLOAT_BINOPS: dict[type[Operation], type[Operation]] = {
    arith.AddfOp: llvm.FAddOp,
    arith.SubfOp: llvm.FSubOp,
    arith.MulfOp: llvm.FMulOp,
    arith.DivfOp: llvm.FDivOp,
    arith.MaxnumfOp: llvm.VectorFMaxOp,
    arith.MinnumfOp: llvm.VectorFMinOp,
}

_FLOAT_MINMAX: dict[type[Operation], str] = {
    arith.MaximumfOp: "llvm.maximum",
    arith.MinimumfOp: "llvm.minimum",
}


class FloatBinaryOpLowering(RewritePattern):
    """Float binary arith ops -> llvm fadd/.../llvm.maximum, fast-math flags kept."""

    @op_type_rewrite_pattern
    def match_and_rewrite(
        self,
        op: arith.AddfOp
        | arith.SubfOp
        | arith.MulfOp
        | arith.DivfOp
        | arith.MaxnumfOp
        | arith.MinnumfOp
        | arith.MaximumfOp
        | arith.MinimumfOp,
        rewriter: PatternRewriter,
        /,
    ) -> None:
        fmf = llvm_fastmath(op.fastmath)
        if (cls := _FLOAT_BINOPS.get(type(op))) is not None:
            new = make(cls, (op.lhs, op.rhs), (op.lhs.type,), {"fastmathFlags": fmf})
        else:
            name = f"{_FLOAT_MINMAX[type(op)]}.{intrinsic_suffix(op.lhs.type)}"
            new = call_intrinsic(name, [op.lhs, op.rhs], op.lhs.type, fmf)
        rewriter.replace(op, new)


class NegfOpLowering(RewritePattern):
    """arith.negf -> llvm.fneg."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.NegfOp, rewriter: PatternRewriter, /) -> None:
        fmf = llvm_fastmath(op.fastmath)
        rewriter.replace(
            op, make(llvm.FNegOp, (op.operand,), (op.operand.type,), {"fastmathFlags": fmf})
        )


class CmpiOpLowering(RewritePattern):
    """arith.cmpi -> llvm.icmp (same predicate numbering)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.CmpiOp, rewriter: PatternRewriter, /) -> None:
        new_ops: list[Operation] = []
        lhs, rhs = llvm_operands((op.lhs, op.rhs), new_ops)
        pred = int_attr(op.predicate.value.data, i64)
        new_ops.append(make(llvm.ICmpOp, (lhs, rhs), (i1,), {"predicate": pred}))
        rewriter.replace(op, new_ops)


class CmpfOpLowering(RewritePattern):
    """arith.cmpf -> llvm.fcmp (same predicate numbering), fast-math flags kept."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.CmpfOp, rewriter: PatternRewriter, /) -> None:
        props = {
            "predicate": int_attr(op.predicate.value.data, i64),
            "fastmathFlags": llvm_fastmath(op.fastmath),
        }
        rewriter.replace(op, make(llvm.FCmpOp, (op.lhs, op.rhs), (i1,), props))


class SelectOpLowering(RewritePattern):
    """arith.select -> llvm.select."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.SelectOp, rewriter: PatternRewriter, /) -> None:
        new_ops: list[Operation] = []
        cond, lhs, rhs = llvm_operands((op.cond, op.lhs, op.rhs), new_ops)
        new = make(llvm.SelectOp, (cond, lhs, rhs), (lhs.type,), {"fastmathFlags": NO_FASTMATH})
        new_ops.append(new)
        replace_with_llvm(rewriter, op, new_ops, [new.res])


class DivRoundingOpLowering(RewritePattern):
    """floordivsi / ceildivsi / ceildivui -> division plus a remainder-based correction."""

    @op_type_rewrite_pattern
    def match_and_rewrite(
        self,
        op: arith.FloorDivSIOp | arith.CeilDivSIOp | arith.CeilDivUIOp,
        rewriter: PatternRewriter,
        /,
    ) -> None:
        new_ops: list[Operation] = []
        a, b = llvm_operands((op.lhs, op.rhs), new_ops)
        t = a.type
        zero = constant(0, t)
        new_ops.append(zero)
        if isinstance(op, arith.CeilDivUIOp):
            q = llvm.UDivOp(a, b)
            r = llvm.URemOp(a, b)
            nz = llvm.ICmpOp(r.res, zero.result, IntegerAttr(1, i64))  # ne
            inc = llvm.ZExtOp(nz.res, t)
            res = llvm.AddOp(q.res, inc.res)
            new_ops += [q, r, nz, inc, res]
            replace_with_llvm(rewriter, op, new_ops, [res.res])
            return
        q = llvm.SDivOp(a, b)
        r = llvm.SRemOp(a, b)
        nz = llvm.ICmpOp(r.res, zero.result, IntegerAttr(1, i64))  # ne
        sign = llvm.XOrOp(r.res, b)
        floor = isinstance(op, arith.FloorDivSIOp)
        # floor: adjust when signs of r and b differ (xor < 0); ceil: when they agree
        pred = 2 if floor else 5  # slt / sge
        differ = llvm.ICmpOp(sign.res, zero.result, IntegerAttr(pred, i64))
        adjust = llvm.AndOp(nz.res, differ.res)
        delta = llvm.ZExtOp(adjust.res, t)
        res = llvm.SubOp(q.res, delta.res) if floor else llvm.AddOp(q.res, delta.res)
        new_ops += [q, r, nz, sign, differ, adjust, delta, res]
        replace_with_llvm(rewriter, op, new_ops, [res.res])


def arith_to_llvm_patterns() -> list[RewritePattern]:
    """The patterns of this pass (also used by ``convert-to-llvm``)."""
    return [
        ConstantOpLowering(),
        IntBinaryOpLowering(),
        FloatBinaryOpLowering(),
        CmpiOpLowering(),
        CmpfOpLowering(),
        SelectOpLowering(),
        IntCastOpLowering(),
        FloatCastOpLowering(),
        IntToFloatOpLowering(),
        FloatToIntOpLowering(),
        NegfOpLowering(),
        BitcastOpLowering(),
        DivRoundingOpLowering(),
    ]


DIALECTS: tuple[str, ...] = ("arith",)
"""The dialects this pass converts completely."""


@dataclass(frozen=True)
class ConvertArithToLLVMPass(ModulePass):
    """Lower scalar arith ops to the llvm dialect (index -> i64), keeping fast-math flags."""

    name = "convert-arith-to-llvm"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        convert_module(op, arith_to_llvm_patterns(), DIALECTS, self.name)
