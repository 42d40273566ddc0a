"""``convert-math-to-llvm``: math ops -> LLVM intrinsics, vectorizable expansions, libm calls.

* LLVM intrinsics where they exist (``llvm.sqrt``, ``llvm.log``, ``llvm.fabs``, ``llvm.floor``,
  ``llvm.ceil``, ``llvm.roundeven``, ``llvm.round``, ``llvm.trunc``, ``llvm.pow``, ``llvm.fma``,
  ``llvm.sin``, ``llvm.cos``, ``llvm.copysign``, ``llvm.exp2``, ``llvm.log2``, ``llvm.log10``,
  ``llvm.powi``, ``llvm.abs``, ``llvm.ctlz``/``cttz``/``ctpop``), fast-math flags kept.
* Branch-free expansions that LLVM's loop vectorizer can widen. Each lives once per module
  in an ``internal`` ``alwaysinline`` helper (``@__rlx_exp_f32``, ``@__rlx_tanh_f32``,
  ``@__rlx_erf_f32``, ``@__rlx_log1p_<t>``, ``@__rlx_expm1_<t>``) and every math op becomes
  one ``llvm.call`` (the inliner runs before the vectorizer; far fewer xDSL ops to build):
  - ``exp`` (f32, option ``expand-exp``, on by default): Cody-Waite range reduction and a
    degree-6 polynomial by Horner (`math_expansions.EXP_POLY`), < 1 ulp. ``llvm.exp`` would
    be scalarised into ``expf`` calls.
    The result is scaled by 2^n either with exponent bits (two steps, fix-ups for +-inf and
    NaN: ~29 vector instructions) or, with ``exp-ldexp`` (default: on AVX-512 hosts), by
    ``llvm.ldexp`` alone, one ``vscalefps`` (~17; the gelu_tanh chain of issue 17 went
    from 0.70 to 0.54 ns per element on one znver4 core, results bit for bit the same).
    An operand that is `-|y|` (`known_nonpositive`: the logistic function's formula) takes
    the cheap form for x <= 0 (``@__rlx_exp_nonpositive_f32``, `gemm.vector_act`: scaling
    by exponent bits in two exact steps, no clamps, ~17 vector instructions; gradual underflow);
  - ``tanh`` (f32): Eigen's [13/6] rational on ``[-7.905, 7.905]``, rel. error < 4e-7;
  - ``erf`` (f32): two minimax polynomials evaluated in f32 with ``llvm.fmuladd`` (no f64:
    full SIMD width), max error 1.30 ulp over all f32 inputs on FMA hosts;
  - ``expm1`` and ``log1p`` with Kahan's cancellation trick; ``rsqrt`` is ``1 / sqrt``.
  ``sin``, ``cos``, ``log``, ``pow``... stay intrinsics, which LLVM turns into scalar libm
  calls inside vectorized loops.
* libm calls for f64 ``erf``/``tanh`` and for ``atan``, ``atan2``, ``tan``, ``sinh``, ``cosh``,
  ``asin``, ``acos``, ``asinh``, ``acosh``, ``atanh``, ``cbrt`` (not vectorized).
* ``f16``/``bf16`` float math is computed in f32 (extend, compute, truncate).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, llvm, math
from xdsl.dialects.builtin import (
    BFloat16Type,
    Float16Type,
    Float32Type,
    Float64Type,
    IntegerType,
    ModuleOp,
    f32,
    i1,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    RewritePattern,
)

from rlx.lowering.convert_arith_to_llvm import llvm_fastmath
from rlx.lowering.gemm import vector_act
from rlx.lowering.llvm_common import (
    NO_FASTMATH,
    call_intrinsic,
    convert_module,
    fail,
    intrinsic_suffix,
    llvm_operands,
    replace_with_llvm,
)
from rlx.lowering.math_expansions import (
    MathEmitter,
    erf_f32,
    exp_f32,
    exp_f32_ldexp,
    expm1,
    host_has_scalef,
    log1p,
    tanh_f32,
)

_LIBM: dict[type[Operation], str] = {
    math.AtanOp: "atan",
    math.Atan2Op: "atan2",
    math.TanOp: "tan",
    math.SinhOp: "sinh",
    math.CoshOp: "cosh",
    math.AsinOp: "asin",
    math.AcosOp: "acos",
    math.AsinhOp: "asinh",
    math.AcoshOp: "acosh",
    math.AtanhOp: "atanh",
    math.CbrtOp: "cbrt",
}

_FLOAT_INTRINSICS: dict[type[Operation], str] = {
    math.AbsFOp: "llvm.fabs",
    math.CeilOp: "llvm.ceil",
    math.FloorOp: "llvm.floor",
    math.SqrtOp: "llvm.sqrt",
    math.Exp2Op: "llvm.exp2",
    math.LogOp: "llvm.log",
    math.Log2Op: "llvm.log2",
    math.Log10Op: "llvm.log10",
    math.SinOp: "llvm.sin",
    math.CosOp: "llvm.cos",
    math.RoundEvenOp: "llvm.roundeven",
    math.RoundOp: "llvm.round",
    math.TruncOp: "llvm.trunc",
    math.PowFOp: "llvm.pow",
    math.CopySignOp: "llvm.copysign",
    math.FmaOp: "llvm.fma",
}

_INT_INTRINSICS: dict[type[Operation], tuple[str, bool]] = {
    # name, takes the extra `i1 false` (poison-on-zero / int-min-is-poison) argument
    math.AbsIOp: ("llvm.abs", True),
    math.CountLeadingZerosOp: ("llvm.ctlz", True),
    math.CountTrailingZerosOp: ("llvm.cttz", True),
    math.CtPopOp: ("llvm.ctpop", False),
}


_FLOAT_CASTS = (arith.ExtFOp, arith.TruncFOp, llvm.FPExtOp, llvm.FPTruncOp)
"""Float conversions: they keep a value's sign (f16 / bf16 math is computed in f32)."""


