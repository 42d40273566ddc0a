"""`exp_nonpositive`: a cheap f32 exp for arguments <= 0 (softmax's `x - max`), as scalar
arith ops that LLVM's loop vectorizer widens to ~13 vector instructions per vector.

The general f32 exp (`convert-math-to-llvm`, `@__rlx_exp_f32`) clamps both ends, scales
by 2^n in two steps and fixes up +-inf/NaN with selects (~30 vector instructions). For
`x <= 0` none of that is needed: with n = rint(x / ln 2) in [-126, 0], 2^n is one normal
power of two built from the exponent bits, and `x < LO` (where exp(x) < 2^-125.5, i.e.
a denormal or 0) gives exactly 0, so `-inf` (masked scores) gives 0. NaN propagates
(every step is NaN-preserving and the final select keeps it). Same range reduction and
degree-6 polynomial (`math_expansions.EXP_POLY`) as the general expansion (< 0.9 ulp on
the normal range); denormal results are flushed to 0 (absolute error < 1.7e-38). The
exponent bias 127 rides in the rounding constant, so 2^n is one shift of its bits.

The multiply-adds are explicit `llvm.fmuladd` calls (one FMA where the target has it,
a multiply and an add elsewhere), in the same order and with the same operands as the
vector form of the conv epilogues (`gemm.vector_act.exp_nonpositive`), so that the two
give the same bits on every target (`tests/unit/test_exp_nonpositive_forms.py`) instead
of depending on where LLVM chooses to contract a multiply and an add.
"""

from __future__ import annotations

from xdsl.dialects import arith, llvm
from xdsl.dialects.builtin import f32, i32
from xdsl.ir import SSAValue

from rlx.lowering.math_expansions import (
    EXP_BIASED_ROUND,
    EXP_LN2_HI,
    EXP_LN2_LO,
    EXP_LOG2E,
    EXP_NONPOSITIVE_LO,
    EXP_POLY,
)
from rlx.lowering.rlx_to_linalg.kernel_builder import KernelBuilder

LO = EXP_NONPOSITIVE_LO
"""Arguments below this give 0: rint(LO / ln 2) = -126 keeps 2^n normal."""


def fmuladd(kb: KernelBuilder, a: SSAValue, b: SSAValue, c: SSAValue) -> SSAValue:
    """a * b + c on f32 scalars as `llvm.fmuladd` (fused where the target has FMA; the
    loop vectorizer widens it like any arithmetic)."""
    return kb.v(llvm.CallIntrinsicOp("llvm.fmuladd.f32", [a, b, c], [f32]))


def exp_nonpositive(kb: KernelBuilder, x: SSAValue) -> SSAValue:
    """exp(x) for f32 x <= 0 (correct up to x < 88; NaN in, NaN out; x < LO: 0)."""
    assert x.type == f32, x.type
    c = lambda v: kb.const(v, f32)  # noqa: E731
    shifted = fmuladd(kb, x, c(EXP_LOG2E), c(EXP_BIASED_ROUND))
    n = kb.subf(shifted, c(EXP_BIASED_ROUND))
    r = fmuladd(kb, n, c(-EXP_LN2_HI), x)
    r = fmuladd(kb, n, c(-EXP_LN2_LO), r)
    y = c(EXP_POLY[0])
    for coef in EXP_POLY[1:]:
        y = fmuladd(kb, y, r, c(coef))
    # 2^n: the low bits of `shifted` hold n + 127 (in [1, 127] for x >= LO); shifted left by
    # 23 they are 2^n's f32 bit pattern (the shift drops MAGIC's bits, whose low 9 are 0)
    bits = kb.v(arith.BitcastOp(shifted, i32))
    scale_bits = kb.v(arith.ShLIOp(bits, kb.const(23, i32)))
    res = kb.mulf(y, kb.v(arith.BitcastOp(scale_bits, f32)))
    return kb.select(kb.cmpf("olt", x, c(LO)), c(0.0), res)
