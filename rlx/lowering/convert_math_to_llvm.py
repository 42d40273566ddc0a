"""``convert-math-to-llvm``: math ops -> LLVM intrinsics, vectorizable expansions, libm calls.

* LLVM intrinsics where they exist (``llvm.sqrt``, ``llvm.log``, ``llvm.fabs``, ``llvm.floor``,
  ``llvm.ceil``, ``llvm.roundeven``, ``llvm.round``, ``llvm.trunc``, ``llvm.pow``, ``llvm.fma``,
  ``llvm.sin``, ``llvm.cos``, ``llvm.copysign``, ``llvm.exp2``, ``llvm.log2``, ``llvm.log10``,
  ``llvm.powi``, ``llvm.abs``, ``llvm.ctlz``/``cttz``/``ctpop``), fast-math flags kept.
* Branch-free expansions that LLVM's loop vectorizer can widen. Each lives once per module
  in an ``internal`` ``alwaysinline`` helper (``@__rlx_exp_f32``, ``@__rlx_tanh_f32``,
  ``@__rlx_erf_f32``, ``@__rlx_log1p_<t>``, ``@__rlx_expm1_<t>``) and every math op becomes
  one ``llvm.call`` (the inliner runs before the vectorizer; far fewer xDSL ops to build):
  - ``exp`` (f32, option ``expand-exp``, on by default): Cephes-style range reduction and a
    degree-5 polynomial, < 1 ulp. ``llvm.exp`` would be scalarised into ``expf`` calls.
    The result is scaled by 2^n either with exponent bits (two steps, fix-ups for +-inf and
    NaN: ~29 vector instructions) or, with ``exp-ldexp`` (default: on AVX-512 hosts), by
    ``llvm.ldexp`` alone, one ``vscalefps`` (~17; the gelu_tanh chain of issue 17 went
    from 0.70 to 0.54 ns per element on one znver4 core, results bit for bit the same);
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

from collections.abc import Callable
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, llvm, math
from xdsl.dialects.builtin import (
    ArrayAttr,
    BFloat16Type,
    Float16Type,
    Float32Type,
    Float64Type,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    StringAttr,
    f32,
    i1,
    i32,
    i64,
)
from xdsl.dialects.utils import FastMathFlag
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    RewritePattern,
)
from xdsl.rewriter import InsertPoint

from rlx.lowering.convert_arith_to_llvm import llvm_fastmath
from rlx.lowering.llvm_common import (
    NO_FASTMATH,
    call_intrinsic,
    constant,
    convert_module,
    ensure_llvm_func,
    fail,
    fastmath,
    find_symbol,
    intrinsic_suffix,
    llvm_operands,
    make,
    replace_with_llvm,
)

_CONTRACT = fastmath(frozenset({FastMathFlag.ALLOW_CONTRACT.value}))
"""Flags of expansion-internal float ops: allow FMA contraction, nothing that can break them."""

# Eigen's generic_fast_tanh_float: tanh(x) ~ x * P(x^2) / Q(x^2) on |x| <= 7.905.
_TANH_P = (
    -2.76076847742355e-16,
    2.00018790482477e-13,
    -8.60467152213735e-11,
    5.12229709037114e-08,
    1.48572235717979e-05,
    6.37261928875436e-04,
    4.89352455891786e-03,
)
_TANH_Q = (1.19825839466702e-06, 1.18534705686654e-04, 2.26843463243900e-03, 4.89352518554385e-03)
_TANH_CLAMP = 7.90531110763549805

# erf on f32, all in f32 with fused multiply-adds; coefficients highest degree first, fitted
# (minimax in ulps, rounded to f32 one at a time with refits) for the evaluation below. Max
# error over all f32 inputs: 1.30 ulp with FMA (2.25 ulp, sampled, on hosts without FMA).
#   |x| < 1:       erf(x) = C0 |x| + |x|^3 S(x^2), C0 = 2/sqrt(pi) as hi + lo f32 parts, the
#                  big term added last: fma(|x|, C0_hi, |x| * (C0_lo + x^2 S(x^2)));
#   1 <= |x|:      erf(x) = L(|x| - 2.25); |x| - 2.25 is exact for |x| >= 1 (not below);
#   |x| > 3.9192:  erf(x) = 1 (f32 erf rounds to 1 from 3.91920590 on); the sign by copysign.
_ERF_SPLIT = 1.0
_ERF_ONE = 3.919205904006958
_ERF_C0_HI = 1.128379225730896
_ERF_C0_LO = -5.8635383e-8
_ERF_SMALL = (7.933773e-5, -8.036644e-4, 0.005191675, -0.026855815, 0.11283641, -0.37612632)
_ERF_MID = 2.25
_ERF_LARGE = (
    -2.483704e-7,
    1.9597794e-6,
    -2.5863415e-6,
    -1.770837e-5,
    6.635334e-5,
    -2.0749132e-5,
    -3.6973486e-4,
    0.0010097619,
    -6.707282e-4,
    -0.0029110406,
    0.010657893,
    -0.01908101,
    0.021724517,
    -0.016070604,
    0.007142319,
    0.9985373,
)

# Cephes expf: exp(r) ~ 1 + r + r^2 * P(r) on |r| <= ln(2)/2.
_EXP_P = (
    1.9875691500e-4,
    1.3981999507e-3,
    8.3334519073e-3,
    4.1665795894e-2,
    1.6666665459e-1,
    5.0000001201e-1,
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


_FCMP = {
    p: IntegerAttr(llvm.FCmpPredicateFlag(p).to_int(), i64) for p in ("ogt", "olt", "oeq", "uno")
}


class _Emitter:
    """Collects the llvm ops of one expansion; float ops default to ``contract`` only."""

    def __init__(self, anchor: Operation, rewriter: PatternRewriter) -> None:
        self.ops: list[Operation] = []
        self.anchor = anchor
        self.rewriter = rewriter

    def add(self, op: Operation) -> SSAValue:
        self.ops.append(op)
        return op.results[0]

    def const(self, value: float, t: Attribute) -> SSAValue:
        return self.add(constant(value, t))

    def fadd(self, a: SSAValue, b: SSAValue, fmf: llvm.FastMathAttr = _CONTRACT) -> SSAValue:
        return self.add(make(llvm.FAddOp, (a, b), (a.type,), {"fastmathFlags": fmf}))

    def fsub(self, a: SSAValue, b: SSAValue, fmf: llvm.FastMathAttr = _CONTRACT) -> SSAValue:
        return self.add(make(llvm.FSubOp, (a, b), (a.type,), {"fastmathFlags": fmf}))

    def fmul(self, a: SSAValue, b: SSAValue, fmf: llvm.FastMathAttr = _CONTRACT) -> SSAValue:
        return self.add(make(llvm.FMulOp, (a, b), (a.type,), {"fastmathFlags": fmf}))

    def fdiv(self, a: SSAValue, b: SSAValue, fmf: llvm.FastMathAttr = _CONTRACT) -> SSAValue:
        return self.add(make(llvm.FDivOp, (a, b), (a.type,), {"fastmathFlags": fmf}))

    def fcmp(self, pred: str, a: SSAValue, b: SSAValue) -> SSAValue:
        props = {"predicate": _FCMP[pred], "fastmathFlags": NO_FASTMATH}
        return self.add(make(llvm.FCmpOp, (a, b), (i1,), props))

    def select(self, c: SSAValue, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.add(make(llvm.SelectOp, (c, a, b), (a.type,), {"fastmathFlags": NO_FASTMATH}))

    def intr(
        self, name: str, args: list[SSAValue], t: Attribute, fmf: llvm.FastMathAttr | None = None
    ) -> SSAValue:
        return self.add(call_intrinsic(f"{name}.{intrinsic_suffix(t)}", args, t, fmf))

    def libm(self, base: str, args: list[SSAValue], t: Attribute) -> SSAValue:
        name = base + ("f" if isinstance(t, Float32Type) else "")
        ensure_llvm_func(
            self.anchor, name, llvm.LLVMFunctionType([t] * len(args), t), self.rewriter
        )
        return self.add(llvm.CallOp(name, *args, return_type=t))

    def helper(
        self,
        name: str,
        x: SSAValue,
        build: Callable[[_Emitter, SSAValue], SSAValue],
    ) -> SSAValue:
        """Call the module's ``alwaysinline`` helper ``name(x)``, building it on first use."""
        t = x.type
        module = self.anchor.get_toplevel_object()
        assert isinstance(module, ModuleOp)
        if find_symbol(module, name) is None:
            block = Block(arg_types=[t])
            inner = _Emitter(self.anchor, self.rewriter)
            res = build(inner, block.args[0])
            block.add_ops([*inner.ops, llvm.ReturnOp(res)])
            fn = llvm.FuncOp(
                name,
                llvm.LLVMFunctionType([t], t),
                linkage=llvm.LinkageAttr("internal"),
                body=Region(block),
                other_props={"passthrough": ArrayAttr([StringAttr("alwaysinline")])},
            )
            self.rewriter.insert(fn, InsertPoint.at_end(module.body.block))
        return self.add(llvm.CallOp(name, x, return_type=t))

    def horner(self, x: SSAValue, coeffs: tuple[float, ...], t: Attribute) -> SSAValue:
        acc = self.const(coeffs[0], t)
        for c in coeffs[1:]:
            acc = self.fadd(self.fmul(acc, x), self.const(c, t))
        return acc

    def fmuladd(self, a: SSAValue, b: SSAValue, c: SSAValue) -> SSAValue:
        """``a * b + c``, fused where the target has FMA (which product fuses is fixed)."""
        return self.intr("llvm.fmuladd", [a, b, c], a.type)

    def horner_fma(self, x: SSAValue, coeffs: tuple[float, ...], t: Attribute) -> SSAValue:
        acc = self.const(coeffs[0], t)
        for c in coeffs[1:]:
            acc = self.fmuladd(acc, x, self.const(c, t))
        return acc


