"""conv2d and fused_conv2d_residual (NCHW): dispatch, epilogues, im2col + OpenBLAS.

f32/f64 convolutions with enough work per group are an im2col + GEMM (`_conv_gemm`): for
each (image, group) the input patches are gathered into a [C/g·KH·KW, OH·OW] column
buffer (zero where the window reads padding) and one BLAS GEMM multiplies the group's
weights [F/g, C/g·KH·KW] by it straight into the output planes (initialised with the
bias); a 1×1, stride-1, unpadded convolution needs no column buffer (the input planes are
the matrix). Other convolutions (depthwise, grouped, tiny, f16/bf16, integers, no BLAS)
take the direct kernel (`conv_direct`: row-buffer accumulation, vectorized over output
columns, parallel on the runtime's pool). Pooling is `pool.py`'s.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import replace

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation, SSAValue

from rlx.dialects.rlx.base import shape_of
from rlx.dialects.rlx.fused import FusedConv2dResidualOp
from rlx.dialects.rlx.window import Conv2dOp, conv2d_type
from rlx.lowering.blas_abi import available, gemm_mode
from rlx.lowering.gemm.conv import emit_conv_gemm
from rlx.lowering.gemm.driver import EpilogueFn
from rlx.lowering.rlx_to_linalg.conv_common import ConvGeom, conv_operands, tap_range
from rlx.lowering.rlx_to_linalg.conv_direct import emit_direct
from rlx.lowering.rlx_to_linalg.conv_small import small_pointwise
from rlx.lowering.rlx_to_linalg.elementwise import activation
from rlx.lowering.rlx_to_linalg.kernel_builder import (
    Emitter,
    KernelBuilder,
    elem,
)
from rlx.lowering.rlx_to_linalg.matmul import (
    BLAS_MIN_MNK,
    Gemm,
    _blas_dtype,
    _blas_dtype_t,
    _ptr,
    blas_ready,
)
from rlx.lowering.rlx_to_linalg.reductions import reduce_into

AnyConv = Conv2dOp | FusedConv2dResidualOp

COLUMN_BUFFER_MAX_BYTES = 256 << 20
"""Largest im2col buffer `_conv_gemm` allocates; bigger convolutions keep the loop nest."""


def blas_fits(g: ConvGeom, dtype: str) -> bool:
    """The im2col + BLAS path applies: >= 4 filters and taps per group, at least
    `BLAS_MIN_MNK` multiply-adds per GEMM, 32-bit sizes, a column buffer of at most
    `COLUMN_BUFFER_MAX_BYTES`."""
    k, p = g.cg * g.kh * g.kw, g.oh * g.ow
    return (
        g.fg >= 4
        and k >= 4
        and g.fg * k * p >= BLAS_MIN_MNK
        and max(g.n * g.c * g.h * g.w, g.f * k, g.n * g.f * p) < 2**31
        and k * p * (4 if dtype == "f32" else 8) <= COLUMN_BUFFER_MAX_BYTES
    )


def unreduced_type(op: AnyConv) -> TensorType:
    """The type of `op`'s convolution before its `reduce` (the result type without one;
    a residual has it)."""
    if op.reduce == "none":
        return op.result.type  # type: ignore[return-value]
    if isinstance(op, FusedConv2dResidualOp):
        return op.residual.type  # type: ignore[return-value]
    return conv2d_type([v.type for v in op.operands], Conv2dOp.attr_values(op.attributes))  # type: ignore[misc]


def conv_path(op: AnyConv) -> str:
    """The kernel `emit_conv2d` gives `op` (for the dispatch report; tensor-typed op)."""
    if op.layout == "nchwc":
        from rlx.lowering.rlx_to_linalg.conv_nchwc_dispatch import nchwc_path

        return nchwc_path(op)
    from rlx.lowering.gemm.conv import eligible
    from rlx.lowering.rlx_to_linalg.kernel_builder import memref_of

    full = unreduced_type(op)
    types = [memref_of(t) for t in (op.x.type, op.w.type, full)]  # type: ignore[arg-type]
    _, _, oh, ow = shape_of(full)
    g = replace(ConvGeom.of(op, op.x, op.w, op.result), oh=oh, ow=ow)
    dtype = _blas_dtype_t(*types)
    blas_ok = dtype is not None and blas_fits(g, dtype) and available(dtype)
    if gemm_mode() == "blas" and blas_ok:
        return "openblas (im2col)"
    if small_pointwise(g):
        return "direct"
    if eligible(g, *types):
        from rlx.lowering.gemm.conv import conv_tile

        return f"generated implicit GEMM {conv_tile(g).name}" + (
            "" if g.pointwise else " (im2col gathered per k-slice)"
        )
    if blas_ok:
        return "openblas (im2col)"
    return "direct"


def conv_lines(module: Operation) -> str:
    """`  conv:` and one `    - conv2d ×<n>: <path>` line per path ("" without convs): the
    kernel each convolution takes (dispatch report)."""
    counts = Counter(
        (op.name.removeprefix("rlx."), conv_path(op))
        for op in module.walk()
        if isinstance(op, Conv2dOp | FusedConv2dResidualOp)
    )
    if not counts:
        return ""
    lines = [f"  conv (mode {gemm_mode()}: RLX_BLAS=1 openblas where it applies):"]
    lines += [f"    - {kind} ×{n}: {path}" for (kind, path), n in sorted(counts.items())]
    return "\n".join(lines) + "\n"


def _conv_gemm(
    kb: KernelBuilder,
    op: AnyConv,
    x: SSAValue,
    w: SSAValue,
    bias: SSAValue | None,
    out: SSAValue,
    post: EpilogueFn | None,
    extras: Sequence[SSAValue],
) -> bool:
    """conv2d as im2col + one BLAS GEMM per (image, group); False (nothing emitted) when
    the convolution does not qualify (see the module docstring)."""
    dtype = _blas_dtype(x, w, out, *([bias] if bias is not None else []))
    geo = ConvGeom.of(op, x, w, out)
    if dtype is None or not blas_fits(geo, dtype):
        return False
    n_, c_, h, wd = geo.n, geo.c, geo.h, geo.w
    f_, cg, kh, kw = geo.f, geo.cg, geo.kh, geo.kw
    oh, ow = geo.oh, geo.ow
    sh, sw, pt, pl, dh, dw = geo.sh, geo.sw, geo.pt, geo.pl, geo.dh, geo.dw
    groups, fg, k, p = geo.groups, geo.fg, cg * kh * kw, oh * ow
    esize = 4 if dtype == "f32" else 8
    direct = geo.pointwise
    if not blas_ready(kb, dtype):
        return False
    gemm = Gemm(kb, dtype)
    et = elem(out)
    px, pw, po = _ptr(kb, x), _ptr(kb, w), _ptr(kb, out)
    col = None if direct else kb.scratch([k, p], et)
    if bias is not None:
        with kb.nest([n_, f_, oh, ow]) as (n, f, i, j):
            kb.store(kb.load(bias, [f]), out, [n, f, i, j])
    padded = geo.padded
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
        if post is not None:  # the epilogue on the block this GEMM just wrote
            with kb.loop(fg) as fl, kb.nest([oh, ow]) as (i, j):
                idx = [n, kb.iadd(kb.imul(g, fg), fl), i, j]
                kb.store(post(kb, kb.load(out, idx), idx, list(extras)), out, idx)
    return True


def epilogue(op: AnyConv) -> tuple[EpilogueFn | None, str]:
    """The fused epilogue of a convolution after its bias, and its identity (kernel key):
    `+ residual` (fused_conv2d_residual: `extras[0]`, indexed like the output buffer
    the kernel writes), then the activation (`clip` as min(max(v, lo), hi))."""
    act, clip = op.activation, op.clip
    residual = isinstance(op, FusedConv2dResidualOp)
    if act == "none" and not residual:
        return None, ""

    def post(kb: KernelBuilder, v: SSAValue, idx: list[SSAValue], ex: list[SSAValue]) -> SSAValue:
        if residual:
            v = kb.addf(v, kb.convert(kb.load(ex[0], idx), v.type))
        if act == "clip":
            assert clip is not None
            lo, hi = kb.const(clip[0], v.type), kb.const(clip[1], v.type)
            return kb.minf(kb.maxf(v, lo), hi)
        return v if act == "none" else activation(kb, act, v)

    return post, f"{act}{list(clip or ())}{'+residual' if residual else ''}"


def emit_conv2d(
    kb: KernelBuilder, op: Operation, ins: Sequence[SSAValue], outs: Sequence[SSAValue]
) -> None:
    """conv2d / fused_conv2d_residual: the generated implicit GEMM, im2col + OpenBLAS
    (`RLX_BLAS=1`, f64) or the direct kernel (module docstring)."""
    assert isinstance(op, Conv2dOp | FusedConv2dResidualOp)
    x, w, bias, extras = conv_operands(op, ins)
    pooled = op.reduce == "mean"
    out = kb.scratch(shape_of(unreduced_type(op)), elem(outs[0])) if pooled else outs[0]
    _emit_conv(kb, op, x, w, bias, out, extras)
    if pooled:  # the fused global average pool, on the planes just written (hot in cache)
        reduce_into(kb, "mean", out, outs[0], (2, 3), keep=True)


def _emit_conv(
    kb: KernelBuilder,
    op: AnyConv,
    x: SSAValue,
    w: SSAValue,
    bias: SSAValue | None,
    out: SSAValue,
    extras: list[SSAValue],
) -> None:
    """The convolution into `out` (its unreduced result) on the first path that takes it."""
    g = ConvGeom.of(op, x, w, out)
    post, key = epilogue(op)
    if gemm_mode() == "blas" and _conv_gemm(kb, op, x, w, bias, out, post, extras):
        return
    if small_pointwise(g):  # dot products over C (squeeze-excite): a GEMM wastes its lanes
        emit_direct(kb, g, x, w, bias, out, post, extras, key)
        return
    if emit_conv_gemm(kb, g, x, w, bias, out, post, extras, key):
        return
    if _conv_gemm(kb, op, x, w, bias, out, post, extras):  # f64
        return
    emit_direct(kb, g, x, w, bias, out, post, extras, key)


LOWERINGS: dict[type[Operation], Emitter] = {
    Conv2dOp: emit_conv2d,
    FusedConv2dResidualOp: emit_conv2d,
}
