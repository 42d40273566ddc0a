"""One ONNX node being converted (`Node`: typed access to its inputs and attributes,
emission helpers that turn builder errors into errors naming the node) and what the
importer does with the ops a node added: give them the node's location (`locate`) and
refuse sizes a converter computed as negative (`check_sizes`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import onnx
from onnx import helper
from xdsl.dialects.builtin import NameLoc, TensorType, UnknownLoc
from xdsl.ir import Attribute, Block, Operation, SSAValue

from rlx.dialects.rlx.base import DYN, shape_of
from rlx.dtypes import element_type, numpy_dtype
from rlx.frontends.onnx.registry import DYNAMIC_RESULT_HOOKS, OnnxImportError
from rlx.transforms.dim_exprs import DIMS_ATTR

if TYPE_CHECKING:
    from rlx.frontends.onnx.importer import Importer


class Node:
    """One ONNX node being converted: typed access to its inputs and attributes."""

    def __init__(self, ctx: Importer, proto: onnx.NodeProto) -> None:
        self.ctx = ctx
        self.proto = proto
        self.op_type = proto.op_type
        self.attrs = {a.name: helper.get_attribute_value(a) for a in proto.attribute}

    @property
    def name(self) -> str:
        """The node's name, else its first named output (`?` if none)."""
        return self.proto.name or next((o for o in self.proto.output if o), "?")

    def __str__(self) -> str:
        return f"node '{self.name}' ({self.op_type})"

    def error(self, what: str) -> OnnxImportError:
        """An OnnxImportError naming this node: `node 'n' (Op): what`."""
        return OnnxImportError(f"{self}: {what}")

    # ---------------------------------------------------------------- attributes / inputs
    def attr(self, name: str, default: Any = None) -> Any:
        v = self.attrs.get(name, default)
        return v.decode() if isinstance(v, bytes) else v

    @property
    def n_outputs(self) -> int:
        return len(self.proto.output)

    def has(self, i: int) -> bool:
        """Whether optional input `i` is given."""
        return i < len(self.proto.input) and self.proto.input[i] != ""

    def wants(self, i: int) -> bool:
        """Whether output `i` is used (named)."""
        return i < len(self.proto.output) and self.proto.output[i] != ""

    def input(self, i: int) -> SSAValue:
        if not self.has(i):
            raise self.error(f"input #{i} is required")
        return self.ctx.value(self.proto.input[i])

    def opt(self, i: int) -> SSAValue | None:
        return self.input(i) if self.has(i) else None

    def const(self, i: int, what: str = "") -> np.ndarray | None:
        """The compile-time value of input `i` (None if absent); raises if not constant."""
        if not self.has(i):
            return None
        name = self.proto.input[i]
        if name not in self.ctx.known:
            # a graph input fed at run time: RLX compiles static shapes, so name the fix
            fed = name in getattr(self.ctx, "sym_shapes", {})
            hint = f"; freeze the graph input with constants={{'{name}': ...}}" if fed else ""
            raise self.error(
                f"input #{i} {what}('{name}') must be a constant (initializer or Constant)" + hint
            )
        return self.ctx.known[name]

    def inputs(self) -> list[SSAValue]:
        return [self.ctx.value(n) for n in self.proto.input if n]

    # ---------------------------------------------------------------- emission helpers
    def emit(self, op: str, *operands: SSAValue, **attrs: Any) -> SSAValue:
        try:
            r = self.ctx.g.op(op, *operands, **attrs)
        except ValueError as e:
            raise self.error(str(e)) from None
        assert isinstance(r, SSAValue)
        return r

    def typed(self, op: str, x: SSAValue, shape: Sequence[int], dtype: Any = None) -> SSAValue:
        """reshape / broadcast_to / cast with an explicit result shape or dtype."""
        try:
            if op == "cast":
                return self.ctx.g.cast(x, dtype)
            if op == "reshape":
                return self.ctx.g.reshape(x, list(shape))
            return self.ctx.g.broadcast_to(x, list(shape))
        except ValueError as e:
            raise self.error(str(e)) from None

    def reshape(self, x: SSAValue, shape: Sequence[int]) -> SSAValue:
        if tuple(shape) == shape_of(x.type):
            return x
        y = self.typed("reshape", x, shape)
        if list(shape).count(DYN) > 1:
            for hook in DYNAMIC_RESULT_HOOKS:
                hook(self.ctx, y)
        return y

    def cast(self, x: SSAValue, dtype: Any) -> SSAValue:
        return x if elem(x) == element_type(dtype) else self.typed("cast", x, (), dtype)

    def constant(self, value: Any, like: SSAValue | Attribute | Any = None) -> SSAValue:
        """An rlx.constant (dtype of `like`: a value, an element type or a NumPy dtype)."""
        if isinstance(like, SSAValue):
            like = elem(like)
        elif isinstance(like, str):
            like = element_type(like)
        dt = numpy_dtype(like) if isinstance(like, Attribute) else like
        return self.ctx.materialize(np.asarray(value, dtype=dt))


