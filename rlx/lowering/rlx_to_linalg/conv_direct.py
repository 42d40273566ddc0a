"""The direct convolution kernel (depthwise, grouped, small, integer, no-BLAS convs).

Work is split into units of (image, filter, block of output rows), run as tasks of
`rlx_rt.parallel_call` on the runtime's pool (on the calling thread below
`driver.SERIAL_MACS` multiply-adds). For one output row the kernel accumulates into a
row buffer `acc[ow]` in the compute type (f32 for f16/bf16: one rounding at the end),
which stays in L1:

    acc[:] = bias[f]
    for c in the filter's input channels, for kernel rows ki that read inside the input:
        interior [jlo, jhi): acc[j] += sum over kj of x[.., ih, j*sw + kj*dw - pl] * w[kj]
        borders: per tap kj, only the columns whose tap reads inside the input
    out[.., i, :] = epilogue(acc)   (activation, residual: still in L1)

The interior loop is a plain unit-stride loop over output columns (stride `sw` in the
input) with the `kw` taps unrolled and their weights in registers, which LLVM's loop
vectorizer widens; all column ranges are compile-time constants (`static_range`), the
kernel-row range is computed once per row (`tap_span`), so no loop tests bounds.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from xdsl.dialects import arith
from xdsl.dialects.builtin import MemRefType, i64
from xdsl.ir import Attribute, SSAValue

from rlx.dialects.rlx_rt import ParallelCallOp
from rlx.lowering.gemm.driver import SERIAL_MACS, _owner, attr_text
from rlx.lowering.rlx_to_linalg.conv_common import ConvGeom, static_range, tap_range, tap_span
from rlx.lowering.rlx_to_linalg.kernel_builder import (
    KernelBuilder,
    compute_type,
    elem,
    is_float_t,
)
from rlx.lowering.rlx_to_linalg.matmul import mac

PostFn = Callable[[KernelBuilder, SSAValue, list[SSAValue], list[SSAValue]], SSAValue]
"""`post(kb, acc, [n, f, i, j], extras)`: the final compute-type value of one output."""

UNROLL_KW = 16
"""Kernel widths up to this get the fused interior loop; wider ones one loop per tap."""

UNROLL_TAPS = 64
"""Kernels up to this many taps read all their rows in one pass over interior rows."""

ROW_BLOCK_OUTPUTS = 2048
"""Outputs per unit when images x filters are too few to keep the pool busy."""

MAX_TASKS = 256


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
    post: PostFn | None = None,
    extras: Sequence[SSAValue] = (),
    key: object = "",
) -> None:
    """Emit the direct convolution (module docstring); `post` is the fused epilogue
    (`key` its identity for kernel deduplication), `extras` the buffers it reads."""
    rb, rows = _units(g)
    units = g.n * g.f * rb
    tasks = min(units, MAX_TASKS)
    per = -(-units // tasks)
    tasks = -(-units // per)
    operands = [x, w, *([bias] if bias is not None else []), out, *extras]
    kernels = _owner(kb)
    if kernels is None:  # no module registry: the whole range inline
        _body(kb, g, operands, bias is not None, len(extras), post, kb.idx(0), units, rb, rows)
        return
    types: list[Attribute] = [MemRefType(i64, [1]), *(v.type for v in operands)]
    wkey = ("conv-direct", g, rb, rows, per, bias is not None, key,
            tuple(attr_text(t) for t in types))  # fmt: skip

    def build(wb: KernelBuilder, args: list[SSAValue]) -> None:
        t = wb.convert(wb.load(args[0], [0]), wb.idx(0).type)
        u0 = wb.imul(t, per)
        u1 = wb.imin(wb.iadd(u0, per), wb.idx(units))
        _body(wb, g, args[1:], bias is not None, len(extras), post, u0, u1, rb, rows)

    worker = kernels.kernel(wkey, types, build, "conv direct", noalias=True)
    threads = 1 if g.macs < SERIAL_MACS else min(tasks, 64)
    table = kb.table(list(range(tasks)), i64)
    kb.add(ParallelCallOp(worker, [table, *operands], tasks, [8] + [0] * len(operands), threads))


def _body(
    kb: KernelBuilder,
    g: ConvGeom,
    args: Sequence[SSAValue],
    has_bias: bool,
    n_extras: int,
    post: PostFn | None,
    u0: SSAValue,
    u1: SSAValue | int,
    rb: int,
    rows: int,
) -> None:
    """Units [u0, u1) of the convolution."""
    x, w = args[0], args[1]
    bias = args[2] if has_bias else None
    out = args[3 if has_bias else 2]
    extras = list(args[len(args) - n_extras :]) if n_extras else []
    ct = compute_type(elem(out))
    acc = kb.scratch([g.ow], ct)
    zero = kb.const(0.0 if is_float_t(ct) else 0, ct)
    with kb.loop(u1, u0) as u:
        blk = kb.v(arith.RemUIOp(u, kb.idx(rb))) if rb > 1 else kb.idx(0)
        nf = kb.idiv(u, rb)
        f = kb.v(arith.RemUIOp(nf, kb.idx(g.f)))
        n = kb.idiv(nf, g.f)
        i0 = kb.imul(blk, rows)
        i1 = kb.imin(kb.iadd(i0, rows), kb.idx(g.oh))
        init = kb.convert(kb.load(bias, [f]), ct) if bias is not None else zero
        cbase = kb.imul(kb.idiv(f, g.fg), g.cg)
        # Output rows whose every kernel row reads inside the input get all taps in one pass.
        spans = [static_range(ki * g.dh, g.pt, g.h, g.sh, g.oh) for ki in range(g.kh)]
        r_lo, r_hi = max(lo for lo, _ in spans), min(hi for _, hi in spans)
        fuse = g.kw <= UNROLL_KW and g.kh * g.kw <= UNROLL_TAPS and r_hi > r_lo and g.kh > 1

        def row(i: SSAValue, interior: bool) -> None:
            with kb.loop(g.ow) as j:
                kb.store(init, acc, [j])
            with kb.loop(g.cg) as c:
                ci = kb.iadd(cbase, c)
                if interior:
                    ihs = [kb.iadd(kb.imul(i, g.sh), ki * g.dh - g.pt) for ki in range(g.kh)]
                    leads = [[f, c, kb.idx(ki)] for ki in range(g.kh)]
                    _row(kb, g, x, w, acc, ct, [n, ci], ihs, leads)
                else:
                    k_lo, k_hi = tap_span(kb, i, g.sh, g.pt, g.dh, g.h, g.kh)
                    with kb.loop(k_hi, k_lo) as ki:
                        ih = kb.subi(kb.iadd(kb.imul(i, g.sh), kb.imul(ki, g.dh)), kb.idx(g.pt))
                        _row(kb, g, x, w, acc, ct, [n, ci], [ih], [[f, c, ki]])
            with kb.loop(g.ow) as j:
                v = kb.load(acc, [j])
                if post is not None:
                    v = post(kb, v, [n, f, i, j], extras)
                kb.store_c(v, out, [n, f, i, j])

        if not fuse:
            with kb.loop(i1, i0) as i:
                row(i, False)
            return
        a = kb.imin(kb.imax(i0, kb.idx(r_lo)), i1)
        b = kb.imax(kb.imin(i1, kb.idx(r_hi)), a)
        for lo, hi, interior in ((i0, a, False), (a, b, True), (b, i1, False)):
            with kb.loop(hi, lo) as i:
                row(i, interior)


def _row(
    kb: KernelBuilder,
    g: ConvGeom,
    x: SSAValue,
    w: SSAValue,
    acc: SSAValue,
    ct: Attribute,
    x_lead: list[SSAValue],
    ihs: list[SSAValue],
    w_leads: list[list[SSAValue]],
) -> None:
    """acc[j] += sum over input rows r and kj of
    x[*x_lead, ihs[r], j*sw + kj*dw - pl] * w[*w_leads[r], kj]."""
    spans = [static_range(kj * g.dw, g.pl, g.w, g.sw, g.ow) for kj in range(g.kw)]

    def col(j: SSAValue, kj: int) -> SSAValue:
        return kb.iadd(kb.imul(j, g.sw), kj * g.dw - g.pl)

    def tap(j: SSAValue, r: int, kj: int, s: SSAValue, wv: SSAValue) -> SSAValue:
        xv = kb.convert(kb.load(x, [*x_lead, ihs[r], col(j, kj)]), ct)
        return mac(kb, s, xv, wv)

    if g.kw > UNROLL_KW:
        (ih,), (w_lead,) = ihs, w_leads
        with kb.loop(g.kw) as kj:
            wv = kb.convert(kb.load(w, [*w_lead, kj]), ct)
            lo, hi = tap_range(kb, kb.imul(kj, g.dw), g.pl, g.w, g.sw, g.ow)
            with kb.loop(hi, lo) as j:
                iw = kb.subi(kb.iadd(kb.imul(j, g.sw), kb.imul(kj, g.dw)), kb.idx(g.pl))
                xv = kb.convert(kb.load(x, [*x_lead, ih, iw]), ct)
                kb.store(mac(kb, kb.load(acc, [j]), xv, wv), acc, [j])
        return
    rows = range(len(ihs))
    wvs = [[kb.convert(kb.load(w, [*w_leads[r], kj]), ct) for kj in range(g.kw)] for r in rows]
    jlo = max(lo for lo, _ in spans)
    jhi = min(hi for _, hi in spans)
    if jhi > jlo:
        with kb.loop(jhi, jlo) as j:
            s = kb.load(acc, [j])
            for r in rows:
                for kj in range(g.kw):
                    s = tap(j, r, kj, s, wvs[r][kj])
            kb.store(s, acc, [j])
    for kj, (lo, hi) in enumerate(spans):
        parts = ((lo, min(hi, jlo)), (max(lo, jhi), hi)) if jhi > jlo else ((lo, hi),)
        for a, b in parts:
            if b > a:
                with kb.loop(b, a) as j:
                    s = kb.load(acc, [j])
                    for r in rows:
                        s = tap(j, r, kj, s, wvs[r][kj])
                    kb.store(s, acc, [j])
