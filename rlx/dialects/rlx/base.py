"""Shared machinery of the rlx dialect: element-type classes, attribute readers,
NumPy-style broadcasting, and the base op class whose verifier re-infers the result type.

Every rlx op verifies by recomputing its result types from its operands and attributes
(`infer`) and comparing them with the types written in the IR, so one function per op
serves both the verifier and the Python builder (`rlx.Graph`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    AnyFloat,
    BoolAttr,
    DenseArrayBase,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    Signedness,
    StringAttr,
    TensorType,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import IRDLOperation, ParsePropInAttrDict
from xdsl.utils.exceptions import VerifyException

from rlx.dialects.rlx.fields import AttrField, AttrValues, collect_fields

if TYPE_CHECKING:
    from typing_extensions import Self  # typing.Self needs Python 3.11
    from xdsl.irdl.declarative_assembly_format import FormatProgram
    from xdsl.parser import Parser
    from xdsl.printer import Printer

DYN = DYNAMIC_INDEX
"""Marker of a dynamic dimension (`?`) in a shape tuple."""

Shape = tuple[int, ...]


# ----------------------------------------------------------------------------- element types


def is_float(t: Attribute) -> bool:
    """f64, f32, f16, bf16 and the fp8/fp6/fp4 types."""
    return isinstance(t, AnyFloat)


def is_int(t: Attribute) -> bool:
    """Any integer element type, including i1 and ui8."""
    return isinstance(t, IntegerType)


def is_bool(t: Attribute) -> bool:
    return isinstance(t, IntegerType) and t.width.data == 1


def is_unsigned(t: Attribute) -> bool:
    return isinstance(t, IntegerType) and t.signedness.data == Signedness.UNSIGNED


def is_numeric(t: Attribute) -> bool:
    """Numbers that arithmetic applies to: floats and non-bool integers."""
    return is_float(t) or (is_int(t) and not is_bool(t))


UI8 = IntegerType(8, Signedness.UNSIGNED)


def tensor(shape: Sequence[int], elem: Attribute) -> TensorType:
    return TensorType(elem, list(shape))


def shape_of(t: Attribute) -> Shape:
    assert isinstance(t, TensorType)
    return tuple(t.get_shape())


def fmt_shape(shape: Sequence[int]) -> str:
    return "x".join("?" if d == DYN else str(d) for d in shape) if shape else "scalar"


# ----------------------------------------------------------------------------- shapes


def dims_compatible(a: int, b: int) -> bool:
    return a == b or a == DYN or b == DYN


def broadcast_shapes(*shapes: Shape, what: str = "operands") -> Shape:
    """NumPy broadcasting of several shapes; a dynamic dim (?) broadcasts with anything."""
    rank = max((len(s) for s in shapes), default=0)
    out: list[int] = []
    for i in range(rank):
        dims = [s[len(s) - rank + i] for s in shapes if len(s) - rank + i >= 0]
        known = {d for d in dims if d not in (1, DYN)}
        if len(known) > 1:
            raise VerifyException(
                f"{what} are not broadcast-compatible: "
                + ", ".join(f"tensor<{fmt_shape(s)}>" for s in shapes)
            )
        if known:
            out.append(known.pop())
        elif DYN in dims:
            out.append(DYN)
        else:
            out.append(1)
    return tuple(out)


def normalize_axis(axis: int, rank: int, what: str = "axis") -> int:
    """Map a possibly negative axis into [0, rank), or raise a readable error."""
    if not -rank <= axis < max(rank, 1):
        raise VerifyException(f"{what} {axis} is out of range for rank {rank}")
    return axis % rank if rank else 0


# ----------------------------------------------------------------------------- attributes


def i64_attr(v: int) -> IntegerAttr:
    return IntegerAttr(v, 64)


def f64_attr(v: float) -> FloatAttr:
    from xdsl.dialects.builtin import f64

    return FloatAttr(v, f64)


def bool_attr(v: bool) -> BoolAttr:
    return IntegerAttr(int(v), 1)


def ints_attr(vs: Sequence[int]) -> DenseArrayBase:
    from xdsl.dialects.builtin import i64

    return DenseArrayBase.from_list(i64, list(vs))


def floats_attr(vs: Sequence[float]) -> DenseArrayBase:
    from xdsl.dialects.builtin import f64

    return DenseArrayBase.from_list(f64, list(vs))


def to_attr(v: object) -> Attribute:
    """Python value -> rlx attribute kind (int -> i64, float -> f64, bool, str, list -> array)."""
    if isinstance(v, Attribute):
        return v
    if isinstance(v, bool):
        return bool_attr(v)
    if isinstance(v, int):
        return i64_attr(v)
    if isinstance(v, float):
        return f64_attr(v)
    if isinstance(v, str):
        return StringAttr(v)
    if isinstance(v, list | tuple):
        if all(isinstance(x, int) and not isinstance(x, bool) for x in v):
            return ints_attr(v)
        return floats_attr([float(x) for x in v])
    raise TypeError(f"cannot make an rlx attribute from {v!r}")


# ----------------------------------------------------------------------------- base op


class RlxOp(IRDLOperation):
    """Base of rlx ops: readable custom form `rlx.op %a, %b {attrs} : (types) -> type`,
    typed attribute fields, and a verifier that re-infers the result types with `infer`.

    Attributes are declared as fields (`axis = int_def(-1)`, see `rlx.dialects.rlx.fields`):
    each becomes an IRDL attribute definition plus a typed accessor (`op.axis` is an `int`),
    and the op gets a typed constructor `SoftmaxOp(x, axis=-1)` that infers result types.

    The custom form is the declarative format `ASSEMBLY_FORMAT` (xDSL syntax), which
    this class parses on first use. An op sets `ASSEMBLY_FORMAT` (annotated as a
    `ClassVar`) instead of xDSL's `assembly_format`, which xDSL would parse when the class
    is defined -- a third of the import time of the dialect. `None`: generic form only
    (or the op's own `parse`/`print`).
    """

    ASSEMBLY_FORMAT: ClassVar[str | None] = (
        "operands attr-dict `:` functional-type(operands, results)"
    )
    irdl_options = (ParsePropInAttrDict(),)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        own = collect_fields(dict(cls.__dict__))
        for fname, f in own.items():
            setattr(cls, f"{fname}_attr", f.irdl())
            setattr(cls, fname, f.accessor())
        _FIELDS[cls] = {**_FIELDS.get(cls.__mro__[1], {}), **own}

    @classmethod
    def fields(cls) -> dict[str, AttrField]:
        """Field name -> declaration of every semantic attribute (inherited ones included)."""
        return _FIELDS.get(cls, {})

    def __init__(
        self,
        *operands: SSAValue | Operation,
        result_types: Sequence[Attribute] | None = None,
        **values: Any,
    ) -> None:
        """Typed constructor: operands in order, attribute values by field name (None:
        left out); result types inferred unless given (ops whose result type carries
        meaning, e.g. `rlx.cast`, need `result_types`)."""
        attrs = self.encode_attrs(values)
        vals = [SSAValue.get(o) for o in operands]
        types = self.infer_from([v.type for v in vals], attrs, result_types)  # type: ignore[misc]
        Operation.__init__(self, operands=vals, result_types=types, attributes=attrs)

    @classmethod
    def encode_attrs(cls, values: Mapping[str, Any]) -> dict[str, Attribute]:
        """Attribute dictionary of Python values given by field name (None: left out)."""
        out: dict[str, Attribute] = {}
        for k, v in values.items():
            f = cls.fields().get(k)
            if f is None:
                raise TypeError(f"{cls.name} has no attribute field '{k}'")
            if v is not None:
                out[f.ir_name] = f.encode(v)
        return out

    @classmethod
    def attr_values(cls, attrs: Mapping[str, Attribute]) -> AttrValues:
        """The typed view of an attribute dictionary (what `infer` reads)."""
        return AttrValues(cls.fields(), attrs)

    @classmethod
    def infer_from(
        cls,
        operand_types: Sequence[Attribute],
        attrs: Mapping[str, Attribute],
        given: Sequence[Attribute] | None = None,
    ) -> list[TensorType]:
        """`infer` on an attribute dictionary, after checking every field's kind, choices
        and presence (in declaration order)."""
        for f in cls.fields().values():
            f.decode(attrs.get(f.ir_name))
        return cls.infer(operand_types, cls.attr_values(attrs), given)  # type: ignore[arg-type]

    @classmethod
    def infer(
        cls,
        operand_types: Sequence[TensorType],
        a: AttrValues,
        given: Sequence[Attribute] | None = None,
    ) -> list[TensorType]:
        """Result types from operand types and attributes; raises VerifyException when invalid.

        `a` holds the decoded attributes (`a.axis`); `given` holds the result types written
        in the IR (None when building); ops whose result type is part of their meaning
        (cast, reshape, rng, ...) read and check it.
        """
        raise NotImplementedError

    def verify_(self) -> None:
        known = {f.ir_name for f in self.fields().values()}
        unknown = [k for k in self.attributes if k not in known and not k.startswith("rlx.")]
        if unknown:
            raise VerifyException(
                f"unknown attribute '{unknown[0]}'"
                + (
                    f"; expected one of: {', '.join(sorted(known))}"
                    if known
                    else "; this op takes no attributes"
                )
            )
        types = [o.type for o in self.operands]
        for i, t in enumerate(types):
            if not isinstance(t, TensorType):
                raise VerifyException(f"operand #{i} must be a tensor, got {t}")
        actual = [r.type for r in self.results]
        for what, ts in (("operand", types), ("result", actual)):
            for i, t in enumerate(ts):  # the parser refuses them; a builder may not
                if isinstance(t, TensorType) and any(d < 0 and d != DYN for d in t.get_shape()):
                    raise VerifyException(f"{what} #{i} has a negative size: {t}")
        expected = self.infer_from(types, self.attributes, actual)
        if len(expected) != len(actual):
            raise VerifyException(f"expected {len(expected)} results, got {len(actual)}")
        for i, (e, a) in enumerate(zip(expected, actual, strict=True)):
            if not types_compatible(e, a):
                raise VerifyException(
                    f"result #{i} has type {a}, but the operands and attributes give {e}"
                )

    @classmethod
    def format_program(cls) -> FormatProgram | None:
        """The parsed `ASSEMBLY_FORMAT` of this op class (built once), or None."""
        program = _FORMAT_PROGRAMS.get(cls)
        if program is None and cls.ASSEMBLY_FORMAT is not None:
            from xdsl.irdl import PyRDLOpDefinitionError
            from xdsl.irdl.declarative_assembly_format import FormatProgram
            from xdsl.utils.exceptions import ParseError

            try:
                program = FormatProgram.from_str(cls.ASSEMBLY_FORMAT, cls.get_irdl_definition())
            except ParseError as e:  # a bug in the op definition, not in the input
                raise PyRDLOpDefinitionError(f"invalid ASSEMBLY_FORMAT of {cls.name}: {e}") from e
            _FORMAT_PROGRAMS[cls] = program
        return program

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        program = cls.format_program()
        if program is None:
            return super().parse(parser)
        return program.parse(parser, cls)

    def print(self, printer: Printer) -> None:
        program = type(self).format_program()
        if program is None:
            super().print(printer)
        else:
            program.print(printer, self)


_FORMAT_PROGRAMS: dict[type[RlxOp], FormatProgram] = {}
_FIELDS: dict[type, dict[str, AttrField]] = {}
"""Op class -> its attribute fields (see `RlxOp.fields`)."""
"""Op class -> its parsed `ASSEMBLY_FORMAT` (see `RlxOp.format_program`)."""


def types_compatible(expected: Attribute, actual: Attribute) -> bool:
    """Equal types, where a dynamic dim on either side matches any size."""
    if expected == actual:
        return True
    if not (isinstance(expected, TensorType) and isinstance(actual, TensorType)):
        return False
    if expected.element_type != actual.element_type:
        return False
    es, as_ = shape_of(expected), shape_of(actual)
    return len(es) == len(as_) and all(dims_compatible(a, b) for a, b in zip(es, as_, strict=True))


def elem(t: TensorType) -> Attribute:
    return t.element_type


def same_elem(types: Sequence[TensorType], what: str = "operands") -> Attribute:
    e = types[0].element_type
    for t in types[1:]:
        if t.element_type != e:
            raise VerifyException(
                f"{what} must have the same element type, got {', '.join(str(x.element_type) for x in types)}"
            )
    return e


def require(cond: bool, msg: str) -> None:
    if not cond:
        raise VerifyException(msg)


def given_result(given: Sequence[Attribute] | None, op: str) -> TensorType:
    """The single result type written in the IR, for ops whose result type carries meaning."""
    if not given or not isinstance(given[0], TensorType):
        raise VerifyException(f"{op} needs an explicit tensor result type")
    return given[0]
