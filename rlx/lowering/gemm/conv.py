"""conv2d as an implicit GEMM on the generated microkernel.

Per image `n` and group `g` the convolution is `C[f, q] = Σ_k W[f, k] · col[k, q]` with
`f < F/groups` filters, `k = (c, ki, kj) < Cg·KH·KW` and `q = (i, j) < OH·OW` output
pixels, so C is the group's output planes (row stride OH·OW: NCHW as is).

1. W is packed into A panels `[groups, ceil(Fg / mr), K, mr]` on the pool (`_pack_w`).
2. Tasks of `rlx_rt.parallel_call` are (image, group, filter block, pixel block). A task
   walks k-slices of `kc`; per slice it gathers its pixel block of the implicit im2col
   matrix straight from x into B panels `[nb, kc, nr]` (the loader: one output row
   segment at a time, zero where the tap reads padding, f16/bf16 widened) and calls the
   microkernel per `mr x nr` tile, A block in L2, B panel in L1. Partial tiles go
   through a tile buffer.
3. After the last k-slice each tile gets the epilogue while it is in L1: `+ bias[f]`,
   then `post` (activation, residual), narrowed into the output.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from xdsl.dialects import arith, func, memref, scf
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
from xdsl.ir import Attribute, Block, Region, SSAValue

from rlx.dialects.rlx_rt import ParallelCallOp
from rlx.lowering.gemm.driver import SERIAL_MACS, _owner, attr_text
from rlx.lowering.gemm.microkernel import microkernel
from rlx.lowering.gemm.packing import pack, panels
from rlx.lowering.gemm.target import MIN_MNK, Tile, host_tile
from rlx.lowering.rlx_to_linalg.conv_common import ConvGeom, tap_range
from rlx.lowering.rlx_to_linalg.kernel_builder import KernelBuilder, elem

PostFn = Callable[[KernelBuilder, SSAValue, list[SSAValue], list[SSAValue]], SSAValue]

_FLOATS = (Float32Type, Float16Type, BFloat16Type)

PACK_TASK_ELEMENTS = 1 << 15
"""Weight elements one packing task copies."""


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
    """The host tile, with `mr` cut to the filters per group when there are fewer."""
    tile = host_tile()
    if g.fg < tile.mr:
        tile = replace(tile, mr=g.fg, mc=g.fg)
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


def _flat_w(kb: KernelBuilder, w: SSAValue) -> SSAValue:
    """w [F, Cg, KH, KW] viewed as [F, Cg·KH·KW]."""
    f, cg, kh, kw = (int(d) for d in w.type.get_shape())  # type: ignore[attr-defined]
    groups = ArrayAttr(
        [ArrayAttr([IntegerAttr(0, i64)]), ArrayAttr([IntegerAttr(i, i64) for i in (1, 2, 3)])]
    )
    t = MemRefType(elem(w), [f, cg * kh * kw])
    return kb.hoist(
        memref.CollapseShapeOp.build(
            operands=[w], result_types=[t], properties={"reassociation": groups}
        )
    )


def emit_conv_gemm(
    kb: KernelBuilder,
    g: ConvGeom,
    x: SSAValue,
    w: SSAValue,
    bias: SSAValue | None,
    out: SSAValue,
    post: PostFn | None = None,
    extras: Sequence[SSAValue] = (),
    key: object = "",
) -> bool:
    """Emit the implicit GEMM (module docstring); False (nothing emitted) when the conv
    does not qualify (`eligible`) or the kernel has no module registry."""
    kernels = _owner(kb)
    types = [v.type for v in (x, w, out, *([bias] if bias is not None else []))]
    if kernels is None or not eligible(g, *types):
        return False
    tile = conv_tile(g)
    k, p = g.cg * g.kh * g.kw, g.oh * g.ow
    pm, pn = panels(g.fg, tile.mr), panels(p, tile.nr)
    mb = _balanced(pm, max(1, tile.mc // tile.mr))
    nb = _balanced(pn, max(1, tile.nc // tile.nr))
    nk = panels(k, tile.kc)
    kc = panels(k, nk)
    blocks_m, blocks_n = panels(pm, mb), panels(pn, nb)
    tasks = g.n * g.groups * blocks_m * blocks_n

    ap = kb.scratch([g.groups, pm, k, tile.mr], f32)
    _pack_w(kb, kernels, _flat_w(kb, w), ap, g, tile)
    acc = out if isinstance(elem(out), Float32Type) else kb.scratch(out.type.get_shape(), f32)  # type: ignore[attr-defined]
    args = [x, ap, acc, *([out] if acc is not out else []), *([bias] if bias else []), *extras]
    wtypes: list[Attribute] = [MemRefType(i64, [1]), *(v.type for v in args)]
    wkey = ("conv-gemm", g, tile, mb, nb, kc, bias is not None, acc is not out, key,
            tuple(attr_text(t) for t in wtypes))  # fmt: skip
    ukernel = microkernel(kernels, tile)
    layout = _Layout(g, tile, k, p, pm, pn, mb, nb, kc, nk, blocks_m, blocks_n)

    def build(wb: KernelBuilder, wargs: list[SSAValue]) -> None:
        wx, wap, wacc = wargs[1:4]
        rest = wargs[4:]
        wout = rest.pop(0) if acc is not out else wacc
        wbias = rest.pop(0) if bias is not None else None
        _worker(wb, layout, ukernel, wargs[0], wx, wap, wacc, wout, wbias, post, rest)

    worker = kernels.kernel(wkey, wtypes, build, f"conv gemm {tile.name}", noalias=True)
    threads = 1 if g.macs < SERIAL_MACS else min(tasks, 64)
    table = kb.table(list(range(tasks)), i64)
    kb.add(ParallelCallOp(worker, [table, *args], tasks, [8] + [0] * len(args), threads))
    return True


def _pack_w(
    kb: KernelBuilder, kernels: object, w2: SSAValue, ap: SSAValue, g: ConvGeom, tile: Tile
) -> None:
    """ap[grp, p, k, r] = w2[grp·Fg + p·mr + r, k] (zero past Fg), on the pool."""
    k = int(w2.type.get_shape()[1])  # type: ignore[attr-defined]
    pm = panels(g.fg, tile.mr)
    per = max(1, min(pm, PACK_TASK_ELEMENTS // (tile.mr * k)))
    chunks = panels(pm, per)
    tasks = chunks * g.groups
    types: list[Attribute] = [MemRefType(i64, [1]), w2.type, ap.type]

    def build(wb: KernelBuilder, args: list[SSAValue]) -> None:
        tid, src, dst = args
        t = wb.convert(wb.load(tid, [0]), wb.idx(0).type)
        c = _rem(wb, t, chunks)
        grp = wb.idiv(t, chunks)
        p0 = wb.imul(c, per)
        p1 = wb.imin(wb.iadd(p0, per), wb.idx(pm))
        row0 = wb.imul(grp, g.fg)

        def load(b: KernelBuilder, row: SSAValue, col: SSAValue) -> SSAValue:
            return b.convert(b.load(src, [b.iadd(row0, row), col]), f32)

        pack(wb, dst, [grp], g.fg, k, tile.mr, load, p0, p1)

    wkey = ("conv-pack-w", g.fg, g.groups, k, tile.mr, per, tuple(attr_text(t) for t in types))
    worker = kernels.kernel(wkey, types, build, f"conv pack W {tile.name}", noalias=True)  # type: ignore[attr-defined]
    threads = 1 if tasks == 1 or g.f * k < 2 * PACK_TASK_ELEMENTS else min(tasks, 64)
    table = kb.table(list(range(tasks)), i64)
    kb.add(ParallelCallOp(worker, [table, w2, ap], tasks, [8, 0, 0], threads))


class _Layout:
    """The blocking of one implicit GEMM (sizes in panels / elements)."""

    def __init__(self, g: ConvGeom, tile: Tile, k: int, p: int, pm: int, pn: int, mb: int,
                 nb: int, kc: int, nk: int, blocks_m: int, blocks_n: int) -> None:  # fmt: skip
        self.g, self.tile, self.k, self.p, self.pm, self.pn = g, tile, k, p, pm, pn
        self.mb, self.nb, self.kc, self.nk = mb, nb, kc, nk
        self.blocks_m, self.blocks_n = blocks_m, blocks_n


def _worker(kb: KernelBuilder, lay: _Layout, ukernel: str, tid: SSAValue, x: SSAValue,
            ap: SSAValue, acc: SSAValue, out: SSAValue, bias: SSAValue | None,
            post: PostFn | None, extras: list[SSAValue]) -> None:  # fmt: skip
    g, tile = lay.g, lay.tile
    t = kb.convert(kb.load(tid, [0]), kb.idx(0).type)
    jb = _rem(kb, t, lay.blocks_n)
    t2 = kb.idiv(t, lay.blocks_n)
    ib = _rem(kb, t2, lay.blocks_m)
    t3 = kb.idiv(t2, lay.blocks_m)
    grp = _rem(kb, t3, g.groups)
    n = kb.idiv(t3, g.groups)
    ip0 = kb.imul(ib, lay.mb)
    ip1 = kb.imin(kb.iadd(ip0, lay.mb), kb.idx(lay.pm))
    jp0 = kb.imul(jb, lay.nb)
    jp1 = kb.imin(kb.iadd(jp0, lay.nb), kb.idx(lay.pn))
    q0 = kb.imul(jp0, tile.nr)
    q1 = kb.imin(kb.imul(jp1, tile.nr), kb.idx(lay.p))

    bp = kb.scratch([lay.nb, lay.kc, tile.nr], f32)
    stage = kb.scratch([lay.nb * tile.nr], f32)
    buf = kb.scratch([tile.mr, tile.nr], f32)
    bp_addr, buf_addr = _addr(kb, bp), _addr(kb, buf)
    a_base = kb.iadd(_addr(kb, ap), kb.imul(grp, lay.pm * lay.k * tile.mr * 4))
    f0 = kb.imul(grp, g.fg)  # first filter of the group
    plane0 = kb.iadd(kb.imul(n, g.f), f0)  # first row of C (out as [N·F, P])
    c_base = _addr(kb, acc)
    acc2 = _view(kb, acc, [g.n * g.f, lay.p])
    out2 = acc2 if out is acc else _view(kb, out, [g.n * g.f, lay.p])
    views = [_view(kb, e, [g.n * g.f, lay.p]) for e in extras]
    cbase = kb.imul(grp, g.cg)
    with kb.loop(kb.imul(kb.subi(jp1, jp0), tile.nr), kb.subi(q1, q0)) as q:
        kb.store(kb.const(0.0, f32), stage, [q])  # the tail panel's columns past the last pixel

    with kb.loop(lay.nk) as s:
        k0 = kb.imul(s, lay.kc)
        kcur = kb.imin(kb.idx(lay.kc), kb.subi(kb.idx(lay.k), k0))
        accumulate = kb.convert(kb.cmpi("ne", s, kb.idx(0)), kb.idx(0).type, signed=False)
        last = kb.cmpi("eq", s, kb.idx(lay.nk - 1))
        with kb.loop(kcur) as kk:
            _gather(kb, g, x, stage, n, cbase, kb.iadd(k0, kk), q0, q1)
            with kb.loop(jp1, jp0) as jp:
                jl = kb.subi(jp, jp0)
                with kb.loop(tile.nr) as c:
                    q = kb.iadd(kb.imul(jl, tile.nr), c)
                    kb.store(kb.load(stage, [q]), bp, [jl, kk, c])
        with kb.loop(jp1, jp0) as jp, kb.loop(ip1, ip0) as ip:
            jl = kb.subi(jp, jp0)
            i0, j0 = kb.imul(ip, tile.mr), kb.imul(jp, tile.nr)
            rows = kb.imin(kb.idx(tile.mr), kb.subi(kb.idx(g.fg), i0))
            cols = kb.imin(kb.idx(tile.nr), kb.subi(kb.idx(lay.p), j0))
            a_addr = _bytes(kb, a_base, kb.iadd(kb.imul(ip, lay.k * tile.mr),
                                                kb.imul(k0, tile.mr)))  # fmt: skip
            b_addr = _bytes(kb, bp_addr, kb.imul(jl, lay.kc * tile.nr))
            r0 = kb.iadd(plane0, i0)
            c_addr = _bytes(kb, c_base, kb.iadd(kb.imul(r0, lay.p), j0))
            full = kb.v(
                arith.AndIOp(
                    kb.cmpi("eq", rows, kb.idx(tile.mr)), kb.cmpi("eq", cols, kb.idx(tile.nr))
                )
            )

            def call(c_at: SSAValue, ldc: int) -> None:
                kb.add(func.CallOp(ukernel, [kcur, a_addr, b_addr, c_at, kb.idx(ldc), accumulate], []))  # fmt: skip

            def edge() -> None:
                with kb.loop(rows) as r, kb.loop(cols) as c:
                    kb.store(kb.load(acc2, [kb.iadd(r0, r), kb.iadd(j0, c)]), buf, [r, c])
                call(buf_addr, tile.nr)
                with kb.loop(rows) as r, kb.loop(cols) as c:
                    kb.store(kb.load(buf, [r, c]), acc2, [kb.iadd(r0, r), kb.iadd(j0, c)])

            _if(kb, full, lambda: call(c_addr, lay.p), edge)
            if bias is not None or post is not None or out2 is not acc2:
                _if(kb, last, lambda: _epilogue(kb, acc2, out2, bias, post, views,
                                                kb.iadd(f0, i0), r0, j0, rows, cols))  # fmt: skip


def _view(kb: KernelBuilder, mem: SSAValue, shp: list[int]) -> SSAValue:
    """mem [N, F, OH, OW] viewed as [N·F, OH·OW]."""
    groups = ArrayAttr(
        [ArrayAttr([IntegerAttr(0, i64), IntegerAttr(1, i64)]),
         ArrayAttr([IntegerAttr(2, i64), IntegerAttr(3, i64)])]
    )  # fmt: skip
    t = MemRefType(elem(mem), shp)
    return kb.hoist(
        memref.CollapseShapeOp.build(
            operands=[mem], result_types=[t], properties={"reassociation": groups}
        )
    )


def _gather(kb: KernelBuilder, g: ConvGeom, x: SSAValue, stage: SSAValue, n: SSAValue,
            cbase: SSAValue, kidx: SSAValue, q0: SSAValue, q1: SSAValue) -> None:  # fmt: skip
    """stage[q - q0] = col[kidx, q] for the pixels q in [q0, q1) (zeros where the tap
    reads padding; zeros past q1 up to the block's panels)."""
    taps = g.kh * g.kw
    c = kb.iadd(cbase, kb.idiv(kidx, taps))
    kr = _rem(kb, kidx, taps) if g.cg > 1 else kidx
    ki = kb.idiv(kr, g.kw)
    kj = _rem(kb, kr, g.kw)
    lo, hi = tap_range(kb, kb.imul(kj, g.dw), g.pl, g.w, g.sw, g.ow)
    r_lo, r_hi = tap_range(kb, kb.imul(ki, g.dh), g.pt, g.h, g.sh, g.oh)
    zero = kb.const(0.0, f32)
    i_first = kb.idiv(q0, g.ow)
    i_last = kb.idiv(kb.iadd(q1, g.ow - 1), g.ow)
    off = kb.subi(kb.imul(kj, g.dw), kb.idx(g.pl))
    with kb.loop(i_last, i_first) as i:
        row_q = kb.imul(i, g.ow)
        js = kb.subi(kb.imax(q0, row_q), row_q)
        je = kb.subi(kb.imin(q1, kb.iadd(row_q, g.ow)), row_q)
        dst0 = kb.subi(row_q, q0)
        ok = kb.v(arith.AndIOp(kb.cmpi("sge", i, r_lo), kb.cmpi("slt", i, r_hi)))
        if g.padded:
            with kb.loop(je, js) as j:
                kb.store(zero, stage, [kb.iadd(dst0, j)])

        def copy() -> None:
            ih = kb.subi(kb.iadd(kb.imul(i, g.sh), kb.imul(ki, g.dh)), kb.idx(g.pt))
            a = kb.imax(js, lo)
            b = kb.imax(kb.imin(je, hi), a)
            with kb.loop(b, a) as j:
                iw = kb.iadd(kb.imul(j, g.sw), off)
                kb.store(kb.convert(kb.load(x, [n, c, ih, iw]), f32), stage,
                         [kb.iadd(dst0, j)])  # fmt: skip

        if g.padded:
            _if(kb, ok, copy)
        else:
            copy()


def _epilogue(kb: KernelBuilder, acc2: SSAValue, out2: SSAValue, bias: SSAValue | None,
              post: PostFn | None, extras: list[SSAValue], f_first: SSAValue, r0: SSAValue,
              j0: SSAValue, rows: SSAValue, cols: SSAValue) -> None:  # fmt: skip
    """out2[tile] = narrow(post(acc2[tile] + bias[f])) (`post` indexes [N·F, P] views)."""
    with kb.loop(rows) as r:
        row = kb.iadd(r0, r)
        b = kb.convert(kb.load(bias, [kb.iadd(f_first, r)]), f32) if bias is not None else None
        with kb.loop(cols) as c:
            q = kb.iadd(j0, c)
            v = kb.load(acc2, [row, q])
            if b is not None:
                v = kb.addf(v, b)
            if post is not None:
                v = post(kb, v, [row, q], extras)
            kb.store_c(v, out2, [row, q])
