"""`Expansion`: builds replacement rlx ops (tensor level) for decompositions, and
`TensorScalar`, the `ScalarBuilder` over it, so decompositions of elementwise ops are their
formulas (`rlx.dialects.rlx.formula`) applied to whole tensors."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from xdsl.dialects.builtin import BytesAttr, DenseIntOrFPElementsAttr, TensorType
from xdsl.ir import Attribute, Operation, SSAValue

from rlx.dialects.rlx import OPS_BY_NAME
from rlx.dialects.rlx.base import DYN, shape_of, tensor, to_attr
from rlx.dialects.rlx.leaves import ConstantOp
from rlx.dtypes import numpy_dtype
from rlx.interpreter.ops._core import convert

# ----------------------------------------------------------------------------- helpers


def kind_of(op: Operation) -> str:
    """The op kind used by dispatch and legalization: the op name without `rlx.`."""
    return op.name.removeprefix("rlx.")


def dense(value: object, t: TensorType) -> DenseIntOrFPElementsAttr:
    """A dense attribute of exactly type `t` holding `value` (one element = a splat)."""
    dt = numpy_dtype(t.element_type)
    a = np.ascontiguousarray(convert(np.asarray(value), dt))
    if a.dtype == np.bool_:
        raw = np.where(a, np.uint8(0xFF), np.uint8(0)).tobytes()
    elif a.dtype.kind in "iuf":
        raw = a.astype(a.dtype.newbyteorder("<")).tobytes()
    else:
        raw = a.tobytes()
    return DenseIntOrFPElementsAttr(t, BytesAttr(raw))


def static_shape(v: SSAValue) -> tuple[int, ...] | None:
    s = shape_of(v.type)
    return None if DYN in s else s


@dataclass
class Expansion:
    """Builds replacement ops in order; `value` (set by the decomposition) replaces the op."""

    ops: list[Operation] = field(default_factory=list[Operation])

    def emit(
        self, name: str, *operands: SSAValue, result_type: Attribute | None = None, **attrs: object
    ) -> SSAValue:
        """Append `rlx.<name>` with inferred result type (ops whose type carries meaning
        take `result_type`)."""
        cls = OPS_BY_NAME[f"rlx.{name}"]
        attributes = {k: to_attr(v) for k, v in attrs.items() if v is not None}
        given = None if result_type is None else [result_type]
        types = cls.infer_from([o.type for o in operands], attributes, given)  # type: ignore[arg-type]
        op = cls.create(operands=list(operands), result_types=types, attributes=attributes)
        self.ops.append(op)
        return op.results[0]

    def const(self, value: object, elem: Attribute, shape: Sequence[int] = ()) -> SSAValue:
        """A constant of element type `elem` (a rank-0 scalar by default)."""
        op = ConstantOp(dense(value, tensor(shape, elem)))
        self.ops.append(op)
        return op.result

    # shorthands for the primitive vocabulary
    def add(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.emit("add", a, b)

    def sub(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.emit("sub", a, b)

    def mul(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.emit("mul", a, b)

    def div(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.emit("div", a, b)

    def reduce(self, x: SSAValue, kind: str, axis: int = -1) -> SSAValue:
        return self.emit("reduce", x, kind=kind, axes=[axis], keepdims=True)

    def slice_last(self, x: SSAValue, start: int, stop: int) -> SSAValue:
        s = shape_of(x.type)
        starts = [0] * (len(s) - 1) + [start]
        return self.emit("slice", x, starts=starts, limits=[*s[:-1], stop], strides=[1] * len(s))


def _elem(v: SSAValue) -> Attribute:
    assert isinstance(v.type, TensorType)
    return v.type.element_type


class TensorScalar:
    """`ScalarBuilder` whose values are tensors: each primitive is one rlx op."""

    def __init__(self, e: Expansion) -> None:
        self.e = e

    def const(self, value: float, like: SSAValue) -> SSAValue:
        return self.e.const(value, _elem(like))

    def add(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.e.emit("add", a, b)

    def sub(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.e.emit("sub", a, b)

    def mul(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.e.emit("mul", a, b)

    def div(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.e.emit("div", a, b)

    def max(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.e.emit("max", a, b)

    def min(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.e.emit("min", a, b)

    def pow(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.e.emit("pow", a, b)

    def neg(self, x: SSAValue) -> SSAValue:
        return self.e.emit("neg", x)

    def abs(self, x: SSAValue) -> SSAValue:
        return self.e.emit("abs", x)

    def math(self, fn: str, x: SSAValue) -> SSAValue:
        return self.e.emit(fn, x)

    def compare(self, predicate: str, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.e.emit("compare", a, b, predicate=predicate)

    def select(self, cond: SSAValue, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.e.emit("where", cond, a, b)

    def cast(self, x: SSAValue, to: Any) -> SSAValue:
        return self.e.emit("cast", x, result_type=tensor(shape_of(x.type), to))


__all__ = ["Expansion", "TensorScalar", "dense", "static_shape"]
