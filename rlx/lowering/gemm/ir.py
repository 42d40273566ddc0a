"""Small IR helpers of the generated GEMM's kernels: buffer shapes and views, byte
addresses for the microkernel, index arithmetic over batch dims, `scf.if` blocks, the
run-time geometry table of the shape-generic kernels (`TableGeo`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from math import prod
from typing import TYPE_CHECKING

from xdsl.dialects import arith, memref, scf
from xdsl.dialects.builtin import ArrayAttr, IntegerAttr, MemRefType, i64
from xdsl.ir import Attribute, Block, Region, SSAValue

if TYPE_CHECKING:  # the rlx_to_linalg package imports this package (no cycle at run time)
    from rlx.lowering.rlx_to_linalg.kernel_builder import KernelBuilder


def shape(v: SSAValue) -> tuple[int, ...]:
    t = v.type
    assert isinstance(t, MemRefType)
    return tuple(t.get_shape())


def elem(v: SSAValue) -> Attribute:
    t = v.type
    assert isinstance(t, MemRefType)
    return t.element_type


def attr_text(t: Attribute) -> str:
    """Printed type (part of a kernel's dedup key)."""
    return str(t)


def unravel(kb: KernelBuilder, flat: SSAValue, dims: Sequence[int]) -> list[SSAValue]:
    out: list[SSAValue] = []
    for i, d in enumerate(dims):
        inner = prod(dims[i + 1 :])
        q = kb.idiv(flat, inner) if inner > 1 else flat
        out.append(kb.v(rem(q, kb.idx(d))) if i > 0 else q)
    return out


def rem(a: SSAValue, b: SSAValue) -> object:
    return arith.RemUIOp(a, b)


def flat_index(kb: KernelBuilder, idx: Sequence[SSAValue], dims: Sequence[int]) -> SSAValue | int:
    """Flat index of `idx` into a batch of shape `dims` (size-1 dims broadcast: 0)."""
    off: SSAValue | int = 0
    for i, (v, d) in enumerate(zip(idx, dims, strict=True)):
        if d != 1:
            off = kb.iadd(off, kb.imul(v, prod(dims[i + 1 :])))
    return off


def collapse2d(kb: KernelBuilder, mem: SSAValue) -> SSAValue:
    s = shape(mem)
    if len(s) == 2:
        return mem
    groups = ArrayAttr(
        [
            ArrayAttr([IntegerAttr(i, i64) for i in range(len(s) - 1)]),
            ArrayAttr([IntegerAttr(len(s) - 1, i64)]),
        ]
    )
    t = MemRefType(elem(mem), [prod(s[:-1]), s[-1]])
    return kb.hoist(
        memref.CollapseShapeOp.build(
            operands=[mem], result_types=[t], properties={"reassociation": groups}
        )
    )


def addr(kb: KernelBuilder, mem: SSAValue) -> SSAValue:
    return kb.hoist(memref.ExtractAlignedPointerAsIndexOp.get(mem))


def byte_offset(kb: KernelBuilder, base: SSAValue, elems: SSAValue | int) -> SSAValue:
    return kb.iadd(base, elems * 4 if isinstance(elems, int) else kb.imul(elems, 4))


def collapse1d(kb: KernelBuilder, mem: SSAValue) -> SSAValue:
    """A `[1, ..., 1, N]` buffer as `[N]`."""
    s = shape(mem)
    if len(s) == 1:
        return mem
    groups = ArrayAttr([ArrayAttr([IntegerAttr(i, i64) for i in range(len(s))])])
    t = MemRefType(elem(mem), [prod(s)])
    return kb.hoist(
        memref.CollapseShapeOp.build(
            operands=[mem], result_types=[t], properties={"reassociation": groups}
        )
    )


def if_then(kb: KernelBuilder, cond: SSAValue, then: Callable[[], object]) -> None:
    blk = Block()
    with kb.at(blk):
        then()
        kb.add(scf.YieldOp())
    kb.add(scf.IfOp(cond, [], Region(blk)))


def and_(x: SSAValue, y: SSAValue) -> object:
    return arith.AndIOp(x, y)


def if_else(
    kb: KernelBuilder, cond: SSAValue, then: Callable[[], object], other: Callable[[], object]
) -> None:
    tb, eb = Block(), Block()
    with kb.at(tb):
        then()
        kb.add(scf.YieldOp())
    with kb.at(eb):
        other()
        kb.add(scf.YieldOp())
    kb.add(scf.IfOp(cond, [], Region(tb), Region(eb)))


class TableGeo:
    """A shape-generic kernel's sizes as index values, by name (`geo.oh`): loaded once at
    the kernel's entry from its geometry table (entry i is `names[i]`), or constants from
    `values` when there is no table (the kernel inline: LLVM folds them)."""

    def __init__(
        self,
        kb: KernelBuilder,
        names: Sequence[str],
        table: SSAValue | None,
        values: Mapping[str, int] | None = None,
    ) -> None:
        index = kb.idx(0).type
        for i, name in enumerate(names):
            if table is None:
                assert values is not None, "TableGeo without a table needs the values"
                setattr(self, name, kb.idx(values[name]))
            else:
                setattr(self, name, kb.convert(kb.load(table, [i]), index))

    def __getattr__(self, name: str) -> SSAValue:  # typed access for the linters
        raise AttributeError(name)
