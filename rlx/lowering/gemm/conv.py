"""conv2d as an implicit GEMM on a generated microkernel.

Per image `n` and group `g` the convolution is `C[f, q] = Σ_k W[f, k] · col[k, q]` with
`f < F/groups` filters, `k = (c, ki, kj) < Cg·KH·KW` and `q = (i, j) < OH·OW` output
pixels, so C is the group's output planes (row stride OH·OW: NCHW as is).

1. A is W itself, read in place by the conv microkernel (`microkernel.conv_microkernel`: row-strided
   A, `lda = K`): f32 weights are never packed or copied; f16/bf16 weights are widened
   into an f32 copy once per call. The last panel of filters (Fg mod mr rows) gets a
   microkernel of that height, so no row is wasted and nothing is read past W.
2. Tasks of `rlx_rt.parallel_call` are (image, group, filter block, pixel block). A task
   walks k-slices of `kc`; per slice it gathers its pixel block of the implicit im2col
   matrix straight from x into B panels `[nb, kc, nr]` (the loader: one output row
   segment at a time, zero where the tap reads padding, f16/bf16 widened) and calls the
   microkernel per `mr x nr` tile, B panel in L1. Partial column tiles go through a tile
   buffer.
3. After the last k-slice each tile gets the epilogue while it is in L1: `+ bias[f]`,
   then `post` (activation, residual), narrowed into the output.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from math import prod
from typing import TYPE_CHECKING

from xdsl.dialects import arith, func, memref, scf
from xdsl.dialects.builtin import (
    BFloat16Type,
    Float16Type,
    Float32Type,
    MemRefType,
    NoneAttr,
    f32,
    i64,
)
from xdsl.ir import Attribute, Block, Region, SSAValue

from rlx.lowering.gemm.driver import EpilogueFn, launch_tasks
from rlx.lowering.gemm.ir import TableGeo, attr_text, elem, shape
from rlx.lowering.gemm.microkernel import conv_microkernel
from rlx.lowering.gemm.packing import panels
from rlx.lowering.gemm.target import MIN_MNK, Tile, host_tile

if TYPE_CHECKING:  # the rlx_to_linalg package imports this module (no cycle at run time)
    from rlx.lowering.rlx_to_linalg.conv_common import ConvGeom
    from rlx.lowering.rlx_to_linalg.kernel_builder import KernelBuilder


_FLOATS = (Float32Type, Float16Type, BFloat16Type)


def eligible(g: ConvGeom, *types: Attribute) -> bool:
    """f32/f16/bf16 identity-layout buffers, >= 4 filters and taps per group, at least
    `MIN_MNK` multiply-adds per (image, group) GEMM, 32-bit sizes."""
    for t in types:
        if not isinstance(t, MemRefType) or not isinstance(t.layout, NoneAttr):
            return False
        if not isinstance(t.element_type, _FLOATS):
            return False
    k, p = g.cg * g.kh * g.kw, g.oh * g.ow
    sizes = (g.n * g.c * g.h * g.w, g.f * k, g.n * g.f * p)
    return g.fg >= 4 and k >= 4 and g.fg * k * p >= MIN_MNK and max(sizes) < 2**31


def conv_tile(g: ConvGeom) -> Tile:
    """The host tile, with `mr` cut to the filters per group when there are fewer, or to
    the largest of mr, 2/3 mr, mr/2 rows that wastes least of the last panel (64 filters
    on a 12-row tile compute 72 rows: 8 rows waste nothing)."""
    tile = host_tile()
    if g.fg < tile.mr:
        return replace(tile, mr=g.fg, mc=g.fg)
    options = [m for m in (tile.mr, tile.mr * 2 // 3, tile.mr // 2) if m >= 4]
    mr = min(options, key=lambda m: (panels(g.fg, m) * m - g.fg) / g.fg > 0.02)
    if mr != tile.mr:
        tile = replace(tile, mr=mr, mc=max(mr, tile.mc // mr * mr))
    return tile


def _balanced(total: int, most: int) -> int:
    return panels(total, panels(total, most))


def _rem(kb: KernelBuilder, a: SSAValue, b: int) -> SSAValue:
    return kb.v(arith.RemUIOp(a, kb.idx(b)))


def _addr(kb: KernelBuilder, mem: SSAValue) -> SSAValue:
    return kb.hoist(memref.ExtractAlignedPointerAsIndexOp.get(mem))


def _bytes(kb: KernelBuilder, base: SSAValue, elems: SSAValue) -> SSAValue:
    return kb.iadd(base, kb.imul(elems, 4))


def _if(kb: KernelBuilder, cond: SSAValue, then: Callable[[], object],
        other: Callable[[], object] | None = None) -> None:  # fmt: skip
    blocks = [Block(), Block()]
    for blk, fn in zip(blocks, (then, other), strict=True):
        with kb.at(blk):
            if fn is not None:
                fn()
            kb.add(scf.YieldOp())
    kb.add(scf.IfOp(cond, [], Region(blocks[0]), Region(blocks[1]) if other else None))


GEOMETRY = (
    "n", "c", "h", "w", "f", "cg", "kh", "kw", "oh", "ow", "sh", "pt", "pl", "dh", "dw",
    "groups", "fg", "k", "p", "pm", "pn", "mb", "nb", "kc", "nk", "blocks_m", "blocks_n",
    "taps",
)  # fmt: skip
"""The run-time geometry table of the shape-generic kernels (`TableGeo` reads it)."""

FLAT = 2**31 - 1
"""Extent of the flat views the shape-generic kernels take (every buffer is smaller:
`eligible` bounds the sizes), so one kernel serves every shape."""


def _flat(kb: KernelBuilder, mem: SSAValue) -> SSAValue:
    """`mem` (contiguous) as a flat `memref<FLAT x T>` view (free: the same pointer)."""
    t = MemRefType(elem(mem), [FLAT])
    return kb.hoist(memref.ReinterpretCastOp.from_dynamic(mem, [0], [FLAT], [1], t))


def widened_flat(kb: KernelBuilder, v: SSAValue) -> SSAValue:
    """A flat f32 view of `v`: `_flat(v)` itself when f32, else (f16/bf16) of an f32 copy
    made once per call."""
    flat = _flat(kb, v)
    if isinstance(elem(v), Float32Type):
        return flat
    size = prod(shape(v))
    buf = kb.scratch([size], f32)
    with kb.loop(size) as i:
        kb.store(kb.convert(kb.load(flat, [i]), f32), buf, [i])
    return _flat(kb, buf)


def _layout(g: ConvGeom, tile: Tile) -> dict[str, int]:
    k, p = g.cg * g.kh * g.kw, g.oh * g.ow
    pm, pn = panels(g.fg, tile.mr), panels(p, tile.nr)
    mb = _balanced(pm, max(1, tile.mc // tile.mr))
    nb = _balanced(pn, max(1, tile.nc // tile.nr))
    nk = panels(k, tile.kc)
    vals = dict(n=g.n, c=g.c, h=g.h, w=g.w, f=g.f, cg=g.cg, kh=g.kh, kw=g.kw, oh=g.oh,
                ow=g.ow, sh=g.sh, pt=g.pt, pl=g.pl, dh=g.dh, dw=g.dw, groups=g.groups,
                fg=g.fg, k=k, p=p, pm=pm, pn=pn, mb=mb, nb=nb, kc=panels(k, nk), nk=nk,
                blocks_m=panels(pm, mb), blocks_n=panels(pn, nb), taps=g.kh * g.kw)  # fmt: skip
    assert tuple(vals) == GEOMETRY
    return vals


def emit_conv_gemm(
    kb: KernelBuilder,
    g: ConvGeom,
    x: SSAValue,
    w: SSAValue,
    bias: SSAValue | None,
    out: SSAValue,
    post: EpilogueFn | None = None,
    extras: Sequence[SSAValue] = (),
    key: object = "",
) -> bool:
    """Emit the implicit GEMM (module docstring); False (nothing emitted) when the conv
    does not qualify (`eligible`) or the kernel has no module registry. The GEMM worker
    is shape-generic (the geometry is a run-time table): one per element types, tile,
    tail height, column stride, padding and epilogue serves every conv shape. `post`
    gets flat output indices and flat views of `extras`."""
    kernels = kb.kernels
    types = [v.type for v in (x, w, out, *([bias] if bias is not None else []))]
    if kernels is None or not eligible(g, *types):
        return False
    tile = conv_tile(g)
    lay = _layout(g, tile)
    geo = kb.table(list(lay.values()), i64)
    tasks = g.n * g.groups * lay["blocks_m"] * lay["blocks_n"]
    wf = _flat(kb, w)
    if not isinstance(elem(w), Float32Type):  # f16/bf16 weights: widened once per call
        w32 = kb.scratch([g.f * lay["k"]], f32)
        with kb.loop(g.f * lay["k"]) as i:
            kb.store(kb.convert(kb.load(wf, [i]), f32), w32, [i])
        wf = _flat(kb, w32)
    acc = out if isinstance(elem(out), Float32Type) else kb.scratch(out.type.get_shape(), f32)  # type: ignore[attr-defined]
    bufs = [x, acc, *([out] if acc is not out else []), *([bias] if bias else []), *extras]
    args = [geo, _flat(kb, x), wf, *(_flat(kb, v) for v in bufs[1:])]
    wtypes: list[Attribute] = [MemRefType(i64, [1]), *(v.type for v in args)]
    tail = g.fg % tile.mr
    static = (tile, tail, g.sw, g.padded, bias is not None, acc is not out, len(extras), key)
    wkey = ("conv-gemm", static, tuple(attr_text(t) for t in wtypes))
    ukernels = (
        conv_microkernel(kernels, tile),
        conv_microkernel(kernels, replace(tile, mr=tail)) if tail else None,
    )

    def build(wb: KernelBuilder, wargs: list[SSAValue]) -> None:
        wgeo, wx, ww, wacc = wargs[1:5]
        rest = wargs[5:]
        wout = rest.pop(0) if acc is not out else wacc
        wbias = rest.pop(0) if bias is not None else None
        d = TableGeo(wb, GEOMETRY, wgeo)
        _worker(wb, d, tile, g.sw, g.padded, ukernels, wargs[0], wx, ww, wacc, wout, wbias, post,
                rest)  # fmt: skip

    worker = kernels.kernel(wkey, wtypes, build, f"conv gemm {tile.name}", noalias=True)
    launch_tasks(kb, worker, args, tasks, g.macs)
    return True


def _worker(kb: KernelBuilder, g: TableGeo, tile: Tile, sw: int, padded: bool,
            ukernels: tuple[str, str | None], tid: SSAValue, x: SSAValue, w: SSAValue,
            acc: SSAValue, out: SSAValue,
            bias: SSAValue | None, post: EpilogueFn | None, extras: list[SSAValue]) -> None:  # fmt: skip
    """One task: (image, group, filter block, pixel block); all sizes from `g`."""
    t = kb.convert(kb.load(tid, [0]), kb.idx(0).type)
    jb = kb.v(arith.RemUIOp(t, g.blocks_n))
    t2 = kb.v(arith.DivUIOp(t, g.blocks_n))
    ib = kb.v(arith.RemUIOp(t2, g.blocks_m))
    t3 = kb.v(arith.DivUIOp(t2, g.blocks_m))
    grp = kb.v(arith.RemUIOp(t3, g.groups))
    n = kb.v(arith.DivUIOp(t3, g.groups))
    ip0 = kb.muli(ib, g.mb)
    ip1 = kb.imin(kb.addi(ip0, g.mb), g.pm)
    jp0 = kb.muli(jb, g.nb)
    jp1 = kb.imin(kb.addi(jp0, g.nb), g.pn)
    q0 = kb.imul(jp0, tile.nr)
    q1 = kb.imin(kb.imul(jp1, tile.nr), g.p)

    nb_max, kc_max = max(1, tile.nc // tile.nr), tile.kc
    bp = kb.scratch([nb_max, kc_max, tile.nr], f32)
    stage = kb.scratch([nb_max * tile.nr], f32)
    buf = kb.scratch([tile.mr, tile.nr], f32)
    bp_addr, buf_addr = _addr(kb, bp), _addr(kb, buf)
    a_base = _bytes(kb, _addr(kb, w), kb.muli(kb.muli(grp, g.fg), g.k))  # the group's W rows
    f0 = kb.muli(grp, g.fg)  # first filter of the group
    plane0 = kb.addi(kb.muli(n, g.f), f0)  # first row of C (out as [N·F, P])
    c_base = _addr(kb, acc)
    cbase = kb.muli(grp, g.cg)
    with kb.loop(kb.imul(kb.subi(jp1, jp0), tile.nr), kb.subi(q1, q0)) as q:
        kb.store(kb.const(0.0, f32), stage, [q])  # the tail panel's columns past the last pixel

    with kb.loop(g.nk) as s:
        k0 = kb.muli(s, g.kc)
        kcur = kb.imin(g.kc, kb.subi(g.k, k0))
        accumulate = kb.convert(kb.cmpi("ne", s, kb.idx(0)), kb.idx(0).type, signed=False)
        last = kb.cmpi("eq", s, kb.subi(g.nk, kb.idx(1)))
        with kb.loop(kcur) as kk:
            _gather(kb, g, sw, padded, x, stage, n, cbase, kb.addi(k0, kk), q0, q1)
            with kb.loop(jp1, jp0) as jp:
                jl = kb.subi(jp, jp0)
                with kb.loop(tile.nr) as c:
                    q = kb.iadd(kb.imul(jl, tile.nr), c)
                    kb.store(kb.load(stage, [q]), bp, [jl, kk, c])
        with kb.loop(jp1, jp0) as jp, kb.loop(ip1, ip0) as ip:
            jl = kb.subi(jp, jp0)
            i0, j0 = kb.imul(ip, tile.mr), kb.imul(jp, tile.nr)
            rows = kb.imin(kb.idx(tile.mr), kb.subi(g.fg, i0))
            cols = kb.imin(kb.idx(tile.nr), kb.subi(g.p, j0))
            a_addr = _bytes(kb, a_base, kb.addi(kb.muli(i0, g.k), k0))
            b_addr = _bytes(kb, bp_addr, kb.imul(jl, kc_max * tile.nr))
            r0 = kb.addi(plane0, i0)
            c_addr = _bytes(kb, c_base, kb.addi(kb.muli(r0, g.p), j0))
            full_cols = kb.cmpi("eq", cols, kb.idx(tile.nr))

            def run(kern: str) -> None:
                def call(c_at: SSAValue, ldc: SSAValue) -> None:
                    kb.add(func.CallOp(kern, [kcur, a_addr, g.k, b_addr, c_at, ldc, accumulate], []))  # fmt: skip

                def edge() -> None:  # partial columns: through the tile buffer
                    with kb.loop(rows) as r, kb.loop(cols) as c:
                        at = kb.addi(kb.muli(kb.addi(r0, r), g.p), kb.addi(j0, c))
                        kb.store(kb.load(acc, [at]), buf, [r, c])
                    call(buf_addr, kb.idx(tile.nr))
                    with kb.loop(rows) as r, kb.loop(cols) as c:
                        at = kb.addi(kb.muli(kb.addi(r0, r), g.p), kb.addi(j0, c))
                        kb.store(kb.load(buf, [r, c]), acc, [at])

                _if(kb, full_cols, lambda: call(c_addr, g.p), edge)

            full_k, tail_k = ukernels
            if tail_k is None:
                run(full_k)
            else:  # the last panel of filters: a microkernel of the tail's height
                _if(kb, kb.cmpi("eq", rows, kb.idx(tile.mr)), lambda: run(full_k),
                    lambda: run(tail_k))  # fmt: skip
            if bias is not None or post is not None or out is not acc:
                _if(kb, last, lambda: _epilogue(kb, g, acc, out, bias, post, extras,
                                                kb.addi(f0, i0), r0, j0, rows, cols))  # fmt: skip


def _gather(kb: KernelBuilder, g: TableGeo, sw: int, padded: bool, x: SSAValue, stage: SSAValue,
            n: SSAValue, cbase: SSAValue, kidx: SSAValue, q0: SSAValue,
            q1: SSAValue) -> None:  # fmt: skip
    """stage[q - q0] = col[kidx, q] for the pixels q in [q0, q1) (zeros where the tap
    reads padding): one output-row segment at a time, unit stride in `stage`, stride
    `sw` in x."""
    c = kb.addi(cbase, kb.v(arith.DivUIOp(kidx, g.taps)))
    kr = kb.v(arith.RemUIOp(kidx, g.taps))
    ki = kb.v(arith.DivUIOp(kr, g.kw))
    kj = kb.v(arith.RemUIOp(kr, g.kw))
    lo, hi = _tap_range(kb, kb.muli(kj, g.dw), g.pl, g.w, sw, g.ow)
    r_lo, r_hi = _tap_range(kb, kb.muli(ki, g.dh), g.pt, g.h, None, g.oh, g.sh)
    zero = kb.const(0.0, f32)
    i_first = kb.v(arith.DivUIOp(q0, g.ow))
    i_last = kb.v(arith.DivUIOp(kb.addi(q1, kb.subi(g.ow, kb.idx(1))), g.ow))
    off = kb.subi(kb.muli(kj, g.dw), g.pl)
    plane = kb.muli(kb.addi(kb.muli(n, g.c), c), g.h)  # (n, c) plane in rows of x
    with kb.loop(i_last, i_first) as i:
        row_q = kb.muli(i, g.ow)
        js = kb.subi(kb.imax(q0, row_q), row_q)
        je = kb.subi(kb.imin(q1, kb.addi(row_q, g.ow)), row_q)
        dst0 = kb.subi(row_q, q0)
        if padded:
            with kb.loop(je, js) as j:
                kb.store(zero, stage, [kb.addi(dst0, j)])

        def copy() -> None:
            ih = kb.subi(kb.addi(kb.muli(i, g.sh), kb.muli(ki, g.dh)), g.pt)
            src0 = kb.addi(kb.muli(kb.addi(plane, ih), g.w), off)
            a = kb.imax(js, lo)
            b = kb.imax(kb.imin(je, hi), a)
            with kb.loop(b, a) as j:
                v = kb.convert(kb.load(x, [kb.addi(src0, kb.imul(j, sw))]), f32)
                kb.store(v, stage, [kb.addi(dst0, j)])

        if padded:
            ok = kb.v(arith.AndIOp(kb.cmpi("sge", i, r_lo), kb.cmpi("slt", i, r_hi)))
            _if(kb, ok, copy)
        else:
            copy()


def _tap_range(kb: KernelBuilder, tap_off: SSAValue, pad: SSAValue, size: SSAValue,
               stride: int | None, out: SSAValue, stride_v: SSAValue | None = None,
               ) -> tuple[SSAValue, SSAValue]:  # fmt: skip
    """Output positions o with 0 <= o*stride + tap_off - pad < size, as [lo, hi) (the
    stride a constant, or the run-time `stride_v`)."""

    def div(a: SSAValue) -> SSAValue:
        if stride is not None:
            return kb.idiv(a, stride)
        assert stride_v is not None
        return kb.v(arith.DivUIOp(a, stride_v))

    st = kb.idx(stride) if stride is not None else stride_v
    assert st is not None
    zero = kb.idx(0)
    a = kb.subi(pad, tap_off)
    lo = div(kb.addi(kb.imax(a, zero), kb.subi(st, kb.idx(1))))
    b = kb.addi(kb.subi(kb.addi(size, pad), kb.addi(tap_off, kb.idx(1))), st)
    hi = kb.imin(out, div(kb.imax(b, zero)))
    return lo, hi


def _epilogue(kb: KernelBuilder, g: TableGeo, acc: SSAValue, out: SSAValue,
              bias: SSAValue | None, post: EpilogueFn | None, extras: list[SSAValue],
              f_first: SSAValue, r0: SSAValue, j0: SSAValue, rows: SSAValue,
              cols: SSAValue) -> None:  # fmt: skip
    """out[tile] = narrow(post(acc[tile] + bias[f])) (`post` gets flat indices)."""
    with kb.loop(rows) as r:
        row = kb.addi(r0, r)
        b = kb.convert(kb.load(bias, [kb.addi(f_first, r)]), f32) if bias is not None else None
        base = kb.muli(row, g.p)
        with kb.loop(cols) as c:
            at = kb.addi(base, kb.addi(j0, c))
            v = kb.load(acc, [at])
            if b is not None:
                v = kb.addf(v, b)
            if post is not None:
                v = post(kb, v, [at], extras)
            kb.store_c(v, out, [at])
