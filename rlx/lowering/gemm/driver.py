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

One GEMM (no output batch) with no epilogue or a `columns` one uses the shape-generic
packing task and worker of `generic.py` (sizes read at run time: one kernel per tile,
epilogue kind and element types, whatever the shapes); a small f32 A is not packed there
but read in place by `microkernel.rows_microkernel` (`generic.in_place`). Batched GEMMs and
other epilogues use the shape-specialised kernels of `batched.py`. IR helpers: `ir.py`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from math import prod
from typing import TYPE_CHECKING

from xdsl.dialects.builtin import (
    BFloat16Type,
    Float16Type,
    Float32Type,
    MemRefType,
    NoneAttr,
    f32,
    i64,
)
from xdsl.ir import Attribute, SSAValue

from rlx.dialects.rlx_rt import ParallelCallOp
from rlx.lowering.gemm import generic
from rlx.lowering.gemm.batched import pack_a, pack_split, worker_body
from rlx.lowering.gemm.ir import attr_text, collapse1d, collapse2d, elem, flat_index, shape
from rlx.lowering.gemm.microkernel import microkernel, rows_microkernel
from rlx.lowering.gemm.packing import loader, pack, packed_type, panels
from rlx.lowering.gemm.target import MIN_MNK, TASK_MACS, Tile, host_tile, min_tasks

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
    pm, pn = panels(rows, tile.mr), panels(n, tile.nr)
    mb = _balanced(pm, max(1, tile.mc // tile.mr))
    nb = _balanced(pn, max(1, tile.nc // tile.nr))
    mb, nb = _split(pm, pn, mb, nb, tile, rows * n * k * prod(bo))
    return _Plan(tile, rows, n, k, tuple(bo), tuple(pa), tuple(pb), tuple(so[:-1]), kc, mb, nb)


def _split(pm: int, pn: int, mb: int, nb: int, tile: Tile, macs: int) -> tuple[int, int]:
    """Smaller blocks (panels per block `mb` x `nb`) until the GEMM has `min_tasks()`
    tasks or another split would make tasks under `TASK_MACS`: each step splits the
    longer side of the block (columns on a tie: A is packed once for every task, and
    the A block stays in L2 across a task's B panels)."""
    want = min_tasks()

    def tasks(mb: int, nb: int) -> int:
        return panels(pm, mb) * panels(pn, nb)

    while tasks(mb, nb) < want and macs // (2 * tasks(mb, nb)) >= TASK_MACS:
        if nb > 1 and (nb * tile.nr >= mb * tile.mr or mb == 1):
            nb = _balanced(pn, nb - 1)
        elif mb > 1:
            mb = _balanced(pm, mb - 1)
        else:
            break
    return mb, nb


def _balanced(total: int, most: int) -> int:
    """Panels per block: at most `most`, blocks as equal as possible (no small last one)."""
    return panels(total, panels(total, most))


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
    kernels = kb.kernels
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
    any_shape = not plan.out_batch and (epilogue is None or epilogue.columns)
    # ... which reads a small f32 A in place (no packing call: `generic.in_place`)
    direct = (any_shape and isinstance(elem(a), Float32Type)
              and generic.in_place(plan.rows, k, n, tile.mr))  # fmt: skip

    # 1. Pack A (unless read in place) and B (per batch of each).
    ap = a if direct else kb.scratch(packed_type(na, plan.rows, k, tile.mr).get_shape(), f32)
    bp = b if packed else kb.scratch(packed_type(nbb, n, k, tile.nr).get_shape(), f32)
    a_lead = sa[:-2] if plan.out_batch else []
    b_lead = sb[:-2] if plan.out_batch else []
    a2 = a if plan.out_batch else collapse2d(kb, a)
    b2 = b if plan.out_batch or len(sb) == 2 or packed else collapse2d(kb, b)
    if not any_shape:
        pack_a(kb, kernels, a2, ap, a_lead, plan)
    elif not direct:
        _generic_pack_a(kb, kernels, a, ap, plan)
    if not packed:
        with kb.nest(b_lead) as ivs:
            pack(kb, bp, [flat_index(kb, ivs, b_lead)], n, k, tile.nr, loader(b2, ivs, True))

    # 2. The accumulator and the worker over C blocks.
    acc = out if isinstance(elem(out), Float32Type) else kb.scratch(so, f32)
    acc2, out2 = collapse2d(kb, acc), collapse2d(kb, out)
    extras = list(epilogue.operands) if epilogue else []
    if epilogue is not None and epilogue.columns:
        extras = [collapse1d(kb, e) for e in extras]
    macs = m * n * k * prod(so[:-2])
    if any_shape:
        _generic_worker(kb, kernels, plan, ap, bp, acc, out, extras, epilogue, macs, direct)
        return True
    args = [ap, bp, acc2] + ([out2] if acc is not out else []) + extras
    needs_epi = epilogue is not None or acc is not out
    types: list[Attribute] = [MemRefType(i64, [1]), *(v.type for v in args)]
    key = ("gemm-worker", plan, needs_epi, epilogue.key if epilogue else "",
           tuple(attr_text(t) for t in types))  # fmt: skip
    ukernel = microkernel(kernels, tile)

    def build(wb: KernelBuilder, wargs: list[SSAValue]) -> None:
        worker_body(wb, wargs, plan, ukernel, epilogue, acc is not out)

    worker = kernels.kernel(key, types, build, f"gemm worker {tile.name}", noalias=True)
    launch_tasks(kb, worker, args, plan.tasks, macs)
    return True


def launch_tasks(
    kb: KernelBuilder, worker: str, args: Sequence[SSAValue], tasks: int, macs: int
) -> None:
    """`rlx_rt.parallel_call` of `worker` over `tasks` tasks: its first operand is the
    constant table of task ids 0..tasks-1 (advancing 8 bytes per task), then `args`
    (shared by every task). Serial below `SERIAL_MACS` multiply-adds, else at most 64
    threads."""
    threads = 1 if macs < SERIAL_MACS else min(tasks, 64)
    table = kb.table(list(range(tasks)), i64)
    kb.add(ParallelCallOp(worker, [table, *args], tasks, [8] + [0] * len(args), threads))


def _generic_pack_a(
    kb: KernelBuilder, kernels: Kernels, a: SSAValue, ap: SSAValue, plan: _Plan
) -> None:
    """Pack the one A (no batch) with the shape-generic packing task (`generic.py`)."""
    pm, per, tasks, threads = pack_split(plan)
    worker = generic.pack_a_kernel(kernels, plan.tile, elem(a))
    sizes = kb.table([plan.rows, plan.k, per, pm], i64)
    args = [kb.table(list(range(tasks)), i64), sizes, generic.flat(kb, a), generic.flat(kb, ap)]
    kb.add(ParallelCallOp(worker, args, tasks, [8, 0, 0, 0], threads))


def _generic_worker(kb: KernelBuilder, kernels: Kernels, plan: _Plan, ap: SSAValue,
                    bp: SSAValue, acc: SSAValue, out: SSAValue, extras: list[SSAValue],
                    epilogue: Epilogue | None, macs: int, direct: bool) -> None:  # fmt: skip
    """The C-block worker of one GEMM with its sizes in a table (`generic.py`); with
    `direct`, `ap` is A itself (f32, read in place by `rows_microkernel`)."""
    tile = plan.tile
    pm, pn = panels(plan.rows, tile.mr), panels(plan.n, tile.nr)
    bm, bn = panels(pm, plan.mb), panels(pn, plan.nb)
    nk = panels(plan.k, plan.kc)
    sizes = [plan.rows, plan.n, plan.k, plan.kc, nk, pm, pn, plan.mb, plan.nb, bm, bn]
    assert len(sizes) == len(generic.WORKER_SIZES)
    ukernel = rows_microkernel(kernels, tile) if direct else microkernel(kernels, tile)
    worker = generic.worker_kernel(
        kernels, tile, ukernel, epilogue, elem(out), [elem(e) for e in extras], direct
    )
    bufs = [ap, bp, acc] + ([out] if acc is not out else []) + extras
    args = [kb.table(list(range(plan.tasks)), i64), kb.table(sizes, i64)]
    args += [generic.flat(kb, v) for v in bufs]
    threads = 1 if macs < SERIAL_MACS else min(plan.tasks, 64)
    kb.add(ParallelCallOp(worker, args, plan.tasks, [8] + [0] * (len(args) - 1), threads))