def elem(v: SSAValue) -> Attribute:
    assert isinstance(v.type, TensorType)
    return v.type.element_type


def shape(v: SSAValue) -> tuple[int, ...]:
    return shape_of(v.type)


def dims_text(s: Sequence[int]) -> str:
    """A shape for messages: `[?, 3]` (dynamic dims as `?`)."""
    return "[" + ", ".join("?" if d == DYN else str(d) for d in s) + "]"


def is_static(s: Sequence[int]) -> bool:
    return DYN not in s


def norm_axis(n: Node, axis: int, rank: int, what: str = "axis", end: bool = False) -> int:
    """`axis` in [-rank, rank) (`end`: [-rank, rank], Flatten's) as a non-negative index;
    an error naming the node otherwise (`axis % rank` took 7 as 1 on rank 2)."""
    hi = rank + 1 if end else rank
    if not -rank <= axis < hi:
        raise n.error(f"{what} {axis} is out of range for a rank-{rank} input")
    return axis + rank if axis < 0 else axis


def static_shape(n: Node, v: SSAValue, what: str) -> tuple[int, ...]:
    """The shape of `v`, or an error naming the node if it has a dynamic dim."""
    s = shape(v)
    if not is_static(s):
        raise n.error(
            f"{what} needs a static shape, got {dims_text(s)}: bind its dynamic dims at import"
            " (import_model(dims=...))"
        )
    return s


def locate(block: Block, last: Operation | None, loc: NameLoc) -> None:
    """Give the ops a node added to `block` after `last` (and the ops inside them) the
    node's location, `loc("node 'n' (Op)")` as MLIR's importers do, so diagnostics and
    run-time errors (`rlx.error_sites`) name the ONNX node; ops an inner node (a subgraph's)
    located already keep theirs."""
    op = block.first_op if last is None else last.next_op
    while op is not None:
        for o in op.walk():
            if isinstance(o.location, UnknownLoc):
                o.location = loc
        op = op.next_op


def check_sizes(node: Node, block: Block, last: Operation | None) -> None:
    """Refuse a size a converter computed as negative (a Tile by -1, a Reshape to -2): a
    -1 reads as a `?` dim (`DYN`), so a `?` result of an op whose operands are all static
    is one too, unless the op names the symbolic size (`rlx.dims`, `symbolic.mark`)."""
    op = block.first_op if last is None else last.next_op
    while op is not None:
        for r in op.results:
            s = shape_of(r.type) if isinstance(r.type, TensorType) else ()
            bad = any(d < 0 and d != DYN for d in s)
            if DYN in s and not op.regions and DIMS_ATTR not in op.attributes:
                ins = [shape_of(o.type) for o in op.operands if isinstance(o.type, TensorType)]
                bad = bad or (bool(ins) and all(DYN not in i for i in ins))
            if bad:
                raise node.error(f"computed a negative size: {op.name} result of shape {list(s)}")
        op = op.next_op