def _through_casts(v: SSAValue) -> Operation | None:
    """The op defining `v`, looking through float conversions."""
    op = v.owner
    while isinstance(op, _FLOAT_CASTS):
        op = op.operands[0].owner
    return op if isinstance(op, Operation) else None


def _is_fabs(op: Operation | None) -> bool:
    if isinstance(op, math.AbsFOp | llvm.FAbsOp):
        return True
    return isinstance(op, llvm.CallIntrinsicOp) and op.intrin.data.startswith("llvm.fabs.")


def known_nonpositive(v: SSAValue) -> bool:
    """`v` is `-|y|` (negated absolute value, in arith / math or llvm ops; through float
    conversions): never positive, NaN where y is. The sign fact the math lowering uses."""
    op = _through_casts(v)
    return isinstance(op, arith.NegfOp | llvm.FNegOp) and _is_fabs(_through_casts(op.operands[0]))


def _lower_float(
    op: Operation,
    e: MathEmitter,
    args: list[SSAValue],
    t: Attribute,
    expand_exp: bool,
    exp_ldexp: bool = False,
) -> SSAValue:
    """Lower one float math op whose operands are f32 or f64 values ``args``."""
    fm_attr = op.properties.get("fastmath")
    fmf = llvm_fastmath(fm_attr) if isinstance(fm_attr, arith.FastMathFlagsAttr) else None
    kind = type(op)
    if (name := _FLOAT_INTRINSICS.get(kind)) is not None:
        return e.intr(name, args, t, fmf)
    is_f32 = isinstance(t, Float32Type)
    sfx = intrinsic_suffix(t)
    if kind is math.ExpOp:
        if expand_exp and is_f32 and known_nonpositive(op.operands[0]):
            return e.helper(
                "__rlx_exp_nonpositive_f32",
                args[0],
                lambda h, x: vector_act.exp_nonpositive(h, x, subnormal=True),
            )
        if expand_exp and is_f32:
            return e.helper("__rlx_exp_f32", args[0], exp_f32_ldexp if exp_ldexp else exp_f32)
        return e.intr("llvm.exp", args, t, fmf)
    if kind is math.TanhOp:
        return e.helper("__rlx_tanh_f32", args[0], tanh_f32) if is_f32 else e.libm("tanh", args, t)
    if kind is math.ErfOp:
        return e.helper("__rlx_erf_f32", args[0], erf_f32) if is_f32 else e.libm("erf", args, t)
    if kind is math.RsqrtOp:
        sqrt = e.intr("llvm.sqrt", args, t, fmf)
        return e.fdiv(e.const(1.0, t), sqrt, fmf if fmf is not None else NO_FASTMATH)
    if kind is math.Log1pOp:
        return e.helper(f"__rlx_log1p_{sfx}", args[0], lambda h, x: log1p(h, x, t))
    if kind is math.ExpM1Op:
        name = f"__rlx_expm1_{sfx}" + ("_llvm_exp" if is_f32 and not expand_exp else "")
        return e.helper(name, args[0], lambda h, x: expm1(h, x, t, expand_exp))
    if (base := _LIBM.get(kind)) is not None:
        return e.libm(base, args, t)
    fail(op, f"convert-math-to-llvm: unsupported operation '{op.name}'")


