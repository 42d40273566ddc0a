"""The conv microkernel: `microkernel.py`'s register tile with A read in place.

    func.func private @rlx_k<N>(%kc, %a, %lda, %b, %c, %ldc, %accumulate : index)

computes C[i, j] (+)= sum_k A[i, k] B[k, j] for an `mr x nr` tile like the GEMM
microkernel, but A is row-major with a row stride of `lda` elements (element (i, k) at
`i * lda + k`) instead of a packed `kc x mr` micro-panel. The microkernel only
broadcasts A (one scalar per row and k), so reading the `mr` rows in place costs the
same loads as a packed panel while the rows stream through L1; a convolution's f32
weights `[F, Cg·KH·KW]` then need no packing at all (no per-call copy of every weight,
no zero rows: the last panel of filters gets a microkernel of its own height).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from xdsl.dialects import llvm, scf
from xdsl.dialects.builtin import DenseArrayBase, IndexType, VectorType, f32, i32, i64
from xdsl.ir import Block, Region, SSAValue

from rlx.lowering.gemm.microkernel import _at, _fmuladd, _ptr
from rlx.lowering.gemm.target import Tile

if TYPE_CHECKING:
    from rlx.lowering.rlx_to_linalg.kernel_builder import KernelBuilder
    from rlx.lowering.rlx_to_linalg.kernels import Kernels

ARGS = ("kc", "a", "lda", "b", "c", "ldc", "accumulate")
"""The conv microkernel's arguments, all `index`."""


def _body(kb: KernelBuilder, args: list[SSAValue], tile: Tile) -> None:
    kc, a, lda, b, c, ldc, accumulate = args
    vt = VectorType(f32, [tile.lanes])
    nv = tile.nr // tile.lanes
    pa, pb, pc = (_ptr(kb, v) for v in (a, b, c))
    ldc64, lda64 = kb.convert(ldc, i64), kb.convert(lda, i64)

    def row(base: SSAValue, stride: SSAValue, i: int) -> SSAValue:
        return base if i == 0 else _at(kb, base, kb.v(llvm.MulOp(stride, kb.const(i, i64))))

    rows = [row(pc, ldc64, i) for i in range(tile.mr)]
    a_rows = [row(pa, lda64, i) for i in range(tile.mr)]
    slots = [(i, v) for i in range(tile.mr) for v in range(nv)]
    undef = kb.v(llvm.UndefOp(vt))
    lane0 = kb.const(0, i32)
    splat = DenseArrayBase.from_list(i32, [0] * tile.lanes)

    def broadcast(s: SSAValue) -> SSAValue:
        one = kb.v(llvm.InsertElementOp(undef, s, lane0))
        return kb.v(llvm.ShuffleVectorOp(one, undef, splat, vt))

    load_blk, zero_blk = Block(), Block()
    with kb.at(load_blk):
        loaded = [
            kb.v(llvm.LoadOp(_at(kb, rows[i], v * tile.lanes), vt, alignment=4)) for i, v in slots
        ]
        kb.add(scf.YieldOp(*loaded))
    with kb.at(zero_blk):
        zero = broadcast(kb.const(0.0, f32))
        kb.add(scf.YieldOp(*([zero] * len(slots))))
    cond = kb.cmpi("ne", accumulate, kb.idx(0))
    init = kb.add(scf.IfOp(cond, [vt] * len(slots), Region(load_blk), Region(zero_blk)))

    def step(k: SSAValue, acc: list[SSAValue]) -> list[SSAValue]:
        k64 = kb.convert(k, i64)
        pbk = _at(kb, pb, kb.v(llvm.MulOp(k64, kb.const(tile.nr, i64))))
        bs = [kb.v(llvm.LoadOp(_at(kb, pbk, v * tile.lanes), vt, alignment=4)) for v in range(nv)]
        out = list(acc)
        for i in range(tile.mr):
            av = broadcast(kb.v(llvm.LoadOp(_at(kb, a_rows[i], k64), f32, alignment=4)))
            for v in range(nv):
                j = i * nv + v
                out[j] = _fmuladd(kb, av, bs[v], acc[j])
        return out

    final = kb.loop_carry(kc, list(init.results), step)
    for (i, v), val in zip(slots, final, strict=True):
        kb.add(llvm.StoreOp(val, _at(kb, rows[i], v * tile.lanes), alignment=4))


def conv_microkernel(kernels: Kernels, tile: Tile) -> str:
    """Symbol of the row-strided-A microkernel of `tile` (built on first use)."""
    return kernels.kernel(
        ("conv-ukernel", tile),
        [IndexType()] * len(ARGS),
        lambda kb, args: _body(kb, args, tile),
        f"conv ukernel {tile.name}",
    )
