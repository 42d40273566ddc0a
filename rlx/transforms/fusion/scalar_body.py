"""Scalar arith/math builders for `rlx.elementwise_region` bodies: one entry per
elementwise rlx op, mapping scalar operands to the scalar result (ops are appended to a
list). `build_scalar` raises `Unsupported` for ops/types without a scalar form."""

from __future__ import annotations

import math
from collections.abc import Sequence

from xdsl.dialects import arith
from xdsl.dialects import math as mathd
from xdsl.dialects.builtin import (
    AnyFloat,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    Signedness,
    TensorType,
    f32,
)
from xdsl.ir import Attribute, Operation, SSAValue


class Unsupported(Exception):
    """The op (or its element types) has no scalar arith/math form."""


class Emitter:
    """Collects the body ops; `op(...)` appends and returns the single result."""

    def __init__(self) -> None:
        self.ops: list[Operation] = []

    def op(self, op: Operation) -> SSAValue:
        self.ops.append(op)
        return op.results[0]

    def const(self, value: float, t: Attribute) -> SSAValue:
        if isinstance(t, AnyFloat):
            return self.op(arith.ConstantOp(FloatAttr(value, t)))
        assert isinstance(t, IntegerType)
        return self.op(arith.ConstantOp(IntegerAttr(int(value), t)))


def _signless(t: Attribute) -> bool:
    return isinstance(t, IntegerType) and t.signedness.data == Signedness.SIGNLESS


def _float_unary(e: Emitter, kind: str, x: SSAValue) -> SSAValue:
    t = x.type
    simple: dict[str, type[Operation]] = {
        "abs": mathd.AbsFOp, "exp": mathd.ExpOp, "log": mathd.LogOp, "sqrt": mathd.SqrtOp,
        "rsqrt": mathd.RsqrtOp, "sin": mathd.SinOp, "cos": mathd.CosOp, "tanh": mathd.TanhOp,
        "erf": mathd.ErfOp, "floor": mathd.FloorOp, "ceil": mathd.CeilOp, "round": mathd.RoundEvenOp,
    }  # fmt: skip
    if kind in simple:
        return e.op(simple[kind](x))  # type: ignore[call-arg]
    if kind == "neg":
        return e.op(arith.NegfOp(x))
    if kind == "relu":
        return e.op(arith.MaximumfOp(x, e.const(0.0, t)))
    if kind in ("sigmoid", "silu"):
        one = e.const(1.0, t)
        sig = e.op(
            arith.DivfOp(one, e.op(arith.AddfOp(one, e.op(mathd.ExpOp(e.op(arith.NegfOp(x)))))))
        )
        return sig if kind == "sigmoid" else e.op(arith.MulfOp(x, sig))
    if kind == "gelu":
        erf = e.op(mathd.ErfOp(e.op(arith.DivfOp(x, e.const(math.sqrt(2.0), t)))))
        half_x = e.op(arith.MulfOp(e.const(0.5, t), x))
        return e.op(arith.MulfOp(half_x, e.op(arith.AddfOp(e.const(1.0, t), erf))))
    if kind == "gelu_tanh":
        cube = e.op(
            arith.MulfOp(e.op(arith.MulfOp(e.op(arith.MulfOp(e.const(0.044715, t), x)), x)), x)
        )
        inner = e.op(
            arith.MulfOp(e.const(math.sqrt(2.0 / math.pi), t), e.op(arith.AddfOp(x, cube)))
        )
        half_x = e.op(arith.MulfOp(e.const(0.5, t), x))
        return e.op(
            arith.MulfOp(half_x, e.op(arith.AddfOp(e.const(1.0, t), e.op(mathd.TanhOp(inner)))))
        )
    raise Unsupported(kind)


def _int_unary(e: Emitter, kind: str, x: SSAValue) -> SSAValue:
    if kind == "neg":
        return e.op(arith.SubiOp(e.const(0, x.type), x))
    if kind == "abs":
        return e.op(mathd.AbsIOp(x))
    if kind == "relu":
        return e.op(arith.MaxSIOp(x, e.const(0, x.type)))
    raise Unsupported(kind)


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


def _width(t: Attribute) -> int:
    if isinstance(t, IntegerType):
        return t.width.data
    assert isinstance(t, AnyFloat)
    return t.bitwidth


def _cast(e: Emitter, x: SSAValue, to: Attribute) -> SSAValue:
    src = x.type
    if src == to:
        return x
    if isinstance(src, AnyFloat) and isinstance(to, AnyFloat):
        if _width(src) == _width(to):
            return e.op(arith.TruncFOp(e.op(arith.ExtFOp(x, f32)), to))
        return e.op(arith.ExtFOp(x, to) if _width(src) < _width(to) else arith.TruncFOp(x, to))
    if isinstance(src, IntegerType) and isinstance(to, AnyFloat):
        return e.op(arith.UIToFPOp(x, to) if _width(src) == 1 else arith.SIToFPOp(x, to))
    if isinstance(src, AnyFloat) and isinstance(to, IntegerType):
        if _width(to) == 1:
            return e.op(arith.CmpfOp(x, e.const(0.0, src), "une"))
        return e.op(arith.FPToSIOp(x, to))
    if isinstance(src, IntegerType) and isinstance(to, IntegerType):
        if _width(to) == 1:
            return e.op(arith.CmpiOp(x, e.const(0, src), "ne"))
        if _width(src) < _width(to):
            return e.op(arith.ExtUIOp(x, to) if _width(src) == 1 else arith.ExtSIOp(x, to))
        return e.op(arith.TruncIOp(x, to))
    raise Unsupported(f"cast {src} -> {to}")


def build_scalar(e: Emitter, op: Operation, args: Sequence[SSAValue]) -> SSAValue:
    """Emit the scalar form of elementwise rlx `op` on scalar `args`."""
    kind = op.name.removeprefix("rlx.")
    types = [a.type for a in args]
    for t in types:
        if isinstance(t, IntegerType) and not _signless(t):
            raise Unsupported(f"{kind} on {t}")
    if kind == "cast":
        out = op.results[0].type
        assert isinstance(out, TensorType)
        out = out.element_type
        if isinstance(out, IntegerType) and not _signless(out):
            raise Unsupported(f"cast to {out}")
        return _cast(e, args[0], out)
    if kind == "where":
        return e.op(arith.SelectOp(args[0], args[1], args[2]))
    if kind == "compare":
        pred = op.predicate or "eq"
        if isinstance(types[0], AnyFloat):
            return e.op(arith.CmpfOp(args[0], args[1], _CMPF[pred]))
        table = _CMPU if _width(types[0]) == 1 else _CMPI
        return e.op(arith.CmpiOp(args[0], args[1], table[pred]))
    if len(args) == 2:
        table2 = _FLOAT_BINARY if isinstance(types[0], AnyFloat) else _INT_BINARY
        if kind not in table2:
            raise Unsupported(kind)
        return e.op(table2[kind](args[0], args[1]))  # type: ignore[call-arg]
    if isinstance(types[0], AnyFloat):
        return _float_unary(e, kind, args[0])
    return _int_unary(e, kind, args[0])
