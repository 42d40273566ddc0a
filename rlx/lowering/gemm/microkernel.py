"""The GEMM microkernel: one `mr x nr` tile of C, accumulated in vector registers.

    func.func private @rlx_k<N>(%kc, %a, %b, %c, %ldc, %accumulate : index)
        attributes {rlx.kernel = "ukernel avx2 6x16"}

computes, for a packed A micro-panel `a` (`kc x mr` f32, k-major: element (i, k) at
`k * mr + i`) and a packed B micro-panel `b` (`kc x nr` f32, element (k, j) at
`k * nr + j`), C[i, j] (+)= sum_k A[i, k] B[k, j] into the f32 row-major tile at `c`
with a row stride of `ldc` elements; with `accumulate` != 0 the tile starts from C,
otherwise from zero. Addresses are byte addresses (index values, e.g. from
`memref.extract_aligned_pointer_as_index`), so callers can point into any panel or tile.

The body is written directly in the llvm dialect (vector loads, a broadcast by
insertelement + shufflevector, `llvm.fmuladd` on `vector<lanes x f32>`) inside a
`func.func`, so the printed stages show it as it reaches LLVM: `mr * nr / lanes`
accumulators carried through the k loop (`scf.for` iter_args), `nr / lanes` loads of B and
`mr` broadcasts of A per k. `fmuladd` is fused where the target has FMA and a multiply
plus add elsewhere (the portable tile).

`conv_microkernel` is the same tile with A read in place instead of packed:

    func.func private @rlx_k<N>(%kc, %a, %lda, %b, %c, %ldc, %accumulate : index)

A row-major with a row stride of `lda` elements (element (i, k) at `i * lda + k`). The
tile only broadcasts A (one scalar per row and k), so reading the `mr` rows in place costs
the same loads as a packed panel while the rows stream through L1; a convolution's f32
weights `[F, Cg·KH·KW]` then need no packing at all (no per-call copy of every weight, no
zero rows: the last panel of filters gets a microkernel of its own height).

`rows_microkernel` reads A in place too, for the shape-generic GEMM (`generic.py`), whose
row count is known only at run time:

    func.func private @rlx_k<N>(%kc, %a, %lda, %rows, %b, %c, %ldc, %accumulate : index)

row i of the tile reads A's row `min(i, rows - 1)`: the last, partial panel of A reads
only rows that exist (its extra tile rows repeat the last one and land in the caller's
edge buffer, which is never copied out), so f32 A needs no packing at all.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from xdsl.dialects import llvm, scf
from xdsl.dialects.builtin import DenseArrayBase, IndexType, VectorType, f32, i32, i64
from xdsl.ir import Block, Region, SSAValue

from rlx.lowering.gemm.target import Tile

if TYPE_CHECKING:  # the rlx_to_linalg package imports this module (no cycle at run time)
    from rlx.lowering.rlx_to_linalg.kernel_builder import KernelBuilder
    from rlx.lowering.rlx_to_linalg.kernels import Kernels

ARGS = ("kc", "a", "b", "c", "ldc", "accumulate")
"""The microkernel's arguments, all `index`."""
STRIDED_ARGS = ("kc", "a", "lda", "b", "c", "ldc", "accumulate")
"""The arguments of the microkernel reading A in place (`conv_microkernel`)."""
ROWS_ARGS = ("kc", "a", "lda", "rows", "b", "c", "ldc", "accumulate")
"""The arguments of the in-place microkernel with a run-time row count (`rows_microkernel`)."""


def _ptr(kb: KernelBuilder, addr: SSAValue) -> SSAValue:
    return kb.v(llvm.IntToPtrOp(kb.convert(addr, i64)))


def _at(kb: KernelBuilder, base: SSAValue, offset: int | SSAValue) -> SSAValue:
    """`base + offset` f32 elements (a constant or an i64 value)."""
    if isinstance(offset, int):
        return base if offset == 0 else kb.v(llvm.GEPOp(base, [offset], f32))
    return kb.v(llvm.GEPOp(base, [llvm.GEP_USE_SSA_VAL], f32, ssa_indices=[offset]))


def _fmuladd(kb: KernelBuilder, x: SSAValue, y: SSAValue, acc: SSAValue) -> SSAValue:
    name = f"llvm.fmuladd.v{acc.type.get_shape()[0]}f32"  # type: ignore[attr-defined]
    return kb.v(llvm.CallIntrinsicOp(name, [x, y, acc], [acc.type]))


