"""`plan-memory`: place every intermediate buffer of a public function in one arena.

After `convert-rlx-to-linalg`, a function's intermediates are `memref.alloc`s. This pass
computes each buffer's lifetime [first use, last use] over the function's top-level ops
(a use nested in a loop counts at the loop, so it lives through the whole loop; uses
through reshape views count for the viewed buffer), then assigns byte offsets greedily,
largest buffer first, at the lowest `alignment`-aligned offset that does not overlap a
buffer whose lifetime intersects its own (first fit). Lifetimes are inclusive, so an op
never writes a result over one of its own operands.

The allocs become `memref.view`s of a new trailing argument `memref<Nxi8>`
(`rlx.kind = "arena"`, `rlx.name = "arena"`) and their deallocs disappear. The function
gets `rlx.arena_bytes` (N) and `rlx.unplanned_bytes` (the sum of all planned buffer sizes,
what separate allocations would need). Allocs inside kernels (scratch) are left alone.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects import arith, func, memref
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    FunctionType,
    IndexType,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    StringAttr,
    TensorType,
    i8,
    i64,
)
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.utils.exceptions import PassFailedException

from rlx.lowering.rlx_to_linalg.types import nbytes

_VIEW_OPS = (
    memref.CollapseShapeOp,
    memref.ExpandShapeOp,
    memref.CastOp,
    memref.SubviewOp,
    memref.ReinterpretCastOp,
    memref.ViewOp,
)


@dataclass
class Buffer:
    """One planned allocation: its alloc op, size and inclusive top-level lifetime."""

    alloc: memref.AllocOp
    size: int
    start: int
    end: int
    offset: int = -1
    deallocs: list[Operation] = field(default_factory=list)

    def overlaps(self, other: Buffer) -> bool:
        return self.start <= other.end and other.start <= self.end


def _top_level(op: Operation, block: Block) -> Operation:
    """The ancestor of `op` that sits directly in the function's entry block."""
    while op.parent_block() is not block:
        parent = op.parent_op()
        assert parent is not None
        op = parent
    return op


def _uses(v: SSAValue, deallocs: list[Operation]) -> list[Operation]:
    """Ops using `v` directly or through view ops (deallocs are collected separately)."""
    out: list[Operation] = []
    todo = [v]
    while todo:
        cur = todo.pop()
        for use in list(cur.uses):
            user = use.operation
            if isinstance(user, memref.DeallocOp):
                deallocs.append(user)
                continue
            out.append(user)
            if isinstance(user, _VIEW_OPS) and use.index == 0:
                todo.extend(user.results)
    return out


def align_up(n: int, a: int) -> int:
    return (n + a - 1) // a * a


_BUCKET = 64
"""Time-bucket width (top-level op positions) of the interval index in `assign_offsets`."""


