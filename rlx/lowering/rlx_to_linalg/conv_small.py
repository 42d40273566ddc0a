"""The direct convolution of small planes (the 14² and 7² depthwise convs of MobileNets):
one long vector loop per plane instead of many short rows.

Rows of 7 or 14 outputs leave the row kernel of `conv_direct` mostly loop overhead and
scalar remainders. Here each input plane is copied once into a zero-padded plane `xp`
of width `wp = pl + w + pr`; with equal strides `s` the output (i, j) reads
`xp[s·(i·wp + j) + ki·dh·wp + kj·dw]`, so over the flat index `o = i·wp + j` the whole
plane is one unit-stride (stride `s`) loop with every tap unrolled:

    acc[o] += Σ_taps xp[s·o + off_tap] · w_tap      for o in [0, oh·wp)

The columns j >= ow of each row are computed and dropped (they wrap into the next row's
padding). Planes of at most `PLANE_ELEMENTS` padded elements take this path.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from xdsl.dialects import arith
from xdsl.ir import SSAValue

from rlx.lowering.rlx_to_linalg.conv_common import ConvGeom
from rlx.lowering.rlx_to_linalg.kernel_builder import KernelBuilder, compute_type, elem, is_float_t
from rlx.lowering.rlx_to_linalg.matmul import mac

if TYPE_CHECKING:
    from rlx.lowering.gemm.driver import EpilogueFn
    from rlx.lowering.gemm.ir import TableGeo

PLANE_ELEMENTS = 4096
"""Padded-plane buffer length (16 KiB of f32: stays in L1 with the accumulator)."""

SMALL_OW = 32
"""Output widths up to this take the flat-plane loop (wider rows vectorize as rows)."""

MAX_TAPS = 64


def plane_sizes(g: ConvGeom) -> tuple[int, int]:
    """(wp, elements of xp the kernel touches) of the padded plane."""
    wp = g.pl + g.w + g.pr
    reach = g.sh * (g.oh * wp - 1) + (g.kh - 1) * g.dh * wp + (g.kw - 1) * g.dw + 1
    return wp, max(reach, (g.pt + g.h) * wp, g.oh * wp)


def small_plane(g: ConvGeom) -> bool:
    """The flat-plane loop applies: equal strides, a small output width, few taps, and
    the padded plane within `PLANE_ELEMENTS`."""
    return (
        g.sh == g.sw
        and g.ow <= SMALL_OW
        and g.kh * g.kw <= MAX_TAPS
        and plane_sizes(g)[1] <= PLANE_ELEMENTS
    )


def body_small(
    kb: KernelBuilder,
    g: ConvGeom,
    d: TableGeo,
    args: Sequence[SSAValue],
    has_bias: bool,
    n_extras: int,
    post: EpilogueFn | None,
    u0: SSAValue,
    u1: SSAValue,
) -> None:
    """Units [u0, u1) = output planes (image, filter) of the convolution; taps, strides
    and dilations are constants, every size (`d.wp`, `d.need` included) from `d`."""
    x, w = args[0], args[1]
    bias = args[2] if has_bias else None
    out = args[3 if has_bias else 2]
    extras = list(args[len(args) - n_extras :]) if n_extras else []
    ct = compute_type(elem(out))
    xp = kb.scratch([PLANE_ELEMENTS], ct)
    acc = kb.scratch([PLANE_ELEMENTS], ct)
    zero = kb.const(0.0 if is_float_t(ct) else 0, ct)
    taps = [(ki, kj) for ki in range(g.kh) for kj in range(g.kw)]
    span = kb.muli(d.oh, d.wp)
    offs = [kb.iadd(kb.muli(kb.idx(ki * g.dh), d.wp), kj * g.dw) for ki, kj in taps]
    with kb.loop(u1, u0) as u:
        f = kb.v(arith.RemUIOp(u, d.f))
        n = kb.v(arith.DivUIOp(u, d.f))
        init = kb.convert(kb.load(bias, [f]), ct) if bias is not None else zero
        with kb.loop(span) as o:
            kb.store(init, acc, [o])
        cbase = kb.muli(kb.v(arith.DivUIOp(f, d.fg)), d.cg)
        with kb.loop(d.cg) as c:
            plane = kb.muli(kb.addi(kb.muli(n, d.c), kb.addi(cbase, c)), d.h)
            with kb.loop(d.need) as q:
                kb.store(zero, xp, [q])
            with kb.loop(d.h) as ih:
                src = kb.muli(kb.addi(plane, ih), d.w)
                dst = kb.iadd(kb.muli(kb.iadd(ih, g.pt), d.wp), g.pl)
                with kb.loop(d.w) as iw:
                    v = kb.convert(kb.load(x, [kb.addi(src, iw)]), ct)
                    kb.store(v, xp, [kb.addi(dst, iw)])
            w0 = kb.imul(kb.addi(kb.muli(f, d.cg), c), len(taps))
            wvs = [kb.convert(kb.load(w, [kb.iadd(w0, t)]), ct) for t in range(len(taps))]
            with kb.loop(span) as o:
                base = kb.imul(o, g.sh)
                s = kb.load(acc, [o])
                for off, wv in zip(offs, wvs, strict=True):
                    s = mac(kb, s, kb.load(xp, [kb.addi(base, off)]), wv)
                kb.store(s, acc, [o])
        out_plane = kb.muli(kb.addi(kb.muli(n, d.f), f), d.oh)
        with kb.loop(d.oh) as i:
            o_row = kb.muli(kb.addi(out_plane, i), d.ow)
            a_row = kb.muli(i, d.wp)
            with kb.loop(d.ow) as j:
                at = kb.addi(o_row, j)
                v = kb.load(acc, [kb.addi(a_row, j)])
                if post is not None:
                    v = post(kb, v, [at], extras)
                kb.store_c(v, out, [at])


POINTWISE_PIXELS = 16
"""1×1 convs of at most this many pixels per plane (squeeze-excitation convs on a 1×1
map) are dot products over the input channels: `body_pointwise`."""


def small_pointwise(g: ConvGeom) -> bool:
    """A 1×1, stride-1, unpadded conv on a tiny plane."""
    return g.pointwise and g.oh * g.ow <= POINTWISE_PIXELS


def body_pointwise(
    kb: KernelBuilder,
    g: ConvGeom,
    d: TableGeo,
    args: Sequence[SSAValue],
    has_bias: bool,
    n_extras: int,
    post: EpilogueFn | None,
    u0: SSAValue,
    u1: SSAValue,
) -> None:
    """Units [u0, u1) = output planes (image, filter): per pixel one reduction over the
    filter's input channels (innermost, so LLVM vectorizes it), not one pass per channel."""
    x, w = args[0], args[1]
    bias = args[2] if has_bias else None
    out = args[3 if has_bias else 2]
    extras = list(args[len(args) - n_extras :]) if n_extras else []
    ct = compute_type(elem(out))
    zero = kb.const(0.0 if is_float_t(ct) else 0, ct)
    pixels = kb.muli(d.oh, d.ow)
    with kb.loop(u1, u0) as u:
        f = kb.v(arith.RemUIOp(u, d.f))
        n = kb.v(arith.DivUIOp(u, d.f))
        init = kb.convert(kb.load(bias, [f]), ct) if bias is not None else zero
        x0 = kb.muli(kb.addi(kb.muli(n, d.c), kb.muli(kb.v(arith.DivUIOp(f, d.fg)), d.cg)), pixels)
        w0 = kb.muli(f, d.cg)
        o0 = kb.muli(kb.addi(kb.muli(n, d.f), f), pixels)
        with kb.loop(pixels) as q:
            xq = kb.addi(x0, q)

            def step(c: SSAValue, acc: list[SSAValue], xq: SSAValue = xq) -> list[SSAValue]:
                xv = kb.convert(kb.load(x, [kb.addi(xq, kb.muli(c, pixels))]), ct)
                wv = kb.convert(kb.load(w, [kb.addi(w0, c)]), ct)
                return [mac(kb, acc[0], xv, wv)]

            v = kb.loop_carry(d.cg, [init], step)[0]
            at = kb.addi(o0, q)
            if post is not None:
                v = post(kb, v, [at], extras)
            kb.store_c(v, out, [at])
