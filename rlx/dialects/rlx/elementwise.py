"""Elementwise rlx ops: unary math, binary arithmetic with NumPy broadcasting,
compare/where, and cast."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ClassVar

from xdsl.dialects.builtin import TensorType, i1
from xdsl.ir import Attribute
from xdsl.irdl import irdl_op_definition, operand_def, result_def, traits_def
from xdsl.traits import Pure

from rlx.dialects.rlx import formula as f
from rlx.dialects.rlx.base import (
    RlxOp,
    broadcast_shapes,
    fmt_shape,
    given_result,
    is_bool,
    is_float,
    is_numeric,
    require,
    same_elem,
    shape_of,
    tensor,
    types_compatible,
)
from rlx.dialects.rlx.fields import AttrValues, enum_def
from rlx.dialects.rlx.formula import ScalarBuilder, V
from rlx.dialects.rlx.traits import DataMovement, Elementwise


class UnaryOp(RlxOp):
    """`y = f(x)` elementwise; same shape and element type."""

    x = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure(), Elementwise)

    FLOAT_ONLY: ClassVar[bool] = True
    FORMULA: ClassVar[str | Callable[..., Any] | None] = None
    """The op's meaning: a builder primitive (a `ScalarBuilder.math` function or a
    method name such as "neg") or a composite formula of `rlx.dialects.rlx.formula`."""

    @classmethod
    def formula(cls, b: ScalarBuilder[V], x: V) -> V:
        """The op's meaning on one scalar (see `rlx.dialects.rlx.formula`)."""
        fn = cls.FORMULA
        assert fn is not None, f"{cls.name} defines no formula"
        if callable(fn):
            return fn(b, x)
        return b.math(fn, x) if fn in f.MATH_FUNCTIONS else getattr(b, fn)(x)

    @classmethod
    def infer(
        cls,
        operand_types: Sequence[TensorType],
        attrs: AttrValues,
        given: Sequence[Attribute] | None = None,
    ) -> list[TensorType]:
        (t,) = operand_types
        e = t.element_type
        if cls.FLOAT_ONLY:
            require(is_float(e), f"operand must have a floating-point element type, got {e}")
        else:
            require(is_numeric(e), f"operand must have a numeric element type, got {e}")
        return [t]


@irdl_op_definition
class NegOp(UnaryOp):
    name = "rlx.neg"
    FLOAT_ONLY: ClassVar[bool] = False
    FORMULA: ClassVar[Any] = "neg"


@irdl_op_definition
class AbsOp(UnaryOp):
    name = "rlx.abs"
    FLOAT_ONLY: ClassVar[bool] = False
    FORMULA: ClassVar[Any] = "abs"


@irdl_op_definition
class ReluOp(UnaryOp):
    name = "rlx.relu"
    FLOAT_ONLY: ClassVar[bool] = False
    FORMULA: ClassVar[Any] = staticmethod(f.relu)


@irdl_op_definition
class ExpOp(UnaryOp):
    name = "rlx.exp"
    FORMULA: ClassVar[Any] = "exp"


@irdl_op_definition
class LogOp(UnaryOp):
    name = "rlx.log"
    FORMULA: ClassVar[Any] = "log"


@irdl_op_definition
class SqrtOp(UnaryOp):
    name = "rlx.sqrt"
    FORMULA: ClassVar[Any] = "sqrt"


@irdl_op_definition
class RsqrtOp(UnaryOp):
    name = "rlx.rsqrt"
    FORMULA: ClassVar[Any] = staticmethod(f.rsqrt)


@irdl_op_definition
class SinOp(UnaryOp):
    name = "rlx.sin"
    FORMULA: ClassVar[Any] = "sin"


@irdl_op_definition
class CosOp(UnaryOp):
    name = "rlx.cos"
    FORMULA: ClassVar[Any] = "cos"


@irdl_op_definition
class TanhOp(UnaryOp):
    name = "rlx.tanh"
    FORMULA: ClassVar[Any] = "tanh"


@irdl_op_definition
class SigmoidOp(UnaryOp):
    name = "rlx.sigmoid"
    FORMULA: ClassVar[Any] = staticmethod(f.sigmoid)


@irdl_op_definition
class GeluOp(UnaryOp):
    """Exact GELU: 0.5·x·(1 + erf(x/√2))."""

    name = "rlx.gelu"
    FORMULA: ClassVar[Any] = staticmethod(f.gelu)


@irdl_op_definition
class GeluTanhOp(UnaryOp):
    """Tanh-approximated GELU: 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))."""

    name = "rlx.gelu_tanh"
    FORMULA: ClassVar[Any] = staticmethod(f.gelu_tanh)


@irdl_op_definition
class SiluOp(UnaryOp):
    name = "rlx.silu"
    FORMULA: ClassVar[Any] = staticmethod(f.silu)


@irdl_op_definition
class ErfOp(UnaryOp):
    name = "rlx.erf"
    FORMULA: ClassVar[Any] = "erf"


@irdl_op_definition
class FloorOp(UnaryOp):
    name = "rlx.floor"
    FORMULA: ClassVar[Any] = "floor"


@irdl_op_definition
class CeilOp(UnaryOp):
    name = "rlx.ceil"
    FORMULA: ClassVar[Any] = "ceil"


@irdl_op_definition
class RoundOp(UnaryOp):
    """Round to nearest, ties to even."""

    name = "rlx.round"
    FORMULA: ClassVar[Any] = "round"


