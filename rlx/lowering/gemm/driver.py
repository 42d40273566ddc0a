"""The generated GEMM: packing, a parallel loop over C blocks, the microkernel, an epilogue.

`emit_gemm(kb, a, b, out, epilogue)` emits `out = epilogue(a @ b)` into a kernel body:

1. A (`[*ba, M, K]`) and B (`[*bb, K, N]`) are packed into f32 panels (`packing.py`),
   widening f16/bf16 on the way. Batch dims broadcast like NumPy; when B has no batch
   dims (or only 1s) and A's batch dims are the output's, all rows of A form one GEMM.
2. C is split into tasks of `mc x nc` blocks (per output batch) run by
   `rlx_rt.parallel_call @worker` on the runtime's pool: the worker's first operand is a
   constant table of task indices (stride 8: task t reads t), every other operand is passed
   whole. The worker loops over k-slices of `kc` (L1), then the block's B micro-panels,
   then its A micro-panels (the `mc x kc` A block stays in L2 across the B panels) and
   calls the microkernel per `mr x nr` tile. Edge tiles go through a tile buffer.
3. The accumulator is `out` itself for f32 outputs, else an f32 scratch; right after the
   last k-slice of a tile (still in L1) the epilogue maps every element
   `epilogue.fn(kb, value, out_index, operands) -> value` and the result is narrowed into
   `out` (bias, activation, residual, cast: whatever the callback computes).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from math import prod
from typing import TYPE_CHECKING

from xdsl.dialects import func, memref
from xdsl.dialects.builtin import (
    ArrayAttr,
    BFloat16Type,
    Float16Type,
    Float32Type,
    IntegerAttr,
    MemRefType,
    NoneAttr,
    f32,
    i64,
)
from xdsl.ir import Attribute, SSAValue

from rlx.dialects.rlx_rt import ParallelCallOp
from rlx.lowering.gemm import generic
from rlx.lowering.gemm.microkernel import microkernel
from rlx.lowering.gemm.packing import loader, pack, packed_type, panels
from rlx.lowering.gemm.target import MIN_MNK, Tile, host_tile

if TYPE_CHECKING:  # the rlx_to_linalg package imports this module (no cycle at run time)
    from rlx.lowering.rlx_to_linalg.kernel_builder import KernelBuilder
    from rlx.lowering.rlx_to_linalg.kernels import Kernels

SERIAL_MACS = 1 << 18
"""GEMMs with fewer multiply-adds (tens of microseconds) run on the calling thread."""

EpilogueFn = Callable[["KernelBuilder", SSAValue, list[SSAValue], list[SSAValue]], SSAValue]
"""`fn(kb, acc, out_index, operands)`: the final f32 value of one output element."""


@dataclass
class Epilogue:
    """Elementwise work applied to each C tile right after its last k-slice."""

    fn: EpilogueFn
    operands: list[SSAValue] = field(default_factory=list)
    """Extra buffers `fn` reads (in the worker, `fn` gets the worker's copies)."""
    key: str = ""
    """Identity of `fn` for kernel deduplication (e.g. the activation name)."""
    columns: bool = False
    """`fn` reads its operands (1-D, of length N) only at the output column `out_index[-1]`
    and ignores the row (bias, activation): the worker can then be shape-generic
    (`generic.py`); its operands reach `fn` collapsed to 1-D."""


def _owner(kb: KernelBuilder) -> Kernels | None:
    from rlx.lowering.rlx_to_linalg.kernels import Kernels

    owner = getattr(kb._globals, "__self__", None)  # the Kernels registry building this kernel
    return owner if isinstance(owner, Kernels) else None


def shape(v: SSAValue) -> tuple[int, ...]:
    t = v.type
    assert isinstance(t, MemRefType)
    return tuple(t.get_shape())


def elem(v: SSAValue) -> Attribute:
    t = v.type
    assert isinstance(t, MemRefType)
    return t.element_type


def attr_text(t: Attribute) -> str:
    """Printed type (part of a kernel's dedup key)."""
    return str(t)


_FLOATS = (Float32Type, Float16Type, BFloat16Type)


def eligible_types(
    a: Attribute, b: Attribute, out: Attribute, b_shape: Sequence[int] | None = None
) -> bool:
    """f32/f16/bf16 identity-layout memrefs of rank >= 2, at least `MIN_MNK`
    multiply-adds per GEMM, 32-bit sizes (`b_shape`: b's logical shape when packed)."""
    for t in (a, b, out):
        if not isinstance(t, MemRefType) or not isinstance(t.layout, NoneAttr):
            return False
        if not isinstance(t.element_type, _FLOATS) or len(t.get_shape()) < 2:
            return False
    assert isinstance(a, MemRefType) and isinstance(b, MemRefType) and isinstance(out, MemRefType)
    sa, so = a.get_shape(), out.get_shape()
    sb = b.get_shape() if b_shape is None else tuple(b_shape)
    m, k, n = sa[-2], sa[-1], sb[-1]
    return m * n * k >= MIN_MNK and max(prod(so), prod(sa), prod(sb)) < 2**31


def eligible(a: SSAValue, b: SSAValue, out: SSAValue, b_shape: Sequence[int] | None = None) -> bool:
    """`eligible_types` of the buffers."""
    return eligible_types(a.type, b.type, out.type, b_shape)


@dataclass(frozen=True)
class _Plan:
    tile: Tile
    rows: int  # M (or all rows of A when collapsed)
    n: int
    k: int
    out_batch: tuple[int, ...]  # () when collapsed
    a_batch: tuple[int, ...]  # padded to len(out_batch); 1 = broadcast
    b_batch: tuple[int, ...]
    lead_dims: tuple[int, ...]  # the output's shape without its last dim
    kc: int
    mb: int  # panels of A per block
    nb: int  # panels of B per block

    @property
    def tasks(self) -> int:
        ob = prod(self.out_batch)
        return (
            ob
            * panels(panels(self.rows, self.tile.mr), self.mb)
            * panels(panels(self.n, self.tile.nr), self.nb)
        )


def _plan(tile: Tile, sa: list[int], sb: list[int], so: list[int]) -> _Plan:
    m, k, n = sa[-2], sa[-1], sb[-1]
    bo = so[:-2]
    pa = [1] * (len(bo) - len(sa) + 2) + sa[:-2]
    pb = [1] * (len(bo) - len(sb) + 2) + sb[:-2]
    if all(d == 1 for d in pb) and pa == bo:
        rows, bo, pa, pb = m * prod(bo), [], [], []
    else:
        rows = m
    nk = panels(k, tile.kc)
    kc = panels(k, nk)  # equal k-slices
    mb = _balanced(panels(rows, tile.mr), max(1, tile.mc // tile.mr))
    nb = _balanced(panels(n, tile.nr), max(1, tile.nc // tile.nr))
    return _Plan(tile, rows, n, k, tuple(bo), tuple(pa), tuple(pb), tuple(so[:-1]), kc, mb, nb)


def _balanced(total: int, most: int) -> int:
    """Panels per block: at most `most`, blocks as equal as possible (no small last one)."""
    return panels(total, panels(total, most))


def _unravel(kb: KernelBuilder, flat: SSAValue, dims: Sequence[int]) -> list[SSAValue]:
    out: list[SSAValue] = []
    for i, d in enumerate(dims):
        inner = prod(dims[i + 1 :])
        q = kb.idiv(flat, inner) if inner > 1 else flat
        out.append(kb.v(_rem(q, kb.idx(d))) if i > 0 else q)
    return out


def _rem(a: SSAValue, b: SSAValue) -> object:
    from xdsl.dialects import arith

    return arith.RemUIOp(a, b)


def _flat(kb: KernelBuilder, idx: Sequence[SSAValue], dims: Sequence[int]) -> SSAValue | int:
    """Flat index of `idx` into a batch of shape `dims` (size-1 dims broadcast: 0)."""
    off: SSAValue | int = 0
    for i, (v, d) in enumerate(zip(idx, dims, strict=True)):
        if d != 1:
            off = kb.iadd(off, kb.imul(v, prod(dims[i + 1 :])))
    return off


def _collapse2d(kb: KernelBuilder, mem: SSAValue) -> SSAValue:
    s = shape(mem)
    if len(s) == 2:
        return mem
    groups = ArrayAttr(
        [
            ArrayAttr([IntegerAttr(i, i64) for i in range(len(s) - 1)]),
            ArrayAttr([IntegerAttr(len(s) - 1, i64)]),
        ]
    )
    t = MemRefType(elem(mem), [prod(s[:-1]), s[-1]])
    return kb.hoist(
        memref.CollapseShapeOp.build(
            operands=[mem], result_types=[t], properties={"reassociation": groups}
        )
    )


def _addr(kb: KernelBuilder, mem: SSAValue) -> SSAValue:
    return kb.hoist(memref.ExtractAlignedPointerAsIndexOp.get(mem))


def _bytes(kb: KernelBuilder, base: SSAValue, elems: SSAValue | int) -> SSAValue:
    return kb.iadd(base, elems * 4 if isinstance(elems, int) else kb.imul(elems, 4))


def emit_gemm(
    kb: KernelBuilder,
    a: SSAValue,
    b: SSAValue,
    out: SSAValue,
    epilogue: Epilogue | None = None,
    *,
    packed: bool = False,
) -> bool:
    """Emit the generated GEMM (module docstring); False (nothing emitted) when the
    operands do not qualify (`eligible`) or the kernel has no module registry. With
    `packed`, `b` is already packed (`rlx.pack_rhs`: f32 `[P, K, nr]` of the host tile)."""
    kernels = _owner(kb)
    tile = host_tile()
    if packed:
        pk = list(shape(b))
        if pk[2] != tile.nr or not isinstance(elem(b), Float32Type):
            return False
        sb = [pk[1], shape(out)[-1]]
    else:
        sb = list(shape(b))
    if kernels is None or not eligible(a, b, out, sb):
        return False
    sa, so = list(shape(a)), list(shape(out))
    plan = _plan(tile, sa, sb, so)
    if plan.rows < tile.mr:  # a few rows (decode-like): a shorter tile, no wasted rows
        tile = replace(tile, mr=plan.rows, mc=plan.rows)
        plan = _plan(tile, sa, sb, so)
    m, k, n = sa[-2], sa[-1], sb[-1]
    na, nbb = prod(plan.a_batch), prod(plan.b_batch)
    # one GEMM (no output batch) with a column-only epilogue: shape-generic kernels
    generic = not plan.out_batch and (epilogue is None or epilogue.columns)

    # 1. Pack A and B (per batch of each).
    ap = kb.scratch(packed_type(na, plan.rows, k, tile.mr).get_shape(), f32)
    bp = b if packed else kb.scratch(packed_type(nbb, n, k, tile.nr).get_shape(), f32)
    a_lead = sa[:-2] if plan.out_batch else []
    b_lead = sb[:-2] if plan.out_batch else []
    a2 = a if plan.out_batch else _collapse2d(kb, a)
    b2 = b if plan.out_batch or len(sb) == 2 or packed else _collapse2d(kb, b)
    if generic:
        _generic_pack_a(kb, kernels, a, ap, plan)
    else:
        _pack_a(kb, kernels, a2, ap, a_lead, plan)
    if not packed:
        with kb.nest(b_lead) as ivs:
            pack(kb, bp, [_flat(kb, ivs, b_lead)], n, k, tile.nr, loader(b2, ivs, True))

    # 2. The accumulator and the worker over C blocks.
    acc = out if isinstance(elem(out), Float32Type) else kb.scratch(so, f32)
    acc2, out2 = _collapse2d(kb, acc), _collapse2d(kb, out)
    extras = list(epilogue.operands) if epilogue else []
    if epilogue is not None and epilogue.columns:
        extras = [_collapse1d(kb, e) for e in extras]
    macs = m * n * k * prod(so[:-2])
    if generic:
        _generic_worker(kb, kernels, plan, ap, bp, acc, out, extras, epilogue, macs)
        return True
    args = [ap, bp, acc2] + ([out2] if acc is not out else []) + extras
    needs_epi = epilogue is not None or acc is not out
    types: list[Attribute] = [MemRefType(i64, [1]), *(v.type for v in args)]
    key = ("gemm-worker", plan, needs_epi, epilogue.key if epilogue else "",
           tuple(attr_text(t) for t in types))  # fmt: skip
    ukernel = microkernel(kernels, tile)

    def build(wb: KernelBuilder, wargs: list[SSAValue]) -> None:
        _worker(wb, wargs, plan, ukernel, epilogue, acc is not out)

    worker = kernels.kernel(key, types, build, f"gemm worker {tile.name}", noalias=True)
    tasks = plan.tasks
    table = kb.table(list(range(tasks)), i64)
    threads = 1 if macs < SERIAL_MACS else min(tasks, 64)
    kb.add(ParallelCallOp(worker, [table, *args], tasks, [8] + [0] * len(args), threads))
    return True


PACK_TASK_ELEMENTS = 1 << 15
"""Elements of A one packing task copies (about 128 KiB: worth a task of the pool)."""


def _collapse1d(kb: KernelBuilder, mem: SSAValue) -> SSAValue:
    """A `[1, ..., 1, N]` buffer as `[N]`."""
    s = shape(mem)
    if len(s) == 1:
        return mem
    groups = ArrayAttr([ArrayAttr([IntegerAttr(i, i64) for i in range(len(s))])])
    t = MemRefType(elem(mem), [prod(s)])
    return kb.hoist(
        memref.CollapseShapeOp.build(
            operands=[mem], result_types=[t], properties={"reassociation": groups}
        )
    )


def _pack_split(plan: _Plan, batches: int = 1) -> tuple[int, int, int, int]:
    """(panels of A, panels per task, tasks, threads) of A's packing."""
    tile = plan.tile
    pm = panels(plan.rows, tile.mr)
    per = max(1, min(pm, PACK_TASK_ELEMENTS // (tile.mr * plan.k)))
    tasks = panels(pm, per) * batches
    small = tasks == 1 or plan.rows * plan.k * batches < 2 * PACK_TASK_ELEMENTS
    return pm, per, tasks, 1 if small else min(tasks, 64)


def _generic_pack_a(
    kb: KernelBuilder, kernels: Kernels, a: SSAValue, ap: SSAValue, plan: _Plan
) -> None:
    """Pack the one A (no batch) with the shape-generic packing task (`generic.py`)."""
    pm, per, tasks, threads = _pack_split(plan)
    worker = generic.pack_a_kernel(kernels, plan.tile, elem(a))
    sizes = kb.table([plan.rows, plan.k, per, pm], i64)
    args = [kb.table(list(range(tasks)), i64), sizes, generic.flat(kb, a), generic.flat(kb, ap)]
    kb.add(ParallelCallOp(worker, args, tasks, [8, 0, 0, 0], threads))


def _generic_worker(kb: KernelBuilder, kernels: Kernels, plan: _Plan, ap: SSAValue,
                    bp: SSAValue, acc: SSAValue, out: SSAValue, extras: list[SSAValue],
                    epilogue: Epilogue | None, macs: int) -> None:  # fmt: skip
    """The C-block worker of one GEMM with its sizes in a table (`generic.py`)."""
    tile = plan.tile
    pm, pn = panels(plan.rows, tile.mr), panels(plan.n, tile.nr)
    bm, bn = panels(pm, plan.mb), panels(pn, plan.nb)
    nk = panels(plan.k, plan.kc)
    sizes = [plan.rows, plan.n, plan.k, plan.kc, nk, pm, pn, plan.mb, plan.nb, bm, bn]
    assert len(sizes) == len(generic.WORKER_SIZES)
    ukernel = microkernel(kernels, tile)
    worker = generic.worker_kernel(
        kernels, tile, ukernel, epilogue, elem(out), [elem(e) for e in extras]
    )
    bufs = [ap, bp, acc] + ([out] if acc is not out else []) + extras
    args = [kb.table(list(range(plan.tasks)), i64), kb.table(sizes, i64)]
    args += [generic.flat(kb, v) for v in bufs]
    threads = 1 if macs < SERIAL_MACS else min(plan.tasks, 64)
    kb.add(ParallelCallOp(worker, args, plan.tasks, [8] + [0] * (len(args) - 1), threads))


def _pack_a(
    kb: KernelBuilder, kernels: Kernels, a: SSAValue, ap: SSAValue, lead: list[int], plan: _Plan
) -> None:
    """Pack A on the pool: task t packs `per` panels of one batch of A."""
    tile = plan.tile
    pm, per, tasks, threads = _pack_split(plan, prod(lead))
    chunks = tasks // prod(lead)
    types: list[Attribute] = [MemRefType(i64, [1]), a.type, ap.type]

    def build(wb: KernelBuilder, args: list[SSAValue]) -> None:
        tid, src, dst = args
        t = wb.convert(wb.load(tid, [0]), wb.idx(0).type)
        c = wb.v(_rem(t, wb.idx(chunks)))
        flat = wb.idiv(t, chunks)
        ivs = _unravel(wb, flat, lead) if lead else []
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


def _worker(
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
    jb = kb.v(_rem(t, kb.idx(blocks_n)))
    rest_t = kb.idiv(t, blocks_n)
    ib = kb.v(_rem(rest_t, kb.idx(blocks_m)))
    ob = kb.idiv(rest_t, blocks_m)
    ob_idx = _unravel(kb, ob, plan.out_batch) if plan.out_batch else []
    a_base = kb.iadd(
        _addr(kb, ap), kb.imul(kb.idx(_flat(kb, ob_idx, plan.a_batch)), pm * plan.k * tile.mr * 4)
    )
    b_base = kb.iadd(
        _addr(kb, bp), kb.imul(kb.idx(_flat(kb, ob_idx, plan.b_batch)), pn * plan.k * tile.nr * 4)
    )
    c_rows = kb.imul(ob, plan.rows)  # first row of this batch in the 2-D accumulator
    c_base = _addr(kb, acc)
    ip0 = kb.imul(ib, plan.mb)
    ip1 = kb.imin(kb.iadd(ip0, plan.mb), kb.idx(pm))
    jp0 = kb.imul(jb, plan.nb)
    jp1 = kb.imin(kb.iadd(jp0, plan.nb), kb.idx(pn))
    buf = kb.scratch([tile.mr, tile.nr], f32)
    buf_addr = _addr(kb, buf)
    nk = panels(plan.k, plan.kc)

    def tiles(k0: SSAValue, kcur: SSAValue, accumulate: SSAValue, last: SSAValue | None) -> None:
        with kb.loop(jp1, jp0) as jp, kb.loop(ip1, ip0) as ip:
            i0 = kb.imul(ip, tile.mr)
            j0 = kb.imul(jp, tile.nr)
            rows = kb.imin(kb.idx(tile.mr), kb.subi(kb.idx(plan.rows), i0))
            cols = kb.imin(kb.idx(tile.nr), kb.subi(kb.idx(plan.n), j0))
            a_addr = _bytes(
                kb, a_base, kb.iadd(kb.imul(ip, plan.k * tile.mr), kb.imul(k0, tile.mr))
            )
            b_addr = _bytes(
                kb, b_base, kb.iadd(kb.imul(jp, plan.k * tile.nr), kb.imul(k0, tile.nr))
            )
            r0 = kb.iadd(c_rows, i0)
            c_addr = _bytes(kb, c_base, kb.iadd(kb.imul(r0, plan.n), j0))
            full = kb.v(
                _and(kb.cmpi("eq", rows, kb.idx(tile.mr)), kb.cmpi("eq", cols, kb.idx(tile.nr)))
            )
            _if_else(
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
                _if(
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


def _if(kb: KernelBuilder, cond: SSAValue, then: Callable[[], object]) -> None:
    from xdsl.dialects import scf
    from xdsl.ir import Block, Region

    blk = Block()
    with kb.at(blk):
        then()
        kb.add(scf.YieldOp())
    kb.add(scf.IfOp(cond, [], Region(blk)))


def _and(x: SSAValue, y: SSAValue) -> object:
    from xdsl.dialects import arith

    return arith.AndIOp(x, y)


def _if_else(
    kb: KernelBuilder, cond: SSAValue, then: Callable[[], object], other: Callable[[], object]
) -> None:
    from xdsl.dialects import scf
    from xdsl.ir import Block, Region

    tb, eb = Block(), Block()
    with kb.at(tb):
        then()
        kb.add(scf.YieldOp())
    with kb.at(eb):
        other()
        kb.add(scf.YieldOp())
    kb.add(scf.IfOp(cond, [], Region(tb), Region(eb)))


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
        lead = _unravel(kb, row, plan.lead_dims) if epilogue is not None else []
        with kb.loop(cols) as c:
            col = kb.iadd(j0, c)
            v = kb.load(acc, [row, col])
            if epilogue is not None:
                v = epilogue.fn(kb, v, [*lead, col], extras)
            kb.store_c(v, out, [row, col])
