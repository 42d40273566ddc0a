"""The branch-free f32 expansions of `convert-math-to-llvm` (exp, tanh, erf, log1p, expm1)
and the `MathEmitter` that builds them as llvm-dialect ops: see that module's docstring for
what each one computes and its error. Split from it along this seam (the patterns and
the pass stay there)."""

from __future__ import annotations

from collections.abc import Callable

from xdsl.dialects import llvm
from xdsl.dialects.builtin import (
    ArrayAttr,
    Float32Type,
    IntegerAttr,
    ModuleOp,
    StringAttr,
    f32,
    i1,
    i32,
    i64,
)
from xdsl.dialects.utils import FastMathFlag
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.pattern_rewriter import PatternRewriter
from xdsl.rewriter import InsertPoint

from rlx.lowering.llvm_common import (
    NO_FASTMATH,
    call_intrinsic,
    constant,
    ensure_llvm_func,
    fastmath,
    find_symbol,
    intrinsic_suffix,
    make,
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

EXP_LOG2E = 1.44269504088896341
EXP_LN2_HI, EXP_LN2_LO = 0.693359375, -2.12194440e-4
"""ln 2 in two parts (the high part exact in 9 bits, so n * EXP_LN2_HI is exact)."""
EXP_ROUND = 12582912.0
"""1.5 * 2^23: x + EXP_ROUND rounds x to an integer held in the low mantissa bits."""
EXP_BIASED_ROUND = EXP_ROUND + 127
"""x + EXP_BIASED_ROUND rounds x; its low bits hold n + 127 (2^n's exponent field), so
one shift by 23 builds 2^n (`exp_nonpositive`, scalar and vector)."""
EXP_NONPOSITIVE_LO = -87.0
"""`exp_nonpositive` gives 0 below this: rint(LO / ln 2) = -126 keeps 2^n normal."""
EXP_SUBNORMAL_SHIFT = 64
"""`exp_nonpositive(subnormal=True)` scales by 2^(n + 64), then by 2^-64: 2^(n + 64) stays
normal down to n = -190, and the second, exact-where-normal product rounds once into the
subnormal range (bit for bit the one-step result where that is normal)."""
EXP_SUBNORMAL_LO = -104.0
"""Below this exp(x) < 2^-150 rounds to 0 in f32: the subnormal form's cut-off."""

EXP_POLY = (
    1.381459180265665e-3,
    8.368712849915028e-3,
    4.166838899254799e-2,
    1.666652113199234e-1,
    4.999999403953552e-1,
    1.0,
    1.0,
)
"""exp(r) ~ P(r) on |r| <= ln(2)/2, highest degree first: a degree-6 polynomial (f32
coefficients, fitted by reweighted least squares on the relative error, 3.1e-9 before
rounding) evaluated by Horner's rule, 6 fused multiply-adds (Cephes' `1 + r + r^2 Q(r)`
took 8 vector ops). Max error of the whole f32 exp on [-87, 0] (2.1 M points, FMA
evaluation): 0.88 ulp (Cephes' 1.00)."""


_FCMP = {
    p: IntegerAttr(llvm.FCmpPredicateFlag(p).to_int(), i64) for p in ("ogt", "olt", "oeq", "uno")
}


class MathEmitter:
    """Collects the llvm ops of one expansion; float ops default to ``contract`` only."""

    def __init__(self, anchor: Operation, rewriter: PatternRewriter) -> None:
        self.ops: list[Operation] = []
        self.anchor = anchor
        self.rewriter = rewriter

    def add(self, op: Operation) -> SSAValue:
        self.ops.append(op)
        return op.results[0]

    def v(self, op: Operation) -> SSAValue:
        """`add` under `KernelBuilder`'s name for it (`gemm.vector_act` builds on either)."""
        return self.add(op)

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
        build: Callable[[MathEmitter, SSAValue], SSAValue],
    ) -> SSAValue:
        """Call the module's ``alwaysinline`` helper ``name(x)``, building it on first use."""
        t = x.type
        module = self.anchor.get_toplevel_object()
        assert isinstance(module, ModuleOp)
        if find_symbol(module, name) is None:
            block = Block(arg_types=[t])
            inner = MathEmitter(self.anchor, self.rewriter)
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


