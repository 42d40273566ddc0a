"""The scalar formula of elementwise rlx ops, written once and interpreted by builders.

Each elementwise op class states its meaning as a formula over a `ScalarBuilder`
(`GeluTanhOp.formula(b, x)`): the fusion pass builds `rlx.elementwise_region` bodies with
an arith/math builder, the elementwise lowering emits `linalg.generic` bodies with the
kernel builder, decompositions expand composite ops into primitive rlx ops with a tensor
builder, and constant folding evaluates it with a NumPy builder. A builder supplies the
primitives below for its kind of value; the composition (operation order, constants) is
the formula's, so every path computes the same expression.
"""

from __future__ import annotations

import math
from typing import Any, Protocol, TypeVar

from rlx.dialects import rlx as rlx_dialect  # the package: its op classes load on first use

V = TypeVar("V")

MATH_FUNCTIONS = ("exp", "log", "sqrt", "sin", "cos", "tanh", "erf", "floor", "ceil", "round")
"""Unary functions a builder provides through `ScalarBuilder.math` (round: half to even)."""


class ScalarBuilder(Protocol[V]):
    """Primitives over one kind of scalar value `V` (an SSA value, a tensor, an array).

    Integer semantics: `div` truncates toward zero and follows the project's rule for a
    zero divisor; `neg` and `abs` wrap; `max`/`min` compare as the operand's signedness.
    """

    def const(self, value: float, like: V) -> V:
        """The constant `value` with the element type of `like`."""
        ...

    def add(self, a: V, b: V) -> V: ...
    def sub(self, a: V, b: V) -> V: ...
    def mul(self, a: V, b: V) -> V: ...
    def div(self, a: V, b: V) -> V: ...
    def max(self, a: V, b: V) -> V: ...
    def min(self, a: V, b: V) -> V: ...
    def pow(self, a: V, b: V) -> V: ...
    def neg(self, x: V) -> V: ...
    def abs(self, x: V) -> V: ...

    def math(self, fn: str, x: V) -> V:
        """One of `MATH_FUNCTIONS` (floats only)."""
        ...

    def compare(self, predicate: str, a: V, b: V) -> V:
        """eq/ne/lt/le/gt/ge as an i1 value (floats: ordered, except ne)."""
        ...

    def select(self, cond: V, a: V, b: V) -> V: ...

    def cast(self, x: V, to: Any) -> V:
        """`x` converted to element type `to` (rlx.cast's rules)."""
        ...


def sigmoid(b: ScalarBuilder[V], x: V) -> V:
    """1 / (1 + exp(-x)), computed from e = exp(-|x|): 1 / (1 + e) for x >= 0, e / (1 + e)
    below. The exponential's argument is never positive, so it cannot overflow and the
    math lowering takes its cheap form (`exp_nonpositive(subnormal=True)`: no clamps,
    ~17 instead of ~30 vector instructions); no cancellation for large negative x. NaN
    propagates; sigmoid(+-inf) = 1, 0."""
    one = b.const(1.0, x)
    e = b.math("exp", b.neg(b.abs(x)))
    r = b.div(one, b.add(one, e))
    return b.select(b.compare("lt", x, b.const(0.0, x)), b.mul(e, r), r)


def gelu(b: ScalarBuilder[V], x: V) -> V:
    """0.5·x·(1 + erf(x / √2))."""
    inner = b.math("erf", b.div(x, b.const(math.sqrt(2.0), x)))
    return b.mul(b.mul(b.const(0.5, x), x), b.add(b.const(1.0, x), inner))


def gelu_tanh(b: ScalarBuilder[V], x: V) -> V:
    """0.5·x·(1 + tanh(u)), u = √(2/π)·(x + 0.044715·x³), computed as the equal
    x · sigmoid(2u) (`sigmoid`'s form: exp of -|2u| only, no cancellation in 1 + tanh(u)
    for large negative x: -100 gives -0.0); at -inf the limit -0.0 (the product form
    would give -inf · 0 = NaN). 2u is one product with the constant 2·√(2/π): the same
    value bit for bit as (√(2/π)·s)·2 (a power-of-two factor commutes with rounding), one
    multiply less per element."""
    cube = b.mul(b.mul(b.mul(b.const(0.044715, x), x), x), x)
    two_u = b.mul(b.const(2.0 * math.sqrt(2.0 / math.pi), x), b.add(x, cube))
    y = b.mul(x, sigmoid(b, two_u))
    return b.select(b.compare("eq", x, b.const(float("-inf"), x)), b.const(-0.0, x), y)


def silu(b: ScalarBuilder[V], x: V) -> V:
    """x·sigmoid(x)."""
    return b.mul(x, sigmoid(b, x))


def relu(b: ScalarBuilder[V], x: V) -> V:
    """max(x, 0) (NaN propagates)."""
    return b.max(x, b.const(0.0, x))


def rsqrt(b: ScalarBuilder[V], x: V) -> V:
    """1 / sqrt(x)."""
    return b.div(b.const(1.0, x), b.math("sqrt", x))


ACTIVATIONS = {
    "none": lambda b, x: x,
    "relu": relu,
    "gelu": gelu,
    "gelu_tanh": gelu_tanh,
    "silu": silu,
    "sigmoid": sigmoid,
}
"""Activation name (as fused ops spell it) -> formula; the other unary ops' formulas are
methods of their classes (`activation_formula` finds either)."""


def activation_formula(kind: str) -> Any:
    """The formula of activation `kind`: a fused-op activation or any unary rlx op."""
    if kind in ACTIVATIONS:
        return ACTIVATIONS[kind]
    return rlx_dialect.OPS_BY_NAME[f"rlx.{kind}"].formula