def _body(
    kb: KernelBuilder, args: list[SSAValue], tile: Tile, strided: bool, clamped: bool = False
) -> None:
    rows_in: SSAValue | None = None
    if clamped:
        kc, a, lda, rows_in, b, c, ldc, accumulate = args
    elif strided:
        kc, a, lda, b, c, ldc, accumulate = args
    else:
        (kc, a, b, c, ldc, accumulate), lda = args, None
    vt = VectorType(f32, [tile.lanes])
    nv = tile.nr // tile.lanes
    pa, pb, pc = (_ptr(kb, v) for v in (a, b, c))

    def rows_of(base: SSAValue, stride: SSAValue) -> list[SSAValue]:
        s64 = kb.convert(stride, i64)
        return [base] + [
            _at(kb, base, kb.v(llvm.MulOp(s64, kb.const(i, i64)))) for i in range(1, tile.mr)
        ]

    rows = rows_of(pc, ldc)
    a_rows: list[SSAValue] = []
    if rows_in is not None and lda is not None:  # row i reads A's row min(i, rows - 1)
        last, s64 = kb.subi(rows_in, kb.idx(1)), kb.convert(lda, i64)
        a_rows = [pa] + [
            _at(kb, pa, kb.v(llvm.MulOp(s64, kb.convert(kb.imin(kb.idx(i), last), i64))))
            for i in range(1, tile.mr)
        ]
    elif lda is not None:
        a_rows = rows_of(pa, lda)
    slots = [(i, v) for i in range(tile.mr) for v in range(nv)]

    undef = kb.v(llvm.UndefOp(vt))
    lane0 = kb.const(0, i32)
    splat = DenseArrayBase.from_list(i32, [0] * tile.lanes)

    def broadcast(s: SSAValue) -> SSAValue:
        one = kb.v(llvm.InsertElementOp(undef, s, lane0))
        return kb.v(llvm.ShuffleVectorOp(one, undef, splat, vt))

    # Initial accumulators: the tile of C, or zeros.
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
        if strided:  # A[i, k] at row i + k
            a_at = [_at(kb, a_rows[i], k64) for i in range(tile.mr)]
        else:  # the packed panel: A[i, k] at k * mr + i
            pak = _at(kb, pa, kb.v(llvm.MulOp(k64, kb.const(tile.mr, i64))))
            a_at = [_at(kb, pak, i) for i in range(tile.mr)]
        pbk = _at(kb, pb, kb.v(llvm.MulOp(k64, kb.const(tile.nr, i64))))
        bs = [kb.v(llvm.LoadOp(_at(kb, pbk, v * tile.lanes), vt, alignment=4)) for v in range(nv)]
        out = list(acc)
        for i in range(tile.mr):
            av = broadcast(kb.v(llvm.LoadOp(a_at[i], f32, alignment=4)))
            for v in range(nv):
                j = i * nv + v
                out[j] = _fmuladd(kb, av, bs[v], acc[j])
        return out

    final = kb.loop_carry(kc, list(init.results), step)
    for (i, v), val in zip(slots, final, strict=True):
        kb.add(llvm.StoreOp(val, _at(kb, rows[i], v * tile.lanes), alignment=4))


def microkernel(kernels: Kernels, tile: Tile) -> str:
    """Symbol of the microkernel of `tile` in the module (built on first use)."""
    return kernels.kernel(
        ("gemm-ukernel", tile),
        [IndexType()] * len(ARGS),
        lambda kb, args: _body(kb, args, tile, strided=False),
        f"ukernel {tile.name}",
    )


def rows_microkernel(kernels: Kernels, tile: Tile) -> str:
    """Symbol of the row-strided-A microkernel with a run-time row count (module docstring)."""
    return kernels.kernel(
        ("rows-ukernel", tile),
        [IndexType()] * len(ROWS_ARGS),
        lambda kb, args: _body(kb, args, tile, strided=True, clamped=True),
        f"rows ukernel {tile.name}",
    )


def conv_microkernel(kernels: Kernels, tile: Tile) -> str:
    """Symbol of the row-strided-A microkernel of `tile` (built on first use)."""
    return kernels.kernel(
        ("conv-ukernel", tile),
        [IndexType()] * len(STRIDED_ARGS),
        lambda kb, args: _body(kb, args, tile, strided=True),
        f"conv ukernel {tile.name}",
    )
