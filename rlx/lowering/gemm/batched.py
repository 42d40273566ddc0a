"""The shape-specialised kernels of the generated GEMM, for batched GEMMs (an output batch
that is not one GEMM over all rows) and epilogues that read more than the output column:
the A-packing task per batch and the C-block worker with the plan's sizes as constants
(module docstring of `driver.py`; the one-GEMM case uses `generic.py`)."""

from __future__ import annotations

from math import prod
from typing import TYPE_CHECKING

from xdsl.dialects import func
from xdsl.dialects.builtin import MemRefType, f32, i64
from xdsl.ir import Attribute, SSAValue

from rlx.dialects.rlx_rt import ParallelCallOp
from rlx.lowering.gemm.ir import (
    addr,
    and_,
    attr_text,
    byte_offset,
    flat_index,
    if_else,
    if_then,
    rem,
    unravel,
)
from rlx.lowering.gemm.packing import loader, pack, panels
from rlx.lowering.gemm.target import Tile

if TYPE_CHECKING:  # the rlx_to_linalg package imports this package (no cycle at run time)
    from rlx.lowering.gemm.driver import Epilogue, _Plan
    from rlx.lowering.rlx_to_linalg.kernel_builder import KernelBuilder
    from rlx.lowering.rlx_to_linalg.kernels import Kernels


PACK_TASK_ELEMENTS = 1 << 15
"""Elements of A one packing task copies (about 128 KiB: worth a task of the pool)."""


