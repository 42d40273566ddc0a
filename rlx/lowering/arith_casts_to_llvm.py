"""The cast half of ``convert-arith-to-llvm`` (`convert_arith_to_llvm`): integer resizes
(``extsi`` / ``extui`` / ``trunci``, ``index_cast``), float resizes (``extf`` / ``truncf``;
f16 <-> bf16 through f32, f64 -> f16 / bf16 through f32 rounded to odd), int <-> float
(``uitofp`` from i64 expanded; ``fptosi`` / ``fptoui`` saturating) and ``bitcast``."""

from __future__ import annotations

from xdsl.dialects import arith, llvm
from xdsl.dialects.builtin import (
    AnyFloat,
    IntegerAttr,
    IntegerType,
    VectorType,
    f32,
    f64,
    i1,
    i32,
    i64,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern

from rlx.lowering.llvm_common import (
    NO_FASTMATH,
    call_intrinsic,
    constant,
    convert_type,
    fail,
    int_attr,
    intrinsic_suffix,
    llvm_operand,
    make,
    replace_with_llvm,
)


def _width(t: Attribute, op: Operation) -> int:
    t = convert_type(t)
    if isinstance(t, IntegerType):
        return t.width.data
    if isinstance(t, AnyFloat):
        return t.bitwidth
    fail(op, f"convert-arith-to-llvm: expected a scalar integer or float type, got {t}")


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
    `scalar_builder.f64_to_f32_odd` (the arith form the kernels and the fp8 encoder emit;
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
