"""conv2d in the blocked channel layout (NCHWc, `layout = "nchwc"`): a direct register-tile
kernel (oneDNN / MLAS style) for groups == 1; depthwise convs are `conv_nchwc_dw`'s.

x `[N, C/B, H, W, B]`, weights `[F/B, C/B, KH, KW, B_i, B_o]`, out `[N, F/B, OH, OW, B]`.
Tasks of `rlx_rt.parallel_call` are (image, group of output-channel block pairs, block of
output rows). A task

1. copies the input rows its output rows read, for every input-channel block, into a
   zero-padded f32 slab `[C/B, R, WP, B]` (f16/bf16 widened; WP covers the left/right
   padding and the last, partial pixel tile), so the microkernel never tests a bound;
2. per pair of output blocks, output row and tile of `u` pixels, calls the register-tile
   microkernel (`gemm/conv_blocked.py`) over the kernel rows that read inside the input
   (clipped per row), all input-channel blocks and taps;
3. applies `+ bias`, the epilogue (residual, activation) and the narrowing to the tile
   while it is in L1, storing only the tile's pixels inside the row.

Tasks split the output rows when the input is larger than the weights (early layers:
every task reads the weights once from cache) and the output-channel blocks otherwise
(late layers: each weight is read once per call), `balance`d for 2 and 4 threads. The worker is shape-generic (sizes
from a run-time table): one per (tile, block size, kernel width, column stride and
dilation, element types, epilogue).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.dialects import arith, func
from xdsl.dialects.builtin import (
    Float32Type,
    MemRefType,
    f32,
    i64,
)
from xdsl.ir import Attribute, SSAValue

from rlx.dialects.rlx.compute import Conv2dOp
from rlx.dialects.rlx.fused import FusedConv2dResidualOp
from rlx.lowering.gemm.conv import _addr, _flat, _if, widened_flat
from rlx.lowering.gemm.conv_blocked import (
    VectorEpilogue,
    at,
    conv_blocked_microkernel,
    ptr,
    register_tile,
    vector_epilogue,
    vload,
    vstore,
)
from rlx.lowering.gemm.driver import EpilogueFn, launch_tasks
from rlx.lowering.gemm.ir import TableGeo, attr_text
from rlx.lowering.gemm.vector_act import ACTIVATIONS
from rlx.lowering.rlx_to_linalg.conv_common import ConvGeom, window_taps
from rlx.lowering.rlx_to_linalg.kernel_builder import KernelBuilder, elem, shape

AnyConv = Conv2dOp | FusedConv2dResidualOp

SLAB_ELEMENTS = 1 << 17
"""f32 elements of a task's padded input slab (512 KiB: L2)."""

TASKS = 8
"""Tasks per call the split aims at (several per thread of the pool, for balance)."""

GEOMETRY = (
    "n", "cb", "h", "w", "fb", "kh", "oh", "ow", "sh", "pt", "pl", "dh", "wp", "rows",
    "rb", "pairs", "fgroups", "per", "nbw", "wscb", "wsblk", "srows",
)  # fmt: skip

SHARED_ELEMENTS = 1 << 22
"""Largest padded copy of the whole input shared by the tasks (16 MiB of f32)."""


@dataclass(frozen=True)
class BlockedGeom(ConvGeom):
    """x [n, c/b, h, w, b] * w [f/b, c/b (1: depthwise), kh, kw, ., b] -> [n, f/b, oh, ow, b]:
    `ConvGeom` (in unblocked channels: c, f, cg, groups; `macs` as for NCHW) plus the block
    size `b` and whether the conv is depthwise."""

    b: int
    depthwise: bool

    @property
    def cb(self) -> int:
        """Input-channel blocks."""
        return self.c // self.b

    @property
    def fb(self) -> int:
        """Output-channel blocks."""
        return self.f // self.b

    @staticmethod
    def of(op: object, x: SSAValue, w: SSAValue, out: SSAValue) -> BlockedGeom:
        return BlockedGeom.of_shapes(op, shape(x), shape(w), shape(out))

    @staticmethod
    def of_shapes(op: object, xs: Sequence[int], ws: Sequence[int],
                  os_: Sequence[int]) -> BlockedGeom:  # fmt: skip
        n, cb, h, wd, b = xs
        fb, _, kh, kw, bi, _ = ws
        _, _, oh, ow, _ = os_
        (sh, sw), (pt, pl, pb, pr), (dh, dw) = op.spatial()  # type: ignore[attr-defined]
        groups = getattr(op, "groups", 1)
        depthwise = bi == 1 and groups > 1
        return BlockedGeom(n, cb * b, h, wd, fb * b, 1 if depthwise else cb * b, kh, kw, oh,
                           ow, sh, sw, pt, pl, pb, pr, dh, dw, groups, b, depthwise)  # fmt: skip


