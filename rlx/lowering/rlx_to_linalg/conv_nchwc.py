"""conv2d in the blocked channel layout (NCHWc, `layout = "nchwc"`): a direct register-tile
kernel (oneDNN / MLAS style) for groups == 1; depthwise convs are `conv_nchwc_dw`'s.

x `[N, C/Bx, H, W, Bx]`, weights `[F/B, C/Bx, KH, KW, Bx, B]`, out `[N, F/B, OH, OW, B]`:
x's block Bx is B, or 1 for the stem form (x an NCHW tensor reshaped: 3 input channels
are not blockable), the first-layer kernel of oneDNN (per tap one weight vector of the
B output channels, broadcast inputs; no `to_nchwc` of the result). Tasks of `rlx_rt.parallel_call` are (image, group of output-channel block pairs, block of
output rows). A task

1. copies the input rows its output rows read, for every input-channel block, into a
   zero-padded f32 slab `[C/Bx, R, WP, Bx]` (f16/bf16 widened; WP covers the left/right
   padding and the last, partial pixel tile), so the microkernel never tests a bound;
2. per pair of output blocks, output row and tile of `u` pixels, calls the register-tile
   microkernel (`gemm/conv_blocked.py`) over the kernel rows that read inside the input
   (clipped per row), all input-channel blocks and taps;
3. applies `+ bias`, the epilogue (residual, activation) and the narrowing to the tile
   while it is in L1, storing only the tile's pixels inside the row.

Tasks split the output rows when the input is larger than the weights (early layers:
every task reads the weights once from cache) and the output-channel blocks otherwise
(late layers: each weight is read once per call), `balance`d for 2 and 4 threads. The worker is shape-generic (sizes
from a run-time table): one per (tile, block sizes, kernel width, column stride and
dilation, element types, epilogue). The geometry and the split: `conv_nchwc_plan`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from xdsl.dialects import arith, func
from xdsl.dialects.builtin import (
    Float32Type,
    MemRefType,
    f32,
    i64,
)
from xdsl.ir import Attribute, SSAValue

from rlx.dialects.rlx.fused import FusedConv2dResidualOp
from rlx.dialects.rlx.window import Conv2dOp
from rlx.lowering.gemm.conv import _addr, _flat, _if, widened_flat
from rlx.lowering.gemm.conv_blocked import (
    VectorEpilogue,
    at,
    conv_blocked_microkernel,
    epilogue_lanes,
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
from rlx.lowering.rlx_to_linalg.conv_nchwc_plan import (
    GEOMETRY,
    SLAB_ELEMENTS,
    BlockedGeom,
    direct_tile,
    plan_tasks,
)
from rlx.lowering.rlx_to_linalg.kernel_builder import KernelBuilder, elem

AnyConv = Conv2dOp | FusedConv2dResidualOp


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
    g, u, ut, nblk = direct_tile(g, isinstance(elem(x), Float32Type))
    planned = plan_tasks(g, u, nblk, isinstance(elem(x), Float32Type), ut)
    if planned is None:
        return False
    mode, plan = planned
    tasks = g.n * plan["rb"] * plan["fgroups"]
    wf = widened_flat(kb, w)  # f16/bf16 weights: widened once per call
    geo = kb.table(list(plan.values()), i64)
    xf = _flat(kb, x)
    if mode == "shared":  # one padded f32 copy of x for all tasks
        rr, wrow = plan["srows"], plan["wp"] * g.xb
        slab = kb.scratch([g.n * g.cb * rr * wrow], f32)
        with kb.loop(g.n) as n:
            base = kb.imul(n, g.cb * rr * wrow)
            r_lo, r_hi = min(g.pt, rr), max(min(g.h + g.pt, rr), min(g.pt, rr))
            _fill_slab(kb, xf, slab, base, n, kb.idx(g.cb), kb.idx(g.h), kb.idx(-g.pt),
                       kb.idx(rr), kb.idx(r_lo), kb.idx(r_hi), kb.idx(wrow), g.pl * g.xb,
                       g.w * g.xb)  # fmt: skip
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
        ut,
        nblk,
        tail,
        g.b,
        g.xb,
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

    def uks_of(width: int) -> tuple[str, str | None]:
        return (
            conv_blocked_microkernel(kernels, width, nblk, g.b, g.kw, g.sw, g.dw, epi, g.xb),
            conv_blocked_microkernel(kernels, width, 1, g.b, g.kw, g.sw, g.dw, epi, g.xb)
            if tail
            else None,
        )

    uks = {w_: uks_of(w_) for w_ in (u, ut) if w_}

    def build(wb: KernelBuilder, wargs: list[SSAValue]) -> None:
        rest = wargs[4:]
        wbias = rest.pop(0) if bias is not None else None
        wout = rest.pop(0)
        d = TableGeo(wb, GEOMETRY, wargs[1])
        _worker(wb, mode, d, g, (u, ut), nblk, uks, wargs[0], wargs[2], wargs[3], wbias, wout,
                post, rest, epi, tile_epi)  # fmt: skip

    label = (f"conv nchwc {u}x{nblk}x{g.b}" + (f"+{ut}" if ut else "")
             + (f" x{g.xb}" if g.xb != g.b else ""))  # fmt: skip
    worker = kernels.kernel(wkey, wtypes, build, label, noalias=True)
    launch_tasks(kb, worker, args, tasks, g.macs)
    return True


def call_full_or_tail(kb: KernelBuilder, uks: tuple[str, str | None],
                      full: Callable[[], SSAValue], args: Sequence[SSAValue]) -> None:  # fmt: skip
    """Call microkernel `uks[0]` on `args`, or, when the tile has a tail variant `uks[1]`,
    `uks[0]` where `full()` (built only then: all blocks of the tile present) and `uks[1]`
    elsewhere."""
    main, tail = uks
    if tail is None:
        kb.add(func.CallOp(main, list(args), []))
        return
    _if(kb, full(), lambda: kb.add(func.CallOp(main, list(args), [])),
        lambda: kb.add(func.CallOp(tail, list(args), [])))  # fmt: skip


def _fill_slab(kb: KernelBuilder, x: SSAValue, slab: SSAValue, base: SSAValue, n: SSAValue,
               cbs: SSAValue, h: SSAValue, ih0: SSAValue, rr: SSAValue, r_lo: SSAValue,
               r_hi: SSAValue, wrow: SSAValue, left: int | SSAValue,
               row_elems: int | SSAValue) -> None:  # fmt: skip
    """slab[base + (c·rr + r)·wrow + left + e] = x[n, c, ih0 + r, e / Bx, e % Bx] (f32)
    for the slab rows [r_lo, r_hi) that are input rows, zero in the left / right padding
    (Bx: x's block; `left`, `row_elems` in elements)."""
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


def _worker(kb: KernelBuilder, mode: str, d: TableGeo, g: BlockedGeom, tiles: tuple[int, int],
            nblk: int, uks: dict[int, tuple[str, str | None]], tid: SSAValue, x: SSAValue,
            w: SSAValue, bias: SSAValue | None, out: SSAValue, post: EpilogueFn | None,
            extras: list[SSAValue], epi: VectorEpilogue | None,
            tile_epi: VectorEpilogue | None) -> None:  # fmt: skip
    """One task (image, output-channel group, row block); sizes from `d`, only the input
    mode, tiles (`u` pixels, the row's last tile `ut`: 0 for none), block size, kernel
    width, column stride and dilation from `g`. `x` is the input (mode "inplace"), the
    shared padded copy ("shared") or the input to copy rows of ("slab"). `uks`: the
    microkernels per tile width."""
    b = g.b
    u, ut = tiles
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
    xb = g.xb
    wrow = kb.imul(d.wp, xb)  # slab row stride (elements)
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
                   kb.imul(d.pl, xb), kb.imul(d.w, xb))  # fmt: skip
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
        w_el = kb.imul(kb.addi(kb.muli(fb0, kb.muli(d.cb, d.kh)), kh_lo), g.kw * xb * b)
        w_addr = kb.iadd(_addr(kb, w), kb.imul(w_el, 4))

        def one_tile(ow0: SSAValue, width: int) -> None:
            x_el = kb.addi(kb.muli(srow, wrow), kb.imul(ow0, g.sw * xb))
            x_addr = kb.iadd(slab_addr, kb.imul(x_el, 4))
            valid = kb.imin(kb.idx(width), kb.subi(d.ow, ow0))
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

            call_full_or_tail(
                kb, uks[width], lambda: kb.cmpi("eq", nb_here, kb.idx(nblk)), call_args
            )
            if epi is None and tile_epi is not None:  # f32 throughout: the vector loop
                _tile_vector_epilogue(kb, tile_addr, width, b, nb_here, valid, fb0,
                                      kb.muli(kb.addi(kb.muli(n, d.fb), fb0), d.oh), o, d, ow0,
                                      bias, extras, out, tile_epi)  # fmt: skip
            elif epi is None:  # the tile's epilogue in L1
                with kb.loop(nb_here) as bj, kb.loop(valid) as p:
                    f = kb.addi(fb0, bj)
                    o_el = kb.imul(kb.addi(kb.muli(kb.addi(kb.muli(kb.addi(kb.muli(n, d.fb), f), d.oh),
                                                          o), d.ow), kb.addi(ow0, p)), b)  # fmt: skip
                    t_el = kb.imul(kb.addi(kb.imul(bj, width), p), b)
                    _tile_epilogue(kb, tile, t_el, bias, f, b, out, o_el, post, extras)

        with kb.loop(kb.subi(d.nbw, one) if ut else d.nbw) as jb:
            one_tile(kb.imul(jb, u), u)
        if ut:
            one_tile(kb.imul(kb.subi(d.nbw, one), u), ut)


