"""`rlx.scan` -> an `scf.for` over the steps in the converted function itself.

Carries live in the scan's result buffers (initialized by a copy); each step copies row t
of every xs into a slice buffer, lowers the body's ops like top-level ops (kernel calls;
their buffers are allocated before the outermost loop, so plan-memory sees only top-level
allocs), stores each per-step output into row t of its stacked result, and finally moves
the yielded carries into the carry buffers (through a temporary when a yielded value is
another carry's buffer, so swaps work).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from xdsl.dialects import memref, scf
from xdsl.dialects.builtin import IndexType, MemRefType
from xdsl.ir import Block, Operation, SSAValue
from xdsl.rewriter import InsertPoint

from rlx.lowering.rlx_to_linalg.kernel_builder import KernelBuilder, memref_of, shape
from rlx.lowering.rlx_to_linalg.kernels import copy_kernel

if TYPE_CHECKING:
    from rlx.lowering.rlx_to_linalg.bufferize import FuncLowering


def _row_kernel(fl: FuncLowering, stacked: MemRefType, row: MemRefType, take: bool) -> str:
    """Kernel copying row t of `stacked` to `row` (take) or `row` into row t (put)."""

    def build(kb: KernelBuilder, args: list[SSAValue]) -> None:
        big, small, t = args
        with kb.nest(list(shape(small))) as ii:
            if take:
                kb.store(kb.load(big, [t, *ii]), small, ii)
            else:
                kb.store(kb.load(small, ii), big, [t, *ii])

    key = ("scan_take" if take else "scan_put", str(stacked), str(row))
    return fl.kernels.kernel(key, [stacked, row, IndexType()], build, "rlx.scan")


def _root(v: SSAValue) -> SSAValue:
    """The buffer a (possibly reshaped) memref value views."""
    while isinstance(getattr(v, "op", None), memref.CollapseShapeOp | memref.ExpandShapeOp):
        v = v.op.operands[0]  # type: ignore[attr-defined]
    return v


def lower_scan(fl: FuncLowering, op: Operation, vmap: dict[SSAValue, SSAValue]) -> None:
    seg = op.properties.get("operandSegmentSizes") or op.attributes.get("operandSegmentSizes")
    n_init = int(seg.get_values()[0])  # type: ignore[union-attr]
    inits, xs = list(op.operands[:n_init]), list(op.operands[n_init:])
    length = op.length or 0
    block = op.regions[0].block
    term = block.last_op
    assert term is not None
    carries = [fl.result_buffer(r) for r in op.results[:n_init]]
    stacks = [fl.result_buffer(r) for r in op.results[n_init:]]
    for init, buf in zip(inits, carries, strict=True):
        fl.call(copy_kernel(fl.kernels, memref_of(init.type)), [vmap[init], buf])
    slices = [fl.alloc(memref_of(a.type)) for a in block.args[n_init:]]
    body = Block(arg_types=[IndexType()])
    loop = scf.ForOp(fl.mb.idx(0), fl.mb.idx(length), fl.mb.idx(1), [], body)
    fl.mb.add(loop)
    saved = fl.alloc_point
    if saved is None:
        fl.alloc_point = InsertPoint.before(loop)
    t = body.args[0]
    bmap = dict(vmap)
    with fl.mb.at(body):
        for x, sl in zip(xs, slices, strict=True):
            fl.call(_row_kernel(fl, memref_of(x.type), sl.type, take=True), [vmap[x], sl, t])  # type: ignore[arg-type]
        bmap.update(zip(block.args, [*carries, *slices], strict=True))
        fl.lower_ops([o for o in block.ops if o is not term], bmap)
        ys = [bmap[v] for v in term.operands]
        for y, st in zip(ys[n_init:], stacks, strict=True):
            fl.call(_row_kernel(fl, st.type, y.type, take=False), [st, y, t])  # type: ignore[arg-type]
        roots = {_root(c) for c in carries}
        srcs = []
        for y, c in zip(ys[:n_init], carries, strict=True):
            if _root(y) in roots and y is not c:
                tmp = fl.alloc(c.type)  # type: ignore[arg-type]
                fl.call(copy_kernel(fl.kernels, c.type), [y, tmp])  # type: ignore[arg-type]
                y = tmp
            srcs.append(y)
        for y, c in zip(srcs, carries, strict=True):
            if y is not c:
                fl.call(copy_kernel(fl.kernels, c.type), [y, c])  # type: ignore[arg-type]
        fl.mb.add(scf.YieldOp())
    fl.alloc_point = saved
    for r, b in zip(op.results, [*carries, *stacks], strict=True):
        vmap[r] = b
