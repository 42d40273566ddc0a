"""Static memref types, views, reshapes and calls built cheaply (`KernelBuilder`,
`strided`, `shape_ops`, `bufferize`).

Why: `convert-rlx-to-linalg` builds thousands of the same few memref types and
`memref.reinterpret_cast` views (flat views of every kernel buffer, 1-D constant tables),
and xDSL's generic constructors cost ~50-100 us each (shape checked by a generic `isa`,
properties rebuilt); on densenet121 they were ~20 % of the pass. Same ops, same text.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

from xdsl.dialects import func, memref
from xdsl.dialects.builtin import ArrayAttr, DenseArrayBase, IntegerAttr, MemRefType, i64
from xdsl.ir import Attribute, Operation, SSAValue


@functools.lru_cache(maxsize=4096)
def static_memref(e: Attribute, shp: tuple[int, ...]) -> MemRefType:
    """`MemRefType(e, shp)` (identity layout), memoized: xDSL's constructor checks its
    shape with a generic `isa` (~50 us), and kernels ask for the same few types again
    and again (flat views, 1-D tables)."""
    return MemRefType(e, list(shp))


_CAST_PROPS: dict[tuple[int, tuple[int, ...], tuple[int, ...]], dict[str, Attribute]] = {}


def static_reinterpret(
    mem: SSAValue, offset: int, sizes: Sequence[int], strides: Sequence[int], t: Attribute
) -> Operation:
    """`memref.reinterpret_cast` of `mem` to `t` with static offset, sizes and strides:
    the op `ReinterpretCastOp.from_dynamic` builds, with its properties built once per
    (offset, sizes, strides) and copied after (~15x cheaper; same op, same text)."""
    key = (offset, tuple(sizes), tuple(strides))
    props = _CAST_PROPS.get(key)
    if props is None:
        op = memref.ReinterpretCastOp.from_dynamic(mem, [offset], list(sizes), list(strides), t)
        _CAST_PROPS[key] = dict(op.properties)
        return op
    return memref.ReinterpretCastOp.create(operands=[mem], result_types=[t], properties=dict(props))


@functools.lru_cache(maxsize=4096)
def _call_props(callee: str) -> dict[str, Attribute]:
    return dict(func.CallOp(callee, [], []).properties)


def call_op(callee: str, args: Sequence[SSAValue]) -> func.CallOp:
    """`func.call @callee(args) : (...) -> ()`, the op `func.CallOp(callee, args, [])`
    builds, from properties built once per callee (a concat calls the same copy worker
    per operand; the generic constructor costs ~0.3 ms)."""
    return func.CallOp.create(operands=list(args), properties=dict(_call_props(callee)))


_SHAPE_PROPS: dict[
    tuple[str, tuple[tuple[int, ...], ...], tuple[int, ...]], dict[str, Attribute]
] = {}


def reshape_op(
    expand: bool, src: SSAValue, groups: Sequence[Sequence[int]], to: MemRefType
) -> Operation:
    """`memref.expand_shape` (`expand`) or `memref.collapse_shape` of `src` to the static
    `to` by the reassociation `groups`: the op `build` makes, with its properties built
    once per (kind, groups, shape) and copied after."""
    kind = "expand" if expand else "collapse"
    key = (kind, tuple(tuple(g) for g in groups), tuple(to.get_shape()))
    props = _SHAPE_PROPS.get(key)
    cls = memref.ExpandShapeOp if expand else memref.CollapseShapeOp
    if props is None:
        reassoc = ArrayAttr([ArrayAttr([IntegerAttr(i, i64) for i in g]) for g in groups])
        given: dict[str, Attribute] = {"reassociation": reassoc}
        if expand:
            given["static_output_shape"] = DenseArrayBase.from_list(i64, list(key[2]))
        operands: list[SSAValue | list[SSAValue]] = [src, []] if expand else [src]
        op = cls.build(operands=operands, result_types=[to], properties=given)
        _SHAPE_PROPS[key] = dict(op.properties)
        return op
    return cls.create(operands=[src], result_types=[to], properties=dict(props))
