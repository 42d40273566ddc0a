"""Data-movement ops: reshape, transpose, slice, concat, broadcast_to, gather."""

from __future__ import annotations

from collections.abc import Sequence
from math import prod

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute
from xdsl.irdl import irdl_op_definition, operand_def, result_def, traits_def, var_operand_def
from xdsl.traits import Pure

from rlx.dialects.rlx.base import (
    DYN,
    RlxOp,
    broadcast_shapes,
    dims_compatible,
    fmt_shape,
    given_result,
    is_bool,
    is_int,
    normalize_axis,
    require,
    same_elem,
    shape_of,
    tensor,
)
from rlx.dialects.rlx.fields import AttrValues, int_def, ints_def
from rlx.dialects.rlx.traits import DataMovement

Types = Sequence[TensorType]
Attrs = AttrValues
Given = Sequence[Attribute] | None


@irdl_op_definition
class ReshapeOp(RlxOp):
    """Row-major reshape to the result type's shape (same element count)."""

    name = "rlx.reshape"
    x = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure(), DataMovement)

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs, given: Given = None) -> list[TensorType]:
        out = given_result(given, "rlx.reshape")
        (t,) = operand_types
        require(
            out.element_type == t.element_type,
            f"reshape keeps the element type: {t.element_type} vs {out.element_type}",
        )
        a, b = shape_of(t), shape_of(out)
        if DYN not in a and DYN not in b:
            require(
                prod(a) == prod(b),
                f"reshape from tensor<{fmt_shape(a)}> ({prod(a)} elements) to tensor<{fmt_shape(b)}> ({prod(b)} elements)",
            )
        return [out]


@irdl_op_definition
class TransposeOp(RlxOp):
    """Permute axes: result dim i = operand dim permutation[i]."""

    name = "rlx.transpose"
    x = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure(), DataMovement)
    permutation = ints_def(doc="Result dim i is operand dim permutation[i].")

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs, given: Given = None) -> list[TensorType]:
        (t,) = operand_types
        s = shape_of(t)
        perm = attrs.permutation
        require(
            sorted(perm) == list(range(len(s))),
            f"permutation {list(perm)} is not a permutation of the {len(s)} axes",
        )
        return [tensor([s[p] for p in perm], t.element_type)]


@irdl_op_definition
class SliceOp(RlxOp):
    """x[starts[i]:limits[i]:strides[i]] on every axis."""

    name = "rlx.slice"
    x = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure(), DataMovement)
    starts = ints_def(doc="First index of every axis.")
    limits = ints_def(doc="End index (exclusive) of every axis.")
    strides = ints_def(None, doc="Step of every axis (default 1 on every axis).")

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs, given: Given = None) -> list[TensorType]:
        (t,) = operand_types
        s = shape_of(t)
        starts, limits = attrs.starts, attrs.limits
        strides = attrs.strides or (1,) * len(s)
        require(
            len(starts) == len(limits) == len(strides) == len(s),
            f"starts/limits/strides need {len(s)} values each, got {len(starts)}/{len(limits)}/{len(strides)}",
        )
        out = []
        for i, (d, a, b, st) in enumerate(zip(s, starts, limits, strides, strict=True)):
            require(st >= 1, f"stride of axis {i} must be >= 1, got {st}")
            require(
                0 <= a <= b and (d == DYN or b <= d),
                f"slice [{a}:{b}] of axis {i} is out of bounds for size {d}",
            )
            out.append((b - a + st - 1) // st)
        return [tensor(out, t.element_type)]


@irdl_op_definition
class ConcatOp(RlxOp):
    """Concatenate the operands along `axis`."""

    name = "rlx.concat"
    xs = var_operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure(), DataMovement)
    axis = int_def(doc="The concatenated axis (negative counts from the end).")

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs, given: Given = None) -> list[TensorType]:
        require(len(operand_types) >= 1, "concat needs at least one operand")
        e = same_elem(operand_types)
        shapes = [shape_of(t) for t in operand_types]
        rank = len(shapes[0])
        require(all(len(s) == rank for s in shapes), "concat operands must have the same rank")
        axis = normalize_axis(attrs.axis, rank)
        out = list(shapes[0])
        for s in shapes[1:]:
            for i in range(rank):
                if i != axis:
                    require(
                        dims_compatible(s[i], out[i]),
                        f"concat operands differ on axis {i}: {out[i]} vs {s[i]}",
                    )
        out[axis] = DYN if any(s[axis] == DYN for s in shapes) else sum(s[axis] for s in shapes)
        return [tensor(out, e)]


@irdl_op_definition
class BroadcastToOp(RlxOp):
    """NumPy broadcast of the operand to the result type's shape."""

    name = "rlx.broadcast_to"
    x = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure(), DataMovement)

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs, given: Given = None) -> list[TensorType]:
        out = given_result(given, "rlx.broadcast_to")
        (t,) = operand_types
        require(out.element_type == t.element_type, "broadcast_to keeps the element type")
        target = shape_of(out)
        got = broadcast_shapes(shape_of(t), target, what="operand and target shape")
        require(
            len(got) == len(target)
            and all(dims_compatible(a, b) for a, b in zip(got, target, strict=True)),
            f"tensor<{fmt_shape(shape_of(t))}> does not broadcast to tensor<{fmt_shape(target)}>",
        )
        return [out]


@irdl_op_definition
class GatherOp(RlxOp):
    """np.take(x, indices, axis): the indexed axis is replaced by the indices' shape."""

    name = "rlx.gather"
    x = operand_def(TensorType)
    indices = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure(), DataMovement)
    axis = int_def(0, doc="The indexed axis (negative counts from the end).")

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs, given: Given = None) -> list[TensorType]:
        x, idx = operand_types
        require(
            is_int(idx.element_type) and not is_bool(idx.element_type),
            f"indices must be integers, got {idx.element_type}",
        )
        s = shape_of(x)
        axis = normalize_axis(attrs.axis, len(s))
        return [tensor((*s[:axis], *shape_of(idx), *s[axis + 1 :]), x.element_type)]
