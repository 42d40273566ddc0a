"""Data-movement ops: reshape (a view: collapse to 1-D then expand, no copy), transpose,
slice, broadcast_to and concat as `linalg.generic` copies (concat: one per operand with a
shifted output map), gather as an `scf.for` nest with an index load."""

from __future__ import annotations

from collections.abc import Sequence
from math import prod
from typing import TYPE_CHECKING

from xdsl.dialects import memref
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    IntegerAttr,
    IntegerType,
    MemRefType,
    i64,
)
from xdsl.ir import Operation, SSAValue

from rlx import errors
from rlx.dialects.rlx.base import is_unsigned, normalize_axis
from rlx.dialects.rlx.shape import BroadcastToOp, ConcatOp, GatherOp, SliceOp, TransposeOp
from rlx.lowering.rlx_to_linalg.kernel_builder import (
    PARALLEL,
    Emitter,
    KernelBuilder,
    amap,
    bcast_map,
    dim,
    elem,
    identity,
    shape,
)
from rlx.lowering.rlx_to_linalg.traps import trap

if TYPE_CHECKING:
    from rlx.lowering.rlx_to_linalg.bufferize import FuncLowering


def _reassoc(groups: Sequence[Sequence[int]]) -> ArrayAttr:
    return ArrayAttr([ArrayAttr([IntegerAttr(i, i64) for i in g]) for g in groups])


def reshape_view(fl: FuncLowering, src: SSAValue, to: MemRefType) -> SSAValue:
    """A row-major reshape as memref views (identity layouts keep the same data pointer):
    collapse to 1-D, then expand to the target (rank 0 uses an empty reassociation)."""
    s, t = shape(src), tuple(to.get_shape())
    if s == t:
        return src
    if len(t) == 0:
        return _collapse(fl, src, [], to)
    if len(s) == 0:
        return _expand(fl, src, [], to)
    flat = (
        src
        if len(s) == 1
        else _collapse(fl, src, [list(range(len(s)))], MemRefType(to.element_type, [prod(s)]))
    )
    return flat if len(t) == 1 else _expand(fl, flat, [list(range(len(t)))], to)


def _collapse(fl: FuncLowering, src: SSAValue, groups: list[list[int]], to: MemRefType) -> SSAValue:
    op = memref.CollapseShapeOp.build(
        operands=[src], result_types=[to], properties={"reassociation": _reassoc(groups)}
    )
    return fl.mb.v(op)


def _expand(fl: FuncLowering, src: SSAValue, groups: list[list[int]], to: MemRefType) -> SSAValue:
    props = {
        "reassociation": _reassoc(groups),
        "static_output_shape": DenseArrayBase.from_list(i64, list(to.get_shape())),
    }
    return fl.mb.v(
        memref.ExpandShapeOp.build(operands=[src, []], result_types=[to], properties=props)
    )


def emit_transpose(
    kb: KernelBuilder, op: Operation, ins: Sequence[SSAValue], outs: Sequence[SSAValue]
) -> None:
    """Iterate in output order (unit-stride stores); input dim perm[i] is output dim i."""
    perm = op.permutation
    assert perm is not None
    n = len(perm)
    inv = [0] * n
    for i, p in enumerate(perm):
        inv[p] = i
    kb.generic(
        ins,
        outs,
        [amap(n, [dim(inv[j]) for j in range(n)]), identity(n)],
        [PARALLEL] * n,
        lambda x, _o: [x],
        compute=False,
    )


def emit_slice(
    kb: KernelBuilder, op: Operation, ins: Sequence[SSAValue], outs: Sequence[SSAValue]
) -> None:
    """A copy out of a static strided subview."""
    out = shape(outs[0])
    n = len(out)
    starts = op.starts
    strides = op.strides or (1,) * n
    assert starts is not None and strides is not None
    src = kb.subview(ins[0], starts, out, strides)
    kb.generic(
        [src], outs, [identity(n), identity(n)], [PARALLEL] * n, lambda x, _o: [x], compute=False
    )


def emit_broadcast_to(
    kb: KernelBuilder, op: Operation, ins: Sequence[SSAValue], outs: Sequence[SSAValue]
) -> None:
    out = shape(outs[0])
    n = len(out)
    kb.generic(
        ins,
        outs,
        [bcast_map(shape(ins[0]), out), identity(n)],
        [PARALLEL] * n,
        lambda x, _o: [x],
        compute=False,
    )


def emit_concat(
    kb: KernelBuilder, op: Operation, ins: Sequence[SSAValue], outs: Sequence[SSAValue]
) -> None:
    """One copy per operand into its subview of the output."""
    n = len(shape(outs[0]))
    axis = normalize_axis(op.axis or 0, n)
    off = 0
    for x in ins:
        xs = shape(x)
        dst = kb.subview(outs[0], [off if i == axis else 0 for i in range(n)], xs)
        kb.generic(
            [x], [dst], [identity(n), identity(n)], [PARALLEL] * n, lambda v, _o: [v], compute=False
        )
        off += xs[axis]


def _gather_axis(op: Operation, rank: int) -> int:
    """rlx.gather's `axis` (one helper: switches to the typed accessor with issue 12)."""
    return normalize_axis(op.axis or 0, rank)  # type: ignore[attr-defined]


def emit_gather(
    kb: KernelBuilder, op: Operation, ins: Sequence[SSAValue], outs: Sequence[SSAValue]
) -> None:
    """out[pre, idx, post] = x[pre, indices[idx] (+ n if negative), post]; an index outside
    [-n, n) is reported through the status record (`traps`) and reads row 0 instead."""
    x, indices = ins
    xs, ishape = shape(x), shape(indices)
    axis = _gather_axis(op, len(xs))
    unsigned = is_unsigned(elem(op.operands[1]))
    size = xs[axis]
    it = elem(indices)
    assert isinstance(it, IntegerType)
    w = it.width.data
    with kb.nest(xs[:axis]) as pre, kb.nest(ishape) as ii:
        raw = kb.load(indices, ii)
        if unsigned or w < 64:
            # in i64 the index and index + n cannot overflow
            wide = kb.convert(raw, i64, signed=not unsigned)
        else:
            wide = raw
        n = kb.const(size, i64)
        zero = kb.const(0, i64)
        fixed = wide if unsigned else kb.select(kb.cmpi("slt", wide, zero), kb.addi(wide, n), wide)
        # unsigned compare: negative (after the fix-up) and >= n both fail
        bad = kb.cmpi("uge", fixed, n)
        trap(kb, bad, errors.INDEX_OUT_OF_RANGE, wide, size, signed=not unsigned or w == 64)
        if size > 0:  # (an empty axis fails every index and has no row 0 to read instead)
            i = kb.convert(kb.select(bad, zero, fixed), kb.idx(0).type)
            with kb.nest(xs[axis + 1 :]) as post:
                kb.store(kb.load(x, [*pre, i, *post]), outs[0], [*pre, *ii, *post])


LOWERINGS: dict[type[Operation], Emitter] = {
    TransposeOp: emit_transpose,
    SliceOp: emit_slice,
    BroadcastToOp: emit_broadcast_to,
    ConcatOp: emit_concat,
    GatherOp: emit_gather,
}
