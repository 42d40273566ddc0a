"""conv2d and pool2d (NCHW).

f32/f64 convolutions with enough work per group are an im2col + GEMM (`_conv_gemm`): for
each (image, group) the input patches are gathered into a [C/g·KH·KW, OH·OW] column
buffer (zero where the window reads padding) and one BLAS GEMM multiplies the group's
weights [F/g, C/g·KH·KW] by it straight into the output planes (initialised with the
bias); a 1×1, stride-1, unpadded convolution needs no column buffer (the input planes are
the matrix). Other convolutions (depthwise, grouped, tiny, f16/bf16, integers, no BLAS)
take the direct kernel (`conv_direct`: row-buffer accumulation, vectorized over output
columns, parallel on the runtime's pool). Pooling is an scf loop nest whose windows are
clipped to the input (padding is never materialized).
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import arith
from xdsl.ir import Operation, SSAValue

from rlx.dialects.rlx.base import is_unsigned
from rlx.dialects.rlx.compute import Conv2dOp, Pool2dOp
from rlx.lowering.rlx_to_linalg.conv_common import ConvGeom, tap_range
from rlx.lowering.rlx_to_linalg.conv_direct import emit_direct
from rlx.lowering.rlx_to_linalg.elementwise import activation
from rlx.lowering.rlx_to_linalg.kernel_builder import (
    Emitter,
    KernelBuilder,
    compute_type,
    elem,
    int_limits,
    is_float_t,
    shape,
)
from rlx.lowering.rlx_to_linalg.matmul import (
    BLAS_MIN_MNK,
    Gemm,
    _blas_dtype,
    _ptr,
    blas_ready,
)

COLUMN_BUFFER_MAX_BYTES = 256 << 20
"""Largest im2col buffer `_conv_gemm` allocates; bigger convolutions keep the loop nest."""


def _conv_gemm(
    kb: KernelBuilder,
    op: Conv2dOp,
    x: SSAValue,
    w: SSAValue,
    bias: SSAValue | None,
    out: SSAValue,
) -> bool:
    """conv2d as im2col + one BLAS GEMM per (image, group); False (nothing emitted) when
    the convolution does not qualify (see the module docstring)."""
    dtype = _blas_dtype(x, w, out, *([bias] if bias is not None else []))
    n_, c_, h, wd = shape(x)
    f_, cg, kh, kw = shape(w)
    _, _, oh, ow = shape(out)
    (sh, sw), (pt, pl, pb, pr), (dh, dw) = op.spatial()
    groups = op.groups
    fg, k, p = f_ // groups, cg * kh * kw, oh * ow
    if dtype is None or fg < 4 or k < 4 or fg * k * p < BLAS_MIN_MNK:
        return False
    esize = 4 if dtype == "f32" else 8
    direct = (kh, kw, sh, sw, dh, dw, pt, pl, pb, pr) == (1, 1, 1, 1, 1, 1, 0, 0, 0, 0)
    if (
        max(n_ * c_ * h * wd, f_ * k, n_ * f_ * p) >= 2**31
        or k * p * esize > COLUMN_BUFFER_MAX_BYTES
    ):
        return False
    if not blas_ready(kb, dtype):
        return False
    gemm = Gemm(kb, dtype)
    et = elem(out)
    px, pw, po = _ptr(kb, x), _ptr(kb, w), _ptr(kb, out)
    col = None if direct else kb.scratch([k, p], et)
    if bias is not None:
        with kb.nest([n_, f_, oh, ow]) as (n, f, i, j):
            kb.store(kb.load(bias, [f]), out, [n, f, i, j])
    padded = max(pt, pl, pb, pr) > 0
    zero = kb.const(0.0, et)
    with kb.nest([n_, groups]) as (n, g):
        if col is None:
            b_ptr = kb.iadd(px, kb.imul(kb.iadd(kb.imul(n, c_), kb.imul(g, cg)), h * wd * esize))
        else:
            if padded:
                with kb.nest([k, p]) as (r, q):
                    kb.store(zero, col, [r, q])
            with kb.loop(cg) as c, kb.loop(kh) as ki:
                ci = kb.iadd(kb.imul(g, cg), c)
                oh_lo, oh_hi = tap_range(kb, kb.imul(ki, dh), pt, h, sh, oh)
                with kb.loop(kw) as kj:
                    r = kb.iadd(kb.imul(kb.iadd(kb.imul(c, kh), ki), kw), kj)
                    ow_lo, ow_hi = tap_range(kb, kb.imul(kj, dw), pl, wd, sw, ow)
                    with kb.loop(oh_hi, lb=oh_lo) as i:
                        ih = kb.subi(kb.iadd(kb.imul(i, sh), kb.imul(ki, dh)), kb.idx(pt))
                        row = kb.imul(i, ow)
                        with kb.loop(ow_hi, lb=ow_lo) as j:
                            iw = kb.subi(kb.iadd(kb.imul(j, sw), kb.imul(kj, dw)), kb.idx(pl))
                            v = kb.load(x, [n, ci, ih, iw])
                            kb.store(v, col, [r, kb.iadd(row, j)])
            b_ptr = _ptr(kb, col)
        a_ptr = kb.iadd(pw, kb.imul(g, fg * k * esize))
        c_ptr = kb.iadd(po, kb.imul(kb.iadd(kb.imul(n, f_), kb.imul(g, fg)), p * esize))
        gemm(fg, p, k, a_ptr, k, b_ptr, p, c_ptr, p, beta=1.0 if bias is not None else 0.0)
        if op.activation != "none":  # the epilogue on the block this GEMM just wrote
            with kb.loop(fg) as fl, kb.nest([oh, ow]) as (i, j):
                idx = [n, kb.iadd(kb.imul(g, fg), fl), i, j]
                kb.store(activation(kb, op.activation, kb.load(out, idx)), out, idx)
    return True


def emit_conv2d(
    kb: KernelBuilder, op: Operation, ins: Sequence[SSAValue], outs: Sequence[SSAValue]
) -> None:
    x, w = ins[:2]
    bias = ins[2] if len(ins) > 2 else None
    out = outs[0]
    assert isinstance(op, Conv2dOp)
    if _conv_gemm(kb, op, x, w, bias, out):
        return
    act = op.activation
    post = None if act == "none" else (lambda kb2, v, _idx, _ex: activation(kb2, act, v))
    emit_direct(kb, ConvGeom.of(op, x, w, out), x, w, bias, out, post, key=act)


def emit_pool2d(
    kb: KernelBuilder, op: Operation, ins: Sequence[SSAValue], outs: Sequence[SSAValue]
) -> None:
    """max (init -inf / int min) or avg (sum / number of non-padded elements) pooling."""
    x, out = ins[0], outs[0]
    kind = op.kind
    kh, kw = op.kernel or (1, 1)
    sh, sw = op.strides or (kh, kw)
    pt, pl, _, _ = op.padding or (0, 0, 0, 0)
    n_, c_, h, wd = shape(x)
    oh, ow = shape(out)[2:]
    e = elem(op.operands[0])
    unsigned = is_unsigned(e)
    ct = compute_type(elem(x))
    floaty = is_float_t(ct)
    if kind == "max":
        init = kb.const(float("-inf") if floaty else int_limits(ct, unsigned)[0], ct)
    else:
        init = kb.const(0.0, ct)

    def window(o: SSAValue, stride: int, pad: int, k: int, size: int) -> tuple[SSAValue, SSAValue]:
        start = kb.subi(kb.imul(o, stride), kb.idx(pad))
        return kb.imax(start, kb.idx(0)), kb.imin(kb.iadd(start, k), kb.idx(size))

    def combine(acc: SSAValue, v: SSAValue) -> SSAValue:
        if kind == "avg":
            return kb.addf(acc, v)
        if floaty:
            return kb.maxf(acc, v)
        return kb.v(arith.MaxUIOp(acc, v) if unsigned else arith.MaxSIOp(acc, v))

    with kb.nest([n_, c_, oh]) as (n, c, i):
        ih_lo, ih_hi = window(i, sh, pt, kh, h)
        with kb.loop(ow) as j:
            iw_lo, iw_hi = window(j, sw, pl, kw, wd)

            def row(ih: SSAValue, acc: list[SSAValue]) -> list[SSAValue]:
                def col(iw: SSAValue, acc2: list[SSAValue]) -> list[SSAValue]:
                    return [combine(acc2[0], kb.load_c(x, [n, c, ih, iw]))]

                return kb.loop_carry(iw_hi, acc, col, lb=iw_lo)

            r = kb.loop_carry(ih_hi, [init], row, lb=ih_lo)[0]
            if kind == "avg":
                cnt = kb.muli(
                    kb.imax(kb.subi(ih_hi, ih_lo), kb.idx(0)),
                    kb.imax(kb.subi(iw_hi, iw_lo), kb.idx(0)),
                )
                r = kb.divf(r, kb.convert(cnt, ct))
            kb.store_c(r, out, [n, c, i, j])


LOWERINGS: dict[type[Operation], Emitter] = {
    Conv2dOp: emit_conv2d,
    Pool2dOp: emit_pool2d,
}
