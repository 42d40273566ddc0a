"""Winograd F(2x2, 3x3) for blocked (NCHWc) 3x3 stride-1 convolutions: 16 multiplies per
2x2 output tile and channel pair instead of 36 (Lavin & Gray 2015; oneDNN's and NNPACK's
F(2x2, 3x3) transforms).

    U = G g Gᵀ   (per output / input channel: 4x4 from the 3x3 weights)
    V = Bᵀ d B   (per input channel and 4x4 input tile d, tiles 2 apart)
    Y = Aᵀ M A,  M[p] = Σ_c U[p, f, c] V[p, c]   (16 GEMMs over the tiles, p < 16)

with Bᵀ = [[1,0,-1,0], [0,1,1,0], [0,-1,1,0], [0,1,0,-1]], G = [[1,0,0], [½,½,½], [½,-½,½],
[0,0,1]], Aᵀ = [[1,1,1,0], [0,1,-1,-1]]: cross-correlation, as `rlx.conv2d`. Every step
is vectorized over the B channels of a block (B lanes), so the transforms are vector adds.

1. With `winograd = true` (param-invariant weights: `blocked-layout` computes U once in
   `@prepare`, `transforms/blocked_winograd.py`) the conv reads `w` = U. Else a first
   parallel call transforms the blocked weights `[F/B, C/B, 3, 3, B, B]` into `U [16,
   F/B, C/B, B, B]` (a buffer of the call, on every call: limited to `MAX_UF` elements,
   where it costs a few % of the convolution).
2. Tasks (image, group of output-block pairs, block of tile rows), split as the direct
   kernel's (`conv_nchwc_plan.balance`). A task copies the input rows of its tile rows
   into a zero-padded slab, then per tile row: the input transform of every tile and
   input block into `V [16, C/B, TWP, B]` (L2), per pair of output blocks the 16 GEMMs
   `M[p] = V[p] · U[p]` on the blocked conv's register-tile microkernel (a 1x1 conv over
   the tiles: `gemm/conv_blocked.py`), the output transform of `M` and the epilogue
   (`+ bias`, `+ residual`, activation: `VectorEpilogue`) straight into the output.

Taken (`winograd_plan`, by `rlx.conv_plan.winograd_tile`: the plan `blocked-layout` asks
before it prepares U) for f32 x / weights / output / bias / residual, groups 1, 3x3,
stride 1, dilation 1, x blocked by B, no `reduce`, an epilogue the vector code states (not
gelu-erf), `F·C <= MAX_UF / 16` and maps of at least `MIN_HW` output pixels (prepared U:
no size limit, `MIN_HW_PREPARED` pixels), and a tile row's `V`, `M` and slab within
`V_ELEMENTS`, `M_ELEMENTS` and `SLAB_ELEMENTS`; the direct kernel takes the rest.
`RLX_CONV_WINOGRAD=0` turns it off (part of the compile-cache key). The per-call weight
transform (`_g`, ½(s ± g)) and `blocked-layout`'s U in `@prepare` (a matmul by G ⊗ G)
round differently, within the conv tolerance.
Numerics: the transforms' coefficients are 0, ±1 and ±½ (exact), the sums are reordered:
errors of the order of the direct kernel's (docs/conv.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from xdsl.dialects import arith, llvm
from xdsl.dialects.builtin import MemRefType, f32, i64
from xdsl.ir import Attribute, SSAValue

from rlx.conv_plan import (
    M_ELEMENTS,
    MAX_UF,
    MIN_HW,
    MIN_HW_PREPARED,
    SLAB_ELEMENTS,
    V_ELEMENTS,
    winograd_tile,
)
from rlx.env import WINOGRAD_ENV as ENV
from rlx.env import winograd_enabled as enabled
from rlx.lowering.gemm.conv import _addr, _flat, _if
from rlx.lowering.gemm.conv_blocked import (
    VectorEpilogue,
    at,
    bounds,
    broadcast,
    conv_blocked_microkernel,
    ptr,
    vector_epilogue,
    vload,
    vstore,
)
from rlx.lowering.gemm.driver import launch_tasks
from rlx.lowering.gemm.ir import TableGeo, attr_text
from rlx.lowering.rlx_to_linalg.conv_nchwc import _fill_slab, call_full_or_tail
from rlx.lowering.rlx_to_linalg.conv_nchwc_plan import TASKS, BlockedGeom, balance
from rlx.lowering.rlx_to_linalg.kernel_builder import KernelBuilder

if TYPE_CHECKING:
    from rlx.lowering.rlx_to_linalg.kernels import Kernels

__all__ = ["ENV", "MAX_UF", "MIN_HW", "MIN_HW_PREPARED", "emit_conv_winograd", "enabled",
           "winograd_plan"]  # fmt: skip

GEOMETRY = ("n", "cb", "h", "w", "fb", "oh", "ow", "pt", "pl", "tr", "tw", "twp", "trows",
            "trb", "pairs", "fgroups", "per", "nbw", "wp")  # fmt: skip


def winograd_plan(g: BlockedGeom, f32s: bool, epi: VectorEpilogue | None, reduce: str = "none",
                  prepared: bool = False) -> tuple[int, int, dict[str, int]] | None:  # fmt: skip
    """(u, nblk, geometry table) when the conv takes the Winograd kernel, else None
    (`prepared`: U comes transformed, `winograd = true`: no `MAX_UF` limit, maps from
    `MIN_HW_PREPARED` pixels)."""
    bi = 1 if g.depthwise else g.xb
    tile = winograd_tile(x=(g.n, g.cb, g.h, g.w, g.xb), w=(g.fb, g.cb, g.kh, g.kw, bi, g.b),
                         out=(g.n, g.fb, g.oh, g.ow, g.b), kernel=(g.kh, g.kw),
                         stride=(g.sh, g.sw), dilation=(g.dh, g.dw), groups=g.groups,
                         f32=f32s, act=None if epi is None else epi.act, reduce=reduce,
                         prepared=prepared)  # fmt: skip
    if tile is None:
        return None
    u, nblk, twp = tile
    tr, tw = -(-g.oh // 2), -(-g.ow // 2)
    nbw = twp // u
    wp = 2 * twp + 2
    pairs = -(-g.fb // nblk)
    per_image = -(-TASKS // g.n)
    if 9 * g.f * g.c >= g.c * g.h * g.w:  # late layers: split the output channels
        fgroups = min(pairs, per_image)
        trb = min(tr, -(-per_image // fgroups))
    else:
        trb = min(tr, per_image)
        fgroups = min(pairs, -(-per_image // trb))
    trows = -(-tr // trb)

    def slab(rows: int) -> int:
        return g.cb * (2 * rows + 2) * wp * g.b

    while trows > 1 and slab(trows) > SLAB_ELEMENTS:  # slab(1) fits (`winograd_tile`)
        trows = -(-trows // 2)
    trows, fgroups = balance(g.n, tr, pairs, trows, fgroups, rows_fixed=trows >= tr)
    per = -(-pairs // fgroups)
    vals = dict(n=g.n, cb=g.cb, h=g.h, w=g.w, fb=g.fb, oh=g.oh, ow=g.ow, pt=g.pt, pl=g.pl,
                tr=tr, tw=tw, twp=twp, trows=trows, trb=-(-tr // trows), pairs=pairs,
                fgroups=-(-pairs // per), per=per, nbw=nbw, wp=wp)  # fmt: skip
    assert tuple(vals) == GEOMETRY
    return u, nblk, vals


def emit_conv_winograd(kb: KernelBuilder, g: BlockedGeom, x: SSAValue, w: SSAValue,
                       bias: SSAValue | None, out: SSAValue, extras: Sequence[SSAValue],
                       epi: VectorEpilogue, plan: tuple[int, int, dict[str, int]],
                       prepared: bool = False) -> bool:  # fmt: skip
    """Emit the two parallel calls (module docstring; `prepared`: `w` is U already, one
    call); False without a kernel registry."""
    kernels = kb.kernels
    if kernels is None:
        return False
    u, nblk, vals = plan
    b = g.b
    uw = w if prepared else _transform_weights(kb, kernels, g, w)
    args = [kb.table(list(vals.values()), i64), _flat(kb, x), _flat(kb, uw),
            *(_flat(kb, v) for v in (*([bias] if bias is not None else []), out, *extras))]  # fmt: skip
    types: list[Attribute] = [MemRefType(i64, [1]), *(v.type for v in args)]
    tail = g.fb % nblk != 0
    uks = (conv_blocked_microkernel(kernels, u, nblk, b, 1, 1, 1, None, b),
           conv_blocked_microkernel(kernels, u, 1, b, 1, 1, 1, None, b) if tail else None)  # fmt: skip

    def build(wb: KernelBuilder, a: list[SSAValue]) -> None:
        rest = a[4:]
        wbias = rest.pop(0) if bias is not None else None
        wout = rest.pop(0)
        d = TableGeo(wb, GEOMETRY, a[1])
        _worker(wb, d, b, u, nblk, uks, epi, a[0], a[2], a[3], wbias, wout, rest)

    key = ("conv-winograd", u, nblk, tail, b, bias is not None, len(extras), epi,
           tuple(attr_text(t) for t in types))  # fmt: skip
    worker = kernels.kernel(key, types, build, f"conv winograd {u}x{nblk}x{b}", noalias=True)
    tasks = g.n * vals["trb"] * vals["fgroups"]
    launch_tasks(kb, worker, args, tasks, g.macs)
    return True


def _transform_weights(kb: KernelBuilder, kernels: Kernels, g: BlockedGeom,
                       w: SSAValue) -> SSAValue:  # fmt: skip
    """U of the blocked weights `w`, by a parallel call over the output blocks."""
    b = g.b
    uw = kb.scratch([16 * g.f * g.c], f32)
    wargs = [kb.table([g.fb, g.cb], i64), _flat(kb, w), _flat(kb, uw)]
    wtypes: list[Attribute] = [MemRefType(i64, [1]), *(v.type for v in wargs)]
    wworker = kernels.kernel(("conv-winograd-w", b, tuple(attr_text(t) for t in wtypes)), wtypes,
                             lambda wb, a: _weights(wb, b, a), f"conv winograd weights x{b}",
                             noalias=True)  # fmt: skip
    # serial up to 128 -> 128 (~40 us at one thread): a hand-off to a sleeping or
    # preempted worker costs more than it saves
    launch_tasks(kb, wworker, wargs, g.fb, 8 * g.f * g.c)
    return uw


def _fadd(kb: KernelBuilder, a: SSAValue, b: SSAValue) -> SSAValue:
    return kb.v(llvm.FAddOp(a, b))


def _fsub(kb: KernelBuilder, a: SSAValue, b: SSAValue) -> SSAValue:
    return kb.v(llvm.FSubOp(a, b))


def _bt(kb: KernelBuilder, d: Sequence[SSAValue]) -> list[SSAValue]:
    """Bᵀ applied to 4 vectors: (d0 - d2, d1 + d2, d2 - d1, d1 - d3)."""
    return [_fsub(kb, d[0], d[2]), _fadd(kb, d[1], d[2]), _fsub(kb, d[2], d[1]),
            _fsub(kb, d[1], d[3])]  # fmt: skip


def _at(kb: KernelBuilder, m: Sequence[SSAValue]) -> list[SSAValue]:
    """Aᵀ applied to 4 vectors: (m0 + m1 + m2, m1 - m2 - m3)."""
    return [_fadd(kb, _fadd(kb, m[0], m[1]), m[2]), _fsub(kb, _fsub(kb, m[1], m[2]), m[3])]


def _g(kb: KernelBuilder, g: Sequence[SSAValue], half: SSAValue) -> list[SSAValue]:
    """G applied to 3 vectors: (g0, ½(g0 + g1 + g2), ½(g0 - g1 + g2), g2)."""
    s = _fadd(kb, g[0], g[2])
    return [g[0], kb.v(llvm.FMulOp(_fadd(kb, s, g[1]), half)),
            kb.v(llvm.FMulOp(_fsub(kb, s, g[1]), half)), g[2]]  # fmt: skip


def _task_id(kb: KernelBuilder, tid: SSAValue) -> SSAValue:
    return kb.convert(kb.load(tid, [0]), kb.idx(0).type)


def _weights(kb: KernelBuilder, b: int, a: list[SSAValue]) -> None:
    """Task fb: U[p, fb, cb, i, :] = (G g Gᵀ)[p] of g = w[fb, cb, :, :, i, :]."""
    fb = _task_id(kb, a[0])
    nfb = kb.convert(kb.load(a[1], [0]), kb.idx(0).type)
    ncb = kb.convert(kb.load(a[1], [1]), kb.idx(0).type)
    pw, pu = ptr(kb, _addr(kb, a[2])), ptr(kb, _addr(kb, a[3]))
    half = broadcast(kb, kb.const(0.5, f32), b)
    with kb.loop(ncb) as cb, kb.loop(b) as i:
        src = kb.imul(kb.addi(kb.imul(kb.addi(kb.muli(fb, ncb), cb), 9 * b), i), b)
        g = [vload(kb, at(kb, pw, kb.iadd(src, k * b * b)), b) for k in range(9)]
        rows = [_g(kb, [g[3 * r + c] for r in range(3)], half) for c in range(3)]  # [c][a]
        lane = kb.imul(kb.addi(kb.imul(kb.addi(kb.muli(fb, ncb), cb), b), i), b)
        stride = kb.imul(kb.muli(nfb, ncb), b * b)  # elements between positions p
        for r in range(4):
            for c, v in enumerate(_g(kb, [rows[k][r] for k in range(3)], half)):
                off = kb.addi(lane, kb.muli(stride, kb.idx(4 * r + c)))
                vstore(kb, v, at(kb, pu, off))


def _worker(kb: KernelBuilder, d: TableGeo, b: int, u: int, nblk: int,
            uks: tuple[str, str | None], epi: VectorEpilogue, tid: SSAValue, x: SSAValue,
            uw: SSAValue, bias: SSAValue | None, out: SSAValue,
            extras: list[SSAValue]) -> None:  # fmt: skip
    """One task (image, output-block group, block of tile rows)."""
    one, zero_i = kb.idx(1), kb.idx(0)
    t = _task_id(kb, tid)
    trk = kb.v(arith.RemUIOp(t, d.trb))
    t2 = kb.v(arith.DivUIOp(t, d.trb))
    fgi = kb.v(arith.RemUIOp(t2, d.fgroups))
    n = kb.v(arith.DivUIOp(t2, d.fgroups))
    tr0 = kb.muli(trk, d.trows)
    tr1 = kb.imin(kb.addi(tr0, d.trows), d.tr)
    wrow = kb.imul(d.wp, b)
    rr = kb.addi(kb.imul(kb.subi(tr1, tr0), 2), kb.idx(2))
    ih0 = kb.subi(kb.imul(tr0, 2), d.pt)
    slab = kb.scratch([SLAB_ELEMENTS], f32)
    r_lo = kb.imin(kb.imax(kb.subi(zero_i, ih0), zero_i), rr)
    r_hi = kb.imax(kb.imin(kb.subi(d.h, ih0), rr), r_lo)
    zero = kb.const(0.0, f32)
    with kb.loop(d.cb) as c:  # rows above / below the input: zeros (all 4 rows are read)
        for lo, hi in ((zero_i, r_lo), (r_hi, rr)):
            with kb.loop(hi, lo) as r, kb.loop(wrow) as e:
                kb.store(zero, slab, [kb.addi(kb.muli(kb.addi(kb.muli(c, rr), r), wrow), e)])
    _fill_slab(kb, x, slab, zero_i, n, d.cb, d.h, ih0, rr, r_lo, r_hi, wrow,
               kb.imul(d.pl, b), kb.imul(d.w, b))  # fmt: skip
    ps = ptr(kb, _addr(kb, slab))
    vbuf, mbuf = kb.scratch([V_ELEMENTS], f32), kb.scratch([M_ELEMENTS], f32)
    v_addr, m_addr = _addr(kb, vbuf), _addr(kb, mbuf)
    pv, pm = ptr(kb, v_addr), ptr(kb, m_addr)
    pout = ptr(kb, _addr(kb, out))
    pbias = ptr(kb, _addr(kb, bias)) if bias is not None else None
    pres = ptr(kb, _addr(kb, extras[0])) if extras else None
    v_pos = kb.imul(kb.muli(d.cb, d.twp), b)  # V elements between positions
    m_pos = kb.imul(d.twp, nblk * b)  # M elements between positions
    p0 = kb.muli(fgi, d.per)
    p1 = kb.imin(kb.addi(p0, d.per), d.pairs)
    lo_hi = bounds(kb, epi, b) if epi.act in ("relu", "clip") else (None, None)
    with kb.loop(tr1, tr0) as tr:
        srow = kb.imul(kb.subi(tr, tr0), 2)
        with kb.loop(d.cb) as cb, kb.loop(d.twp) as j:  # input transform
            base = kb.imul(kb.addi(kb.muli(kb.addi(kb.muli(cb, rr), srow), d.wp), kb.imul(j, 2)), b)
            rows = [[vload(kb, at(kb, ps, kb.addi(base, kb.iadd(kb.muli(wrow, kb.idx(r)), c * b))), b)
                     for c in range(4)] for r in range(4)]  # fmt: skip
            cols = [_bt(kb, [rows[r][c] for r in range(4)]) for c in range(4)]  # [c][i]
            dst = kb.imul(kb.addi(kb.muli(cb, d.twp), j), b)
            for i in range(4):
                for k, v in enumerate(_bt(kb, [cols[c][i] for c in range(4)])):
                    vstore(kb, v, at(kb, pv, kb.addi(dst, kb.muli(v_pos, kb.idx(4 * i + k)))))
        with kb.loop(p1, p0) as pr:
            fb0 = kb.imul(pr, nblk)
            nb_here = kb.imin(kb.idx(nblk), kb.subi(d.fb, fb0))
            with kb.loop(16) as p, kb.loop(d.nbw) as jb:  # M[p] = V[p] · U[p]
                x_el = kb.addi(kb.muli(p, v_pos), kb.imul(jb, u * b))
                w_el = kb.imul(kb.muli(kb.addi(kb.muli(p, d.fb), fb0), d.cb), b * b)
                m_el = kb.addi(kb.muli(p, m_pos), kb.imul(jb, nblk * u * b))
                call_args = [kb.iadd(v_addr, kb.imul(x_el, 4)), kb.imul(d.twp, b), zero_i, d.cb,
                             one, kb.iadd(_addr(kb, uw), kb.imul(w_el, 4)), kb.idx(b * b),
                             kb.imul(d.cb, b * b), kb.iadd(m_addr, kb.imul(m_el, 4)),
                             kb.idx(u), zero_i, zero_i, zero_i]  # fmt: skip
                call_full_or_tail(kb, uks, lambda: kb.cmpi("eq", nb_here, kb.idx(nblk)), call_args)
            with kb.loop(nb_here) as bj, kb.loop(d.tw) as j:  # output transform, epilogue
                jb = kb.idiv(j, u)
                q = kb.subi(j, kb.imul(jb, u))
                m_el = kb.imul(kb.addi(kb.imul(kb.addi(kb.imul(jb, nblk), bj), u), q), b)
                m = [vload(kb, at(kb, pm, kb.addi(m_el, kb.muli(m_pos, kb.idx(k)))), b)
                     for k in range(16)]  # fmt: skip
                cols = [_at(kb, [m[4 * r + c] for r in range(4)]) for c in range(4)]  # [c][i]
                y = [_at(kb, [cols[c][i] for c in range(4)]) for i in range(2)]  # [i][k]
                f = kb.addi(fb0, bj)
                bv = vload(kb, at(kb, pbias, kb.imul(f, b)), b) if pbias is not None else None
                o_row = kb.imul(tr, 2)
                o_col = kb.imul(j, 2)
                plane = kb.muli(kb.addi(kb.muli(n, d.fb), f), d.oh)
                for i in range(2):
                    for k in range(2):

                        def store(i: int = i, k: int = k) -> None:
                            row, col = kb.iadd(o_row, i), kb.iadd(o_col, k)
                            o_el = kb.imul(kb.addi(kb.muli(kb.addi(plane, row), d.ow), col), b)
                            res = at(kb, pres, o_el) if pres is not None else None
                            v = vector_epilogue(kb, y[i][k], bv, res, epi, *lo_hi)
                            vstore(kb, v, at(kb, pout, o_el))

                        conds = ([kb.cmpi("slt", kb.iadd(o_row, 1), d.oh)] if i else []) + (
                            [kb.cmpi("slt", kb.iadd(o_col, 1), d.ow)] if k else [])  # fmt: skip
                        if not conds:
                            store()
                        else:
                            cond = conds[0] if len(conds) == 1 else kb.v(arith.AndIOp(*conds))
                            _if(kb, cond, store)