def exp_reduced(
    e: MathEmitter, x: SSAValue, hi: SSAValue, lo: SSAValue
) -> tuple[SSAValue, SSAValue]:
    """The shared range reduction of both f32 exp expansions: x clamped to [lo, hi],
    n = rint(x / ln 2), r = x - n ln 2 (two-part ln 2); returns (exp(r), n as i32)."""
    xc = e.select(e.fcmp("ogt", x, hi), hi, x)
    xc = e.select(e.fcmp("olt", xc, lo), lo, xc)
    # n = rint(x / ln 2) by the 1.5 * 2^23 trick: its integer value sits in the low bits
    magic = e.const(EXP_ROUND, f32)
    shifted = e.fadd(e.fmul(xc, e.const(EXP_LOG2E, f32)), magic)
    n = e.fsub(shifted, magic)
    r = e.fsub(xc, e.fmul(n, e.const(EXP_LN2_HI, f32)))
    r = e.fsub(r, e.fmul(n, e.const(EXP_LN2_LO, f32)))
    y = e.horner(r, EXP_POLY, f32)
    ni = e.add(llvm.SubOp(e.add(llvm.BitcastOp(shifted, i32)), e.const(0x4B400000, i32)))
    return y, ni


def exp_f32(e: MathEmitter, x: SSAValue) -> SSAValue:
    """exp(x) = 2^n * exp(r), n = rint(x / ln 2), r = x - n ln 2 (two-part ln 2)."""
    hi, lo = e.const(88.7228394, f32), e.const(-103.972, f32)
    y, ni = exp_reduced(e, x, hi, lo)
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


def exp_f32_ldexp(e: MathEmitter, x: SSAValue) -> SSAValue:
    """exp(x) = ldexp(exp(r), n) as `exp_f32`, the scaling by `llvm.ldexp` (one
    `vscalefps` on AVX-512: correctly rounded, overflow to inf, gradual underflow to 0).
    Clamping x to [-110, 100] keeps r small and still overflows / underflows where exp
    does (exp(100) = inf, exp(-110) = 0 in f32), so +-inf need no fix-up and NaN passes
    through the selects and the arithmetic; ~17 vector instructions instead of ~29."""
    y, ni = exp_reduced(e, x, e.const(100.0, f32), e.const(-110.0, f32))
    return e.add(call_intrinsic("llvm.ldexp.f32.i32", [y, ni], f32))


def host_has_scalef() -> bool:
    """AVX-512F on this host: `llvm.ldexp` is one vector instruction (elsewhere LLVM may
    scalarize it into `ldexpf` calls)."""
    from rlx import host_cpu

    feats = host_cpu.features()
    return bool(feats and feats.get("avx512f"))


def tanh_f32(e: MathEmitter, x: SSAValue) -> SSAValue:
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


def erf_f32(e: MathEmitter, x: SSAValue) -> SSAValue:
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


def log1p(e: MathEmitter, x: SSAValue, t: Attribute) -> SSAValue:
    """Kahan: u = 1 + x; u == 1 ? x : log(u) * x / (u - 1)."""
    one = e.const(1.0, t)
    u = e.fadd(one, x)
    um1 = e.fsub(u, one)
    log_u = e.intr("llvm.log", [u], t)
    res = e.fdiv(e.fmul(log_u, x), um1)
    res = e.select(e.fcmp("oeq", u, e.const(float("inf"), t)), u, res)
    return e.select(e.fcmp("oeq", u, one), x, res)


def expm1(e: MathEmitter, x: SSAValue, t: Attribute, expand_exp: bool) -> SSAValue:
    """Kahan: u = exp(x); u == 1 ? x : u - 1 == -1 ? -1 : (u - 1) * x / log(u)."""
    one = e.const(1.0, t)
    u = exp_f32(e, x) if expand_exp and isinstance(t, Float32Type) else e.intr("llvm.exp", [x], t)
    um1 = e.fsub(u, one)
    res = e.fdiv(e.fmul(um1, x), e.intr("llvm.log", [u], t))
    res = e.select(e.fcmp("oeq", u, e.const(float("inf"), t)), u, res)
    res = e.select(e.fcmp("oeq", um1, e.const(-1.0, t)), um1, res)
    return e.select(e.fcmp("oeq", u, one), x, res)