def _exp_reduced(e: _Emitter, x: SSAValue, hi: SSAValue, lo: SSAValue) -> tuple[SSAValue, SSAValue]:
    """The shared range reduction of both f32 exp expansions: x clamped to [lo, hi],
    n = rint(x / ln 2), r = x - n ln 2 (two-part ln 2); returns (exp(r), n as i32)."""
    xc = e.select(e.fcmp("ogt", x, hi), hi, x)
    xc = e.select(e.fcmp("olt", xc, lo), lo, xc)
    # n = rint(x / ln 2) by the 1.5 * 2^23 trick: its integer value sits in the low bits
    magic = e.const(12582912.0, f32)
    shifted = e.fadd(e.fmul(xc, e.const(1.44269504088896341, f32)), magic)
    n = e.fsub(shifted, magic)
    r = e.fsub(xc, e.fmul(n, e.const(0.693359375, f32)))
    r = e.fsub(r, e.fmul(n, e.const(-2.12194440e-4, f32)))
    p = e.horner(r, _EXP_P, f32)
    y = e.fadd(e.fadd(e.fmul(e.fmul(p, r), r), r), e.const(1.0, f32))
    ni = e.add(llvm.SubOp(e.add(llvm.BitcastOp(shifted, i32)), e.const(0x4B400000, i32)))
    return y, ni