BALANCE_THREADS = (2, 4)
"""Thread counts whose balance `balance` weighs, the first one first (the task count is
fixed at compile time; the first is this project's benchmark machine)."""


def _efficiency(n: int, oh: int, pairs: int, rows: int, fgroups: int, threads: int) -> float:
    """Busy share of `threads` threads running the split (rows per task, output-block
    groups) with tasks handed out dynamically: the work over threads x the makespan, the
    largest task taken as the unit."""
    rb, per = -(-oh // rows), -(-pairs // fgroups)
    tasks = n * rb * -(-pairs // per)
    return n * oh * pairs / (threads * -(-tasks // threads) * rows * per)


def balance(n: int, oh: int, pairs: int, rows: int, fgroups: int,
            rows_fixed: bool) -> tuple[int, int]:  # fmt: skip
    """(rows per task, output-block groups): the split aimed at `TASKS`, refined when it
    leaves threads idle (7 row blocks of a 14x14 map on 2 threads: 4 + 3 tasks, 88 %
    busy). Candidates: fewer rows per task (never more: the slab must fit), or 2-3x the
    groups; at most 4 x `TASKS` tasks. The best balance on `BALANCE_THREADS[0]` threads
    wins, then the fewest tasks, then the balance on the others. `rows_fixed`: the split
    is over output blocks only (whole-image input)."""

    def score(r: int, f: int) -> tuple[float, ...]:
        first, *rest = (round(_efficiency(n, oh, pairs, r, f, t), 3) for t in BALANCE_THREADS)
        return (first, -n * -(-oh // r) * f, *rest)

    best, pick = score(rows, fgroups), (rows, fgroups)
    if best[0] >= 0.97:
        return pick
    for r in [rows] if rows_fixed else range(1, rows + 1):
        for f in sorted({fgroups, min(pairs, 2 * fgroups), min(pairs, 3 * fgroups)}):
            if n * -(-oh // r) * f <= 4 * TASKS and (sc := score(r, f)) > best:
                best, pick = sc, (r, f)
    return pick


def plan_tasks(g: BlockedGeom, u: int, nblk: int, f32_x: bool) -> tuple[str, dict[str, int]] | None:
    """The input mode and the geometry table: the task split and slab sizes (None: one
    output row's slab is too large). Modes: "inplace" (f32 x, no padding, whole pixel
    tiles: the microkernel reads x itself), "shared" (tasks split only the output
    channels: one padded copy of x made before the tasks), "slab" (a padded copy of its
    rows per task)."""
    nbw = -(-g.ow // u)
    inplace = f32_x and max(g.pt, g.pl, g.pb, g.pr) == 0 and g.ow % u == 0
    wp = g.w if inplace else max(g.pl + g.w + g.pr, (nbw * u - 1) * g.sw + (g.kw - 1) * g.dw + 1)
    pairs = -(-g.fb // nblk)
    weights = g.fb * g.cb * g.kh * g.kw * g.b * g.b
    inputs = g.n * g.cb * g.h * g.w * g.b

    def slab_rows(rows: int) -> int:
        return (rows - 1) * g.sh + (g.kh - 1) * g.dh + 1

    per_image = -(-TASKS // g.n)
    if weights >= inputs:  # late layers: split the output channels, read each weight once
        fgroups = min(pairs, per_image)
        rb = min(g.oh, -(-per_image // fgroups))
    else:
        rb = min(g.oh, per_image)
        fgroups = min(pairs, -(-per_image // rb))
    rows = -(-g.oh // rb)
    while not inplace and rows > 1 and g.cb * slab_rows(rows) * wp * g.b > SLAB_ELEMENTS:
        rows = -(-rows // 2)
    if not inplace and g.cb * slab_rows(rows) * wp * g.b > SLAB_ELEMENTS:
        return None
    rows, fgroups = balance(g.n, g.oh, pairs, rows, fgroups, rows_fixed=rows >= g.oh)
    rb = -(-g.oh // rows)
    per = -(-pairs // fgroups)
    fgroups = -(-pairs // per)
    vals = dict(n=g.n, cb=g.cb, h=g.h, w=g.w, fb=g.fb, kh=g.kh, oh=g.oh, ow=g.ow, sh=g.sh,
                pt=g.pt, pl=g.pl, dh=g.dh, wp=wp, rows=rows, rb=rb, pairs=pairs,
                fgroups=fgroups, per=per, nbw=nbw, wscb=g.kh * g.kw * g.b * g.b,
                wsblk=g.cb * g.kh * g.kw * g.b * g.b,
                srows=g.h if inplace else slab_rows(g.oh))  # fmt: skip
    assert tuple(vals) == GEOMETRY
    mode = "inplace" if inplace else "slab"
    if (
        not inplace
        and rb == 1
        and fgroups > 1
        and g.n * g.cb * slab_rows(g.oh) * wp * g.b <= SHARED_ELEMENTS
    ):
        mode = "shared"
    return mode, vals


def emit_conv_nchwc(
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
    """Emit the blocked direct convolution (module docstring); False (nothing emitted)
    without a kernel registry or when one output row's slab exceeds `SLAB_ELEMENTS`.
    `vector_epi` states `post` (with the bias) for the microkernel to apply in registers
    when the output, bias and residual are f32 (else the tile's epilogue runs `post`)."""
    kernels = kb.kernels
    if kernels is None or g.depthwise:
        return False
    u, nblk = register_tile(g.fb, g.b, g.ow)
    planned = plan_tasks(g, u, nblk, isinstance(elem(x), Float32Type))
    if planned is None:
        return False
    mode, plan = planned
    tasks = g.n * plan["rb"] * plan["fgroups"]
    wf = widened_flat(kb, w)  # f16/bf16 weights: widened once per call
    geo = kb.table(list(plan.values()), i64)
    xf = _flat(kb, x)
    if mode == "shared":  # one padded f32 copy of x for all tasks
        rr, wrow = plan["srows"], plan["wp"] * g.b
        slab = kb.scratch([g.n * g.cb * rr * wrow], f32)
        with kb.loop(g.n) as n:
            base = kb.imul(n, g.cb * rr * wrow)
            r_lo, r_hi = min(g.pt, rr), max(min(g.h + g.pt, rr), min(g.pt, rr))
            _fill_slab(kb, xf, slab, base, n, kb.idx(g.cb), kb.idx(g.h), kb.idx(-g.pt),
                       kb.idx(rr), kb.idx(r_lo), kb.idx(r_hi), kb.idx(wrow), g.pl * g.b,
                       g.w * g.b)  # fmt: skip
        xf = _flat(kb, slab)
    args = [
        geo,
        xf,
        wf,
        *(_flat(kb, v) for v in (*([bias] if bias else []), out, *extras)),
    ]
    wtypes: list[Attribute] = [MemRefType(i64, [1]), *(v.type for v in args)]
    tail = g.fb % nblk != 0
    f32s = all(isinstance(elem(v), Float32Type) for v in (out, *extras, *([bias] if bias else [])))
    epi = vector_epi if f32s else None
    # The exp-based activations run in the worker's vector loop over the L1 tile: in
    # the microkernel they would be copied per accumulator (u · nblk copies of ~30
    # instructions per microkernel: compile time) for little gain over two L1 accesses.
    tile_epi, epi = (epi, None) if epi is not None and epi.act in ACTIVATIONS else (None, epi)
    static = (
        mode == "slab",
        u,
        nblk,
        tail,
        g.b,
        g.kw,
        g.sw,
        g.dw,
        bias is not None,
        len(extras),
        key,
        epi,
        tile_epi,
    )
    wkey = ("conv-nchwc", static, tuple(attr_text(t) for t in wtypes))
    uks = (
        conv_blocked_microkernel(kernels, u, nblk, g.b, g.kw, g.sw, g.dw, epi),
        conv_blocked_microkernel(kernels, u, 1, g.b, g.kw, g.sw, g.dw, epi) if tail else None,
    )

    def build(wb: KernelBuilder, wargs: list[SSAValue]) -> None:
        rest = wargs[4:]
        wbias = rest.pop(0) if bias is not None else None
        wout = rest.pop(0)
        d = TableGeo(wb, GEOMETRY, wargs[1])
        _worker(wb, mode, d, g, u, nblk, uks, wargs[0], wargs[2], wargs[3], wbias, wout, post,
                rest, epi, tile_epi)  # fmt: skip

    worker = kernels.kernel(wkey, wtypes, build, f"conv nchwc {u}x{nblk}x{g.b}", noalias=True)
    launch_tasks(kb, worker, args, tasks, g.macs)
    return True


def _fill_slab(kb: KernelBuilder, x: SSAValue, slab: SSAValue, base: SSAValue, n: SSAValue,
               cbs: SSAValue, h: SSAValue, ih0: SSAValue, rr: SSAValue, r_lo: SSAValue,
               r_hi: SSAValue, wrow: SSAValue, left: int | SSAValue,
               row_elems: int | SSAValue) -> None:  # fmt: skip
    """slab[base + (c·rr + r)·wrow + left + e] = x[n, c, ih0 + r, e / B, e % B] (f32) for
    the slab rows [r_lo, r_hi) that are input rows, zero in the left / right padding."""
    zero = kb.const(0.0, f32)
    left_v, row_v = kb.idx(left), kb.idx(row_elems)
    right = kb.addi(left_v, row_v)
    with kb.loop(cbs) as c, kb.loop(r_hi, r_lo) as r:
        dst = kb.addi(base, kb.muli(kb.addi(kb.muli(c, rr), r), wrow))
        src = kb.muli(kb.addi(kb.muli(kb.addi(kb.muli(n, cbs), c), h), kb.addi(ih0, r)), row_v)
        with kb.loop(left_v) as e:
            kb.store(zero, slab, [kb.addi(dst, e)])
        with kb.loop(row_v) as e:
            v = kb.convert(kb.load(x, [kb.addi(src, e)]), f32)
            kb.store(v, slab, [kb.addi(dst, kb.addi(left_v, e))])
        with kb.loop(wrow, right) as e:
            kb.store(zero, slab, [kb.addi(dst, e)])


def _worker(kb: KernelBuilder, mode: str, d: TableGeo, g: BlockedGeom, u: int, nblk: int,
            uks: tuple[str, str | None], tid: SSAValue, x: SSAValue, w: SSAValue,
            bias: SSAValue | None, out: SSAValue, post: EpilogueFn | None,
            extras: list[SSAValue], epi: VectorEpilogue | None,
            tile_epi: VectorEpilogue | None) -> None:  # fmt: skip
    """One task (image, output-channel group, row block); sizes from `d`, only the input
    mode, tile, block size, kernel width, column stride and dilation from `g`. `x` is the
    input (mode "inplace"), the shared padded copy ("shared") or the input to copy rows
    of ("slab")."""
    b = g.b
    one = kb.idx(1)
    t = kb.convert(kb.load(tid, [0]), kb.idx(0).type)
    rbk = kb.v(arith.RemUIOp(t, d.rb))
    t2 = kb.v(arith.DivUIOp(t, d.rb))
    fgi = kb.v(arith.RemUIOp(t2, d.fgroups))
    n = kb.v(arith.DivUIOp(t2, d.fgroups))
    o0 = kb.muli(rbk, d.rows)
    o1 = kb.imin(kb.addi(o0, d.rows), d.oh)
    tile = kb.scratch([nblk * u * b], f32)
    tile_addr = _addr(kb, tile)
    wrow = kb.imul(d.wp, b)  # slab row stride (elements)
    if mode == "slab":
        # Slab rows: input rows ih0 + r for r < rr (rows outside the input are never read).
        ih0 = kb.subi(kb.muli(o0, d.sh), d.pt)
        rr = kb.addi(kb.muli(kb.subi(kb.subi(o1, o0), one), d.sh),
                     kb.addi(kb.muli(kb.subi(d.kh, one), d.dh), one))  # fmt: skip
        slab = kb.scratch([SLAB_ELEMENTS], f32)
        slab_addr = _addr(kb, slab)
        r_lo = kb.imin(kb.imax(kb.subi(kb.idx(0), ih0), kb.idx(0)), rr)
        r_hi = kb.imax(kb.imin(kb.subi(d.h, ih0), rr), r_lo)
        _fill_slab(kb, x, slab, kb.idx(0), n, d.cb, d.h, ih0, rr, r_lo, r_hi, wrow,
                   kb.imul(d.pl, b), kb.imul(d.w, b))  # fmt: skip
    else:  # the whole image: x itself, or the padded copy of all its rows
        # (one worker for both: in place, pt = 0 and srows = h)
        ih0 = kb.subi(kb.idx(0), d.pt)
        rr = d.srows
        image = kb.muli(kb.muli(n, d.cb), kb.muli(rr, wrow))
        slab_addr = kb.iadd(_addr(kb, x), kb.imul(image, 4))
    xs_cb = kb.muli(rr, wrow)

    p0 = kb.muli(fgi, d.per)
    p1 = kb.imin(kb.addi(p0, d.per), d.pairs)
    with kb.loop(p1, p0) as pr, kb.loop(o1, o0) as o:
        fb0 = kb.imul(pr, nblk)
        nb_here = kb.imin(kb.idx(nblk), kb.subi(d.fb, fb0))
        # kernel rows reading inside the input: 0 <= o*sh - pt + kh*dh < h
        top = kb.subi(kb.muli(o, d.sh), d.pt)
        kh_lo, kh_hi = window_taps(kb, top, d.dh, d.h, d.kh)
        nkh = kb.imax(kb.subi(kh_hi, kh_lo), kb.idx(0))
        kh_lo = kb.imin(kh_lo, kb.subi(d.kh, kb.idx(1)))
        srow = kb.addi(kb.subi(top, ih0), kb.muli(kh_lo, d.dh))
        w_el = kb.imul(kb.addi(kb.muli(fb0, kb.muli(d.cb, d.kh)), kh_lo), g.kw * b * b)
        w_addr = kb.iadd(_addr(kb, w), kb.imul(w_el, 4))
        with kb.loop(d.nbw) as jb:
            ow0 = kb.imul(jb, u)
            x_el = kb.addi(kb.muli(srow, wrow), kb.imul(ow0, g.sw * b))
            x_addr = kb.iadd(slab_addr, kb.imul(x_el, 4))
            valid = kb.imin(kb.idx(u), kb.subi(d.ow, ow0))
            if epi is None:
                dst, os_blk, b_addr, r_addr = tile_addr, kb.idx(0), kb.idx(0), kb.idx(0)
            else:  # the fused microkernel stores into the output itself
                o_el0 = kb.imul(kb.addi(kb.muli(kb.addi(kb.muli(kb.addi(kb.muli(n, d.fb), fb0),
                                                                d.oh), o), d.ow), ow0), b)  # fmt: skip
                dst = kb.iadd(_addr(kb, out), kb.imul(o_el0, 4))
                os_blk = kb.imul(kb.muli(d.oh, d.ow), b)
                b_addr = (
                    kb.idx(0) if bias is None else kb.iadd(_addr(kb, bias), kb.imul(fb0, 4 * b))
                )
                r_addr = (
                    kb.idx(0) if not extras else kb.iadd(_addr(kb, extras[0]), kb.imul(o_el0, 4))
                )
            call_args = [x_addr, xs_cb, kb.muli(d.dh, wrow), d.cb, nkh, w_addr, d.wscb,
                         d.wsblk, dst, valid, os_blk, b_addr, r_addr]  # fmt: skip

            def call(sym: str) -> None:
                kb.add(func.CallOp(sym, call_args, []))

            if uks[1] is None:
                call(uks[0])
            else:
                tail_sym = uks[1]
                _if(kb, kb.cmpi("eq", nb_here, kb.idx(nblk)), lambda: call(uks[0]),
                    lambda: call(tail_sym))  # fmt: skip
            if epi is None:  # the tile's epilogue in L1
                with kb.loop(nb_here) as bj, kb.loop(valid) as p:
                    f = kb.addi(fb0, bj)
                    o_el = kb.imul(kb.addi(kb.muli(kb.addi(kb.muli(kb.addi(kb.muli(n, d.fb), f), d.oh),
                                                          o), d.ow), kb.addi(ow0, p)), b)  # fmt: skip
                    t_el = kb.imul(kb.addi(kb.imul(bj, u), p), b)
                    if tile_epi is not None:  # f32 throughout: one vector per pixel
                        v = vload(kb, at(kb, ptr(kb, tile_addr), t_el), b)
                        bv = None
                        if bias is not None:
                            bv = vload(kb, at(kb, ptr(kb, _addr(kb, bias)), kb.imul(f, b)), b)
                        res = at(kb, ptr(kb, _addr(kb, extras[0])), o_el) if extras else None
                        v = vector_epilogue(kb, v, bv, res, tile_epi)
                        vstore(kb, v, at(kb, ptr(kb, _addr(kb, out)), o_el))
                    else:
                        _tile_epilogue(kb, tile, t_el, bias, f, b, out, o_el, post, extras)


def _tile_epilogue(kb: KernelBuilder, tile: SSAValue, t_el: SSAValue, bias: SSAValue | None,
                   f: SSAValue, b: int, out: SSAValue, o_el: SSAValue, post: EpilogueFn | None,
                   extras: list[SSAValue]) -> None:  # fmt: skip
    """One pixel's B lanes of the f32 tile: `+ bias`, `post`, narrowed into `out` (any
    element types; LLVM vectorizes the lane loop)."""
    with kb.loop(b) as j:
        v = kb.load(tile, [kb.addi(t_el, j)])
        if bias is not None:
            v = kb.addf(v, kb.convert(kb.load(bias, [kb.addi(kb.imul(f, b), j)]), f32))
        el = kb.addi(o_el, j)
        if post is not None:
            v = post(kb, v, [el], extras)
        kb.store_c(v, out, [el])
