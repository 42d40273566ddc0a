"""Leaf ops: weights (`rlx.param`), literal tensors (`rlx.constant`) and random tensors."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, TensorType
from xdsl.ir import Attribute
from xdsl.irdl import IRDLOperation, irdl_op_definition, result_def, traits_def
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import (
    ConstantLike,
    EffectInstance,
    MemoryEffect,
    MemoryEffectKind,
    Pure,
    Resource,
)

from rlx.dialects.rlx.base import (
    RlxOp,
    given_result,
    is_float,
    require,
    shape_of,
)
from rlx.dialects.rlx.fields import AttrValues, dense_def, float_def, int_def, str_def
from rlx.dialects.rlx.traits import Boundary


@irdl_op_definition
class ParamOp(RlxOp):
    """A named weight, bound at run time by `CompiledGraph.set_param` (or by `bind-params`)."""

    name = "rlx.param"
    param_name = str_def(attr_name="name", doc="The weight's name (its key in set_params).")
    result = result_def(TensorType)
    traits = traits_def(Pure(), Boundary)
    ASSEMBLY_FORMAT: ClassVar[str | None] = "$name attr-dict `:` type($result)"

    @classmethod
    def infer(
        cls,
        operand_types: Sequence[TensorType],
        attrs: AttrValues,
        given: Sequence[Attribute] | None = None,
    ) -> list[TensorType]:
        require(bool(attrs.param_name), "param name must be a non-empty string")
        return [given_result(given, "rlx.param")]


@irdl_op_definition
class ConstantOp(RlxOp):
    """A literal tensor; `value` is a dense elements attribute of the result type."""

    name = "rlx.constant"
    value = dense_def(doc="The literal (its type is the result type).")
    result = result_def(TensorType)
    traits = traits_def(Pure(), ConstantLike(), Boundary)
    ASSEMBLY_FORMAT: ClassVar[str | None] = None

    @classmethod
    def infer(
        cls,
        operand_types: Sequence[TensorType],
        attrs: AttrValues,
        given: Sequence[Attribute] | None = None,
    ) -> list[TensorType]:
        v = attrs.value
        assert isinstance(v, DenseIntOrFPElementsAttr)
        vt = v.get_type()
        require(isinstance(vt, TensorType), f"constant value must be a tensor, got {vt}")
        if given is not None:
            require(given[0] == vt, f"result type {given[0]} differs from the value's type {vt}")
        return [vt]  # type: ignore[list-item]

    def __init__(self, value: DenseIntOrFPElementsAttr):
        IRDLOperation.__init__(self, attributes={"value": value}, result_types=[value.get_type()])

    @classmethod
    def parse(cls, parser: Parser) -> ConstantOp:
        """`rlx.constant dense<...> : tensor<...> {attrs}`: the value's type is the result type."""
        value = parser.parse_attribute()
        if not isinstance(value, DenseIntOrFPElementsAttr):
            parser.raise_error(f"expected a dense elements attribute, got {value}")
        extra = parser.parse_optional_attr_dict()
        op = cls(value)
        op.attributes.update(extra)
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_attribute(self.value)
        extra = {k: v for k, v in self.attributes.items() if k != "value"}
        if extra:
            printer.print_op_attributes(extra)


@dataclass(frozen=True)
class RngState(Resource):
    """The random stream: rng ops read it, so two of them must never be merged."""

    def name(self) -> str:
        return "rlx.rng"


class RngEffect(MemoryEffect):
    """Allocation-like effect: removable when unused, never merged by CSE."""

    @classmethod
    def get_effects(cls, op: object) -> set[EffectInstance]:
        return {EffectInstance(MemoryEffectKind.ALLOC, resource=RngState())}


class RngOp(RlxOp):
    """Random tensor of the result type from the Philox4x64-10 stream of (seed, seed_offset)."""

    result = result_def(TensorType)
    traits = traits_def(RngEffect(), Boundary)
    ASSEMBLY_FORMAT: ClassVar[str | None] = "attr-dict `:` type($result)"

    @classmethod
    def infer(
        cls,
        operand_types: Sequence[TensorType],
        attrs: AttrValues,
        given: Sequence[Attribute] | None = None,
    ) -> list[TensorType]:
        out = given_result(given, cls.name)
        require(
            is_float(out.element_type),
            f"random tensors must be floating point, got {out.element_type}",
        )
        require(all(d >= 0 for d in shape_of(out)), "random tensors need a static shape")
        return [out]


@irdl_op_definition
class RngUniformOp(RngOp):
    name = "rlx.rng_uniform"
    low = float_def(0.0, doc="Lower bound (inclusive).")
    high = float_def(1.0, doc="Upper bound (exclusive).")
    seed_offset = int_def(None, doc="Stream offset (0 when absent).")

    @classmethod
    def infer(
        cls,
        operand_types: Sequence[TensorType],
        attrs: AttrValues,
        given: Sequence[Attribute] | None = None,
    ) -> list[TensorType]:
        out = super().infer(operand_types, attrs, given)
        low, high = attrs.low, attrs.high
        require(
            low <= high,
            f"low ({low}) must not exceed high ({high})",
        )
        return out


@irdl_op_definition
class RngNormalOp(RngOp):
    name = "rlx.rng_normal"
    mean = float_def(0.0, doc="Mean of the distribution.")
    std = float_def(1.0, doc="Standard deviation (non-negative).")
    seed_offset = int_def(None, doc="Stream offset (0 when absent).")

    @classmethod
    def infer(
        cls,
        operand_types: Sequence[TensorType],
        attrs: AttrValues,
        given: Sequence[Attribute] | None = None,
    ) -> list[TensorType]:
        out = super().infer(operand_types, attrs, given)
        std = attrs.std
        require(std >= 0, f"std must be non-negative, got {std}")
        return out
