"""The direct convolution kernel (depthwise, grouped, small, integer, no-BLAS convs).

Work is split into units of (image, filter, block of output rows), run as tasks of
`rlx_rt.parallel_call` on the runtime's pool (on the calling thread below
`driver.SERIAL_MACS` multiply-adds). For one output row the kernel accumulates into a
row buffer `acc` in the compute type (f32 for f16/bf16: one rounding at the end), which
stays in L1:

    acc[:] = bias[f]
    for c in the filter's input channels, for kernel rows ki that read inside the input
    (all of them, in one pass, for interior rows):
        interior [jlo, jhi): acc[j] += sum over taps of x[.., ih, j*sw + kj*dw - pl] * w
        border columns: a run-time loop over kj with the column test
    out[.., i, :] = epilogue(acc)   (activation, residual: still in L1)

The interior loop is a plain unit-stride loop over output columns (stride `sw` in the
input) with the taps unrolled and their weights in registers, which LLVM's loop
vectorizer widens; the kernel-row range is computed once per row, so the interior has
no bounds tests. The worker is shape-generic: the taps (kh, kw), strides, dilations and
top/left padding are constants, every size (images, channels, spatial) comes from a
run-time table, and all buffers are flat views, so one kernel serves every depthwise
conv of a model that shares its window.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import arith
from xdsl.dialects.builtin import MemRefType, i64
from xdsl.ir import Attribute, SSAValue

from rlx.lowering.gemm.conv import _flat
from rlx.lowering.gemm.driver import EpilogueFn, launch_tasks
from rlx.lowering.gemm.ir import TableGeo, attr_text
from rlx.lowering.rlx_to_linalg.conv_common import ConvGeom, static_range, window_taps
from rlx.lowering.rlx_to_linalg.conv_small import (
    body_pointwise,
    body_small,
    plane_sizes,
    small_plane,
    small_pointwise,
)
from rlx.lowering.rlx_to_linalg.kernel_builder import (
    KernelBuilder,
    compute_type,
    elem,
    is_float_t,
)
from rlx.lowering.rlx_to_linalg.matmul import mac

"""`post(kb, acc, [flat output index], flat extras)`: the final compute-type value of one
output (the kernels read every buffer through a flat view)."""

UNROLL_KW = 16
"""Kernel widths up to this get the fused interior loop; wider ones one loop per tap."""

UNROLL_TAPS = 64
"""Kernels up to this many taps read all their rows in one pass over interior rows."""

ROW_BLOCK_OUTPUTS = 2048
"""Outputs per unit when images x filters are too few to keep the pool busy."""

MAX_TASKS = 256

ACC_ELEMENTS = 4096
"""Row buffer length of the shape-generic kernel (wider outputs get a kernel of their own)."""

RUNTIME = (
    "n", "c", "h", "w", "f", "cg", "fg", "oh", "ow", "rb", "rows", "units", "per", "wp", "need",
)  # fmt: skip
"""The sizes the shape-generic kernel reads from its geometry table; the kernel's taps
(kh, kw), strides, dilations and top/left padding stay compile-time constants."""


def _units(g: ConvGeom) -> tuple[int, int]:
    """(row blocks per output plane, rows per block)."""
    if g.n * g.f >= 16:
        return 1, g.oh
    rows = max(1, min(g.oh, ROW_BLOCK_OUTPUTS // max(1, g.ow)))
    return -(-g.oh // rows), rows


def emit_direct(
    kb: KernelBuilder,
    g: ConvGeom,
    x: SSAValue,
    w: SSAValue,
    bias: SSAValue | None,
    out: SSAValue,
    post: EpilogueFn | None = None,
    extras: Sequence[SSAValue] = (),
    key: object = "",
) -> None:
    """Emit the direct convolution (module docstring); `post` is the fused epilogue
    (`key` its identity for kernel deduplication), `extras` the buffers it reads. The
    worker is shape-generic: one per (taps, strides, dilations, top/left padding, types,
    epilogue) serves every image, channel and spatial size."""
    pointwise = small_pointwise(g)
    small = not pointwise and small_plane(g)
    rb, rows = (1, g.oh) if small or pointwise else _units(g)
    units = g.n * g.f * rb
    tasks = min(units, MAX_TASKS)
    per = -(-units // tasks)
    tasks = -(-units // per)
    wp, need = plane_sizes(g) if small else (0, 0)
    values = dict(n=g.n, c=g.c, h=g.h, w=g.w, f=g.f, cg=g.cg, fg=g.fg, oh=g.oh, ow=g.ow,
                  rb=rb, rows=rows, units=units, per=per, wp=wp, need=need)  # fmt: skip
    acc_len = max(ACC_ELEMENTS, g.ow)
    static = (g.kh, g.kw, g.sh, g.sw, g.dh, g.dw, g.pt, g.pl, acc_len, small, pointwise)
    body = _body
    if small or pointwise:
        alt = body_small if small else body_pointwise
        body = lambda kb2, g2, d2, _acc, *rest: alt(kb2, g2, d2, *rest)  # noqa: E731
    operands = [_flat(kb, v) for v in (x, w, *([bias] if bias is not None else []), out, *extras)]
    kernels = kb.kernels
    if kernels is None:  # no module registry: the whole range inline, sizes as constants
        dims = TableGeo(kb, RUNTIME, None, values)
        body(kb, g, dims, acc_len, operands, bias is not None, len(extras), post, kb.idx(0),
             dims.units)  # fmt: skip
        return
    geo = kb.table([values[k] for k in RUNTIME], i64)
    types: list[Attribute] = [MemRefType(i64, [1]), geo.type, *(v.type for v in operands)]
    wkey = ("conv-direct", static, bias is not None, key, tuple(attr_text(t) for t in types))

    def build(wb: KernelBuilder, args: list[SSAValue]) -> None:
        dims = TableGeo(wb, RUNTIME, args[1])
        t = wb.convert(wb.load(args[0], [0]), wb.idx(0).type)
        u0 = wb.muli(t, dims.per)
        u1 = wb.imin(wb.addi(u0, dims.per), dims.units)
        body(wb, g, dims, acc_len, args[2:], bias is not None, len(extras), post, u0, u1)

    label = "conv direct" + (" small planes" if small else " pointwise" if pointwise else "")
    worker = kernels.kernel(wkey, types, build, label, noalias=True)
    launch_tasks(kb, worker, [geo, *operands], tasks, g.macs)


def _body(
    kb: KernelBuilder,
    g: ConvGeom,
    d: TableGeo,
    acc_len: int,
    args: Sequence[SSAValue],
    has_bias: bool,
    n_extras: int,
    post: EpilogueFn | None,
    u0: SSAValue,
    u1: SSAValue,
) -> None:
    """Units [u0, u1) of the convolution. Only `g`'s taps, strides, dilations and
    top/left padding are used as constants; every size comes from `d`."""
    x, w = args[0], args[1]
    bias = args[2] if has_bias else None
    out = args[3 if has_bias else 2]
    extras = list(args[len(args) - n_extras :]) if n_extras else []
    ct = compute_type(elem(out))
    acc = kb.scratch([acc_len], ct)
    zero = kb.const(0.0 if is_float_t(ct) else 0, ct)
    taps = g.kh * g.kw
    fuse = g.kw <= UNROLL_KW and taps <= UNROLL_TAPS and g.kh > 1
    # Output rows whose every kernel row reads inside the input get all taps in one pass:
    # [r_lo, r_hi) with r_lo a constant (the first kernel row) and r_hi from the last one.
    r_lo = static_range(0, g.pt, 1 << 40, g.sh, 1 << 40)[0]
    r_hi = _hi(kb, (g.kh - 1) * g.dh, g.pt, d.h, g.sh, d.oh)
    with kb.loop(u1, u0) as u:
        blk = kb.v(arith.RemUIOp(u, d.rb))
        nf = kb.v(arith.DivUIOp(u, d.rb))
        f = kb.v(arith.RemUIOp(nf, d.f))
        n = kb.v(arith.DivUIOp(nf, d.f))
        i0 = kb.muli(blk, d.rows)
        i1 = kb.imin(kb.addi(i0, d.rows), d.oh)
        init = kb.convert(kb.load(bias, [f]), ct) if bias is not None else zero
        cbase = kb.muli(kb.v(arith.DivUIOp(f, d.fg)), d.cg)
        out_plane = kb.muli(kb.addi(kb.muli(n, d.f), f), d.oh)

        def row(i: SSAValue, interior: bool) -> None:
            with kb.loop(d.ow) as j:
                kb.store(init, acc, [j])
            with kb.loop(d.cg) as c:
                ci = kb.addi(cbase, c)
                x_plane = kb.muli(kb.addi(kb.muli(n, d.c), ci), d.h)
                w_base = kb.imul(kb.addi(kb.muli(f, d.cg), c), taps)
                if interior:
                    ihs = [kb.iadd(kb.imul(i, g.sh), ki * g.dh - g.pt) for ki in range(g.kh)]
                    rows_ = [(kb.muli(kb.addi(x_plane, ih), d.w), kb.iadd(w_base, ki * g.kw))
                             for ki, ih in enumerate(ihs)]  # fmt: skip
                    _row(kb, g, d, x, w, acc, ct, rows_)
                else:
                    top = kb.subi(kb.imul(i, g.sh), kb.idx(g.pt))
                    k_lo, k_hi = window_taps(kb, top, g.dh, d.h, g.kh)
                    with kb.loop(k_hi, k_lo) as ki:
                        ih = kb.subi(kb.iadd(kb.imul(i, g.sh), kb.imul(ki, g.dh)), kb.idx(g.pt))
                        x_row = kb.muli(kb.addi(x_plane, ih), d.w)
                        _row(kb, g, d, x, w, acc, ct, [(x_row, kb.addi(w_base, kb.imul(ki, g.kw)))])
            o_row = kb.muli(kb.addi(out_plane, i), d.ow)
            with kb.loop(d.ow) as j:
                at = kb.addi(o_row, j)
                v = kb.load(acc, [j])
                if post is not None:
                    v = post(kb, v, [at], extras)
                kb.store_c(v, out, [at])

        if not fuse:
            with kb.loop(i1, i0) as i:
                row(i, False)
        else:
            a = kb.imin(kb.imax(i0, kb.idx(r_lo)), i1)
            b = kb.imax(kb.imin(i1, r_hi), a)
            for lo, hi, interior in ((i0, a, False), (a, b, True), (b, i1, False)):
                with kb.loop(hi, lo) as i:
                    row(i, interior)


def _hi(kb: KernelBuilder, tap_off: int, pad: int, size: SSAValue, stride: int,
        out: SSAValue) -> SSAValue:  # fmt: skip
    """End of the output positions o with o*stride + tap_off - pad < size (>= 0)."""
    b = kb.iadd(size, pad - tap_off - 1 + stride)  # o*stride <= b - stride
    return kb.imin(out, kb.idiv(kb.imax(b, kb.idx(0)), stride))


def _row(
    kb: KernelBuilder,
    g: ConvGeom,
    d: TableGeo,
    x: SSAValue,
    w: SSAValue,
    acc: SSAValue,
    ct: Attribute,
    rows: list[tuple[SSAValue, SSAValue]],
) -> None:
    """acc[j] += sum over input rows (x_row, w_row) and kj of
    x[x_row + j*sw + kj*dw - pl] * w[w_row + kj] (flat offsets)."""

    def tap(j: SSAValue, r: int, kj: int, s: SSAValue, wv: SSAValue) -> SSAValue:
        at = kb.iadd(kb.addi(rows[r][0], kb.imul(j, g.sw)), kj * g.dw - g.pl)
        return mac(kb, s, kb.convert(kb.load(x, [at]), ct), wv)

    if g.kw > UNROLL_KW:
        ((x_row, w_row),) = rows
        with kb.loop(g.kw) as kj:
            wv = kb.convert(kb.load(w, [kb.addi(w_row, kj)]), ct)
            off = kb.subi(kb.imul(kj, g.dw), kb.idx(g.pl))
            lo = kb.idiv(
                kb.imax(kb.subi(kb.idx(g.pl + g.sw - 1), kb.imul(kj, g.dw)), kb.idx(0)), g.sw
            )
            hi = kb.imin(d.ow, kb.idiv(kb.imax(kb.subi(kb.iadd(d.w, g.pl - 1 + g.sw),
                                                         kb.imul(kj, g.dw)), kb.idx(0)), g.sw))  # fmt: skip
            with kb.loop(hi, lo) as j:
                at = kb.addi(kb.addi(x_row, kb.imul(j, g.sw)), off)
                xv = kb.convert(kb.load(x, [at]), ct)
                kb.store(mac(kb, kb.load(acc, [j]), xv, wv), acc, [j])
        return
    nr = range(len(rows))
    wvs = [
        [kb.convert(kb.load(w, [kb.iadd(rows[r][1], kj)]), ct) for kj in range(g.kw)] for r in nr
    ]
    los = [static_range(kj * g.dw, g.pl, 1 << 40, g.sw, 1 << 40)[0] for kj in range(g.kw)]
    his = [_hi(kb, kj * g.dw, g.pl, d.w, g.sw, d.ow) for kj in range(g.kw)]
    jlo = kb.idx(max(los))
    jhi = his[0]
    for h in his[1:]:
        jhi = kb.imin(jhi, h)
    jhi = kb.imax(jhi, jlo)  # [jlo, jhi) may be empty; the borders then cover every column
    with kb.loop(jhi, jlo) as j:
        s = kb.load(acc, [j])
        for r in nr:
            for kj in range(g.kw):
                s = tap(j, r, kj, s, wvs[r][kj])
        kb.store(s, acc, [j])
    # The few border columns: a run-time loop over the taps with the column test (small
    # code: the interior loop above is the one worth unrolling and vectorizing).
    zero, last = (
        kb.const(0, ct) if not is_float_t(ct) else kb.const(0.0, ct),
        kb.subi(d.w, kb.idx(1)),
    )
    for a, b in ((kb.idx(0), kb.imin(jlo, d.ow)), (jhi, d.ow)):
        with kb.loop(b, a) as j, kb.loop(g.kw) as kj:
            iw = kb.subi(kb.iadd(kb.imul(j, g.sw), kb.imul(kj, g.dw)), kb.idx(g.pl))
            inside = kb.v(arith.AndIOp(kb.cmpi("sge", iw, kb.idx(0)), kb.cmpi("slt", iw, d.w)))
            iw_c = kb.imax(kb.imin(iw, last), kb.idx(0))
            s = kb.load(acc, [j])
            for r in nr:
                xv = kb.convert(kb.load(x, [kb.addi(rows[r][0], iw_c)]), ct)
                wv = kb.convert(kb.load(w, [kb.addi(rows[r][1], kj)]), ct)
                s = mac(kb, s, kb.select(inside, xv, zero), wv)
            kb.store(s, acc, [j])
