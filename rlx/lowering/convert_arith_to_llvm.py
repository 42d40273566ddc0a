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
    AnyFloat,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    VectorType,
    f32,
    f64,
    i1,
    i32,
    i64,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    RewritePattern,
    op_type_rewrite_pattern,
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
    llvm_operand,
    llvm_operands,
    make,
    replace_with_llvm,
)


@functools.cache
def llvm_fastmath(attr: arith.FastMathFlagsAttr) -> llvm.FastMathAttr:
    """The llvm.fastmath attribute with the same flags as an arith.fastmath one."""
    return fastmath(frozenset(f.value for f in attr.data))


def _width(t: Attribute, op: Operation) -> int:
    t = convert_type(t)
    if isinstance(t, IntegerType):
        return t.width.data
    if isinstance(t, AnyFloat):
        return t.bitwidth
    fail(op, f"convert-arith-to-llvm: expected a scalar integer or float type, got {t}")


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


def _int_resize(
    value: SSAValue, target: IntegerType, signed: bool, new_ops: list[Operation]
) -> SSAValue:
    """Sign/zero-extend or truncate an integer value to ``target``."""
    src = value.type
    assert isinstance(src, IntegerType)
    if src.width.data == target.width.data:
        return value
    if src.width.data > target.width.data:
        op: Operation = make(llvm.TruncOp, (value,), (target,))
    elif signed:
        op = make(llvm.SExtOp, (value,), (target,))
    else:
        op = make(llvm.ZExtOp, (value,), (target,))
    new_ops.append(op)
    return op.results[0]


class IntCastOpLowering(RewritePattern):
    """extsi/extui/trunci/index_cast -> llvm.sext/zext/trunc (or nothing)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(
        self,
        op: arith.ExtSIOp | arith.ExtUIOp | arith.TruncIOp | arith.IndexCastOp,
        rewriter: PatternRewriter,
        /,
    ) -> None:
        new_ops: list[Operation] = []
        value = llvm_operand(op.input, new_ops)
        target = convert_type(op.result.type)
        assert isinstance(target, IntegerType)
        res = _int_resize(value, target, not isinstance(op, arith.ExtUIOp), new_ops)
        replace_with_llvm(rewriter, op, new_ops, [res])


class FloatCastOpLowering(RewritePattern):
    """extf/truncf -> llvm.fpext/fptrunc (f16 <-> bf16 goes through f32; f64 -> f16/bf16
    goes through f32 rounded to odd: one correct rounding and no `__truncdfhf2` libcall,
    which a JIT process may lack — a fused region truncating f64 to f16 crashed on it)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(
        self, op: arith.ExtFOp | arith.TruncFOp, rewriter: PatternRewriter, /
    ) -> None:
        src, dst = op.input.type, op.result.type
        if src == dst:
            rewriter.replace(op, [], [op.input])
            return
        ws, wd = _width(src, op), _width(dst, op)
        if ws < wd:
            rewriter.replace(op, llvm.FPExtOp(op.input, dst))
        elif ws == 64 and wd == 16 and not isinstance(src, VectorType):
            new_ops = _f64_to_f32_odd(op.input)
            new_ops.append(llvm.FPTruncOp(new_ops[-1].results[0], dst))
            rewriter.replace(op, new_ops)
        elif ws > wd:
            rewriter.replace(op, llvm.FPTruncOp(op.input, dst))
        else:
            ext = llvm.FPExtOp(op.input, f32)
            rewriter.replace(op, [ext, llvm.FPTruncOp(ext.result, dst)])