def _pack_tasks(rows: int, k: int, mr: int, batches: int) -> tuple[int, int, int]:
    """(panels of A, panels per task, tasks) of packing `batches` `rows x k` A's."""
    pm = panels(rows, mr)
    per = max(1, min(pm, PACK_TASK_ELEMENTS // (mr * k)))
    return pm, per, panels(pm, per) * batches


def packs_serially(rows: int, k: int, mr: int, batches: int = 1) -> bool:
    """Whether packing `batches` `rows x k` A's into `mr`-row panels is one serial call (on
    the calling thread): one task, or fewer than `2 * PACK_TASK_ELEMENTS` elements in all.
    `pack_split` runs it so and `generic.in_place` reads such an f32 A in place instead."""
    tasks = _pack_tasks(rows, k, mr, batches)[2]
    return tasks == 1 or rows * k * batches < 2 * PACK_TASK_ELEMENTS


def pack_split(plan: _Plan, batches: int = 1) -> tuple[int, int, int, int]:
    """(panels of A, panels per task, tasks, threads) of A's packing."""
    pm, per, tasks = _pack_tasks(plan.rows, plan.k, plan.tile.mr, batches)
    serial = packs_serially(plan.rows, plan.k, plan.tile.mr, batches)
    return pm, per, tasks, 1 if serial else min(tasks, 64)


def pack_a(
    kb: KernelBuilder, kernels: Kernels, a: SSAValue, ap: SSAValue, lead: list[int], plan: _Plan
) -> None:
    """Pack A on the pool: task t packs `per` panels of one batch of A."""
    tile = plan.tile
    pm, per, tasks, threads = pack_split(plan, prod(lead))
    chunks = tasks // prod(lead)
    types: list[Attribute] = [MemRefType(i64, [1]), a.type, ap.type]

    def build(wb: KernelBuilder, args: list[SSAValue]) -> None:
        tid, src, dst = args
        t = wb.convert(wb.load(tid, [0]), wb.idx(0).type)
        c = wb.v(rem(t, wb.idx(chunks)))
        flat = wb.idiv(t, chunks)
        ivs = unravel(wb, flat, lead) if lead else []
        p0 = wb.imul(c, per)
        p1 = wb.imin(wb.iadd(p0, per), wb.idx(pm))
        pack(wb, dst, [flat], plan.rows, plan.k, tile.mr, loader(src, ivs, False), p0, p1)

    key = (
        "gemm-pack-a",
        plan.rows,
        plan.k,
        tile.mr,
        per,
        tuple(lead),
        tuple(attr_text(t) for t in types),
    )
    worker = kernels.kernel(key, types, build, f"gemm pack A {tile.name}", noalias=True)
    table = kb.table(list(range(tasks)), i64)
    kb.add(ParallelCallOp(worker, [table, a, ap], tasks, [8, 0, 0], threads))


def worker_body(
    kb: KernelBuilder,
    wargs: list[SSAValue],
    plan: _Plan,
    ukernel: str,
    epilogue: Epilogue | None,
    separate_out: bool,
) -> None:
    tile = plan.tile
    tid, ap, bp, acc = wargs[:4]
    rest = wargs[4:]
    out = rest.pop(0) if separate_out else acc
    extras = rest
    pm, pn = panels(plan.rows, tile.mr), panels(plan.n, tile.nr)
    blocks_m, blocks_n = panels(pm, plan.mb), panels(pn, plan.nb)
    t = kb.convert(kb.load(tid, [0]), kb.idx(0).type)
    jb = kb.v(rem(t, kb.idx(blocks_n)))
    rest_t = kb.idiv(t, blocks_n)
    ib = kb.v(rem(rest_t, kb.idx(blocks_m)))
    ob = kb.idiv(rest_t, blocks_m)
    ob_idx = unravel(kb, ob, plan.out_batch) if plan.out_batch else []
    a_base = kb.iadd(
        addr(kb, ap),
        kb.imul(kb.idx(flat_index(kb, ob_idx, plan.a_batch)), pm * plan.k * tile.mr * 4),
    )
    b_base = kb.iadd(
        addr(kb, bp),
        kb.imul(kb.idx(flat_index(kb, ob_idx, plan.b_batch)), pn * plan.k * tile.nr * 4),
    )
    c_rows = kb.imul(ob, plan.rows)  # first row of this batch in the 2-D accumulator
    c_base = addr(kb, acc)
    ip0 = kb.imul(ib, plan.mb)
    ip1 = kb.imin(kb.iadd(ip0, plan.mb), kb.idx(pm))
    jp0 = kb.imul(jb, plan.nb)
    jp1 = kb.imin(kb.iadd(jp0, plan.nb), kb.idx(pn))
    buf = kb.scratch([tile.mr, tile.nr], f32)
    buf_addr = addr(kb, buf)
    nk = panels(plan.k, plan.kc)

    def tiles(k0: SSAValue, kcur: SSAValue, accumulate: SSAValue, last: SSAValue | None) -> None:
        with kb.loop(jp1, jp0) as jp, kb.loop(ip1, ip0) as ip:
            i0 = kb.imul(ip, tile.mr)
            j0 = kb.imul(jp, tile.nr)
            rows = kb.imin(kb.idx(tile.mr), kb.subi(kb.idx(plan.rows), i0))
            cols = kb.imin(kb.idx(tile.nr), kb.subi(kb.idx(plan.n), j0))
            a_addr = byte_offset(
                kb, a_base, kb.iadd(kb.imul(ip, plan.k * tile.mr), kb.imul(k0, tile.mr))
            )
            b_addr = byte_offset(
                kb, b_base, kb.iadd(kb.imul(jp, plan.k * tile.nr), kb.imul(k0, tile.nr))
            )
            r0 = kb.iadd(c_rows, i0)
            c_addr = byte_offset(kb, c_base, kb.iadd(kb.imul(r0, plan.n), j0))
            full = kb.v(
                and_(kb.cmpi("eq", rows, kb.idx(tile.mr)), kb.cmpi("eq", cols, kb.idx(tile.nr)))
            )
            if_else(
                kb,
                full,
                lambda: kb.add(
                    func.CallOp(
                        ukernel, [kcur, a_addr, b_addr, c_addr, kb.idx(plan.n), accumulate], []
                    )
                ),
                lambda: _edge(
                    kb,
                    ukernel,
                    acc,
                    buf,
                    buf_addr,
                    r0,
                    j0,
                    rows,
                    cols,
                    kcur,
                    a_addr,
                    b_addr,
                    accumulate,
                    tile,
                ),
            )
            if last is not None and (epilogue is not None or separate_out):
                if_then(
                    kb,
                    last,
                    lambda: _epilogue(kb, epilogue, acc, out, extras, r0, j0, rows, cols, plan),
                )

    # One body for every k-slice (the epilogue under "last slice"): half the code for LLVM.
    index = kb.idx(0).type
    with kb.loop(nk) as p:
        k0 = kb.imul(p, plan.kc)
        kcur = kb.imin(kb.idx(plan.kc), kb.subi(kb.idx(plan.k), k0))
        flag = kb.convert(kb.cmpi("ne", p, kb.idx(0)), index, signed=False)
        tiles(k0, kcur, flag, kb.cmpi("eq", p, kb.idx(nk - 1)))


def _edge(kb: KernelBuilder, ukernel: str, acc: SSAValue, buf: SSAValue, buf_addr: SSAValue,
          r0: SSAValue, j0: SSAValue, rows: SSAValue, cols: SSAValue, kcur: SSAValue,
          a_addr: SSAValue, b_addr: SSAValue, accumulate: SSAValue, tile: Tile) -> None:  # fmt: skip
    """A partial tile: through the `mr x nr` buffer, copying only its valid part."""
    with kb.loop(rows) as r, kb.loop(cols) as c:
        kb.store(kb.load(acc, [kb.iadd(r0, r), kb.iadd(j0, c)]), buf, [r, c])
    kb.add(func.CallOp(ukernel, [kcur, a_addr, b_addr, buf_addr, kb.idx(tile.nr), accumulate], []))
    with kb.loop(rows) as r, kb.loop(cols) as c:
        kb.store(kb.load(buf, [r, c]), acc, [kb.iadd(r0, r), kb.iadd(j0, c)])


def _epilogue(kb: KernelBuilder, epilogue: Epilogue | None, acc: SSAValue, out: SSAValue,
              extras: list[SSAValue], r0: SSAValue, j0: SSAValue, rows: SSAValue,
              cols: SSAValue, plan: _Plan) -> None:  # fmt: skip
    """out[tile] = narrow(fn(acc[tile])) with the output's full index given to `fn`."""
    with kb.loop(rows) as r:
        row = kb.iadd(r0, r)
        lead = unravel(kb, row, plan.lead_dims) if epilogue is not None else []
        with kb.loop(cols) as c:
            col = kb.iadd(j0, c)
            v = kb.load(acc, [row, col])
            if epilogue is not None:
                v = epilogue.fn(kb, v, [*lead, col], extras)
            kb.store_c(v, out, [row, col])
