"""Shape-generic GEMM kernels: one worker per (tile, epilogue kind, element types) and one
A-packing task per (tile, A's element type), whatever M, N, K.

Distinct GEMM shapes used to cost a worker, a packing task and their LLVM time each
(MiniLM: three dense shapes, +0.6 s of a 1.5 s cold compile). Here every buffer a kernel
touches is passed as a flat `memref<2147483647xT>` view (`flat`: a `reinterpret_cast`,
free after lowering: the bare pointer) and the sizes of the GEMM come in a small i64
table (`sizes`, stride 0 in `rlx_rt.parallel_call`), so the kernels' types and bodies do
not depend on the shape and `Kernels.kernel` deduplicates them across shapes. Used for
the one-GEMM (collapsed, no output batch) case with no epilogue or a `columns` epilogue
(it reads operands only at the output column: bias, activation); batched GEMMs keep the
shape-specialised worker of `driver.py`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from xdsl.dialects import arith, func, memref
from xdsl.dialects.builtin import Float32Type, MemRefType, f32, i64
from xdsl.ir import Attribute, SSAValue

from rlx.lowering.gemm.batched import packs_serially
from rlx.lowering.gemm.ir import addr, if_else, if_then
from rlx.lowering.gemm.pack_t4 import pack_full_panel
from rlx.lowering.gemm.target import Tile, direct_a

if TYPE_CHECKING:  # the rlx_to_linalg package imports this module (no cycle at run time)
    from rlx.lowering.gemm.driver import Epilogue
    from rlx.lowering.rlx_to_linalg.kernel_builder import KernelBuilder
    from rlx.lowering.rlx_to_linalg.kernels import Kernels

IN_PLACE_MAX_K = 512
"""Longest row (K) of an A read in place because packing it would be serial: with a row
stride of 4 KiB (K = 1024) the `mr` rows of a panel fall into the same L1 sets and the
GEMM ran at 74 instead of 99 GFLOP/s (K = 2048: 67 vs 94); shorter rows were measured."""

ALIASED_ROW_BYTES = 4096
"""A row stride that is a multiple of this (K a multiple of 1024 in f32) puts every row of
an in-place panel into the same L1 sets (above): such an A is always packed."""

POOLED_IN_PLACE_MAX = 1 << 20
"""Most elements of an A that is read in place instead of being packed on the pool (the
largest measured: 384 x 1536)."""


def in_place(rows: int, k: int, n: int, mr: int) -> bool:
    """Whether the worker reads an f32 `rows x k` A (of a GEMM with `n` columns, `mr`-row
    panels) in place instead of packing it; never with `RLX_GEMM_DIRECT_A=0`
    (`target.direct_a`). In place, the microkernel reads `mr` rows at stride K: a few
    percent slower per call than packed panels, but the packing call between two
    parallel GEMMs goes away. Two cases (issue 17, docs/performance.md):

    * packing would be one serial call (`batched.packs_serially`) and K <= `IN_PLACE_MAX_K`:
      the serial pack cost 6-16 us on one thread and 23-36 us on two (its writes
      invalidate lines the other core holds) before each of MiniLM's 128 x 384 GEMMs;
    * A would be packed on the pool, N <= K (each A block is re-read by few column blocks:
      at 1 thread in place was 2-7 % faster for 128x1536x384, 384x1536x384, 512x768x768,
      128x2560x640, while 384x384x1536 and 256x768x3072 were 0-5 % slower), the row stride
      not a multiple of `ALIASED_ROW_BYTES` and at most `POOLED_IN_PLACE_MAX` elements:
      MiniLM's FFN-down input (128 x 1536) no longer costs a pool call per layer.
    """
    if not direct_a():
        return False
    if packs_serially(rows, k, mr):
        return k <= IN_PLACE_MAX_K
    return n <= k and (4 * k) % ALIASED_ROW_BYTES != 0 and rows * k <= POOLED_IN_PLACE_MAX


FLAT_ELEMENTS = 2**31 - 1
"""Extent of the flat views (every eligible buffer has fewer elements, `eligible_types`)."""

WORKER_SIZES = ("rows", "n", "k", "kc", "nk", "pm", "pn", "mb", "nb", "blocks_m", "blocks_n")
PACK_SIZES = ("rows", "k", "per", "pm")


def flat_type(e: Attribute) -> MemRefType:
    return MemRefType(e, [FLAT_ELEMENTS])


def flat(kb: KernelBuilder, mem: SSAValue) -> SSAValue:
    """`mem` (identity layout) as a flat 1-D view of the same buffer."""
    t = mem.type
    assert isinstance(t, MemRefType)
    return kb.hoist(
        memref.ReinterpretCastOp.from_dynamic(
            mem, [0], [FLAT_ELEMENTS], [1], flat_type(t.element_type)
        )
    )


def _sizes(kb: KernelBuilder, table: SSAValue, names: Sequence[str]) -> dict[str, SSAValue]:
    index = kb.idx(0).type
    return {nm: kb.convert(kb.load(table, [i]), index) for i, nm in enumerate(names)}


def _mul(kb: KernelBuilder, a: SSAValue, b: SSAValue | int) -> SSAValue:
    return kb.imul(a, b) if isinstance(b, int) else kb.muli(a, b)


def _rem(kb: KernelBuilder, a: SSAValue, b: SSAValue) -> SSAValue:
    return kb.v(arith.RemUIOp(a, b))


def _div(kb: KernelBuilder, a: SSAValue, b: SSAValue) -> SSAValue:
    return kb.v(arith.DivUIOp(a, b))


def pack_a_kernel(kernels: Kernels, tile: Tile, a_elem: Attribute) -> str:
    """Task t packs A panels [t * per, min((t + 1) * per, pm)) of a `rows x k` A (flat,
    row-major) into `[pm, k, mr]` f32 panels; rows past the end are zeros (a clamped load
    and a select: no branch, no out-of-bounds read). Full panels of an f32 A (mr a
    multiple of 4) go through 4 x 4 register transposes (`pack_t4`)."""
    types: list[Attribute] = [MemRefType(i64, [1]), MemRefType(i64, [len(PACK_SIZES)]),
                              flat_type(a_elem), flat_type(f32)]  # fmt: skip

    fast = isinstance(a_elem, Float32Type) and tile.mr % 4 == 0

    def build(kb: KernelBuilder, args: list[SSAValue]) -> None:
        tid, table, src, dst = args
        s = _sizes(kb, table, PACK_SIZES)
        t = kb.convert(kb.load(tid, [0]), kb.idx(0).type)
        p0 = _mul(kb, t, s["per"])
        p1 = kb.imin(kb.iadd(p0, s["per"]), s["pm"])
        last = kb.subi(s["rows"], kb.idx(1))
        zero = kb.const(0.0, f32)

        def scalar(p: SSAValue) -> None:  # any panel: clamped loads, zero rows past the end
            with kb.loop(s["k"]) as k:
                base = kb.imul(p, tile.mr)
                out = kb.imul(kb.iadd(_mul(kb, p, s["k"]), k), tile.mr)
                for r in range(tile.mr):
                    row = kb.iadd(base, r)
                    src_row = kb.imin(row, last)
                    v = kb.convert(kb.load(src, [kb.iadd(_mul(kb, src_row, s["k"]), k)]), f32)
                    v = kb.select(kb.cmpi("ult", row, s["rows"]), v, zero)
                    kb.store(v, dst, [kb.iadd(out, r)])

        with kb.loop(p1, p0) as p:
            if fast:
                row0 = kb.imul(p, tile.mr)
                full = kb.cmpi("ule", kb.iadd(row0, tile.mr), s["rows"])
                src_at, dst_at = addr(kb, src), addr(kb, dst)
                out0 = kb.imul(_mul(kb, p, s["k"]), tile.mr)
                if_else(kb, full, lambda: pack_full_panel(kb, tile, src_at, dst_at, row0, s["k"], out0),
                        lambda: scalar(p))  # fmt: skip
            else:
                scalar(p)

    key = ("gemm-pack-a-generic", tile, str(a_elem), fast)
    return kernels.kernel(key, types, build, f"gemm pack A {tile.name} (any shape)", noalias=True)


def worker_kernel(
    kernels: Kernels,
    tile: Tile,
    ukernel: str,
    epilogue: Epilogue | None,
    out_elem: Attribute,
    extra_elems: Sequence[Attribute],
    direct: bool = False,
) -> str:
    """The C-block worker (module docstring of `driver.py`, step 2) with the sizes read
    from its `sizes` table; operands `[tid, sizes, ap, bp, acc, (out), *extras]`. With
    `direct`, `ap` is the f32 A itself (row-major `rows x k`, not packed) and `ukernel` the
    in-place one of `microkernel.rows_microkernel`."""
    separate = not isinstance(out_elem, Float32Type)
    types: list[Attribute] = [MemRefType(i64, [1]), MemRefType(i64, [len(WORKER_SIZES)]),
                              flat_type(f32), flat_type(f32), flat_type(f32)]  # fmt: skip
    types += [flat_type(out_elem)] if separate else []
    types += [flat_type(e) for e in extra_elems]

    def build(kb: KernelBuilder, args: list[SSAValue]) -> None:
        _worker(kb, args, tile, ukernel, epilogue, separate, direct)

    key = ("gemm-worker-generic", tile, epilogue.key if epilogue else "", separate, direct,
           tuple(str(t) for t in types))  # fmt: skip
    return kernels.kernel(key, types, build, f"gemm worker {tile.name} (any shape)", noalias=True)


def _worker(
    kb: KernelBuilder,
    args: list[SSAValue],
    tile: Tile,
    ukernel: str,
    epilogue: Epilogue | None,
    separate: bool,
    direct: bool,
) -> None:
    tid, table, ap, bp, acc = args[:5]
    out = args[5] if separate else acc
    extras = args[6:] if separate else args[5:]
    s = _sizes(kb, table, WORKER_SIZES)
    n, k = s["n"], s["k"]
    t = kb.convert(kb.load(tid, [0]), kb.idx(0).type)
    # Row blocks vary fastest: consecutive tasks (one chunk of the pool) share a block of
    # B, so each block of the weights is read from memory once per call, not once per row
    # block (docs/performance.md, session 9: MiniLM 3-5 % faster at 1 thread).
    ib = _rem(kb, t, s["blocks_m"])
    jb = _rem(kb, _div(kb, t, s["blocks_m"]), s["blocks_n"])
    a_base, b_base, c_base = addr(kb, ap), addr(kb, bp), addr(kb, acc)
    ip0 = _mul(kb, ib, s["mb"])
    ip1 = kb.imin(kb.iadd(ip0, s["mb"]), s["pm"])
    jp0 = _mul(kb, jb, s["nb"])
    jp1 = kb.imin(kb.iadd(jp0, s["nb"]), s["pn"])
    buf = kb.scratch([tile.mr, tile.nr], f32)
    buf_addr = addr(kb, buf)
    # bytes per panel: mr rows of A (packed or in place: the same size), nr columns of B
    a_panel, b_panel = kb.imul(k, tile.mr * 4), kb.imul(k, tile.nr * 4)

    def call(kcur: SSAValue, a_addr: SSAValue, rows: SSAValue, b_addr: SSAValue,
             c_addr: SSAValue, ldc: SSAValue, flag: SSAValue) -> None:  # fmt: skip
        a_args = [a_addr, k, rows] if direct else [a_addr]
        kb.add(func.CallOp(ukernel, [kcur, *a_args, b_addr, c_addr, ldc, flag], []))

    def edge(i0: SSAValue, j0: SSAValue, rows: SSAValue, cols: SSAValue, kcur: SSAValue,
             a_addr: SSAValue, b_addr: SSAValue, flag: SSAValue) -> None:  # fmt: skip
        with kb.loop(rows) as r, kb.loop(cols) as c:
            at = kb.iadd(_mul(kb, kb.iadd(i0, r), n), kb.iadd(j0, c))
            kb.store(kb.load(acc, [at]), buf, [r, c])
        call(kcur, a_addr, rows, b_addr, buf_addr, kb.idx(tile.nr), flag)
        with kb.loop(rows) as r, kb.loop(cols) as c:
            at = kb.iadd(_mul(kb, kb.iadd(i0, r), n), kb.iadd(j0, c))
            kb.store(kb.load(buf, [r, c]), acc, [at])

    def finish(i0: SSAValue, j0: SSAValue, rows: SSAValue, cols: SSAValue) -> None:
        with kb.loop(rows) as r:
            row0 = _mul(kb, kb.iadd(i0, r), n)
            with kb.loop(cols) as c:
                col = kb.iadd(j0, c)
                at = kb.iadd(row0, col)
                v = kb.load(acc, [at])
                if epilogue is not None:
                    v = epilogue.fn(kb, v, [col], list(extras))
                kb.store_c(v, out, [at])

    with kb.loop(s["nk"]) as p:
        k0 = _mul(kb, p, s["kc"])
        kcur = kb.imin(s["kc"], kb.subi(k, k0))
        flag = kb.convert(kb.cmpi("ne", p, kb.idx(0)), kb.idx(0).type, signed=False)
        last = kb.cmpi("eq", p, kb.subi(s["nk"], kb.idx(1)))
        with kb.loop(jp1, jp0) as jp, kb.loop(ip1, ip0) as ip:
            i0, j0 = kb.imul(ip, tile.mr), kb.imul(jp, tile.nr)
            rows = kb.imin(kb.idx(tile.mr), kb.subi(s["rows"], i0))
            cols = kb.imin(kb.idx(tile.nr), kb.subi(n, j0))
            a_k0 = kb.imul(k0, 4 if direct else tile.mr * 4)  # A[i0, k0] / its packed slot
            a_addr = kb.iadd(kb.iadd(a_base, _mul(kb, ip, a_panel)), a_k0)
            b_addr = kb.iadd(kb.iadd(b_base, _mul(kb, jp, b_panel)), kb.imul(k0, tile.nr * 4))
            c_addr = kb.iadd(c_base, kb.imul(kb.iadd(_mul(kb, i0, n), j0), 4))
            full = kb.v(arith.AndIOp(kb.cmpi("eq", rows, kb.idx(tile.mr)),
                                     kb.cmpi("eq", cols, kb.idx(tile.nr))))  # fmt: skip
            if_else(
                kb,
                full,
                lambda: call(kcur, a_addr, rows, b_addr, c_addr, n, flag),
                lambda: edge(i0, j0, rows, cols, kcur, a_addr, b_addr, flag),
            )
            if epilogue is not None or separate:
                if_then(kb, last, lambda: finish(i0, j0, rows, cols))
