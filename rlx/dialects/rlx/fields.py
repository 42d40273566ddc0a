"""Typed attribute fields of rlx ops: one declaration per attribute gives its IRDL
definition, its default, its Python type and its readable errors.

An op declares `axis = int_def(-1)` in its class body. `RlxOp.__init_subclass__` turns that
into an IRDL `opt_attr_def` named `axis`, stored under the field name
`axis_attr` (the raw `Attribute`, or None when absent), and a typed accessor `op.axis` that
decodes the attribute (an `int`), or gives the default when the attribute is absent. The
same declaration decodes attribute dictionaries for `infer` (`AttrValues`) and encodes
Python values in the typed constructors (`SoftmaxOp(x, axis=-1)`), so each default lives
in exactly one place.

Attributes stay attributes (not properties), so every existing spelling -- the generic
form `"rlx.softmax"(%x) {axis = -1 : i64}`, the custom form, and printed IR -- keeps
parsing and printing the same.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from xdsl.dialects.builtin import (
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    StringAttr,
    f64,
    i1,
    i64,
)
from xdsl.ir import Attribute
from xdsl.irdl import BaseAttr, opt_attr_def
from xdsl.irdl.constraints import AnyOf, AttrConstraint
from xdsl.utils.exceptions import VerifyException

REQUIRED: Any = type("Required", (), {"__repr__": lambda self: "REQUIRED"})()
"""Default of an attribute that must be given (`int_def()`)."""


def _int(name: str, a: Attribute) -> int:
    if not isinstance(a, IntegerAttr):
        raise VerifyException(f"attribute '{name}' must be an integer attribute, got {a}")
    return int(a.value.data)


def _float(name: str, a: Attribute) -> float:
    if isinstance(a, FloatAttr):
        return float(a.value.data)
    if isinstance(a, IntegerAttr):
        return float(a.value.data)
    raise VerifyException(f"attribute '{name}' must be a float attribute, got {a}")


def _bool(name: str, a: Attribute) -> bool:
    if not (
        isinstance(a, IntegerAttr) and isinstance(a.type, IntegerType) and a.type.width.data == 1
    ):
        raise VerifyException(f"attribute '{name}' must be a bool attribute (true/false), got {a}")
    return bool(a.value.data)


def _str(name: str, a: Attribute) -> str:
    if not isinstance(a, StringAttr):
        raise VerifyException(f"attribute '{name}' must be a string attribute, got {a}")
    return a.data


def _ints(name: str, a: Attribute) -> tuple[int, ...]:
    if not (isinstance(a, DenseArrayBase) and isinstance(a.elt_type, IntegerType)):
        raise VerifyException(
            f"attribute '{name}' must be an integer dense array (array<i64: ...>), got {a}"
        )
    return tuple(int(x) for x in a.get_values())


def _floats(name: str, a: Attribute) -> tuple[float, ...]:
    if not isinstance(a, DenseArrayBase):
        raise VerifyException(
            f"attribute '{name}' must be a dense array (array<f64: ...>), got {a}"
        )
    return tuple(float(x) for x in a.get_values())


def _float_or_floats(name: str, a: Attribute) -> float | tuple[float, ...]:
    if isinstance(a, DenseArrayBase):
        return tuple(float(x) for x in a.get_values())
    if isinstance(a, FloatAttr | IntegerAttr):
        return float(a.value.data)
    raise VerifyException(f"{name} must be an f64 attribute or an array<f64: ...>")


def _int_or_ints(name: str, a: Attribute) -> int | tuple[int, ...]:
    if isinstance(a, DenseArrayBase) and isinstance(a.elt_type, IntegerType):
        return tuple(int(x) for x in a.get_values())
    if isinstance(a, IntegerAttr):
        return int(a.value.data)
    raise VerifyException(f"attribute '{name}' must be an i64 attribute or an array<i64: ...>")


def _same(name: str, a: Attribute) -> Attribute:
    return a


def encode_bool(v: bool) -> IntegerAttr:
    return IntegerAttr(int(v), i1)


def encode_ints(vs: Sequence[int]) -> DenseArrayBase:
    return DenseArrayBase.from_list(i64, [int(v) for v in vs])


def encode_floats(vs: Sequence[float]) -> DenseArrayBase:
    return DenseArrayBase.from_list(f64, [float(v) for v in vs])


@dataclass(frozen=True)
class Kind:
    """How one kind of attribute is constrained, decoded and encoded."""

    name: str
    constraint: Callable[[], AttrConstraint]
    decode: Callable[[str, Attribute], Any]
    encode: Callable[[Any], Attribute]


KINDS: dict[str, Kind] = {
    "int": Kind("int", lambda: BaseAttr(IntegerAttr), _int, lambda v: IntegerAttr(int(v), i64)),
    "float": Kind(
        "float",
        lambda: AnyOf((BaseAttr(FloatAttr), BaseAttr(IntegerAttr))),
        _float,
        lambda v: FloatAttr(float(v), f64),
    ),
    "bool": Kind("bool", lambda: BaseAttr(IntegerAttr), _bool, encode_bool),
    "str": Kind("str", lambda: BaseAttr(StringAttr), _str, StringAttr),
    "ints": Kind("ints", lambda: BaseAttr(DenseArrayBase), _ints, encode_ints),
    "floats": Kind("floats", lambda: BaseAttr(DenseArrayBase), _floats, encode_floats),
    "float_or_floats": Kind(
        "float_or_floats",
        lambda: AnyOf((BaseAttr(FloatAttr), BaseAttr(IntegerAttr), BaseAttr(DenseArrayBase))),
        _float_or_floats,
        lambda v: encode_floats(v) if isinstance(v, Sequence) else FloatAttr(float(v), f64),
    ),
    "int_or_ints": Kind(
        "int_or_ints",
        lambda: AnyOf((BaseAttr(IntegerAttr), BaseAttr(DenseArrayBase))),
        _int_or_ints,
        lambda v: encode_ints(v) if isinstance(v, Sequence) else IntegerAttr(int(v), i64),
    ),
    "dense": Kind("dense", lambda: BaseAttr(DenseIntOrFPElementsAttr), _same, lambda v: v),
}


@dataclass(frozen=True)
class AttrField:
    """The declaration of one semantic attribute of an rlx op (see the module docstring)."""

    kind: Kind
    default: Any = REQUIRED
    """The Python value when the attribute is absent; REQUIRED: it must be given; None: it
    is optional and has no default (the accessor gives None)."""
    choices: tuple[str, ...] = ()
    """For string enums: the allowed values."""
    doc: str = ""
    attr_name: str | None = None
    """The attribute's name in the IR when it differs from the field name (e.g. `name`)."""
    field_name: str = field(default="", compare=False)

    @property
    def ir_name(self) -> str:
        return self.attr_name or self.field_name

    @property
    def required(self) -> bool:
        return self.default is REQUIRED

    def irdl(self) -> Any:
        """The IRDL field definition: an optional attribute with this kind's constraint.

        Presence is checked by `decode`, so a missing one reads "missing required attribute
        'x'". The default is not handed to IRDL as `default_value`: xDSL's declarative
        printer drops attributes equal to their `default_value`, and printed IR must keep
        what was written (`{axis = -1 : i64}` stays)."""
        return opt_attr_def(self.kind.constraint(), attr_name=self.ir_name)

    def decode(self, attr: Attribute | None) -> Any:
        """The Python value of `attr` (None: absent), checked against kind and choices."""
        if attr is None:
            if self.required:
                raise VerifyException(f"missing required attribute '{self.ir_name}'")
            return self.default
        value = self.kind.decode(self.ir_name, attr)
        if self.choices and value not in self.choices:
            raise VerifyException(
                f"attribute '{self.ir_name}' must be one of {', '.join(self.choices)}; "
                f'got "{value}"'
            )
        return value

    def encode(self, value: Any) -> Attribute:
        """The attribute of a Python value (an Attribute passes through unchanged)."""
        if isinstance(value, Attribute):
            return value
        return self.kind.encode(value)

    def accessor(self) -> property:
        """`op.<field>`: the decoded value; assigning encodes (None removes it)."""
        name = self.ir_name

        def get(op: Any) -> Any:
            return self.decode(op.attributes.get(name))

        def set_(op: Any, value: Any) -> None:
            if value is None:
                op.attributes.pop(name, None)
            else:
                op.attributes[name] = self.encode(value)

        return property(get, set_, doc=self.doc or f"The `{name}` attribute.")


