"""Scalar arith/math bodies of `rlx.elementwise_region`: the ops' formulas
(`rlx.dialects.rlx.formula`) interpreted by `Emitter`, a `ScalarBuilder` whose values are
scalar SSA values and whose primitives are arith/math ops appended to a list.
`build_scalar` raises `Unsupported` for ops/types without a scalar form (unsigned or
signed-explicit integers: arith is signless)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from xdsl.dialects import arith
from xdsl.dialects import math as mathd
from xdsl.dialects.builtin import (
    AnyFloat,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    Signedness,
    f32,
)
from xdsl.ir import Attribute, Operation, SSAValue


class Unsupported(Exception):
    """The op (or its element types) has no scalar arith/math form."""


_MATH: dict[str, type[Operation]] = {
    "exp": mathd.ExpOp, "log": mathd.LogOp, "sqrt": mathd.SqrtOp, "sin": mathd.SinOp,
    "cos": mathd.CosOp, "tanh": mathd.TanhOp, "erf": mathd.ErfOp, "floor": mathd.FloorOp,
    "ceil": mathd.CeilOp, "round": mathd.RoundEvenOp,
}  # fmt: skip
_FLOAT_BINARY: dict[str, type[Operation]] = {
    "add": arith.AddfOp, "sub": arith.SubfOp, "mul": arith.MulfOp, "div": arith.DivfOp,
    "max": arith.MaximumfOp, "min": arith.MinimumfOp, "pow": mathd.PowFOp,
}  # fmt: skip
_INT_BINARY: dict[str, type[Operation]] = {
    "add": arith.AddiOp, "sub": arith.SubiOp, "mul": arith.MuliOp, "div": arith.DivSIOp,
    "max": arith.MaxSIOp, "min": arith.MinSIOp, "pow": mathd.IPowIOp,
}  # fmt: skip
_CMPF = {"eq": "oeq", "ne": "une", "lt": "olt", "le": "ole", "gt": "ogt", "ge": "oge"}
_CMPI = {"eq": "eq", "ne": "ne", "lt": "slt", "le": "sle", "gt": "sgt", "ge": "sge"}
_CMPU = {"eq": "eq", "ne": "ne", "lt": "ult", "le": "ule", "gt": "ugt", "ge": "uge"}


def _signless(t: Attribute) -> bool:
    return isinstance(t, IntegerType) and t.signedness.data == Signedness.SIGNLESS


def _width(t: Attribute) -> int:
    if isinstance(t, IntegerType):
        return t.width.data
    assert isinstance(t, AnyFloat)
    return t.bitwidth


class Emitter:
    """A `ScalarBuilder` of arith/math ops; `op(...)` appends and returns the result."""

    def __init__(self) -> None:
        self.ops: list[Operation] = []

    def op(self, op: Operation) -> SSAValue:
        self.ops.append(op)
        return op.results[0]

    def const(self, value: float, like: Any) -> SSAValue:
        t = like if isinstance(like, Attribute) else like.type
        if isinstance(t, AnyFloat):
            try:
                attr = FloatAttr(value, t)
            except ValueError:  # not representable (e.g. -2.0 in f8E8M0FNU): do not fuse
                raise Unsupported(f"constant {value} in {t}") from None
            return self.op(arith.ConstantOp(attr))
        assert isinstance(t, IntegerType)
        return self.op(arith.ConstantOp(IntegerAttr(int(value), t)))

    def _binary(self, kind: str, a: SSAValue, b: SSAValue) -> SSAValue:
        table = _FLOAT_BINARY if isinstance(a.type, AnyFloat) else _INT_BINARY
        return self.op(table[kind](a, b))  # type: ignore[call-arg]

    def add(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self._binary("add", a, b)

    def sub(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self._binary("sub", a, b)

    def mul(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self._binary("mul", a, b)

    def div(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self._binary("div", a, b)

    def max(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self._binary("max", a, b)

    def min(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self._binary("min", a, b)

    def pow(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self._binary("pow", a, b)

    def neg(self, x: SSAValue) -> SSAValue:
        if isinstance(x.type, AnyFloat):
            return self.op(arith.NegfOp(x))
        return self.op(arith.SubiOp(self.const(0, x), x))

    def abs(self, x: SSAValue) -> SSAValue:
        if isinstance(x.type, AnyFloat):
            return self.op(mathd.AbsFOp(x))
        return self.op(mathd.AbsIOp(x))

    def math(self, fn: str, x: SSAValue) -> SSAValue:
        if not isinstance(x.type, AnyFloat):
            raise Unsupported(f"{fn} on {x.type}")
        return self.op(_MATH[fn](x))  # type: ignore[call-arg]

    def compare(self, predicate: str, a: SSAValue, b: SSAValue) -> SSAValue:
        if isinstance(a.type, AnyFloat):
            return self.op(arith.CmpfOp(a, b, _CMPF[predicate]))
        table = _CMPU if _width(a.type) == 1 else _CMPI
        return self.op(arith.CmpiOp(a, b, table[predicate]))

    def select(self, cond: SSAValue, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.op(arith.SelectOp(cond, a, b))

    def cast(self, x: SSAValue, to: Attribute) -> SSAValue:
        src = x.type
        if src == to:
            return x
        if isinstance(to, IntegerType) and not _signless(to):
            raise Unsupported(f"cast to {to}")
        if isinstance(src, AnyFloat) and isinstance(to, AnyFloat):
            if _width(src) == _width(to):
                return self.op(arith.TruncFOp(self.op(arith.ExtFOp(x, f32)), to))
            widen = _width(src) < _width(to)
            return self.op(arith.ExtFOp(x, to) if widen else arith.TruncFOp(x, to))
        if isinstance(src, IntegerType) and isinstance(to, AnyFloat):
            return self.op(arith.UIToFPOp(x, to) if _width(src) == 1 else arith.SIToFPOp(x, to))
        if isinstance(src, AnyFloat) and isinstance(to, IntegerType):
            if _width(to) == 1:
                return self.op(arith.CmpfOp(x, self.const(0.0, src), "une"))
            return self.op(arith.FPToSIOp(x, to))
        if isinstance(src, IntegerType) and isinstance(to, IntegerType):
            if _width(to) == 1:
                return self.op(arith.CmpiOp(x, self.const(0, src), "ne"))
            if _width(src) < _width(to):
                return self.op(arith.ExtUIOp(x, to) if _width(src) == 1 else arith.ExtSIOp(x, to))
            return self.op(arith.TruncIOp(x, to))
        raise Unsupported(f"cast {src} -> {to}")


def build_scalar(e: Emitter, op: Operation, args: Sequence[SSAValue]) -> SSAValue:
    """Emit the scalar form of elementwise rlx `op` on scalar `args` (its formula)."""
    formula = getattr(op, "formula", None)
    if formula is None:
        raise Unsupported(op.name)
    for a in args:
        if isinstance(a.type, IntegerType) and not _signless(a.type):
            raise Unsupported(f"{op.name} on {a.type}")
    try:
        return formula(e, *args)
    except KeyError as err:  # a primitive without an integer form (e.g. int pow here)
        raise Unsupported(f"{op.name}: {err}") from None
