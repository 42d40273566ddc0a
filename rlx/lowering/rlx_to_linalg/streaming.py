"""Streaming (non-temporal) stores for outputs larger than the cache.

An ordinary store to a line that is not in cache first reads the line from memory (a
read-for-ownership), so an elementwise op that reads `x` once and writes `out` once moves
three bytes per output byte instead of two. When the output is larger than the cache
nothing is gained by keeping it there (the next kernel reads it from memory anyway), so
kernels writing such an output store whole 64-byte lines with non-temporal vector stores
(`vmovntps` / `vmovntdq` on x86), which write the line without reading it (issue 17:
gelu_tanh 4096x4096 and layer_norm 8192x768).

A row `out[base + j] = value(j)` for `j < n` (`row`) is computed in blocks of
`STAGE_BYTES` into a small stack buffer (the stage, in L1) by the ordinary scalar loop
(LLVM vectorizes it as before), then copied to the output: `<8 x i64>` loads from the
stage and `!nontemporal` stores with `align 64` for the whole lines, ordinary stores for
the rest. The blocks are laid out from the first 64-byte-aligned element of the row (the
head before it is a block of its own, shorter than one line, stored ordinarily), so every
non-temporal store is to an aligned address by construction. A buffer that is not even
element-aligned (an intermediate in an arena planned with `arena_alignment` 1 or 2) has no
aligned element: its rows are stored ordinarily (checked at run time, per row).
Every store lands on an element of the row, as before: the vector stores cover whole
lines inside `[base, base + n)`. Non-temporal stores are weakly ordered, so a kernel that
used them ends with `sfence` (`fence`) before the pool reports its task done.

`threshold(option)` is the result size (bytes) from which kernels stream (`wants`: if
the op's operands and result also exceed twice that, i.e. do not fit in cache): the
`stream-bytes` option of `convert-rlx-to-linalg`, by default (-1) half of the host's
last-level cache on x86-64 (`host_cpu.last_level_cache_bytes`) and never elsewhere
(sfence is x86's; other targets keep ordinary stores).
"""

from __future__ import annotations

import functools
import platform
from collections.abc import Callable
from math import prod

from xdsl.dialects import arith, llvm, memref
from xdsl.dialects.builtin import (
    AnyFloat,
    IntegerType,
    MemRefType,
    TensorType,
    VectorType,
    i64,
)
from xdsl.ir import Operation, SSAValue

from rlx import host_cpu
from rlx.lowering.rlx_to_linalg.kernel_builder import KernelBuilder, elem
from rlx.lowering.rlx_to_linalg.types import byte_size

LINE = 64
"""Bytes of one non-temporal vector store (a cache line, an AVX-512 register)."""

STAGE_BYTES = 4096
"""Bytes of one staged block (the stack buffer rows are computed into: L1-resident)."""

MIN_ROW_BYTES = 1024
"""Rows shorter than this keep ordinary stores (the staging overhead is per row)."""

