"""Depthwise conv2d in the blocked channel layout (NCHWc): one `vector<B x f32>` per
output pixel, over the B channels of a block.

x `[N, C/B, H, W, B]`, weights `[C/B, 1, KH, KW, 1, B]`, out `[N, C/B, OH, OW, B]`.
Units of (image, channel block, block of output rows) run as tasks of
`rlx_rt.parallel_call`. Per output row the kernel rows that read inside the input are
clipped once (`kh_lo`, `kh_hi`); then

* interior pixels (every kernel column inside the input) in tiles of `DW_TILE` pixels:
  per kernel row, the taps unrolled, one weight vector and `DW_TILE` input vectors per
  tap (`x[.., ih, (j + p)·sw + kw·dw - pl, :]`: a stride-2 conv reads whole B-vectors,
  no strided loads), the remainder one pixel at a time;
* the border pixels with their kernel columns clipped at run time;

then `+ bias`, the epilogue and the narrowing on the tile in L1. f16/bf16 inputs and
weights are widened into f32 copies once per call. The worker is shape-generic (sizes
from a run-time table): one per (block size, kernel width, column stride and dilation,
element types, epilogue).
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import arith
from xdsl.dialects.builtin import Float32Type, MemRefType, f32, i64
from xdsl.ir import Attribute, SSAValue

from rlx.lowering.gemm.conv import _addr, _flat, _if, widened_flat
from rlx.lowering.gemm.conv_blocked import (
    VectorEpilogue,
    at,
    bounds,
    broadcast,
    epilogue_lanes,
    fma,
    ptr,
    vector_epilogue,
    vload,
    vstore,
    widen,
)
from rlx.lowering.gemm.driver import EpilogueFn, launch_tasks
from rlx.lowering.gemm.ir import TableGeo, attr_text
from rlx.lowering.gemm.vector_act import ACTIVATIONS
from rlx.lowering.rlx_to_linalg.conv_common import window_taps
from rlx.lowering.rlx_to_linalg.conv_nchwc_plan import BlockedGeom
from rlx.lowering.rlx_to_linalg.kernel_builder import KernelBuilder, elem

DW_TILE = 8
"""Output pixels per interior tile (accumulators, with the taps' weight vectors); the rest
of a row's interior in tiles of 4, 2 and 1."""

SMALL_OW = 32
"""Stride-1 convs with kernels at least 5 wide on rows at most this wide (EfficientNets'
5x5 convs on 28², 14² and 7² maps) read a zero-padded copy of the unit's input rows:
every pixel is interior, no column is clipped (5x5 on 7²: 4 of the 7 pixels of a row
were clipped ones, one accumulator each behind a run-time tap loop). One thread, silu,
B = 8, against the clipped borders: 1152 ch 7² 0.78, 672 ch 14² 0.80, 240 ch 28² 0.93;
3x3 convs (2 border pixels per row) 1.05-1.11 and 5x5 / 2 1.05 slower: they clip."""

DW_SLAB = 1 << 14
"""f32 elements of that padded copy (64 KiB), per task."""

ROW_OUTPUTS = 4096
"""Output elements per unit when images x channel blocks are too few for the pool."""

MAX_TASKS = 64

GEOMETRY = ("n", "cb", "h", "w", "kh", "oh", "ow", "sh", "pt", "pl", "dh", "rows", "rb",
            "units", "per")  # fmt: skip


def emit_dw_nchwc(
    kb: KernelBuilder,
    g: BlockedGeom,
    x: SSAValue,
    w: SSAValue,
    bias: SSAValue | None,
    out: SSAValue,
    post: EpilogueFn | None = None,
    extras: Sequence[SSAValue] = (),
    key: object = "",
    vector_epi: VectorEpilogue | None = None,
) -> bool:
    """Emit the blocked depthwise convolution (module docstring); False without a kernel
    registry. `vector_epi`: as `conv_nchwc.emit_conv_nchwc`'s."""
    kernels = kb.kernels
    if kernels is None or not g.depthwise:
        return False
    planes = g.n * g.cb
    rb = 1
    if planes < 4 * MAX_TASKS // 8:
        rb = min(g.oh, max(1, -(-(g.oh * g.ow * g.b) // ROW_OUTPUTS)))
    rows = -(-g.oh // rb)
    rb = -(-g.oh // rows)
    units = planes * rb
    tasks = min(units, MAX_TASKS)
    per = -(-units // tasks)
    tasks = -(-units // per)
    vals = dict(n=g.n, cb=g.cb, h=g.h, w=g.w, kh=g.kh, oh=g.oh, ow=g.ow, sh=g.sh, pt=g.pt,
                pl=g.pl, dh=g.dh, rows=rows, rb=rb, units=units, per=per)  # fmt: skip
    assert tuple(vals) == GEOMETRY
    geo = kb.table(list(vals.values()), i64)
    rest = [_flat(kb, v) for v in (*([bias] if bias else []), out, *extras)]
    args = [geo, widened_flat(kb, x), widened_flat(kb, w), *rest]
    wtypes: list[Attribute] = [MemRefType(i64, [1]), *(v.type for v in args)]
    f32s = all(isinstance(elem(v), Float32Type) for v in (out, *extras, *([bias] if bias else [])))
    epi = vector_epi if f32s else None
    wp = (g.ow - 1) * g.sw + (g.kw - 1) * g.dw + 1
    slab = ((rows - 1) * g.sh + (g.kh - 1) * g.dh + 1) * wp * g.b
    padded = g.ow <= SMALL_OW and g.sw == 1 and g.kw >= 5 and slab <= DW_SLAB
    static = (g.b, g.kw, g.sw, g.dw, bias is not None, len(extras), key, epi, padded)
    wkey = ("conv-nchwc-dw", static, tuple(attr_text(t) for t in wtypes))

    def build(wb: KernelBuilder, wargs: list[SSAValue]) -> None:
        r = wargs[4:]
        wbias = r.pop(0) if bias is not None else None
        wout = r.pop(0)
        d = TableGeo(wb, GEOMETRY, wargs[1])
        _worker(wb, d, g, wargs[0], wargs[2], wargs[3], wbias, wout, post, r, epi, padded)

    worker = kernels.kernel(wkey, wtypes, build, f"conv nchwc depthwise x{g.b}", noalias=True)
    launch_tasks(kb, worker, args, tasks, g.macs)
    return True


def _worker(kb: KernelBuilder, d: TableGeo, g: BlockedGeom, tid: SSAValue, x: SSAValue,
            w: SSAValue, bias: SSAValue | None, out: SSAValue, post: EpilogueFn | None,
            extras: list[SSAValue], epi: VectorEpilogue | None,
            padded: bool) -> None:  # fmt: skip
    """One task's units (module docstring). `padded`: per unit, the input rows its
    output rows read are copied first into a zero-padded slab `[R, WP, B]` (WP the
    columns the row's pixels read), and every pixel is an interior one of that slab."""
    b, kw_, sw, dw = g.b, g.kw, g.sw, g.dw
    host_lanes = epilogue_lanes(b)
    t = kb.convert(kb.load(tid, [0]), kb.idx(0).type)
    u0 = kb.muli(t, d.per)
    u1 = kb.imin(kb.addi(u0, d.per), d.units)
    px, pw = ptr(kb, _addr(kb, x)), ptr(kb, _addr(kb, w))
    tile = kb.scratch([DW_TILE * b], f32)
    ptile = ptr(kb, _addr(kb, tile))
    zero_v = broadcast(kb, kb.const(0.0, f32), b)
    pout = ptr(kb, _addr(kb, out))
    pres = ptr(kb, _addr(kb, extras[0])) if extras else None
    lo, hi = bounds(kb, epi, b) if epi is not None else (zero_v, zero_v)
    zero = kb.idx(0)
    # interior columns: 0 <= j*sw - pl and j*sw + (kw-1)*dw - pl < w
    jlo = kb.idiv(kb.iadd(d.pl, sw - 1), sw)
    reach = kb.iadd(kb.addi(d.w, d.pl), sw - 1 - (kw_ - 1) * dw)
    jhi = kb.imin(d.ow, kb.idiv(kb.imax(reach, zero), sw))
    jlo = kb.imin(jlo, d.ow)
    jhi = kb.imax(jhi, jlo)
    row_b = kb.imul(d.w, b)
    if padded:
        slab = kb.scratch([DW_SLAB], f32)
        ps = ptr(kb, _addr(kb, slab))
        wp = kb.iadd(kb.imul(kb.subi(d.ow, kb.idx(1)), sw), (kw_ - 1) * dw + 1)
        wrow = kb.imul(wp, b)
    with kb.loop(u1, u0) as unit:
        blk = kb.v(arith.RemUIOp(unit, d.rb))
        plane = kb.v(arith.DivUIOp(unit, d.rb))  # n·CB + cb
        cb = kb.v(arith.RemUIOp(plane, d.cb))
        o0 = kb.muli(blk, d.rows)
        o1 = kb.imin(kb.addi(o0, d.rows), d.oh)
        x_plane = kb.muli(kb.muli(plane, d.h), row_b)
        w_cb = kb.muli(cb, kb.imul(d.kh, kw_ * b))
        if padded:
            ih0 = kb.subi(kb.muli(o0, d.sh), d.pt)
            rr = kb.addi(kb.muli(kb.subi(kb.subi(o1, o0), kb.idx(1)), d.sh),
                         kb.addi(kb.muli(kb.subi(d.kh, kb.idx(1)), d.dh), kb.idx(1)))  # fmt: skip
            _fill_rows(kb, px, ps, x_plane, ih0, rr, d.h, d.w, d.pl, wp, b)
        with kb.loop(o1, o0) as o:
            top = kb.subi(kb.muli(o, d.sh), d.pt)
            if padded:  # every kernel row reads the slab (zero rows outside the input)
                kh_lo, kh_hi = kb.idx(0), d.kh
            else:
                kh_lo, kh_hi = window_taps(kb, top, d.dh, d.h, d.kh)
                kh_hi = kb.imax(kh_hi, kh_lo)
            o_row = kb.muli(kb.addi(kb.muli(plane, d.oh), o), kb.imul(d.ow, b))
            bvec = None
            if epi is not None and epi.bias:
                assert bias is not None
                bvec = vload(kb, at(kb, ptr(kb, _addr(kb, bias)), kb.imul(cb, b)), b)

            def xrow(kh: SSAValue) -> SSAValue:  # element offset of input row ih
                if padded:  # slab row (o - o0)·sh + kh·dh
                    r = kb.addi(kb.muli(kb.subi(o, o0), d.sh), kb.muli(kh, d.dh))
                    return kb.muli(r, wrow)
                ih = kb.addi(top, kb.muli(kh, d.dh))
                return kb.addi(x_plane, kb.muli(ih, row_b))

            def finish(j0: SSAValue, acc: list[SSAValue]) -> None:
                if epi is not None and epi.act in ACTIVATIONS and len(acc) > 1:
                    # one copy of the exp-based activation (not one per accumulator: compile
                    # time), in a loop over the tile in L1, `lanes` (one or more pixels:
                    # contiguous in the tile and the output row) per vector
                    for p, v in enumerate(acc):
                        vstore(kb, v, at(kb, ptile, p * b))
                    lanes = host_lanes if len(acc) * b % host_lanes == 0 else b
                    bw = widen(kb, bvec, lanes) if bvec is not None else None
                    with kb.loop(len(acc) * b // lanes) as p:
                        at_ = kb.addi(kb.imul(j0, b), kb.imul(p, lanes))
                        res = at(kb, pres, kb.addi(o_row, at_)) if epi.residual else None
                        v = vload(kb, at(kb, ptile, kb.imul(p, lanes)), lanes)
                        v = vector_epilogue(kb, v, bw, res, epi)
                        vstore(kb, v, at(kb, pout, kb.addi(o_row, at_)))
                    return
                if epi is not None:  # in registers, straight into the f32 output
                    for p, v in enumerate(acc):
                        at_ = kb.imul(kb.addi(j0, kb.idx(p)), b)
                        dst = at(kb, pout, kb.addi(o_row, at_))
                        res = at(kb, pres, kb.addi(o_row, at_)) if epi.residual else None
                        vstore(kb, vector_epilogue(kb, v, bvec, res, epi, lo, hi), dst)
                    return
                for p, v in enumerate(acc):
                    vstore(kb, v, at(kb, ptile, p * b))
                with kb.loop(len(acc)) as p, kb.loop(b) as j:
                    v = kb.load(tile, [kb.addi(kb.imul(p, b), j)])
                    if bias is not None:
                        bi = kb.addi(kb.imul(cb, b), j)
                        v = kb.addf(v, kb.convert(kb.load(bias, [bi]), f32))
                    at_ = kb.addi(o_row, kb.addi(kb.imul(kb.addi(j0, p), b), j))
                    if post is not None:
                        v = post(kb, v, [at_], extras)
                    kb.store_c(v, out, [at_])

            def tile_at(j0: SSAValue, u: int) -> None:
                col0 = kb.imul(j0, sw * b)
                if not padded:
                    col0 = kb.subi(col0, kb.imul(d.pl, b))

                def step(kh: SSAValue, acc: list[SSAValue]) -> list[SSAValue]:
                    xr = at(kb, ps if padded else px, kb.addi(xrow(kh), col0))
                    wr = at(kb, pw, kb.addi(w_cb, kb.imul(kh, kw_ * b)))
                    acc = list(acc)
                    for kw in range(kw_):
                        wv = vload(kb, at(kb, wr, kw * b), b)
                        for p in range(u):
                            xv = vload(kb, at(kb, xr, (p * sw + kw * dw) * b), b)
                            acc[p] = fma(kb, xv, wv, acc[p])
                    return acc

                finish(j0, kb.loop_carry(kh_hi, [zero_v] * u, step, lb=kh_lo))

            def clipped(j: SSAValue) -> None:  # a border pixel: kernel columns clipped
                left = kb.subi(kb.imul(j, sw), d.pl)
                kw_lo, kw_hi = window_taps(kb, left, dw, d.w, kw_)
                kw_hi = kb.imax(kw_hi, kw_lo)

                def step(kh: SSAValue, acc: list[SSAValue]) -> list[SSAValue]:
                    def tap(kw: SSAValue, a: list[SSAValue]) -> list[SSAValue]:
                        iw = kb.addi(left, kb.imul(kw, dw))
                        xv = vload(kb, at(kb, px, kb.addi(xrow(kh), kb.imul(iw, b))), b)
                        wo = kb.addi(kb.addi(w_cb, kb.imul(kh, kw_ * b)), kb.imul(kw, b))
                        return [fma(kb, xv, vload(kb, at(kb, pw, wo), b), a[0])]

                    return kb.loop_carry(kw_hi, acc, tap, lb=kw_lo)

                finish(j, kb.loop_carry(kh_hi, [zero_v], step, lb=kh_lo))

            lo_j, hi_j = (zero, d.ow) if padded else (jlo, jhi)
            full = kb.idiv(kb.subi(hi_j, lo_j), DW_TILE)
            with kb.loop(full) as jb:
                tile_at(kb.addi(lo_j, kb.imul(jb, DW_TILE)), DW_TILE)
            # the rest of the interior in tiles of 4, 2, 1 (independent accumulators)
            j = kb.addi(lo_j, kb.imul(full, DW_TILE))
            rest = kb.subi(hi_j, j)
            for size in (4, 2, 1):
                has = kb.cmpi("ne", kb.v(arith.AndIOp(rest, kb.idx(size))), zero)
                _if(kb, has, lambda j=j, size=size: tile_at(j, size))
                j = kb.addi(j, kb.v(arith.AndIOp(rest, kb.idx(size))))
            if not padded:
                with kb.loop(jlo) as j:
                    clipped(j)
                with kb.loop(d.ow, jhi) as j:
                    clipped(j)


def _fill_rows(kb: KernelBuilder, px: SSAValue, ps: SSAValue, x_plane: SSAValue, ih0: SSAValue,
               rr: SSAValue, h: SSAValue, w: SSAValue, pl: SSAValue, wp: SSAValue,
               b: int) -> None:  # fmt: skip
    """slab[r, c, :] = x[plane, ih0 + r, c - pl, :] for r < rr, c < wp, zero outside the
    input (one B-vector per pixel; `x_plane` the plane's first element)."""
    zero = kb.idx(0)
    zv = broadcast(kb, kb.const(0.0, f32), b)
    with kb.loop(rr) as r:
        ih = kb.addi(ih0, r)
        inside = kb.v(arith.AndIOp(kb.cmpi("sge", ih, zero), kb.cmpi("slt", ih, h)))
        dst = kb.imul(kb.muli(r, wp), b)
        # columns [c_lo, c_hi) read the input row; the others are zero
        c_lo = kb.imin(pl, wp)
        c_hi = kb.v(arith.SelectOp(inside, kb.imax(kb.imin(kb.addi(pl, w), wp), c_lo), c_lo))
        with kb.loop(c_lo) as c:
            vstore(kb, zv, at(kb, ps, kb.addi(dst, kb.imul(c, b))))
        row0 = kb.subi(kb.addi(x_plane, kb.muli(ih, kb.imul(w, b))), kb.imul(pl, b))
        with kb.loop(c_hi, c_lo) as c:
            v = vload(kb, at(kb, px, kb.addi(row0, kb.imul(c, b))), b)
            vstore(kb, v, at(kb, ps, kb.addi(dst, kb.imul(c, b))))
        with kb.loop(wp, c_hi) as c:
            vstore(kb, zv, at(kb, ps, kb.addi(dst, kb.imul(c, b))))
