"""Quantization and random-number rlx ops.

quantize / dequantize / fake_quantize compute in f64 (x/scale is an f64 division) and
round once; the low-precision scaled formats, ggml schemes and Philox streams are
delegated to `rlx.formats.lowp`, `rlx.formats.ggml` and `rlx.formats.philox` (imported
lazily, so the interpreter imports without them).
"""

from __future__ import annotations

import numpy as np

from rlx.dialects.rlx.leaves import RngNormalOp, RngUniformOp
from rlx.dialects.rlx.quant import (
    DequantizeOp,
    DequantMatmulOp,
    FakeQuantizeOp,
    QuantizeOp,
    ScaledMatmulOp,
    ScaledQuantizeOp,
    ScaledQuantScaleOp,
)
from rlx.formats import ggml, lowp, philox
from rlx.interpreter.ops._core import OpContext, is_float, register
from rlx.interpreter.ops.tensor import norm_axis


def _qparams(ctx: OpContext, ndim: int) -> tuple[np.ndarray, np.ndarray]:
    """scale (f64) and zero_point (int64), shaped to broadcast against the operand."""
    op = ctx.op
    scale = np.asarray(op.scale, dtype=np.float64)
    zp = np.asarray(op.zero_point if op.zero_point is not None else 0, dtype=np.int64)
    if scale.ndim == 0 and zp.ndim == 0:
        return scale, zp
    if op.axis is None:
        raise ctx.error("per-channel scale/zero_point needs an 'axis' attribute")
    axis = norm_axis(ctx, op.axis, ndim)
    shape = [1] * ndim
    shape[axis] = -1
    return scale.reshape(shape), zp.reshape(shape)


def quantize_codes(
    x: np.ndarray, scale: np.ndarray, zp: np.ndarray, qmin: int, qmax: int
) -> np.ndarray:
    """clamp(round_half_even(x / scale) + zp, qmin, qmax) as int64; NaN maps to zp."""
    r = np.rint(x.astype(np.float64) / scale)
    r = np.nan_to_num(r, nan=0.0, posinf=np.inf, neginf=-np.inf)
    return np.clip(r + zp, qmin, qmax).astype(np.int64)


def _check_x(ctx: OpContext, x: np.ndarray) -> None:
    if not is_float(x.dtype):
        raise ctx.error(f"needs a float operand, got {x.dtype}")


@register(QuantizeOp)
def quantize(ctx: OpContext, x: np.ndarray) -> np.ndarray:
    """rlx.quantize {scale, zero_point, axis}: float -> integer codes, clamped to the result
    integer type's range ([-128, 127] for i8)."""
    _check_x(ctx, x)
    dt = ctx.result_dtype()
    if dt.kind not in "iu":
        raise ctx.error(f"result must be an integer type, got {dt}")
    scale, zp = _qparams(ctx, x.ndim)
    info = np.iinfo(dt)
    return quantize_codes(x, scale, zp, int(info.min), int(info.max))


@register(DequantizeOp)
def dequantize(ctx: OpContext, q: np.ndarray) -> np.ndarray:
    """rlx.dequantize {scale, zero_point, axis}: (q - zp) · scale, in f64."""
    if q.dtype.kind not in "iu":
        raise ctx.error(f"needs an integer operand, got {q.dtype}")
    scale, zp = _qparams(ctx, q.ndim)
    return (q.astype(np.int64) - zp).astype(np.float64) * scale


@register(FakeQuantizeOp)
def fake_quantize(ctx: OpContext, x: np.ndarray) -> np.ndarray:
    """rlx.fake_quantize {scale, zero_point, axis, bits=8}: quantize then dequantize."""
    _check_x(ctx, x)
    bits = ctx.op.bits
    if not 1 <= bits <= 32:
        raise ctx.error(f"bits must be in [1, 32], got {bits}")
    scale, zp = _qparams(ctx, x.ndim)
    q = quantize_codes(x, scale, zp, -(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
    return (q - zp).astype(np.float64) * scale


@register(ScaledQuantScaleOp)
def scaled_quant_scale(ctx: OpContext, x: np.ndarray) -> np.ndarray:
    """rlx.scaled_quant_scale {format, scale_layout}: the block scales of x (rlx.formats.lowp)."""

    fmt = lowp.parse_format(ctx.op.format)
    layout = lowp.parse_layout(ctx.op.scale_layout)
    return lowp.quant_scale(x, fmt, layout)


@register(ScaledQuantizeOp, nargs=2)
def scaled_quantize(ctx: OpContext, x: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """rlx.scaled_quantize {format, scale_layout}: ui8 codes of x (rlx.formats.lowp)."""

    fmt = lowp.parse_format(ctx.op.format)
    layout = lowp.parse_layout(ctx.op.scale_layout)
    return lowp.quantize(x, scale, fmt, layout)


@register(ScaledMatmulOp, nargs=(4, 5))
def scaled_matmul(
    ctx: OpContext,
    a: np.ndarray,
    b: np.ndarray,
    a_scale: np.ndarray,
    b_scale: np.ndarray,
    bias: np.ndarray | None = None,
) -> np.ndarray:
    """rlx.scaled_matmul {lhs_format, rhs_format, scale_layout}: a · bᵀ of scaled codes."""

    lhs = lowp.parse_format(ctx.op.lhs_format)
    rhs = lowp.parse_format(ctx.op.rhs_format)
    layout = lowp.parse_layout(ctx.op.scale_layout)
    return lowp.scaled_matmul(a, b, a_scale, b_scale, lhs, rhs, layout, bias=bias)


@register(DequantMatmulOp, nargs=2)
def dequant_matmul(ctx: OpContext, x: np.ndarray, packed: np.ndarray) -> np.ndarray:
    """rlx.dequant_matmul {scheme, n, k}: x [..., K] @ Wᵀ, W = ggml.dequantize(...) [N, K]."""

    _check_x(ctx, x)
    n, k = ctx.op.n, ctx.op.k
    if x.shape[-1:] != (k,):
        raise ctx.error(f"x must end in K={k}, got {x.shape}")
    w = np.asarray(ggml.dequantize(packed, ctx.op.scheme, n, k), dtype=np.float64)
    if w.shape != (n, k):
        raise ctx.error(f"dequantized weight has shape {w.shape}, expected {(n, k)}")
    return np.matmul(x.astype(np.float64), w.T)


@register(RngUniformOp, RngNormalOp, nargs=0)
def rng(ctx: OpContext) -> np.ndarray:
    """rlx.rng_uniform {low=0, high=1, seed_offset=0} (`philox.uniform`) and rlx.rng_normal
    {mean=0, std=1, seed_offset=0} (`philox.normal`), in the result dtype (zeros with
    rng_backend 'zero')."""
    shape = ctx.result_shape()
    if ctx.rng_backend == "zero":
        return np.zeros(shape)
    op = ctx.op
    if isinstance(op, RngUniformOp):
        sample, a, b = philox.uniform, op.low, op.high
    else:
        sample, a, b = philox.normal, op.mean, op.std  # type: ignore[attr-defined]
    return sample(ctx.rng_seed, op.seed_offset or 0, shape, a, b, ctx.result_dtype())  # type: ignore[attr-defined]