def _tile_vector_epilogue(kb: KernelBuilder, tile_addr: SSAValue, width: int, b: int,
                          nb_here: SSAValue, valid: SSAValue, fb0: SSAValue, row0: SSAValue,
                          o: SSAValue, d: TableGeo, ow0: SSAValue, bias: SSAValue | None,
                          extras: list[SSAValue], out: SSAValue,
                          epi: VectorEpilogue) -> None:  # fmt: skip
    """`+ bias`, `+ residual` and the exp-based activation `epi` on the `valid` pixels of
    the f32 tile `[nblk, width, B]` in L1, stored into the f32 output: `epilogue_lanes`
    per vector (two pixels on AVX-512 with B = 8; an odd last pixel alone). `row0`: the
    output plane index of block `fb0` (`(n · FB + fb0) · OH`)."""
    k = epilogue_lanes(b) // b
    with kb.loop(nb_here) as bj:
        f = kb.addi(fb0, bj)
        o_el = kb.imul(kb.addi(kb.muli(kb.addi(kb.addi(row0, kb.muli(bj, d.oh)), o), d.ow), ow0), b)
        t_el = kb.imul(bj, width * b)
        bv = None
        if bias is not None:
            bv = vload(kb, at(kb, ptr(kb, _addr(kb, bias)), kb.imul(f, b)), b)

        def pixels(p: SSAValue, lanes: int, bvl: SSAValue | None) -> None:
            v = vload(kb, at(kb, ptr(kb, tile_addr), kb.addi(t_el, kb.imul(p, b))), lanes)
            el = kb.addi(o_el, kb.imul(p, b))
            res = at(kb, ptr(kb, _addr(kb, extras[0])), el) if extras else None
            vstore(kb, vector_epilogue(kb, v, bvl, res, epi), at(kb, ptr(kb, _addr(kb, out)), el))

        done = kb.idx(0)
        if k > 1:
            groups = kb.idiv(valid, k)
            bw = widen(kb, bv, k * b) if bv is not None else None
            with kb.loop(groups) as q:
                pixels(kb.imul(q, k), k * b, bw)
            done = kb.imul(groups, k)
        with kb.loop(valid, done) as p:
            pixels(p, b, bv)


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