@irdl_op_definition
class HardSwishOp(UnaryOp):
    """Hard swish (ONNX HardSwish, MobileNetV3): x · min(max(x/6 + 1/2, 0), 1)."""

    name = "rlx.hard_swish"

    @classmethod
    def formula(cls, b: ScalarBuilder[V], x: V) -> V:
        gate = b.add(b.mul(x, b.const(1.0 / 6.0, x)), b.const(0.5, x))
        return b.mul(x, b.min(b.max(gate, b.const(0.0, x)), b.const(1.0, x)))


UNARY_OPS: tuple[type[UnaryOp], ...] = (
    NegOp, AbsOp, ExpOp, LogOp, SqrtOp, RsqrtOp, SinOp, CosOp, TanhOp, SigmoidOp, ReluOp,
    GeluOp, GeluTanhOp, SiluOp, ErfOp, FloorOp, CeilOp, RoundOp, HardSwishOp,
)  # fmt: skip


class BinaryOp(RlxOp):
    """`y = lhs ∘ rhs` elementwise with NumPy broadcasting; operands share an element type."""

    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure(), Elementwise)

    PRIMITIVE: ClassVar[str] = ""
    """The `ScalarBuilder` method this op is."""

    @classmethod
    def formula(cls, b: ScalarBuilder[V], lhs: V, rhs: V) -> V:
        """The op's meaning on scalars (see `rlx.dialects.rlx.formula`)."""
        return getattr(b, cls.PRIMITIVE)(lhs, rhs)

    @classmethod
    def infer(
        cls,
        operand_types: Sequence[TensorType],
        attrs: AttrValues,
        given: Sequence[Attribute] | None = None,
    ) -> list[TensorType]:
        e = same_elem(operand_types)
        require(is_numeric(e), f"operands must have a numeric element type, got {e}")
        shape = broadcast_shapes(*(shape_of(t) for t in operand_types))
        return [tensor(shape, e)]


@irdl_op_definition
class AddOp(BinaryOp):
    name = "rlx.add"
    PRIMITIVE: ClassVar[str] = "add"


@irdl_op_definition
class SubOp(BinaryOp):
    name = "rlx.sub"
    PRIMITIVE: ClassVar[str] = "sub"


@irdl_op_definition
class MulOp(BinaryOp):
    name = "rlx.mul"
    PRIMITIVE: ClassVar[str] = "mul"


@irdl_op_definition
class DivOp(BinaryOp):
    """Division; integer division truncates toward zero."""

    name = "rlx.div"
    PRIMITIVE: ClassVar[str] = "div"


@irdl_op_definition
class MaxOp(BinaryOp):
    name = "rlx.max"
    PRIMITIVE: ClassVar[str] = "max"


@irdl_op_definition
class MinOp(BinaryOp):
    name = "rlx.min"
    PRIMITIVE: ClassVar[str] = "min"


@irdl_op_definition
class PowOp(BinaryOp):
    name = "rlx.pow"
    PRIMITIVE: ClassVar[str] = "pow"


BINARY_OPS: tuple[type[BinaryOp], ...] = (AddOp, SubOp, MulOp, DivOp, MaxOp, MinOp, PowOp)

PREDICATES = ("eq", "ne", "lt", "le", "gt", "ge")


@irdl_op_definition
class CompareOp(RlxOp):
    """Elementwise comparison with broadcasting; the result is i1."""

    name = "rlx.compare"
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure(), Elementwise)
    predicate = enum_def(PREDICATES, doc="eq, ne, lt, le, gt or ge.")

    def formula(self, b: ScalarBuilder[V], lhs: V, rhs: V) -> V:
        """The comparison on scalars (see `rlx.dialects.rlx.formula`)."""
        return b.compare(self.predicate, lhs, rhs)

    @classmethod
    def infer(
        cls,
        operand_types: Sequence[TensorType],
        attrs: AttrValues,
        given: Sequence[Attribute] | None = None,
    ) -> list[TensorType]:
        same_elem(operand_types)
        shape = broadcast_shapes(*(shape_of(t) for t in operand_types))
        return [tensor(shape, i1)]


@irdl_op_definition
class WhereOp(RlxOp):
    """`cond ? a : b` elementwise, broadcasting all three operands."""

    name = "rlx.where"
    cond = operand_def(TensorType)
    a = operand_def(TensorType)
    b = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure(), Elementwise)

    @classmethod
    def formula(cls, bld: ScalarBuilder[V], cond: V, a: V, b: V) -> V:
        """cond ? a : b on scalars."""
        return bld.select(cond, a, b)

    @classmethod
    def infer(
        cls,
        operand_types: Sequence[TensorType],
        attrs: AttrValues,
        given: Sequence[Attribute] | None = None,
    ) -> list[TensorType]:
        c, a, b = operand_types
        require(
            is_bool(c.element_type), f"condition must have element type i1, got {c.element_type}"
        )
        e = same_elem([a, b], "the selected operands")
        shape = broadcast_shapes(*(shape_of(t) for t in operand_types))
        return [tensor(shape, e)]


@irdl_op_definition
class CastOp(RlxOp):
    """Convert the element type (given by the result type); the shape is unchanged."""

    name = "rlx.cast"
    x = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure(), DataMovement)

    def formula(self, b: ScalarBuilder[V], x: V) -> V:
        """x converted to the result's element type."""
        t = self.result.type
        assert isinstance(t, TensorType)
        return b.cast(x, t.element_type)

    @classmethod
    def infer(
        cls,
        operand_types: Sequence[TensorType],
        attrs: AttrValues,
        given: Sequence[Attribute] | None = None,
    ) -> list[TensorType]:
        out = given_result(given, "rlx.cast")
        (t,) = operand_types
        require(
            types_compatible(tensor(shape_of(t), out.element_type), out),
            f"cast must keep the shape: operand tensor<{fmt_shape(shape_of(t))}>, result {out}",
        )
        return [out]
