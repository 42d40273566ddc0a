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

from rlx.lowering.gemm.conv import _addr, _flat, widened_flat
from rlx.lowering.gemm.conv_blocked import (
    VectorEpilogue,
    at,
    bounds,
    broadcast,
    fma,
    ptr,
    vector_epilogue,
    vload,
    vstore,
)
from rlx.lowering.gemm.driver import EpilogueFn, launch_tasks
from rlx.lowering.gemm.ir import TableGeo, attr_text
from rlx.lowering.gemm.vector_act import ACTIVATIONS
from rlx.lowering.rlx_to_linalg.conv_common import window_taps
from rlx.lowering.rlx_to_linalg.conv_nchwc_plan import BlockedGeom
from rlx.lowering.rlx_to_linalg.kernel_builder import KernelBuilder, elem

DW_TILE = 8
"""Output pixels per interior tile (accumulators, with the taps' weight vectors)."""

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
    static = (g.b, g.kw, g.sw, g.dw, bias is not None, len(extras), key, epi)
    wkey = ("conv-nchwc-dw", static, tuple(attr_text(t) for t in wtypes))

    def build(wb: KernelBuilder, wargs: list[SSAValue]) -> None:
        r = wargs[4:]
        wbias = r.pop(0) if bias is not None else None
        wout = r.pop(0)
        d = TableGeo(wb, GEOMETRY, wargs[1])
        _worker(wb, d, g, wargs[0], wargs[2], wargs[3], wbias, wout, post, r, epi)

    worker = kernels.kernel(wkey, wtypes, build, f"conv nchwc depthwise x{g.b}", noalias=True)
    launch_tasks(kb, worker, args, tasks, g.macs)
    return True


def _worker(kb: KernelBuilder, d: TableGeo, g: BlockedGeom, tid: SSAValue, x: SSAValue,
            w: SSAValue, bias: SSAValue | None, out: SSAValue, post: EpilogueFn | None,
            extras: list[SSAValue], epi: VectorEpilogue | None) -> None:  # fmt: skip
    b, kw_, sw, dw = g.b, g.kw, g.sw, g.dw
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
    with kb.loop(u1, u0) as unit:
        blk = kb.v(arith.RemUIOp(unit, d.rb))
        plane = kb.v(arith.DivUIOp(unit, d.rb))  # n·CB + cb
        cb = kb.v(arith.RemUIOp(plane, d.cb))
        o0 = kb.muli(blk, d.rows)
        o1 = kb.imin(kb.addi(o0, d.rows), d.oh)
        x_plane = kb.muli(kb.muli(plane, d.h), row_b)
        w_cb = kb.muli(cb, kb.imul(d.kh, kw_ * b))
        with kb.loop(o1, o0) as o:
            top = kb.subi(kb.muli(o, d.sh), d.pt)
            kh_lo, kh_hi = window_taps(kb, top, d.dh, d.h, d.kh)
            kh_hi = kb.imax(kh_hi, kh_lo)
            o_row = kb.muli(kb.addi(kb.muli(plane, d.oh), o), kb.imul(d.ow, b))
            bvec = None
            if epi is not None and epi.bias:
                assert bias is not None
                bvec = vload(kb, at(kb, ptr(kb, _addr(kb, bias)), kb.imul(cb, b)), b)

            def xrow(kh: SSAValue) -> SSAValue:  # element offset of input row ih
                ih = kb.addi(top, kb.muli(kh, d.dh))
                return kb.addi(x_plane, kb.muli(ih, row_b))

            def finish(j0: SSAValue, acc: list[SSAValue]) -> None:
                if epi is not None and epi.act in ACTIVATIONS and len(acc) > 1:
                    # one copy of the exp-based activation (not one per accumulator: compile
                    # time), in a loop over the tile in L1
                    for p, v in enumerate(acc):
                        vstore(kb, v, at(kb, ptile, p * b))
                    with kb.loop(len(acc)) as p:
                        at_ = kb.imul(kb.addi(j0, p), b)
                        res = at(kb, pres, kb.addi(o_row, at_)) if epi.residual else None
                        v = vload(kb, at(kb, ptile, kb.imul(p, b)), b)
                        v = vector_epilogue(kb, v, bvec, res, epi, lo, hi)
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
                col0 = kb.subi(kb.imul(j0, sw * b), kb.imul(d.pl, b))

                def step(kh: SSAValue, acc: list[SSAValue]) -> list[SSAValue]:
                    xr = at(kb, px, kb.addi(xrow(kh), col0))
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

            full = kb.idiv(kb.subi(jhi, jlo), DW_TILE)
            with kb.loop(full) as jb:
                tile_at(kb.addi(jlo, kb.imul(jb, DW_TILE)), DW_TILE)
            with kb.loop(jhi, kb.addi(jlo, kb.imul(full, DW_TILE))) as j:
                tile_at(j, 1)
            with kb.loop(jlo) as j:
                clipped(j)
            with kb.loop(d.ow, jhi) as j:
                clipped(j)
