"""The flash-style kernel of rlx.attention (f32, f16, bf16): online softmax over key
blocks on the generated GEMM microkernel, parallel over (batch, head, query block).

A task owns `bq` query rows of one (b, h) (`bq` a multiple of the microkernel's `nr`) and
walks the key blocks of its live key range (causal / sliding-window blocks skip the keys
none of their rows sees) in blocks of `bk` keys (a multiple of `mr`). Everything is
computed transposed, queries along the vector lanes, so that no tile is ever repacked:

  1. once per task: Qᵀ·scale is packed as the microkernel's B operand (`[bq/nr, D, nr]`,
     widened to f32, zero rows past Sq);
  2. per key block: K is packed as the A operand (`[bk/mr, D, mr]`) and V as the B operand
     of the second product (`[Dv'/nr, bk, nr]`, Dv' = Dv rounded up to `nr`), keys past
     the block zeroed (`mr` is lowered to divide `nr`, see `_tile`);
  3. Sᵀ = K·Qᵀ·scale: one microkernel call per (key panel, query panel), written with a
     row stride of `nr` straight into the layout `[bq/nr, bk, nr]`;
  4. pass 1 over Sᵀ (inner loop over `nr` queries, vectorized): bias, softcap, masks
     (causal, window, keys past the block: -inf), running max per query;
  5. per query: m' = max(m, block max), α = exp(m - m') (0 while m = -inf), l := α·l,
     O := α·O; pass 2: p = exp(s - m') (exactly 0 for a -inf score), l += p, in place
     (both exps have arguments <= 0: `fast_exp.exp_nonpositive`);
     then P is copied into the packed A operand of step 6 (`[bq/mr, bk, mr]`: as `mr`
     divides `nr`, runs of `mr` queries are contiguous in both layouts);
  6. O += P·V: one microkernel call per (query panel, Dv panel) with k = bk;
  7. out[i, :] = O[i, :] / l (zeros where l = 0: no live key), narrowed to the output type.

The only score storage is the `bk x bq` tile (no S x S buffer); accumulators are f32 for
every input type; no BLAS call (so it runs on RLX's pool without competing with
OpenBLAS's threads). GQA: q head h reads k/v head h // (H / Hkv). Layout "bshd": the
loads of steps 1-2 and the stores of step 7 index [b, s, h, d] (`_Attn.ix`): the
transposes to [B, H, S, D] that an imported graph has around the op are not copies.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from math import prod
from typing import TYPE_CHECKING

from xdsl.dialects import func, memref
from xdsl.dialects import math as mathd
from xdsl.dialects.builtin import (
    BFloat16Type,
    Float16Type,
    Float32Type,
    MemRefType,
    f32,
    i64,
)
from xdsl.ir import Attribute, SSAValue

from rlx.lowering.gemm.driver import launch_tasks
from rlx.lowering.gemm.microkernel import microkernel
from rlx.lowering.gemm.target import Tile, host_tile
from rlx.lowering.rlx_to_linalg.fast_exp import exp_nonpositive
from rlx.lowering.rlx_to_linalg.kernel_builder import KernelBuilder, elem, shape

if TYPE_CHECKING:
    from rlx.lowering.rlx_to_linalg.attention import _Attn

Q_ROWS = 128
"""Target query rows per task: K and V are packed once per task and key block, so fewer
rows repack them more often (256 rows were no faster than 128 for s512 heads)."""

K_ROWS = 128
"""Target keys per key block (the `bk x bq` f32 score tile stays in L2)."""

MIN_TASKS = 4
"""Query blocks are made smaller (down to `nr` rows) until there are this many tasks."""

MIN_QUERY_ROWS = 4
"""Fewest query rows (Sq) for the flash kernel: a decode step (a few rows against a long
key sequence) would fill a query panel of `nr` rows mostly with padding; the loop kernel
streams K and V once instead."""

_TYPES = (Float32Type, Float16Type, BFloat16Type)


def _up(n: int, m: int) -> int:
    return -(-n // m) * m


@dataclass(frozen=True)
class FlashPlan:
    """Block sizes of one attention op."""

    tile: Tile
    qp: int
    """Query panels (of `nr` rows) per task."""
    nqb: int
    """Query blocks per (batch, head)."""
    bk: int
    """Keys per key block (a multiple of `mr`)."""
    dvp: int
    """Dv rounded up to `nr`."""
    tasks: int

    @property
    def bq(self) -> int:
        return self.qp * self.tile.nr


def plan(at: _Attn) -> FlashPlan:
    """Block sizes for `at` on the host's tile (module docstring)."""
    tile = _tile(host_tile())
    panels = -(-at.sq // tile.nr)
    qp = min(panels, max(1, Q_ROWS // tile.nr))
    while qp > 1 and at.b * at.h * -(-panels // qp) < MIN_TASKS:
        qp = -(-qp // 2)
    nqb = -(-panels // qp)
    qp = -(-panels // nqb)  # equal blocks
    nkb = -(-at.sk // K_ROWS)
    bk = _up(-(-at.sk // nkb), tile.mr)
    return FlashPlan(tile, qp, nqb, bk, _up(at.dv, tile.nr), at.b * at.h * nqb)


def _tile(tile: Tile) -> Tile:
    """The host's tile with `mr` lowered to the largest divisor of `nr` (12 -> 8 on
    AVX-512, 6 -> 4 on AVX2): P then goes from the score tile to the packed A operand in
    contiguous runs (step 5), and BERT-shaped key blocks (128) are not padded. mr = 8
    instead of 12 was also 13% faster for s128 D64 heads (fewer padded rows)."""
    best = max(m for m in range(1, tile.mr + 1) if tile.nr % m == 0)
    return tile if best == tile.mr else replace(tile, mr=best)


def applies(kb: KernelBuilder, at: _Attn) -> bool:
    """`fits`, and the kernel has a registry to add the worker and microkernel to."""
    return fits(at) and kb.kernels is not None


def fits(at: _Attn) -> bool:
    """f32/f16/bf16 operands of positive static sizes, at least `MIN_QUERY_ROWS` query
    rows, 32-bit sizes (also the dispatch report's rule, `attention_report`)."""
    bufs = [at.q, at.k, at.v, at.out] + ([at.bias] if at.bias is not None else [])
    if not all(isinstance(elem(x), _TYPES) for x in bufs):
        return False
    dims = (at.b, at.h, at.sq, at.sk, at.d, at.dv)
    return min(dims) > 0 and at.sq >= MIN_QUERY_ROWS and max(prod(shape(x)) for x in bufs) < 2**31


def emit_flash(kb: KernelBuilder, at: _Attn) -> None:
    """`rlx_rt.parallel_call` of the flash worker over the plan's tasks (task t reads t
    from a constant table: the table's operand advances 8 bytes per task)."""
    kernels = kb.kernels
    assert kernels is not None
    p = plan(at)
    bufs = [at.q, at.k, at.v] + ([at.bias] if at.bias is not None else []) + [at.out]
    types: list[Attribute] = [MemRefType(i64, [1]), *(x.type for x in bufs)]
    key = ("attention-flash", p, at.scale, at.kind, at.window, at.softcap,
           tuple(str(t) for t in types))  # fmt: skip
    ukernel = microkernel(kernels, p.tile)

    def build(wb: KernelBuilder, args: list[SSAValue]) -> None:
        _Worker(wb, at, p, ukernel, args).emit()

    label = f"rlx.attention flash {p.tile.name} bq={p.bq} bk={p.bk}"
    worker = kernels.kernel(key, types, build, label, noalias=True)
    macs = at.b * at.h * at.sq * at.sk * (at.d + at.dv)
    launch_tasks(kb, worker, bufs, p.tasks, macs)


def _addr(kb: KernelBuilder, mem: SSAValue) -> SSAValue:
    return kb.hoist(memref.ExtractAlignedPointerAsIndexOp.get(mem))


class _Worker:
    """The body of one task (module docstring, steps 1-7)."""

    def __init__(
        self, kb: KernelBuilder, at: _Attn, p: FlashPlan, ukernel: str, args: list[SSAValue]
    ) -> None:
        self.kb, self.at, self.p, self.ukernel = kb, at, p, ukernel
        tid, self.q, self.k, self.v, *rest = args
        self.bias = rest[0] if at.bias is not None else None
        self.out = rest[-1]
        self.tid = tid

    def c(self, x: float) -> SSAValue:
        return self.kb.const(x, f32)

    def call(self, kc: int, a: SSAValue, b: SSAValue, c: SSAValue, ldc: int, acc: int) -> None:
        kb = self.kb
        args = [kb.idx(kc), a, b, c, kb.idx(ldc), kb.idx(acc)]
        kb.add(func.CallOp(self.ukernel, args, []))

    def emit(self) -> None:
        kb, at, p = self.kb, self.at, self.p
        tile, bq, bk = p.tile, p.bq, p.bk
        nr, mr = tile.nr, tile.mr
        t = kb.convert(kb.load(self.tid, [0]), kb.idx(0).type)
        qb = _rem(kb, t, p.nqb)
        bh = kb.idiv(t, p.nqb)
        self.hi = _rem(kb, bh, at.h)
        self.bi = kb.idiv(bh, at.h)
        self.hk = at.kv_head(kb, self.hi)
        self.i0 = kb.imul(qb, bq)
        rows = kb.imin(kb.idx(bq), kb.subi(kb.idx(at.sq), self.i0))
        klo, khi = at.key_range(kb, self.i0, kb.iadd(self.i0, kb.subi(rows, kb.idx(1))))
        klo, khi = kb.idx(klo), kb.idx(khi)
        nkb = kb.idiv(kb.iadd(kb.subi(khi, klo), bk - 1), bk)

        self.qpk = kb.scratch([p.qp, at.d, nr], f32)
        self.kpk = kb.scratch([bk // mr, at.d, mr], f32)
        self.vpk = kb.scratch([p.dvp // nr, bk, nr], f32)
        self.st = kb.scratch([p.qp, bk, nr], f32)
        self.ppk = kb.scratch([bq // mr, bk, mr], f32)
        self.o = kb.scratch([bq, p.dvp], f32)
        self.m, self.l, self.mx, self.ms, self.al = (kb.scratch([bq], f32) for _ in range(5))
        self._pack_q()
        kb.fill(self.m, float("-inf"))
        kb.fill(self.l, 0.0)
        kb.fill(self.o, 0.0)
        with kb.loop(nkb) as blk:
            j0 = kb.iadd(klo, kb.imul(blk, bk))
            nk = kb.imin(kb.idx(bk), kb.subi(khi, j0))
            self._pack_kv(j0, nk)
            a0, b0, s0 = _addr(kb, self.kpk), _addr(kb, self.qpk), _addr(kb, self.st)
            with kb.loop(bk // mr) as kp, kb.loop(p.qp) as qq:
                a = kb.iadd(a0, kb.imul(kp, at.d * mr * 4))
                b = kb.iadd(b0, kb.imul(qq, at.d * nr * 4))
                c = kb.iadd(s0, kb.iadd(kb.imul(qq, bk * nr * 4), kb.imul(kp, mr * nr * 4)))
                self.call(at.d, a, b, c, nr, 0)
            self._online_softmax(j0, nk)
            p0, v0, o0 = _addr(kb, self.ppk), _addr(kb, self.vpk), _addr(kb, self.o)
            with kb.loop(bq // mr) as qp, kb.loop(p.dvp // nr) as vp:
                a = kb.iadd(p0, kb.imul(qp, bk * mr * 4))
                b = kb.iadd(v0, kb.imul(vp, bk * nr * 4))
                c = kb.iadd(o0, kb.iadd(kb.imul(qp, mr * p.dvp * 4), kb.imul(vp, nr * 4)))
                self.call(bk, a, b, c, p.dvp, 1)
        self._store(rows)

    def _pack_q(self) -> None:
        """qpk[p, d, c] = q[b, h, i0 + p·nr + c, d] · scale (0 past Sq)."""
        kb, at, nr = self.kb, self.at, self.p.tile.nr
        scale = self.c(at.scale)
        with kb.loop(self.p.qp) as pp, kb.loop(at.d) as d, kb.loop(nr) as c:
            i = kb.iadd(self.i0, kb.iadd(kb.imul(pp, nr), c))
            ok = kb.cmpi("slt", i, kb.idx(at.sq))
            ic = kb.imin(i, kb.idx(at.sq - 1))
            x = kb.convert(kb.load(self.q, at.ix(self.bi, self.hi, ic, d)), f32)
            kb.store(kb.select(ok, kb.mulf(x, scale), self.c(0.0)), self.qpk, [pp, d, c])

    def _pack_kv(self, j0: SSAValue, nk: SSAValue) -> None:
        """kpk[j / mr, d, j % mr] = k[j0 + j, d]; vpk[c / nr, j, c % nr] = v[j0 + j, c];
        zeros for keys past the block (j >= nk) and for columns past Dv. The key loop is
        outermost so that no index is clamped or tested in the inner loops."""
        kb, at, mr, nr, bk = self.kb, self.at, self.p.tile.mr, self.p.tile.nr, self.p.bk
        zero = self.c(0.0)
        full, tail = divmod(at.dv, nr)

        def copy(j: SSAValue, value: Callable[..., SSAValue]) -> None:
            pj, rj = kb.idiv(j, mr), _rem(kb, j, mr)
            with kb.loop(at.d) as d:
                kb.store(value(j, d), self.kpk, [pj, d, rj])
            if full:
                with kb.loop(full) as pp, kb.loop(nr) as c:
                    kb.store(value(j, kb.iadd(kb.imul(pp, nr), c), True), self.vpk, [pp, j, c])
            if tail:
                with kb.loop(tail) as c:
                    kb.store(value(j, kb.iadd(c, full * nr), True), self.vpk, [full, j, c])
                with kb.loop(nr, tail) as c:
                    kb.store(zero, self.vpk, [full, j, c])

        def load(j: SSAValue, col: SSAValue, is_v: bool = False) -> SSAValue:
            src = self.v if is_v else self.k
            return kb.convert(kb.load(src, at.ix(self.bi, self.hk, kb.iadd(j0, j), col)), f32)

        with kb.loop(nk) as j:
            copy(j, load)
        with kb.loop(bk, nk) as j:
            copy(j, lambda _j, _c, _v=False: zero)

    def _online_softmax(self, j0: SSAValue, nk: SSAValue) -> None:
        """Steps 4 and 5 on the score tile of keys [j0, j0 + nk)."""
        kb, at, p = self.kb, self.at, self.p
        nr, bq = p.tile.nr, p.bq
        ninf = self.c(float("-inf"))
        with kb.loop(bq) as r:
            kb.store(kb.load(self.m, [r]), self.mx, [r])
        with kb.loop(p.qp) as qq, kb.loop(p.bk) as j, kb.loop(nr) as c:
            r = kb.iadd(kb.imul(qq, nr), c)
            s = kb.load(self.st, [qq, j, c])
            jg = kb.iadd(j0, j)
            i = kb.iadd(self.i0, r)
            s = self._score(s, i, jg)
            live = kb.cmpi("slt", j, nk)
            if at.kind in ("causal", "sliding_window"):
                # causal: jg <= i + offset; window: jg >= i + offset - window
                rel = kb.subi(jg, kb.iadd(i, at.offset))
                live = kb.v(_and(live, kb.cmpi("sle", rel, kb.idx(0))))
                if at.kind == "sliding_window":
                    assert at.window is not None
                    live = kb.v(_and(live, kb.cmpi("sge", rel, kb.idx(-at.window))))
            s = kb.select(live, s, ninf)
            kb.store(s, self.st, [qq, j, c])
            mo = kb.load(self.mx, [r])
            kb.store(kb.select(kb.cmpf("ogt", s, mo), s, mo), self.mx, [r])
        with kb.loop(bq) as r:
            mo, mn = kb.load(self.m, [r]), kb.load(self.mx, [r])
            finite = kb.cmpf("olt", kb.unary(mathd.AbsFOp, mn), self.c(float("inf")))
            safe = kb.select(finite, mn, self.c(0.0))
            alpha = exp_nonpositive(kb, kb.subf(mo, safe))
            alpha = kb.select(kb.cmpf("oeq", mo, ninf), self.c(0.0), alpha)
            kb.store(mn, self.m, [r])
            kb.store(safe, self.ms, [r])
            kb.store(alpha, self.al, [r])
            kb.store(kb.mulf(kb.load(self.l, [r]), alpha), self.l, [r])
        mr = p.tile.mr
        runs = nr // mr
        with kb.loop(p.qp) as qq, kb.loop(p.bk) as j, kb.loop(nr) as c:
            r = kb.iadd(kb.imul(qq, nr), c)
            s = kb.load(self.st, [qq, j, c])
            # s <= m' (s - m' <= 0); a -inf score (masked, dead row) gives exactly 0
            e = exp_nonpositive(kb, kb.subf(s, kb.load(self.ms, [r])))
            kb.store(e, self.st, [qq, j, c])
            kb.store(kb.addf(kb.load(self.l, [r]), e), self.l, [r])
        with kb.loop(p.qp) as qq, kb.loop(runs) as cc, kb.loop(p.bk) as j, kb.loop(mr) as c:
            col = kb.iadd(kb.imul(cc, mr), c)
            kb.store(
                kb.load(self.st, [qq, j, col]), self.ppk, [kb.iadd(kb.imul(qq, runs), cc), j, c]
            )
        with kb.loop(bq) as r:
            alpha = kb.load(self.al, [r])
            with kb.loop(p.dvp) as dv:
                kb.store(kb.mulf(kb.load(self.o, [r, dv]), alpha), self.o, [r, dv])

    def _score(self, s: SSAValue, i: SSAValue, jg: SSAValue) -> SSAValue:
        """Bias (indices clamped: padded rows / keys are masked anyway) and softcap."""
        kb, at = self.kb, self.at
        if self.bias is not None:
            ic = kb.imin(i, kb.idx(at.sq - 1))
            jc = kb.imin(jg, kb.idx(at.sk - 1))
            full = (at.b, at.h, at.sq, at.sk)
            idx = _bidx(shape(self.bias), full, [self.bi, self.hi, ic, jc], kb)
            s = kb.addf(s, kb.convert(kb.load(self.bias, idx), f32))
        if at.softcap is not None:
            cap = self.c(at.softcap)
            s = kb.mulf(cap, kb.unary(mathd.TanhOp, kb.divf(s, cap)))
        return s

    def _store(self, rows: SSAValue) -> None:
        """Step 7."""
        kb, at = self.kb, self.at
        with kb.loop(rows) as r:
            lv = kb.load(self.l, [r])
            pos = kb.cmpf("ogt", lv, self.c(0.0))
            inv = kb.divf(self.c(1.0), kb.select(pos, lv, self.c(1.0)))
            i = kb.iadd(self.i0, r)
            with kb.loop(at.dv) as dv:
                o = kb.select(pos, kb.mulf(kb.load(self.o, [r, dv]), inv), self.c(0.0))
                kb.store(kb.convert(o, elem(self.out)), self.out, at.ix(self.bi, self.hi, i, dv))


def _bidx(
    bshape: Sequence[int], full: Sequence[int], idx: Sequence[SSAValue], kb: KernelBuilder
) -> list[SSAValue]:
    """Indices into a broadcast operand of shape `bshape` for a point of `full`."""
    off = len(full) - len(bshape)
    return [
        kb.idx(0) if d == 1 and full[off + i] != 1 else idx[off + i] for i, d in enumerate(bshape)
    ]


def _rem(kb: KernelBuilder, a: SSAValue, n: int) -> SSAValue:
    from xdsl.dialects import arith

    return kb.v(arith.RemUIOp(a, kb.idx(n)))


def _and(x: SSAValue, y: SSAValue) -> object:
    from xdsl.dialects import arith

    return arith.AndIOp(x, y)