def _exp_f32(e: _Emitter, x: SSAValue) -> SSAValue:
    """exp(x) = 2^n * exp(r), n = rint(x / ln 2), r = x - n ln 2 (two-part ln 2)."""
    hi, lo = e.const(88.7228394, f32), e.const(-103.972, f32)
    y, ni = _exp_reduced(e, x, hi, lo)
    # 2^n as two normal powers of two so that n in [-150, 128] needs no special casing
    one, bias, mant = e.const(1, i32), e.const(127, i32), e.const(23, i32)
    n1 = e.add(llvm.AShrOp(ni, one))
    n2 = e.add(llvm.SubOp(ni, n1))
    s1 = e.add(llvm.BitcastOp(e.add(llvm.ShlOp(e.add(llvm.AddOp(n1, bias)), mant)), f32))
    s2 = e.add(llvm.BitcastOp(e.add(llvm.ShlOp(e.add(llvm.AddOp(n2, bias)), mant)), f32))
    res = e.fmul(e.fmul(y, s1), s2)
    res = e.select(e.fcmp("ogt", x, hi), e.const(float("inf"), f32), res)
    res = e.select(e.fcmp("olt", x, lo), e.const(0.0, f32), res)  # exp(-inf) is exactly 0
    return e.select(e.fcmp("uno", x, x), x, res)


def _exp_f32_ldexp(e: _Emitter, x: SSAValue) -> SSAValue:
    """exp(x) = ldexp(exp(r), n) as `_exp_f32`, the scaling by `llvm.ldexp` (one
    `vscalefps` on AVX-512: correctly rounded, overflow to inf, gradual underflow to 0).
    Clamping x to [-110, 100] keeps r small and still overflows / underflows where exp
    does (exp(100) = inf, exp(-110) = 0 in f32), so +-inf need no fix-up and NaN passes
    through the selects and the arithmetic; ~17 vector instructions instead of ~29."""
    y, ni = _exp_reduced(e, x, e.const(100.0, f32), e.const(-110.0, f32))
    return e.add(call_intrinsic("llvm.ldexp.f32.i32", [y, ni], f32))


def host_has_scalef() -> bool:
    """AVX-512F on this host: `llvm.ldexp` is one vector instruction (elsewhere LLVM may
    scalarize it into `ldexpf` calls)."""
    from rlx import host_cpu

    feats = host_cpu.features()
    return bool(feats and feats.get("avx512f"))