_WORDS = VectorType(i64, [LINE // 8])


def is_x86() -> bool:
    """True on x86-64, where LLVM lowers the stores to `movnt*` and `fence` is `sfence`."""
    return platform.machine().lower() in ("x86_64", "amd64")


def threshold(option: int) -> int:
    """Output bytes from which kernels stream; 0: never. `option` is the pass option:
    >= 0 as given, -1 the host's default (half its last-level cache on x86-64)."""
    if option >= 0:
        return option
    if not is_x86():
        return 0
    llc = host_cpu.last_level_cache_bytes()
    return llc // 2 if llc else 0


def streamable(e: object) -> bool:
    """Element types whose buffers are copied bitwise in whole lines: f16, bf16, f32, f64
    and integers of 1, 2, 4 or 8 bytes (not i1, not the sub-byte and fp8 floats)."""
    if isinstance(e, AnyFloat):
        return e.bitwidth in (16, 32, 64)
    return isinstance(e, IntegerType) and e.width.data in (8, 16, 32, 64)


def _bytes(t: object) -> int:
    return prod(t.get_shape()) * byte_size(t.element_type) if isinstance(t, TensorType) else 0


@functools.cache
def _capable() -> frozenset[type[Operation]]:
    """The op classes whose kernels stream (the others ignore `kb.stream_stores`, and
    their chunks must not grow for it): elementwise ops and the copies of the strided
    workers, the normalizations."""
    from rlx.dialects.rlx.shape import BroadcastToOp, ConcatOp, SliceOp, TransposeOp
    from rlx.lowering.rlx_to_linalg import elementwise, norms  # both import this module

    return frozenset(
        {*elementwise.LOWERINGS, *norms.LOWERINGS, TransposeOp, SliceOp, BroadcastToOp, ConcatOp}
    )


def wants(op: Operation, limit: int) -> bool:
    """Whether `op`'s kernel should stream its result: one result of at least `limit`
    bytes (`limit` > 0) of a streamable element type, and operands and result together
    more than `2 * limit` (the default: the last-level cache). A working set that fits
    stays in cache from one call to the next (a 2048x2048 softmax, 16 MB in and out, ran
    1.5x slower with streaming stores on 2 threads)."""
    if limit <= 0 or len(op.results) != 1 or type(op) not in _capable():
        return False
    t = op.results[0].type
    if not isinstance(t, TensorType) or not streamable(t.element_type):
        return False
    out = _bytes(t)
    total = out + sum(_bytes(v.type) for v in op.operands)
    return out >= limit and total > 2 * limit


def row_ok(out: SSAValue, n: int) -> bool:
    """A row of `n` elements of `out` is long enough to stream."""
    return streamable(elem(out)) and n * byte_size(elem(out)) >= MIN_ROW_BYTES


def flat(kb: KernelBuilder, mem: SSAValue) -> SSAValue:
    """Contiguous `mem` as the flat `memref<FLAT x T>` view the strided workers use (the
    same pointer; made once per kernel, shared with them through `kb.flat_views`)."""
    from rlx.lowering.rlx_to_linalg.strided import FLAT  # strided imports this module

    if mem not in kb.flat_views:
        t = MemRefType(elem(mem), [FLAT])
        op = memref.ReinterpretCastOp.from_dynamic(mem, [0], [FLAT], [1], t)
        kb.flat_views[mem] = kb.hoist(op)
    return kb.flat_views[mem]


def _address(kb: KernelBuilder, mem: SSAValue) -> SSAValue:
    """The byte address of `mem`'s first element as an index (hoisted: once per kernel)."""
    return kb.hoist(memref.ExtractAlignedPointerAsIndexOp.get(mem))


def _ptr(kb: KernelBuilder, addr: SSAValue) -> SSAValue:
    return kb.v(llvm.IntToPtrOp(kb.convert(addr, i64)))


def row(
    kb: KernelBuilder,
    out: SSAValue,
    base: SSAValue,
    n: SSAValue,
    value: Callable[[SSAValue], SSAValue],
) -> None:
    """`out[base + j] = value(j)` for `j < n` (`out` a contiguous flat memref, `value`
    builds the element at `j` in `out`'s element type), whole aligned lines stored
    non-temporally through the stage (see the module docstring)."""
    e = elem(out)
    size = byte_size(e)
    per_line = LINE // size
    blk = STAGE_BYTES // size
    stage = kb.scratch([blk], e)
    addr = kb.addi(_address(kb, out), kb.imul(base, size))
    # head: the elements before the first aligned line. A buffer that is not element-aligned
    # (an arena planned with `arena_alignment` below the element size) has no aligned
    # element: then every store is an ordinary one (a `movnt` to it would fault).
    ok = kb.cmpi("eq", kb.v(_rem(addr, kb.idx(size))), kb.idx(0))
    to_line = kb.v(_rem(kb.subi(kb.idx(LINE), kb.v(_rem(addr, kb.idx(LINE)))), kb.idx(LINE)))
    head = kb.select(ok, kb.imin(kb.idiv(to_line, size), n), kb.idx(0))
    stage_at = _ptr(kb, _address(kb, stage))
    # block ends: head, head + blk, ... up to the first one >= n
    with kb.loop(kb.iadd(n, blk), head, blk) as end:
        start = kb.imax(kb.subi(end, kb.idx(blk)), kb.idx(0))
        stop = kb.imin(end, n)
        count = kb.subi(stop, start)
        with kb.loop(count, interleave="auto") as j:
            kb.store(value(kb.addi(start, j)), stage, [j])
        # whole lines (none in the head block: it is shorter than a line)
        lines = kb.select(ok, kb.idiv(count, per_line), kb.idx(0))
        dst = _ptr(kb, kb.addi(addr, kb.imul(start, size)))
        with kb.loop(lines) as k:
            off = kb.convert(kb.imul(k, LINE // 8), i64)
            src_k = kb.v(llvm.GEPOp(stage_at, [llvm.GEP_USE_SSA_VAL], i64, ssa_indices=[off]))
            dst_k = kb.v(llvm.GEPOp(dst, [llvm.GEP_USE_SSA_VAL], i64, ssa_indices=[off]))
            words = kb.v(llvm.LoadOp(src_k, _WORDS, alignment=LINE))
            kb.add(llvm.StoreOp(words, dst_k, alignment=LINE, nontemporal=True))
        with kb.loop(count, kb.imul(lines, per_line)) as j:
            kb.store(kb.load(stage, [j]), out, [kb.addi(base, kb.addi(start, j))])


def fence(kb: KernelBuilder) -> None:
    """Order the kernel's non-temporal stores before whatever follows (x86 `sfence`)."""
    if is_x86():
        kb.add(llvm.CallIntrinsicOp("llvm.x86.sse.sfence", [], []))


def _rem(a: SSAValue, b: SSAValue) -> Operation:
    return arith.RemUIOp(a, b)


__all__ = [
    "LINE",
    "STAGE_BYTES",
    "fence",
    "flat",
    "row",
    "row_ok",
    "streamable",
    "threshold",
    "wants",
]