def _field(kind: str) -> Callable[..., Any]:
    def make(default: Any = REQUIRED, *, doc: str = "", attr_name: str | None = None) -> Any:
        return AttrField(KINDS[kind], default, doc=doc, attr_name=attr_name)

    make.__name__ = f"{kind}_def"
    make.__doc__ = f"A `{kind}` attribute field (see `AttrField`)."
    return make


int_def = _field("int")
float_def = _field("float")
bool_def = _field("bool")
str_def = _field("str")
ints_def = _field("ints")
floats_def = _field("floats")
float_or_floats_def = _field("float_or_floats")
int_or_ints_def = _field("int_or_ints")
dense_def = _field("dense")


def enum_def(
    choices: Sequence[str], default: Any = REQUIRED, *, doc: str = "", attr_name: str | None = None
) -> Any:
    """A string attribute restricted to `choices`."""
    return AttrField(KINDS["str"], default, tuple(choices), doc, attr_name)


class AttrValues:
    """The decoded attributes of one op (what `infer` reads: `a.axis`), from an attribute
    dictionary and the op class's fields; a missing required attribute raises on access."""

    __slots__ = ("_fields", "_attrs")

    def __init__(self, fields: Mapping[str, AttrField], attrs: Mapping[str, Attribute]):
        self._fields = fields
        self._attrs = attrs

    def __getattr__(self, name: str) -> Any:
        try:
            f = self._fields[name]
        except KeyError:
            raise AttributeError(name) from None
        return f.decode(self._attrs.get(f.ir_name))


def collect_fields(namespace: dict[str, Any]) -> dict[str, AttrField]:
    """The `AttrField`s declared in a class body, with their field names filled in."""
    out: dict[str, AttrField] = {}
    for k, v in list(namespace.items()):
        if isinstance(v, AttrField):
            out[k] = AttrField(v.kind, v.default, v.choices, v.doc, v.attr_name, k)
    return out