def _tanh_f32(e: _Emitter, x: SSAValue) -> SSAValue:
    """Eigen's clamped rational approximation; tiny |x| returns x."""
    hi, lo = e.const(_TANH_CLAMP, f32), e.const(-_TANH_CLAMP, f32)
    xc = e.select(e.fcmp("ogt", x, hi), hi, x)
    xc = e.select(e.fcmp("olt", xc, lo), lo, xc)
    x2 = e.fmul(xc, xc)
    p = e.fmul(e.horner(x2, _TANH_P, f32), xc)
    q = e.horner(x2, _TANH_Q, f32)
    res = e.fdiv(p, q)
    ax = e.intr("llvm.fabs", [x], f32)
    return e.select(e.fcmp("olt", ax, e.const(0.0004, f32)), x, res)


def _erf_f32(e: _Emitter, x: SSAValue) -> SSAValue:
    """Two f32 polynomials (see ``_ERF_SMALL``/``_ERF_LARGE``), both evaluated, one selected."""
    ax = e.intr("llvm.fabs", [x], f32)
    u = e.fmul(ax, ax, NO_FASTMATH)
    s = e.horner_fma(u, _ERF_SMALL, f32)
    v = e.fmuladd(u, s, e.const(_ERF_C0_LO, f32))
    small = e.fmuladd(ax, e.const(_ERF_C0_HI, f32), e.fmul(ax, v, NO_FASTMATH))
    t = e.fsub(ax, e.const(_ERF_MID, f32), NO_FASTMATH)
    large = e.horner_fma(t, _ERF_LARGE, f32)
    r = e.select(e.fcmp("olt", ax, e.const(_ERF_SPLIT, f32)), small, large)
    r = e.select(e.fcmp("ogt", ax, e.const(_ERF_ONE, f32)), e.const(1.0, f32), r)  # NaN: large
    return e.intr("llvm.copysign", [r, x], f32)


def _log1p(e: _Emitter, x: SSAValue, t: Attribute) -> SSAValue:
    """Kahan: u = 1 + x; u == 1 ? x : log(u) * x / (u - 1)."""
    one = e.const(1.0, t)
    u = e.fadd(one, x)
    um1 = e.fsub(u, one)
    log_u = e.intr("llvm.log", [u], t)
    res = e.fdiv(e.fmul(log_u, x), um1)
    res = e.select(e.fcmp("oeq", u, e.const(float("inf"), t)), u, res)
    return e.select(e.fcmp("oeq", u, one), x, res)


def _expm1(e: _Emitter, x: SSAValue, t: Attribute, expand_exp: bool) -> SSAValue:
    """Kahan: u = exp(x); u == 1 ? x : u - 1 == -1 ? -1 : (u - 1) * x / log(u)."""
    one = e.const(1.0, t)
    u = _exp_f32(e, x) if expand_exp and isinstance(t, Float32Type) else e.intr("llvm.exp", [x], t)
    um1 = e.fsub(u, one)
    res = e.fdiv(e.fmul(um1, x), e.intr("llvm.log", [u], t))
    res = e.select(e.fcmp("oeq", u, e.const(float("inf"), t)), u, res)
    res = e.select(e.fcmp("oeq", um1, e.const(-1.0, t)), um1, res)
    return e.select(e.fcmp("oeq", u, one), x, res)


def _lower_float(
    op: Operation,
    e: _Emitter,
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
        if expand_exp and is_f32:
            return e.helper("__rlx_exp_f32", args[0], _exp_f32_ldexp if exp_ldexp else _exp_f32)
        return e.intr("llvm.exp", args, t, fmf)
    if kind is math.TanhOp:
        return e.helper("__rlx_tanh_f32", args[0], _tanh_f32) if is_f32 else e.libm("tanh", args, t)
    if kind is math.ErfOp:
        return e.helper("__rlx_erf_f32", args[0], _erf_f32) if is_f32 else e.libm("erf", args, t)
    if kind is math.RsqrtOp:
        sqrt = e.intr("llvm.sqrt", args, t, fmf)
        return e.fdiv(e.const(1.0, t), sqrt, fmf if fmf is not None else NO_FASTMATH)
    if kind is math.Log1pOp:
        return e.helper(f"__rlx_log1p_{sfx}", args[0], lambda h, x: _log1p(h, x, t))
    if kind is math.ExpM1Op:
        name = f"__rlx_expm1_{sfx}" + ("_llvm_exp" if is_f32 and not expand_exp else "")
        return e.helper(name, args[0], lambda h, x: _expm1(h, x, t, expand_exp))
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
        e = _Emitter(op, rewriter)
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
    def _fpowi(op: Operation, e: _Emitter, rewriter: PatternRewriter) -> None:
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
