"""Helpers shared by the fusion patterns: use counting (graph outputs count as users),
op construction with inferred result types, and small shape/constant queries."""

from __future__ import annotations

from collections.abc import Sequence
from math import prod

from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, TensorType
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.utils.exceptions import VerifyException

from rlx.dialects.rlx import OPS_BY_NAME
from rlx.dialects.rlx.base import DYN, RlxOp, is_float, shape_of
from rlx.dialects.rlx.leaves import ConstantOp


def users(value: SSAValue) -> list[Operation]:
    """Every op using `value` (func.return included), one entry per use."""
    return [use.operation for use in value.uses]


def sole_user(value: SSAValue) -> Operation | None:
    """The only user of `value`, or None; a func.return use counts like any other."""
    return value.get_user_of_unique_use()


def only_user(
    value: SSAValue, cls: type[Operation] | tuple[type[Operation], ...]
) -> Operation | None:
    """The single user of `value` when it is an instance of `cls` (so not func.return)."""
    user = sole_user(value)
    return user if isinstance(user, cls) else None


def producer(
    value: SSAValue, cls: type[Operation] | tuple[type[Operation], ...]
) -> Operation | None:
    """The op defining `value` when it is an instance of `cls`."""
    owner = value.owner
    return owner if isinstance(owner, cls) else None


def elem_type(value: SSAValue) -> Attribute:
    """Element type of a tensor value."""
    t = value.type
    assert isinstance(t, TensorType)
    return t.element_type


def rank(value: SSAValue) -> int:
    return len(shape_of(value.type))


def static_shape(value: SSAValue) -> tuple[int, ...] | None:
    s = shape_of(value.type)
    return None if DYN in s else s


def float_tensor(value: SSAValue) -> bool:
    t = value.type
    return isinstance(t, TensorType) and is_float(t.element_type)


def make_op(
    name: str,
    operands: Sequence[SSAValue],
    attrs: dict[str, Attribute] | None = None,
    given: Sequence[Attribute] | None = None,
    like: Operation | None = None,
) -> RlxOp | None:
    """Build rlx op `name` with inferred result types; None when it would not verify.

    `like` donates its location, so diagnostics about the fused op point at the source.
    """
    cls: type[RlxOp] = OPS_BY_NAME[name]
    attributes = dict(attrs or {})
    try:
        types = cls.infer_from([o.type for o in operands], attributes, given)  # type: ignore[misc]
    except VerifyException:
        return None
    op = cls.create(operands=list(operands), result_types=list(types), attributes=attributes)
    if like is not None:
        op.location = like.location
    return op


def scalar_constant(value: SSAValue) -> float | None:
    """The value of an `rlx.constant` holding a single (or splat) element, else None."""
    op = producer(value, ConstantOp)
    if op is None:
        return None
    attr = op.value
    if not isinstance(attr, DenseIntOrFPElementsAttr):
        return None
    values = attr.get_values()
    if len(values) == 0 or any(v != values[0] for v in values):
        return None
    return float(values[0])


def numel(shape: Sequence[int]) -> int:
    return prod(shape)
