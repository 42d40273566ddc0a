"""Elementwise rlx ops: unary math, binary arithmetic, compare, where, cast.

Float ops compute in f64 for f64 operands and in f32 otherwise (f16/bf16/f8 are widened
to f32); the interpreter rounds the result to the result element type once.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from rlx.dialects.rlx import OPS_BY_NAME
from rlx.dialects.rlx.elementwise import CastOp, CompareOp, WhereOp
from rlx.errors import IntegerDivisionError, IntegerPowError
from rlx.interpreter.ops._core import (
    OpContext,
    convert,
    fcompute,
    is_float,
    register,
)

_erf_scalar = np.frompyfunc(math.erf, 1, 1)


def erf(x: np.ndarray) -> np.ndarray:
    """erf evaluated in f64 (math.erf, correctly rounded to ~1 ulp), cast back to x's dtype."""
    x = np.asarray(x)
    return np.asarray(_erf_scalar(x.astype(np.float64)), dtype=np.float64).astype(x.dtype)


def sigmoid(x: np.ndarray) -> np.ndarray:
    """1 / (1 + exp(-x)) in x's (float) dtype, from e = exp(-|x|): 1 / (1 + e) for x >= 0,
    e / (1 + e) below (exp(-x) would overflow for x < -88 in f32 and give 0 where the
    value is a subnormal)."""
    one = x.dtype.type(1)
    e = np.exp(-np.abs(x))
    r = one / (one + e)
    return np.where(x < 0, e * r, r)


def gelu(x: np.ndarray) -> np.ndarray:
    """Exact gelu: 0.5·x·(1 + erf(x/√2))."""
    t = x.dtype.type
    return t(0.5) * x * (t(1) + erf(x / t(math.sqrt(2.0))))


def gelu_tanh(x: np.ndarray) -> np.ndarray:
    """tanh gelu: 0.5·x·(1 + tanh(u)), u = √(2/π)·(x + 0.044715·x³), computed as the equal
    x · sigmoid(2u) (no cancellation in 1 + tanh(u) for large negative x: -10 gives
    -1.2e-37, -100 -0.0); at -inf the limit -0.0 (the formula would give -inf · 0 = NaN)."""
    t = x.dtype.type
    two_u = t(2.0 * math.sqrt(2.0 / math.pi)) * (x + t(0.044715) * x * x * x)
    return np.where(x == -np.inf, t(-0.0), x * sigmoid(two_u))


def silu(x: np.ndarray) -> np.ndarray:
    """x·sigmoid(x)."""
    return x * sigmoid(x)


def relu(x: np.ndarray) -> np.ndarray:
    """max(x, 0) (NaN propagates)."""
    return np.maximum(x, x.dtype.type(0))


def hard_swish(x: np.ndarray) -> np.ndarray:
    """x·min(max(x/6 + 1/2, 0), 1) (ONNX HardSwish: alpha = 1/6, beta = 1/2)."""
    t = x.dtype.type
    return x * np.minimum(np.maximum(x * t(1.0 / 6.0) + t(0.5), t(0)), t(1))


FLOAT_UNARY: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "neg": np.negative,
    "abs": np.abs,
    "exp": np.exp,
    "log": np.log,
    "sqrt": np.sqrt,
    "rsqrt": lambda x: x.dtype.type(1) / np.sqrt(x),
    "sin": np.sin,
    "cos": np.cos,
    "tanh": np.tanh,
    "sigmoid": sigmoid,
    "relu": relu,
    "gelu": gelu,
    "gelu_tanh": gelu_tanh,
    "silu": silu,
    "erf": erf,
    "floor": np.floor,
    "ceil": np.ceil,
    "round": np.rint,  # half to even
    "hard_swish": hard_swish,
}
INT_UNARY: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "neg": np.negative,  # wraps: -INT_MIN == INT_MIN
    "abs": np.abs,  # wraps: |INT_MIN| == INT_MIN
    "relu": relu,
}


def _unary(kind: str) -> Callable[[OpContext, np.ndarray], np.ndarray]:
    def impl(ctx: OpContext, x: np.ndarray) -> np.ndarray:
        if is_float(x.dtype):
            return FLOAT_UNARY[kind](fcompute(x))
        if kind in INT_UNARY and x.dtype.kind in "iu":
            return INT_UNARY[kind](x)
        raise ctx.error(f"unsupported operand element type {x.dtype}")

    impl.__doc__ = f"rlx.{kind}: elementwise {kind}."
    return impl


