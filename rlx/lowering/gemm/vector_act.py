"""Activations on `vector<B x f32>` llvm values, for epilogues applied in registers (the
blocked conv kernels, `conv_blocked.VectorEpilogue`): sigmoid, silu, hard_swish and
gelu_tanh, besides relu / clip (`llvm.maximum` / `minimum`).

They compute the formulas of `rlx.dialects.rlx.formula` / the ops (`HardSwishOp`), with
one change where it saves work: the logistic function takes `exp` of `-|x|` only, so
the exponential never overflows and needs neither the clamps nor the two-step scaling of
the general expansion (`@__rlx_exp_f32`, ~35 vector instructions):

    e = exp(-|x|)                         (exp_nonpositive: ~16 instructions, < 1 ulp)
    sigmoid(x) = 1 / (1 + e)   for x >= 0
                 e / (1 + e)   otherwise  (no cancellation for large negative x)

so sigmoid is within ~2 ulp of the formula's `1 / (1 + exp(-x))` (one division either
way). NaN propagates; sigmoid(+-inf) = 1 / 0, silu(-inf) = -inf * 0 = NaN as the
formula gives, gelu_tanh(-inf) = -0.0 as its formula special-cases.
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
)

if TYPE_CHECKING:
    from rlx.lowering.rlx_to_linalg.kernel_builder import KernelBuilder

ACTIVATIONS = ("sigmoid", "silu", "hard_swish", "gelu_tanh")
"""Activations `activation` computes (relu / clip are `conv_blocked.vector_epilogue`'s)."""


def splat(kb: KernelBuilder, value: float | int, like: SSAValue) -> SSAValue:
    """`value` in every lane of a vector of `like`'s type (f32 or i32 lanes)."""
    vt: Attribute = like.type
    lanes = vt.get_shape()[0]  # type: ignore[attr-defined]
    et = vt.element_type  # type: ignore[attr-defined]
    undef = kb.v(llvm.UndefOp(vt))
    one = kb.v(llvm.InsertElementOp(undef, kb.const(value, et), kb.const(0, i32)))
    return kb.v(llvm.ShuffleVectorOp(one, undef, DenseArrayBase.from_list(i32, [0] * lanes), vt))


def fma(kb: KernelBuilder, a: SSAValue, b: SSAValue, c: SSAValue) -> SSAValue:
    """a * b + c lane-wise (`llvm.fmuladd`: one FMA where the target has it)."""
    t: Attribute = a.type
    name = f"llvm.fmuladd.v{t.get_shape()[0]}f32"  # type: ignore[attr-defined]
    return kb.v(llvm.CallIntrinsicOp(name, [a, b, c], [t]))


def intrinsic2(kb: KernelBuilder, name: str, a: SSAValue, b: SSAValue) -> SSAValue:
    """The two-operand f32-vector intrinsic `llvm.<name>` (maximum, minimum, ...)."""
    t: Attribute = a.type
    full = f"llvm.{name}.v{t.get_shape()[0]}f32"  # type: ignore[attr-defined]
    return kb.v(llvm.CallIntrinsicOp(full, [a, b], [t]))


def _less(kb: KernelBuilder, a: SSAValue, b: SSAValue, pred: str = "olt") -> SSAValue:
    """`a pred b` per lane (`vector<B x i1>`; xDSL's `llvm.fcmp` builder makes scalars)."""
    mask = VectorType(i1, a.type.get_shape())  # type: ignore[attr-defined]
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


def exp_nonpositive(kb: KernelBuilder, x: SSAValue) -> SSAValue:
    """exp(x) per lane for x <= 0: `fast_exp.exp_nonpositive` on vectors, the same ops
    in the same order (range reduction, degree-6 `EXP_POLY` by Horner's rule with
    `llvm.fmuladd`, biased rounding constant; x < -87: 0; NaN in, NaN out), so the same
    bits lane for lane on every target (`tests/unit/test_exp_nonpositive_forms.py`)."""
    c = lambda v: splat(kb, v, x)  # noqa: E731
    shifted = fma(kb, x, c(EXP_LOG2E), c(EXP_BIASED_ROUND))
    n = kb.v(llvm.FSubOp(shifted, c(EXP_BIASED_ROUND)))
    r = fma(kb, n, c(-EXP_LN2_HI), x)
    r = fma(kb, n, c(-EXP_LN2_LO), r)
    y = c(EXP_POLY[0])
    for coef in EXP_POLY[1:]:
        y = fma(kb, y, r, c(coef))
    vi = VectorType(i32, x.type.get_shape())  # type: ignore[attr-defined]
    bits = kb.v(llvm.BitcastOp(shifted, vi))
    scale = kb.v(llvm.BitcastOp(kb.v(llvm.ShlOp(bits, splat(kb, 23, bits))), x.type))
    return _select(kb, _less(kb, x, c(EXP_NONPOSITIVE_LO)), c(0.0), _mul(kb, y, scale))


def sigmoid(kb: KernelBuilder, x: SSAValue) -> SSAValue:
    """1 / (1 + exp(-x)) per lane, from exp(-|x|) (module docstring)."""
    e = exp_nonpositive(kb, kb.v(llvm.FNegOp(kb.v(llvm.FAbsOp(x, x.type)))))
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