def _f64_to_f32_odd(x: SSAValue) -> list[Operation]:
    """llvm ops rounding f64 `x` to f32 to odd (the last op's result): the same steps as
    `kernel_builder.f64_to_f32_odd` (the arith form the kernels and the fp8 encoder emit;
    this pass converts in one walk, so it cannot emit arith ops for itself)."""

    def fcmp(a: SSAValue, b: SSAValue, pred: int) -> Operation:
        props = {"predicate": int_attr(pred, i64), "fastmathFlags": NO_FASTMATH}
        return make(llvm.FCmpOp, (a, b), (i1,), props)

    r = llvm.FPTruncOp(x, f32)
    back = llvm.FPExtOp(r.results[0], f64)
    inexact = fcmp(back.results[0], x, 6)  # one
    above = fcmp(back.results[0], x, 2)  # ogt
    zero = constant(0.0, f64)
    negative = fcmp(x, zero.results[0], 4)  # olt
    away = llvm.XOrOp(above.results[0], negative.results[0])
    dec = llvm.AndOp(inexact.results[0], away.results[0])
    bits = llvm.BitcastOp(r.results[0], i32)
    one = constant(1, i32)
    down = llvm.SubOp(bits.results[0], one.results[0])
    picked = make(llvm.SelectOp, (dec.results[0], down.results[0], bits.results[0]), (i32,),
                  {"fastmathFlags": NO_FASTMATH})  # fmt: skip
    sticky = make(llvm.ZExtOp, (inexact.results[0],), (i32,))
    odd = llvm.OrOp(picked.results[0], sticky.results[0])
    out = llvm.BitcastOp(odd.results[0], f32)
    return [r, back, inexact, above, zero, negative, away, dec, bits, one, down, picked,
            sticky, odd, out]  # fmt: skip


class IntToFloatOpLowering(RewritePattern):
    """sitofp -> llvm.sitofp; uitofp -> zext + sitofp (or a halving expansion for i64)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(
        self, op: arith.SIToFPOp | arith.UIToFPOp, rewriter: PatternRewriter, /
    ) -> None:
        dst = op.result.type
        if isinstance(op, arith.SIToFPOp):
            rewriter.replace(op, llvm.SIToFPOp(op.input, dst))
            return
        src = op.input.type
        assert isinstance(src, IntegerType)
        width = src.width.data
        new_ops: list[Operation] = []
        if width < 64:
            wide = _int_resize(op.input, i64, False, new_ops)
            new_ops.append(llvm.SIToFPOp(wide, dst))
            rewriter.replace(op, new_ops)
            return
        if width > 64:
            fail(op, "convert-arith-to-llvm: uitofp from more than 64 bits is not supported")
        # x >= 0: sitofp(x); else 2 * sitofp((x >> 1) | (x & 1)) (keeps round-to-nearest)
        x = op.input
        zero, one = constant(0, src), constant(1, src)
        nonneg = llvm.ICmpOp(x, zero.result, IntegerAttr(5, i64))  # sge
        direct = llvm.SIToFPOp(x, dst)
        half = llvm.LShrOp(x, one.result)
        low = llvm.AndOp(x, one.result)
        packed = llvm.OrOp(half.res, low.res)
        packed_f = llvm.SIToFPOp(packed.res, dst)
        doubled = llvm.FAddOp(packed_f.result, packed_f.result)
        res = llvm.SelectOp(nonneg.res, direct.result, doubled.res)
        new_ops += [zero, one, nonneg, direct, half, low, packed, packed_f, doubled, res]
        rewriter.replace(op, new_ops)


class FloatToIntOpLowering(RewritePattern):
    """fptosi/fptoui -> llvm.fptosi.sat / llvm.fptoui.sat (saturating, NaN -> 0)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(
        self, op: arith.FPToSIOp | arith.FPToUIOp, rewriter: PatternRewriter, /
    ) -> None:
        kind = "fptosi" if isinstance(op, arith.FPToSIOp) else "fptoui"
        dst = op.result.type
        name = f"llvm.{kind}.sat.{intrinsic_suffix(dst)}.{intrinsic_suffix(op.input.type)}"
        rewriter.replace(op, call_intrinsic(name, [op.input], dst))


class BitcastOpLowering(RewritePattern):
    """arith.bitcast -> llvm.bitcast (index is i64)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.BitcastOp, rewriter: PatternRewriter, /) -> None:
        new_ops: list[Operation] = []
        value = llvm_operand(op.input, new_ops)
        target = convert_type(op.result.type)
        if value.type == target:
            replace_with_llvm(rewriter, op, new_ops, [value])
            return
        new = llvm.BitcastOp(value, target)
        new_ops.append(new)
        replace_with_llvm(rewriter, op, new_ops, [new.result])


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
