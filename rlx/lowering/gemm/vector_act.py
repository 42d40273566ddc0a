"""Activations on `vector<B x f32>` llvm values, for epilogues applied in registers (the
blocked conv kernels, `conv_blocked.VectorEpilogue`): sigmoid, silu, hard_swish and
gelu_tanh, besides relu / clip (`llvm.maximum` / `minimum`).

They compute the formulas of `rlx.dialects.rlx.formula` / the ops (`HardSwishOp`) in the
same order; the logistic function takes `exp` of `-|x|` only, as its formula does, so the
exponential never overflows and needs neither the clamps nor the two-step scaling of the
general expansion (`@__rlx_exp_f32`, ~35 vector instructions):

    e = exp(-|x|)                         (exp_nonpositive: ~16 instructions, < 1 ulp)
    sigmoid(x) = 1 / (1 + e)   for x >= 0
                 e / (1 + e)   otherwise  (no cancellation for large negative x)

NaN propagates; sigmoid(+-inf) = 1 / 0, silu(-inf) = -inf * 0 = NaN as the formula
gives, gelu_tanh(-inf) = -0.0 as its formula special-cases.

`exp_nonpositive` and the helpers below also take scalar f32 values and any builder with
`v(op)` and `const(value, type)`: `convert-math-to-llvm` expands a `math.exp` whose
operand is `-|y|` with it (`math_expansions.MathEmitter`).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from xdsl.dialects import llvm
from xdsl.dialects.builtin import DenseArrayBase, IntegerAttr, VectorType, i1, i32, i64
from xdsl.ir import Attribute, SSAValue

from rlx.lowering.llvm_common import NO_FASTMATH, make
from rlx.lowering.math_expansions import (
    EXP_BIASED_ROUND,
    EXP_LN2_HI,
    EXP_LN2_LO,
    EXP_LOG2E,
    EXP_NONPOSITIVE_LO,
    EXP_POLY,
    EXP_SUBNORMAL_LO,
    EXP_SUBNORMAL_SHIFT,
)

if TYPE_CHECKING:
    from rlx.lowering.rlx_to_linalg.kernel_builder import KernelBuilder

ACTIVATIONS = ("sigmoid", "silu", "hard_swish", "gelu_tanh")
"""Activations `activation` computes (relu / clip are `conv_blocked.vector_epilogue`'s)."""


def splat(kb: KernelBuilder, value: float | int, like: SSAValue) -> SSAValue:
    """`value` in every lane of a vector of `like`'s type (f32 or i32 lanes); the scalar
    constant where `like` is a scalar."""
    vt: Attribute = like.type
    if not isinstance(vt, VectorType):
        return kb.const(value, vt)
    lanes = vt.get_shape()[0]  # type: ignore[attr-defined]
    et = vt.element_type  # type: ignore[attr-defined]
    undef = kb.v(llvm.UndefOp(vt))
    one = kb.v(llvm.InsertElementOp(undef, kb.const(value, et), kb.const(0, i32)))
    return kb.v(llvm.ShuffleVectorOp(one, undef, DenseArrayBase.from_list(i32, [0] * lanes), vt))


def _suffix(t: Attribute) -> str:
    """An intrinsic's type suffix for f32 or `vector<N x f32>`: f32, vNf32."""
    return f"v{t.get_shape()[0]}f32" if isinstance(t, VectorType) else "f32"


def _like(et: Attribute, x: SSAValue) -> Attribute:
    """`et`, or a vector of `et` with `x`'s lanes where `x` is a vector."""
    return VectorType(et, x.type.get_shape()) if isinstance(x.type, VectorType) else et


def fma(kb: KernelBuilder, a: SSAValue, b: SSAValue, c: SSAValue) -> SSAValue:
    """a * b + c lane-wise (`llvm.fmuladd`: one FMA where the target has it)."""
    t: Attribute = a.type
    return kb.v(llvm.CallIntrinsicOp(f"llvm.fmuladd.{_suffix(t)}", [a, b, c], [t]))


def intrinsic2(kb: KernelBuilder, name: str, a: SSAValue, b: SSAValue) -> SSAValue:
    """The two-operand f32-vector intrinsic `llvm.<name>` (maximum, minimum, ...)."""
    t: Attribute = a.type
    return kb.v(llvm.CallIntrinsicOp(f"llvm.{name}.{_suffix(t)}", [a, b], [t]))


def _less(kb: KernelBuilder, a: SSAValue, b: SSAValue, pred: str = "olt") -> SSAValue:
    """`a pred b` per lane (`vector<B x i1>`; xDSL's `llvm.fcmp` builder makes scalars)."""
    mask = _like(i1, a)
    props = {"predicate": IntegerAttr(llvm.FCmpPredicateFlag(pred).to_int(), i64),
             "fastmathFlags": NO_FASTMATH}  # fmt: skip
    return kb.v(make(llvm.FCmpOp, (a, b), (mask,), props))


def _select(kb: KernelBuilder, mask: SSAValue, a: SSAValue, b: SSAValue) -> SSAValue:
    """Per lane `mask ? a : b`."""
    return kb.v(make(llvm.SelectOp, (mask, a, b), (a.type,), {"fastmathFlags": NO_FASTMATH}))


def _mul(kb: KernelBuilder, a: SSAValue, b: SSAValue) -> SSAValue:
    return kb.v(llvm.FMulOp(a, b))


def _add(kb: KernelBuilder, a: SSAValue, b: SSAValue) -> SSAValue:
    return kb.v(llvm.FAddOp(a, b))


def exp_nonpositive(kb: KernelBuilder, x: SSAValue, subnormal: bool = False) -> SSAValue:
    """exp(x) per lane for x <= 0: `fast_exp.exp_nonpositive` on llvm values, the same ops
    in the same order (range reduction, degree-6 `EXP_POLY` by Horner's rule with
    `llvm.fmuladd`, biased rounding constant; x < -87: 0; NaN in, NaN out), so the same
    bits lane for lane on every target (`tests/unit/test_exp_nonpositive_forms.py`).

    `subnormal`: results below 2^-126 are kept (gradual underflow, 0 only below -104)
    by scaling in two steps (`EXP_SUBNORMAL_SHIFT`), one multiply more; the same bits
    where the result is normal. The logistic function takes this form: x · sigmoid(x)
    and gelu_tanh multiply a subnormal exp back into the normal range (gelu_tanh(-10)
    = -1.2e-37)."""
    c = lambda v: splat(kb, v, x)  # noqa: E731
    rounding = EXP_BIASED_ROUND + (EXP_SUBNORMAL_SHIFT if subnormal else 0)
    shifted = fma(kb, x, c(EXP_LOG2E), c(rounding))
    n = kb.v(llvm.FSubOp(shifted, c(rounding)))
    r = fma(kb, n, c(-EXP_LN2_HI), x)
    r = fma(kb, n, c(-EXP_LN2_LO), r)
    y = c(EXP_POLY[0])
    for coef in EXP_POLY[1:]:
        y = fma(kb, y, r, c(coef))
    vi = _like(i32, x)
    bits = kb.v(llvm.BitcastOp(shifted, vi))
    scale = kb.v(llvm.BitcastOp(kb.v(llvm.ShlOp(bits, splat(kb, 23, bits))), x.type))
    res = _mul(kb, y, scale)
    if subnormal:
        res = _mul(kb, res, c(2.0**-EXP_SUBNORMAL_SHIFT))
    lo = EXP_SUBNORMAL_LO if subnormal else EXP_NONPOSITIVE_LO
    return _select(kb, _less(kb, x, c(lo)), c(0.0), res)


def sigmoid(kb: KernelBuilder, x: SSAValue) -> SSAValue:
    """1 / (1 + exp(-x)) per lane, from exp(-|x|) (module docstring)."""
    minus_abs = kb.v(llvm.FNegOp(kb.v(llvm.FAbsOp(x, x.type))))
    e = exp_nonpositive(kb, minus_abs, subnormal=True)
    r = kb.v(llvm.FDivOp(splat(kb, 1.0, x), _add(kb, e, splat(kb, 1.0, x))))
    return _select(kb, _less(kb, x, splat(kb, 0.0, x)), _mul(kb, e, r), r)


def activation(kb: KernelBuilder, act: str, x: SSAValue) -> SSAValue:
    """`act` (one of `ACTIVATIONS`) on the f32 vector `x`."""
    if act == "sigmoid":
        return sigmoid(kb, x)
    if act == "silu":
        return _mul(kb, x, sigmoid(kb, x))
    if act == "hard_swish":  # x · min(max(x / 6 + 1/2, 0), 1), as HardSwishOp.formula
        gate = _add(kb, _mul(kb, x, splat(kb, 1.0 / 6.0, x)), splat(kb, 0.5, x))
        gate = intrinsic2(kb, "maximum", gate, splat(kb, 0.0, x))
        return _mul(kb, x, intrinsic2(kb, "minimum", gate, splat(kb, 1.0, x)))
    if act == "gelu_tanh":  # x / (1 + exp(-2u)) = x · sigmoid(2u), u = √(2/π)·(x + 0.044715·x³)
        cube = _mul(kb, _mul(kb, _mul(kb, splat(kb, 0.044715, x), x), x), x)
        two_u = _mul(kb, splat(kb, 2.0 * math.sqrt(2.0 / math.pi), x), _add(kb, x, cube))
        y = _mul(kb, x, sigmoid(kb, two_u))
        at_minf = _less(kb, x, splat(kb, float("-inf"), x), "oeq")
        return _select(kb, at_minf, splat(kb, -0.0, x), y)
    raise ValueError(f"vector_act: no vector form of activation {act!r}")
