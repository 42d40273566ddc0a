"""`rlx.if` -> an `scf.if` in the converted function itself.

The condition is loaded from its (one-element) buffer; each region's ops are lowered into
their `scf.if` block like top-level ops (kernel calls; their buffers are allocated before
the outermost region op, as for `rlx.scan`, so plan-memory sees only top-level allocs), and
each yielded value lands in the op's result buffer: a value computed in the region by an
op that owns its buffer is written there directly, anything else (an enclosing value, a
view, a value yielded twice) is copied. Only the taken region's kernels run, so a
run-time check (an out-of-range gather) in the other one never fires.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from xdsl.dialects import scf
from xdsl.ir import Block, Operation, OpResult, Region, SSAValue
from xdsl.rewriter import InsertPoint

from rlx.lowering.rlx_to_linalg.kernel_builder import shape
from rlx.lowering.rlx_to_linalg.kernels import copy_kernel

if TYPE_CHECKING:
    from rlx.lowering.rlx_to_linalg.bufferize import FuncLowering


def lower_if(fl: FuncLowering, op: Operation, vmap: dict[SSAValue, SSAValue]) -> None:
    """Lower `rlx.if` (see the module docstring); maps its results to their buffers."""
    cond = vmap[op.operands[0]]
    flag = fl.mb.load(cond, [0] * len(shape(cond)))
    outs = [fl.result_buffer(r) for r in op.results]
    blocks = [Block(), Block()]
    sif = scf.IfOp(flag, [], Region(blocks[0]), Region(blocks[1]))
    fl.mb.add(sif)
    saved = fl.alloc_point
    if saved is None:
        fl.alloc_point = InsertPoint.before(sif)
    for region, target in zip(op.regions, blocks, strict=True):
        block = region.block
        term = block.last_op
        assert term is not None
        ys = list(term.operands)
        for y, buf in zip(ys, outs, strict=True):
            if (
                isinstance(y, OpResult)
                and y.op.parent_block() is block
                and ys.count(y) == 1
                and y not in fl.dest
                and fl.owns_buffer(y.op)
            ):
                fl.dest[y] = buf
        bmap = dict(vmap)
        with fl.mb.at(target):
            fl.lower_ops([o for o in block.ops if o is not term], bmap)
            for y, buf in zip(ys, outs, strict=True):
                if bmap[y] is not buf:
                    fl.call(copy_kernel(fl.kernels, buf.type), [bmap[y], buf])  # type: ignore[arg-type]
            fl.mb.add(scf.YieldOp())
    fl.alloc_point = saved
    for r, b in zip(op.results, outs, strict=True):
        vmap[r] = b
