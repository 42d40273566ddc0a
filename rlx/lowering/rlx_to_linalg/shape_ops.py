"""Data-movement ops: reshape (a view: collapse to 1-D then expand, no copy); transpose,
slice, broadcast_to and concat (one copy per operand into its window of the output) as
calls of the shape-generic copy worker (`strided`: one per element type and collapsed
rank, sizes and strides from a run-time table); gather as an `scf.for` nest with an index
load."""

from __future__ import annotations

from collections.abc import Sequence
from math import prod
from typing import TYPE_CHECKING

from xdsl.dialects.builtin import (
    IntegerType,
    MemRefType,
    i64,
)
from xdsl.ir import Operation, SSAValue

from rlx import errors
from rlx.dialects.rlx.base import is_unsigned, normalize_axis
from rlx.dialects.rlx.shape import BroadcastToOp, ConcatOp, GatherOp, SliceOp, TransposeOp
from rlx.lowering.rlx_to_linalg.kernel_builder import Emitter, KernelBuilder, elem, shape
from rlx.lowering.rlx_to_linalg.static_ops import reshape_op
from rlx.lowering.rlx_to_linalg.strided import Layout, broadcast, row_major, strided_call
from rlx.lowering.rlx_to_linalg.traps import trap

if TYPE_CHECKING:
    from rlx.lowering.rlx_to_linalg.bufferize import FuncLowering


def reshape_view(fl: FuncLowering, src: SSAValue, to: MemRefType) -> SSAValue:
    """A row-major reshape as memref views (identity layouts keep the same data pointer):
    collapse to 1-D, then expand to the target (rank 0 uses an empty reassociation)."""
    s, t = shape(src), tuple(to.get_shape())
    if s == t:
        return src
    if len(t) == 0:
        return fl.mb.v(reshape_op(False, src, [], to))
    if len(s) == 0:
        return fl.mb.v(reshape_op(True, src, [], to))
    flat = (
        src
        if len(s) == 1
        else fl.mb.v(
            reshape_op(False, src, [list(range(len(s)))], MemRefType(to.element_type, [prod(s)]))
        )
    )
    return flat if len(t) == 1 else fl.mb.v(reshape_op(True, flat, [list(range(len(t)))], to))


def _copy_body(_kb: KernelBuilder, vals: list[SSAValue]) -> list[SSAValue]:
    return [vals[0]]


def emit_transpose(
    kb: KernelBuilder, op: Operation, ins: Sequence[SSAValue], outs: Sequence[SSAValue]
) -> None:
    """Iterate in output order (unit-stride stores); input dim perm[i] is output dim i."""
    perm = op.permutation
    assert perm is not None
    out = shape(outs[0])
    src = row_major(shape(ins[0]))
    lays = [Layout(0, tuple(src[p] for p in perm)), Layout(0, row_major(out))]
    strided_call(kb, "copy", _copy_body, ins, outs, out, lays, "copy")


def emit_slice(
    kb: KernelBuilder, op: Operation, ins: Sequence[SSAValue], outs: Sequence[SSAValue]
) -> None:
    """A copy out of a static strided window of the input."""
    out = shape(outs[0])
    n = len(out)
    starts = op.starts
    steps = op.strides or (1,) * n
    assert starts is not None and steps is not None
    src = row_major(shape(ins[0]))
    offset = sum(a * s for a, s in zip(starts, src, strict=True))
    lays = [Layout(offset, tuple(k * s for k, s in zip(steps, src, strict=True))),
            Layout(0, row_major(out))]  # fmt: skip
    strided_call(kb, "copy", _copy_body, ins, outs, out, lays, "copy")


def emit_broadcast_to(
    kb: KernelBuilder, op: Operation, ins: Sequence[SSAValue], outs: Sequence[SSAValue]
) -> None:
    out = shape(outs[0])
    lays = [broadcast(shape(ins[0]), out), Layout(0, row_major(out))]
    strided_call(kb, "copy", _copy_body, ins, outs, out, lays, "copy")


def emit_concat(
    kb: KernelBuilder, op: Operation, ins: Sequence[SSAValue], outs: Sequence[SSAValue]
) -> None:
    """One copy per operand into its window of the output (one shared copy worker: a
    concat along channels of a batch-1 tensor is a flat copy at a channel offset)."""
    out = shape(outs[0])
    n = len(out)
    axis = normalize_axis(op.axis or 0, n)
    dst = row_major(out)
    off = 0
    for x in ins:
        xs = shape(x)
        lays = [Layout(0, row_major(xs)), Layout(off * dst[axis], dst)]
        strided_call(kb, "copy", _copy_body, [x], outs, xs, lays, "copy")
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
