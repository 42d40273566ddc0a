"""Packing of GEMM operands into register-tile panels (f32, zero-padded).

    A [M, K] -> Ap [ceil(M / mr), K, mr]:  Ap[p, k, r] = A[p * mr + r, k]   (0 past M)
    B [K, N] -> Bp [ceil(N / nr), K, nr]:  Bp[q, k, c] = B[k, q * nr + c]   (0 past N)

so the microkernel reads both with unit stride, `mr` (`nr`) values per k, and a k-slice
[k0, k0 + kc) of a panel is contiguous (`k0 * mr` elements in). The source is read through
a loader callback `load(kb, row, col) -> f32 value` (row/col as index values of the
logical matrix), so the same packing serves plain and transposed operands, batches,
narrower element types (the loader widens). conv2d's implicit GEMM (`gemm/conv.py`)
gathers its im2col panels in this B layout with shape-generic loops of its own.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from xdsl.dialects.builtin import MemRefType, f32
from xdsl.ir import SSAValue

if TYPE_CHECKING:  # the rlx_to_linalg package imports this module (no cycle at run time)
    from rlx.lowering.rlx_to_linalg.kernel_builder import KernelBuilder


Loader = Callable[["KernelBuilder", SSAValue, SSAValue], SSAValue]
"""`load(kb, row, col)`: the f32 value of the logical matrix at (row, col)."""


def panels(n: int, width: int) -> int:
    return -(-n // width)


def packed_type(batch: int, rows: int, depth: int, width: int) -> MemRefType:
    """Type of `batch` packed matrices of `rows` (M or N) by `depth` (K), tile `width`."""
    return MemRefType(f32, [batch, panels(rows, width), depth, width])


def pack(
    kb: KernelBuilder,
    dst: SSAValue,
    lead: Sequence[SSAValue | int],
    rows: int,
    depth: int,
    width: int,
    load: Callable[[KernelBuilder, SSAValue, SSAValue], SSAValue],
    first: SSAValue | int = 0,
    end: SSAValue | int | None = None,
) -> None:
    """Pack panels [first, end) (default: all) of a `rows x depth` matrix into
    `dst[*lead]` (`[panels, depth, width]`): `dst[*lead, p, k, r] = load(p * width + r, k)`;
    rows past the end are zeros. For A call with load(i, k); for B with load(j, k)
    returning B[k, j]."""
    full, tail = divmod(rows, width)
    stop = panels(rows, width) if end is None else end
    if full:
        if isinstance(stop, int):
            full_end = kb.idx(min(stop, full))
        else:
            full_end = kb.imin(kb.idx(stop), kb.idx(full))
        with kb.loop(full_end, first) as p, kb.loop(depth) as k:
            base = kb.imul(p, width)
            with kb.loop(width) as r:
                kb.store(load(kb, kb.iadd(base, r), k), dst, [*lead, p, k, r])
    if not tail:
        return

    def tail_panel() -> None:
        zero = kb.const(0.0, f32)
        with kb.loop(depth) as k:
            for r in range(width):
                val = load(kb, kb.idx(full * width + r), k) if r < tail else zero
                kb.store(val, dst, [*lead, full, k, r])

    if isinstance(stop, int):
        if stop > full:
            tail_panel()
        return
    from xdsl.dialects import scf
    from xdsl.ir import Block, Region

    blk = Block()
    with kb.at(blk):
        tail_panel()
        kb.add(scf.YieldOp())
    kb.add(scf.IfOp(kb.cmpi("ugt", kb.idx(stop), kb.idx(full)), [], Region(blk)))


def loader(src: SSAValue, lead: Sequence[SSAValue | int], transposed: bool) -> Loader:
    """Loader of a row-major buffer `src[*lead, x, y]`: (row, col) reads [row, col], or
    [col, row] when `transposed`, widened to f32."""

    def load(kb: KernelBuilder, row: SSAValue, col: SSAValue) -> SSAValue:
        idx = [row, col] if not transposed else [col, row]
        return kb.convert(kb.load(src, [*lead, *idx]), f32)

    return load
