"""Leaf ops: weights (`rlx.param`), literal tensors (`rlx.constant`) and random tensors."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, StringAttr, TensorType
from xdsl.ir import Attribute
from xdsl.irdl import attr_def, irdl_op_definition, result_def, traits_def
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
    attr_float,
    attr_int,
    attr_str,
    given_result,
    is_float,
    require,
    shape_of,
)


@irdl_op_definition
class ParamOp(RlxOp):
    """A named weight, bound at run time by `CompiledGraph.set_param` (or by `bind-params`)."""

    name = "rlx.param"
    param_name = attr_def(StringAttr, attr_name="name")
    result = result_def(TensorType)
    traits = traits_def(Pure())
    ASSEMBLY_FORMAT: ClassVar[str | None] = "$name attr-dict `:` type($result)"
    ATTRS: ClassVar[tuple[str, ...]] = ("name",)

    @classmethod
    def infer(
        cls,
        operand_types: Sequence[TensorType],
        attrs: dict[str, Attribute],
        given: Sequence[Attribute] | None = None,
    ) -> list[TensorType]:
        name = attr_str(attrs, "name")
        require(bool(name), "param name must be a non-empty string")
        return [given_result(given, "rlx.param")]


@irdl_op_definition
class ConstantOp(RlxOp):
    """A literal tensor; `value` is a dense elements attribute of the result type."""

    name = "rlx.constant"
    value = attr_def(DenseIntOrFPElementsAttr)
    result = result_def(TensorType)
    traits = traits_def(Pure(), ConstantLike())
    ASSEMBLY_FORMAT: ClassVar[str | None] = None
    ATTRS: ClassVar[tuple[str, ...]] = ("value",)

    @classmethod
    def infer(
        cls,
        operand_types: Sequence[TensorType],
        attrs: dict[str, Attribute],
        given: Sequence[Attribute] | None = None,
    ) -> list[TensorType]:
        v = attrs["value"]
        assert isinstance(v, DenseIntOrFPElementsAttr)
        vt = v.get_type()
        require(isinstance(vt, TensorType), f"constant value must be a tensor, got {vt}")
        if given is not None:
            require(given[0] == vt, f"result type {given[0]} differs from the value's type {vt}")
        return [vt]  # type: ignore[list-item]

    def __init__(self, value: DenseIntOrFPElementsAttr):
        super().__init__(attributes={"value": value}, result_types=[value.get_type()])

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
    traits = traits_def(RngEffect())
    ASSEMBLY_FORMAT: ClassVar[str | None] = "attr-dict `:` type($result)"

    @classmethod
    def infer(
        cls,
        operand_types: Sequence[TensorType],
        attrs: dict[str, Attribute],
        given: Sequence[Attribute] | None = None,
    ) -> list[TensorType]:
        out = given_result(given, cls.name)
        require(
            is_float(out.element_type),
            f"random tensors must be floating point, got {out.element_type}",
        )
        require(all(d >= 0 for d in shape_of(out)), "random tensors need a static shape")
        attr_int(attrs, "seed_offset")
        for a in cls.ATTRS:
            if a != "seed_offset":
                attr_float(attrs, a)
        return [out]


@irdl_op_definition
class RngUniformOp(RngOp):
    name = "rlx.rng_uniform"
    ATTRS: ClassVar[tuple[str, ...]] = ("low", "high", "seed_offset")

    @classmethod
    def infer(
        cls,
        operand_types: Sequence[TensorType],
        attrs: dict[str, Attribute],
        given: Sequence[Attribute] | None = None,
    ) -> list[TensorType]:
        out = super().infer(operand_types, attrs, given)
        low, high = attr_float(attrs, "low", 0.0), attr_float(attrs, "high", 1.0)
        require(
            low is not None and high is not None and low <= high,
            f"low ({low}) must not exceed high ({high})",
        )
        return out


@irdl_op_definition
class RngNormalOp(RngOp):
    name = "rlx.rng_normal"
    ATTRS: ClassVar[tuple[str, ...]] = ("mean", "std", "seed_offset")

    @classmethod
    def infer(
        cls,
        operand_types: Sequence[TensorType],
        attrs: dict[str, Attribute],
        given: Sequence[Attribute] | None = None,
    ) -> list[TensorType]:
        out = super().infer(operand_types, attrs, given)
        std = attr_float(attrs, "std", 1.0)
        require(std is not None and std >= 0, f"std must be non-negative, got {std}")
        return out
