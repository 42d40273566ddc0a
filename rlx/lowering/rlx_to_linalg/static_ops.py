"""Static memref types and views built cheaply (`KernelBuilder`, `strided`).

Why: `convert-rlx-to-linalg` builds thousands of the same few memref types and
`memref.reinterpret_cast` views (flat views of every kernel buffer, 1-D constant tables),
and xDSL's generic constructors cost ~50-100 us each (shape checked by a generic `isa`,
properties rebuilt); on densenet121 they were ~20 % of the pass. Same ops, same text.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

from xdsl.dialects import memref
from xdsl.dialects.builtin import MemRefType
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
