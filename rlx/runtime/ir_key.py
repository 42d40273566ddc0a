"""`structural_text`: an exact, cheap stand-in for a module's printed text (the cache key).

Printing a module with xDSL's printer costs ~15 ms for MiniLM's 320 ops; a compile-cache
hit must cost less than that in total. This walk writes what the printed module is a
function of — every op's name and class, operands (as numbers of the values in order of first
appearance), results (types and name hints), attributes and properties (names and values
in insertion order), successors, regions (block arguments' types and name hints) and known
locations (run-time error messages name them: an imported ONNX node's `loc("node 'n'
(Gather)")`, a file's line and column) — in a compact form, so two modules that print differently never get the same text (the key is
exact); the converse need not hold (a different text is just a cache miss).

Attributes are written structurally: a parametrized attribute as its class and its
parameters, a data attribute as its class and its value (floats by their bits, so -0.0 and
NaN payloads stay distinct, bytes by their sha256); a value of any other Python type falls
back to the attribute's printed form, which is exact by definition.
"""

from __future__ import annotations

import hashlib
import struct
from enum import Enum
from typing import Any

from xdsl.dialects.builtin import ModuleOp, TensorType, UnknownLoc
from xdsl.ir import Attribute, Block, Data, Operation, ParametrizedAttribute, SSAValue

_CLASSES: dict[type, tuple[str, str]] = {}
"""Per attribute class: its qualified name and kind ("p"arametrized, "d"ata or "o"ther)."""


def _cls(t: type) -> tuple[str, str]:
    c = _CLASSES.get(t)
    if c is None:
        kind = "p" if issubclass(t, ParametrizedAttribute) else "d" if issubclass(t, Data) else "o"
        c = _CLASSES[t] = (f"{t.__module__}.{t.__qualname__}", kind)
    return c


class _Unknown(Exception):
    """A value this walk cannot write exactly: the caller prints the attribute instead."""


def _value(v: Any) -> str:
    t = type(v)
    if t is int:
        return str(v)
    if t is str:
        return repr(v)
    if t is tuple or t is list:
        return "(" + ",".join(map(_value, v)) + ")"
    if t is bool:
        return "T" if v else "F"
    if t is float:
        return "f" + struct.pack("<d", v).hex()
    if t is bytes or t is bytearray:
        return f"b{len(v)}:{hashlib.sha256(v).hexdigest()}"
    if t is dict:
        return "{" + ",".join(f"{k!r}={_value(x)}" for k, x in v.items()) + "}"
    if isinstance(v, Attribute):
        return attribute_text(v)
    if isinstance(v, Enum):
        return f"{_cls(type(v))[0]}:{_value(v.value)}"
    raise _Unknown  # subclasses of int, str, ... too: their printing may differ


def attribute_text(a: Attribute) -> str:
    """An exact structural rendering of `a` (equal text => equal printed form)."""
    name, kind = _cls(type(a))
    try:
        if kind == "p":
            return f"{name}<{','.join(map(_value, a.parameters))}>"  # type: ignore[attr-defined]
        if kind == "d":
            return f"{name}({_value(a.data)})"  # type: ignore[attr-defined]
    except _Unknown:
        pass
    return f"{name}!{a}"


class _Writer:
    def __init__(self) -> None:
        self.parts: list[str] = []
        self.ids: dict[int, int] = {}
        self.blocks: dict[int, int] = {}
        self.attrs: dict[int, str] = {}
        self.keep: list[Any] = []  # keeps numbered objects alive: ids stay unique

    def attr(self, a: Attribute) -> str:
        """`attribute_text`, once per attribute object (element types are shared)."""
        text = self.attrs.get(id(a))
        if text is None:
            if type(a) is TensorType:
                shape = ",".join(str(d.data) for d in a.shape.data)
                text = f"T[{shape}]{self.attr(a.element_type)}{self.attr(a.encoding)}"
            else:
                text = attribute_text(a)
            self.attrs[id(a)] = text
            self.keep.append(a)
        return text

    def value(self, v: SSAValue, define: bool) -> str:
        n = self.ids.get(id(v))
        if n is None:
            n = self.ids[id(v)] = len(self.ids)
            self.keep.append(v)
        hint = "" if v.name_hint is None else repr(v.name_hint)
        return f"{'=' if define else '%'}{n}{hint}"

    def block_id(self, b: Block) -> int:
        n = self.blocks.get(id(b))
        if n is None:
            n = self.blocks[id(b)] = len(self.blocks)
            self.keep.append(b)
        return n

    def op(self, op: Operation) -> None:
        p = self.parts
        p.append(op.name + " " + _cls(type(op))[0])  # the class picks the printer
        p.append("(" + ",".join(self.value(v, False) for v in op.operands) + ")")
        p.append(
            "->("
            + ",".join(self.value(r, True) + ":" + self.attr(r.type) for r in op.results)
            + ")"
        )
        for tag, d in (("a", op.attributes), ("p", op.properties)):
            if d:
                p.append(tag + "{" + ",".join(f"{k!r}={self.attr(x)}" for k, x in d.items()) + "}")
        if type(op.location) is not UnknownLoc:
            p.append("@" + self.attr(op.location))
        if op.successors:
            p.append("^(" + ",".join(str(self.block_id(b)) for b in op.successors) + ")")
        for region in op.regions:
            p.append("{")
            for block in region.blocks:
                args = ",".join(self.value(a, True) + ":" + self.attr(a.type) for a in block.args)
                p.append(f"^{self.block_id(block)}({args})")
                for inner in block.ops:
                    self.op(inner)
            p.append("}")
        p.append(";")


def structural_text(module: ModuleOp) -> str:
    """The module's structural text (see the module docstring): O(ops), no printer."""
    w = _Writer()
    w.op(module)
    return "\n".join(w.parts)