def assign_offsets(buffers: list[Buffer], alignment: int) -> int:
    """Greedy first fit, largest first; returns the arena size in bytes.

    Placed buffers are indexed by the `_BUCKET`-wide time buckets their lifetime touches,
    so finding the ones live at the same time as the next buffer costs about the number of
    buffers live around it, not the number placed so far (the plain scan is quadratic:
    seconds at 5k buffers)."""
    buckets: dict[int, list[tuple[int, int, Buffer]]] = {}
    total = 0
    for i, b in enumerate(sorted(buffers, key=lambda b: (-b.size, b.start))):
        seen: set[int] = set()
        live: list[tuple[int, int, Buffer]] = []
        for k in range(b.start // _BUCKET, b.end // _BUCKET + 1):
            for entry in buckets.get(k, ()):
                if entry[1] not in seen:
                    seen.add(entry[1])
                    if entry[2].overlaps(b):
                        live.append(entry)
        live.sort(key=lambda e: (e[0], e[1]))  # by offset, then placement order
        off = 0
        for _, _, p in live:
            if off + b.size <= p.offset:
                break
            off = max(off, align_up(p.offset + p.size, alignment))
        b.offset = off
        for k in range(b.start // _BUCKET, b.end // _BUCKET + 1):
            buckets.setdefault(k, []).append((off, i, b))
        total = max(total, off + b.size)
    return align_up(total, alignment) if total else 0


def plan_function(f: func.FuncOp, alignment: int) -> tuple[int, int]:
    """Rewrite one function's allocs into arena views; returns (arena, unplanned) bytes."""
    block = f.body.block
    body = list(block.ops)
    pos = {op: i for i, op in enumerate(body)}
    buffers: list[Buffer] = []
    for op in body:
        if not isinstance(op, memref.AllocOp):
            continue
        t = op.memref.type
        assert isinstance(t, MemRefType)
        if op.dynamic_sizes:
            raise PassFailedException(
                f"plan-memory: cannot plan the dynamically sized {t} in @{f.sym_name.data}"
            )
        deallocs: list[Operation] = []
        users = [pos[_top_level(u, block)] for u in _uses(op.memref, deallocs)]
        start, end = (min(users), max(users)) if users else (pos[op], pos[op])
        buffers.append(Buffer(op, nbytes(t), start, end, deallocs=deallocs))
    arena_bytes = assign_offsets(buffers, alignment)
    arena_t = MemRefType(i8, [arena_bytes])
    arena = block.insert_arg(arena_t, len(block.args))
    arena.name_hint = "arena"
    index = IndexType()
    for b in buffers:
        # `arith.ConstantOp(IntegerAttr(off, index))` and `memref.ViewOp(arena, off, [], t)`,
        # built with `create`: xDSL's generated constructors cost ~1 ms each.
        off = arith.ConstantOp.create(
            result_types=[index], properties={"value": IntegerAttr(b.offset, index)}
        )
        view = memref.ViewOp.create(
            operands=[arena, off.result], result_types=[b.alloc.memref.type]
        )
        Rewriter.insert_op([off, view], InsertPoint.before(b.alloc))
        b.alloc.memref.replace_all_uses_with(view.result)
        for d in b.deallocs:
            Rewriter.erase_op(d)
        Rewriter.erase_op(b.alloc)
    ft = f.function_type
    f.function_type = FunctionType.from_lists([*ft.inputs.data, arena_t], list(ft.outputs.data))
    n_old = len(ft.inputs.data)
    attrs = list(f.arg_attrs.data) if f.arg_attrs is not None else [DictionaryAttr({})] * n_old
    attrs.append(DictionaryAttr({"rlx.kind": StringAttr("arena"), "rlx.name": StringAttr("arena")}))
    f.arg_attrs = ArrayAttr(attrs)
    unplanned = sum(b.size for b in buffers)
    f.attributes["rlx.arena_bytes"] = IntegerAttr(arena_bytes, i64)
    f.attributes["rlx.unplanned_bytes"] = IntegerAttr(unplanned, i64)
    f.attributes["rlx.arena_alignment"] = IntegerAttr(alignment, i64)
    return arena_bytes, unplanned


@dataclass(frozen=True)
class PlanMemoryPass(ModulePass):
    """Replace the intermediate allocs of public functions by views into one arena."""

    name = "plan-memory"
    main_option: ClassVar[str] = "alignment"

    alignment: int = 64
    """Byte alignment of every buffer offset (a power of two)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        a = self.alignment
        if a < 1 or a & (a - 1):
            raise PassFailedException(f"plan-memory: alignment must be a power of two, got {a}")
        for f in op.ops:
            if not isinstance(f, func.FuncOp) or f.is_declaration:
                continue
            if f.sym_visibility is not None and f.sym_visibility.data != "public":
                continue
            if "rlx.arena_bytes" in f.attributes:
                continue
            types = [*f.function_type.inputs.data, *f.function_type.outputs.data]
            if any(isinstance(t, TensorType) for t in types):
                raise PassFailedException(
                    f"plan-memory: @{f.sym_name.data} still works on tensors; run convert-rlx-to-linalg first"
                )
            if len(f.body.blocks) != 1:
                raise PassFailedException(
                    f"plan-memory: @{f.sym_name.data} must have a single block"
                )
            plan_function(f, a)