@dataclass(frozen=True)
class MathOpLowering(RewritePattern):
    """Every supported math op; dispatches on the op class (a dict lookup, not isinstance)."""

    expand_exp: bool = True
    exp_ldexp: bool = False

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if op.dialect_name() != "math":
            return
        kind = type(op)
        e = MathEmitter(op, rewriter)
        if kind is math.FPowIOp:
            self._fpowi(op, e, rewriter)
            return
        if (spec := _INT_INTRINSICS.get(kind)) is not None:
            (x,) = llvm_operands(op.operands, e.ops)
            args = [x, e.const(0, i1)] if spec[1] else [x]
            res = e.intr(spec[0], args, x.type)
            replace_with_llvm(rewriter, op, e.ops, [res])
            return
        t = op.results[0].type
        args = list(op.operands)
        if isinstance(t, Float16Type | BFloat16Type):
            wide = [e.add(llvm.FPExtOp(a, f32)) for a in args]
            low = _lower_float(op, e, wide, f32, self.expand_exp, self.exp_ldexp)
            res = e.add(llvm.FPTruncOp(low, t))
        elif isinstance(t, Float32Type | Float64Type):
            res = _lower_float(op, e, args, t, self.expand_exp, self.exp_ldexp)
        else:
            fail(op, f"convert-math-to-llvm: unsupported operation '{op.name}' on {t}")
        rewriter.replace(op, e.ops, [res])

    @staticmethod
    def _fpowi(op: Operation, e: MathEmitter, rewriter: PatternRewriter) -> None:
        assert isinstance(op, math.FPowIOp)
        base = op.lhs
        (exp,) = llvm_operands([op.rhs], e.ops)
        t = base.type
        if isinstance(t, Float16Type | BFloat16Type):
            base = e.add(llvm.FPExtOp(base, f32))
        et = exp.type
        assert isinstance(et, IntegerType)
        bt = base.type
        name = f"llvm.powi.{intrinsic_suffix(bt)}.{intrinsic_suffix(et)}"
        res = e.add(call_intrinsic(name, [base, exp], bt))
        if bt != t:
            res = e.add(llvm.FPTruncOp(res, t))
        rewriter.replace(op, e.ops, [res])


def math_to_llvm_patterns(
    expand_exp: bool = True, exp_ldexp: bool | None = None
) -> list[RewritePattern]:
    """The patterns of this pass (also used by ``convert-to-llvm``); `exp_ldexp` None:
    the host decides (`host_has_scalef`)."""
    ldexp = host_has_scalef() if exp_ldexp is None else exp_ldexp
    return [MathOpLowering(expand_exp, ldexp)]


DIALECTS: tuple[str, ...] = ("math",)
"""The dialects this pass converts completely."""


@dataclass(frozen=True)
class ConvertMathToLLVMPass(ModulePass):
    """Lower math ops to LLVM intrinsics, vectorizable expansions (exp/tanh/erf) and libm calls."""

    name = "convert-math-to-llvm"

    expand_exp: bool = True
    """Expand f32 ``math.exp`` into a vectorizable polynomial instead of ``llvm.exp``."""

    exp_ldexp: bool | None = None
    """Scale the expansion by ``llvm.ldexp`` (AVX-512 ``vscalefps``) instead of exponent
    bits and fix-ups; unset: where the host has AVX-512F."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        patterns = math_to_llvm_patterns(self.expand_exp, self.exp_ldexp)
        convert_module(op, patterns, DIALECTS, self.name)