for _k in FLOAT_UNARY:
    register(OPS_BY_NAME[f"rlx.{_k}"])(_unary(_k))


def check_divisor(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """`b` if every `a / b` is defined: a zero divisor, or a signed `INT_MIN / -1`, raises
    `IntegerDivisionError` (the rule of every path: docs/dialect.md, numeric policy)."""
    if np.any(b == 0):
        bad = np.broadcast_to(a, np.broadcast_shapes(a.shape, b.shape))[
            np.broadcast_to(b == 0, np.broadcast_shapes(a.shape, b.shape))
        ]
        raise IntegerDivisionError(f"integer division by zero (dividend {int(bad.flat[0])})")
    if a.dtype.kind == "i":
        lo = np.iinfo(a.dtype).min
        if np.any((a == lo) & (b == -1)):
            raise IntegerDivisionError(f"integer division overflow ({lo} / -1)")
    return b


def int_div_trunc(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Integer division truncating toward zero (C / arith.divsi); see `check_divisor`."""
    check_divisor(a, b)
    q = np.floor_divide(a, b)
    fix = (np.remainder(a, b) != 0) & ((a < 0) != (b < 0))
    return q + fix.astype(q.dtype)


def int_pow(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Integer power (wrapping); a negative exponent is an error."""
    if np.any(b < 0):
        raise IntegerPowError(f"integer pow with a negative exponent ({int(b[b < 0].flat[0])})")
    return np.power(a, b)


_FLOAT_BINARY: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "div": np.divide,
    "max": np.maximum,
    "min": np.minimum,
    "pow": np.power,
}
_INT_BINARY: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "div": int_div_trunc,
    "max": np.maximum,
    "min": np.minimum,
    "pow": int_pow,
}


def _binary(kind: str) -> Callable[[OpContext, np.ndarray, np.ndarray], np.ndarray]:
    def impl(ctx: OpContext, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        if a.dtype != b.dtype:
            raise ctx.error(f"operand element types differ: {a.dtype} vs {b.dtype}")
        if is_float(a.dtype):
            return _FLOAT_BINARY[kind](fcompute(a), fcompute(b))
        if a.dtype.kind in "iu":
            return _INT_BINARY[kind](a, b)
        if a.dtype == np.bool_ and kind in ("max", "min"):
            return np.maximum(a, b) if kind == "max" else np.minimum(a, b)
        raise ctx.error(f"unsupported operand element type {a.dtype}")

    impl.__doc__ = f"rlx.{kind}: elementwise {kind} with NumPy broadcasting."
    return impl


for _k in _FLOAT_BINARY:
    register(OPS_BY_NAME[f"rlx.{_k}"], nargs=2)(_binary(_k))

_COMPARE: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "eq": np.equal,
    "ne": np.not_equal,
    "lt": np.less,
    "le": np.less_equal,
    "gt": np.greater,
    "ge": np.greater_equal,
}


@register(CompareOp, nargs=2)
def compare(ctx: OpContext, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """rlx.compare {predicate}: i1 result with broadcasting (IEEE: NaN != everything)."""
    pred = ctx.op.predicate
    if pred not in _COMPARE:
        raise ctx.error(f"unknown predicate {pred!r}")
    if a.dtype != b.dtype:
        raise ctx.error(f"operand element types differ: {a.dtype} vs {b.dtype}")
    if is_float(a.dtype):
        a, b = fcompute(a), fcompute(b)
    return _COMPARE[pred](a, b)


@register(WhereOp, nargs=3)
def where(ctx: OpContext, cond: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """rlx.where(cond, a, b): a where cond else b, all three broadcast."""
    if cond.dtype != np.bool_:
        raise ctx.error(f"condition must be i1, got {cond.dtype}")
    if a.dtype != b.dtype:
        raise ctx.error(f"operand element types differ: {a.dtype} vs {b.dtype}")
    return np.where(cond, a, b)


@register(CastOp)
def cast(ctx: OpContext, x: np.ndarray) -> np.ndarray:
    """rlx.cast: to the result element type (see `convert` for the exact rules)."""
    return convert(x, ctx.result_dtype())
