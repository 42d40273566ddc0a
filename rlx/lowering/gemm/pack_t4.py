"""Packing a full f32 A panel with 4 x 4 register transposes instead of scattered stores.

A panel is `mr` rows of A (row-major, `k` elements per row) stored k-major: element
(r, k) at `k * mr + r`. Written as a loop over k with `mr` scalar loads and stores, LLVM
vectorizes the loop over k and emits `mr` scatters of 16 lanes per 16 k (`vscatterdps`,
about 2-3 cycles per element on Zen 4); the packing of the 128 x 1536 A of a BERT
FFN-down GEMM then took ~200 us, 12 % of the GEMM. Here, for `mr` a multiple of 4, each
4 rows x 4 k block is loaded as four `<4 x f32>` rows, transposed with 8 shuffles and
stored as four contiguous `<4 x f32>` (k-major, 4 rows each): every memory access is a
plain vector load or store. The k tail (k % 4) is scalar.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from xdsl.dialects import llvm
from xdsl.dialects.builtin import DenseArrayBase, VectorType, f32, i32, i64
from xdsl.ir import SSAValue

from rlx.lowering.gemm.target import Tile

if TYPE_CHECKING:
    from rlx.lowering.rlx_to_linalg.kernel_builder import KernelBuilder

_V4 = VectorType(f32, [4])


def _ptr(kb: KernelBuilder, byte_addr: SSAValue) -> SSAValue:
    return kb.v(llvm.IntToPtrOp(kb.convert(byte_addr, i64)))


def _shuffle(kb: KernelBuilder, x: SSAValue, y: SSAValue, mask: list[int]) -> SSAValue:
    return kb.v(llvm.ShuffleVectorOp(x, y, DenseArrayBase.from_list(i32, mask), _V4))


def transpose4(kb: KernelBuilder, rows: list[SSAValue]) -> list[SSAValue]:
    """Columns of the 4 x 4 block whose rows are `rows` (`<4 x f32>` each)."""
    a, b, c, d = rows
    ab_lo, ab_hi = _shuffle(kb, a, b, [0, 4, 1, 5]), _shuffle(kb, a, b, [2, 6, 3, 7])
    cd_lo, cd_hi = _shuffle(kb, c, d, [0, 4, 1, 5]), _shuffle(kb, c, d, [2, 6, 3, 7])
    return [_shuffle(kb, ab_lo, cd_lo, [0, 1, 4, 5]), _shuffle(kb, ab_lo, cd_lo, [2, 3, 6, 7]),
            _shuffle(kb, ab_hi, cd_hi, [0, 1, 4, 5]), _shuffle(kb, ab_hi, cd_hi, [2, 3, 6, 7])]  # fmt: skip


def pack_full_panel(
    kb: KernelBuilder, tile: Tile, src: SSAValue, dst: SSAValue, row0: SSAValue, k: SSAValue,
    out0: SSAValue,
) -> None:  # fmt: skip
    """Rows `row0 .. row0 + mr` of the f32 A at byte address `src` (`k` per row) into the
    panel at byte address `dst` + 4 * `out0` (k-major, `mr` per k); `mr` % 4 == 0."""
    mr = tile.mr
    assert mr % 4 == 0, mr
    k4 = kb.imul(kb.idiv(k, 4), 4)
    row_bytes = kb.imul(k, 4)

    def row_at(r: int, col: SSAValue) -> SSAValue:
        return kb.iadd(kb.iadd(src, kb.muli(kb.iadd(row0, kb.idx(r)), row_bytes)), kb.imul(col, 4))

    def out_at(col: SSAValue, r: int) -> SSAValue:
        return kb.iadd(dst, kb.imul(kb.iadd(kb.iadd(out0, kb.imul(col, mr)), kb.idx(r)), 4))

    with kb.loop(k4, step=4) as c0:
        for g in range(0, mr, 4):
            rows = [
                kb.v(llvm.LoadOp(_ptr(kb, row_at(g + i, c0)), _V4, alignment=4)) for i in range(4)
            ]
            for j, col in enumerate(transpose4(kb, rows)):
                at = out_at(kb.iadd(c0, kb.idx(j)), g)
                kb.add(llvm.StoreOp(col, _ptr(kb, at), alignment=4))
    with kb.loop(k, k4) as c:
        for r in range(mr):
            v = kb.v(llvm.LoadOp(_ptr(kb, row_at(r, c)), f32, alignment=4))
            kb.add(llvm.StoreOp(v, _ptr(kb, out_at(c, r)), alignment=4))
