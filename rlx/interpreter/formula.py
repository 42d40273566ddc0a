"""`NumpyScalar`: the `ScalarBuilder` over NumPy arrays, so an elementwise op's formula
(`rlx.dialects.rlx.formula`) can be evaluated on constants (constant folding) with the
interpreter's primitives: floats in their compute type (f32, f64 for f64), erf in f64,
integer division truncating toward zero with a zero divisor an error.

`evaluate(op, arrays)` runs the formula of op `op` and rounds once to its result type.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute, Operation

from rlx.interpreter.ops._core import convert, fcompute, is_float, numpy_dtype
from rlx.interpreter.ops.elementwise import erf, int_div_trunc, int_pow

_MATH = {
    "exp": np.exp, "log": np.log, "sqrt": np.sqrt, "sin": np.sin, "cos": np.cos,
    "tanh": np.tanh, "erf": erf, "floor": np.floor, "ceil": np.ceil, "round": np.rint,
}  # fmt: skip
_COMPARE = {
    "eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
    "gt": np.greater, "ge": np.greater_equal,
}  # fmt: skip


class NumpyScalar:
    """`ScalarBuilder` whose values are NumPy arrays (see the module docstring)."""

    def const(self, value: float, like: np.ndarray) -> np.ndarray:
        return np.asarray(value).astype(like.dtype)

    def add(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.add(a, b)

    def sub(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.subtract(a, b)

    def mul(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.multiply(a, b)

    def div(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.divide(a, b) if is_float(a.dtype) else int_div_trunc(a, b)

    def max(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.maximum(a, b)

    def min(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.minimum(a, b)

    def pow(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.power(a, b) if is_float(a.dtype) else int_pow(a, b)

    def neg(self, x: np.ndarray) -> np.ndarray:
        return np.negative(x)

    def abs(self, x: np.ndarray) -> np.ndarray:
        return np.abs(x)

    def math(self, fn: str, x: np.ndarray) -> np.ndarray:
        return _MATH[fn](x)

    def compare(self, predicate: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return _COMPARE[predicate](a, b)

    def select(self, cond: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.where(cond, a, b)

    def cast(self, x: np.ndarray, to: Attribute) -> np.ndarray:
        return convert(x, numpy_dtype(to))


def evaluate(op: Operation, arrays: Sequence[np.ndarray]) -> np.ndarray:
    """The result of elementwise op `op` (one with a `formula`) on `arrays`."""
    args: list[Any] = [fcompute(a) if is_float(a.dtype) else a for a in arrays]
    with np.errstate(all="ignore"):
        out = op.formula(NumpyScalar(), *args)  # type: ignore[attr-defined]
    t = op.results[0].type
    assert isinstance(t, TensorType)
    return np.broadcast_to(convert(out, numpy_dtype(t.element_type)), tuple(t.get_shape()))
