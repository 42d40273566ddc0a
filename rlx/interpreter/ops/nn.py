"""Neural-network rlx ops: attention, rope, conv2d (and fused_conv2d_residual), pool2d.

attention, conv2d and avg-pool accumulate in f64 (integer conv2d in int64); rope is
elementwise and computes in f32 (f64 for f64 operands); max-pool is exact.
"""

from __future__ import annotations

import numpy as np

from rlx.dialects.rlx.compute import AttentionOp, RopeOp
from rlx.dialects.rlx.fused import FusedConv2dResidualOp
from rlx.dialects.rlx.window import Conv2dOp, Pool2dOp
from rlx.interpreter.ops._core import OpContext, fcompute, is_float, register, wide
from rlx.interpreter.ops.elementwise import FLOAT_UNARY
from rlx.interpreter.ops.layout import (
    from_blocked,
    to_blocked,
    unblock_weight,
    winograd_unweight,
)


def attention_f64(
    q: np.ndarray,
    k: np.ndarray,
    v: np.ndarray,
    bias: np.ndarray | None,
    *,
    scale: float,
    mask_kind: str,
    window: int | None,
    softcap: float | None,
) -> np.ndarray:
    """Scaled dot-product attention in f64 (see `attention`)."""
    q, k, v = (t.astype(np.float64) for t in (q, k, v))
    hq, hk = q.shape[1], k.shape[1]
    if hk != hq and hk > 0 and hq % hk == 0 and v.shape[1] == hk:
        # grouped-query attention: q head h reads k/v head h // (hq / hk)
        k, v = np.repeat(k, hq // hk, axis=1), np.repeat(v, hq // hk, axis=1)
    s = np.matmul(q, np.swapaxes(k, -1, -2)) * scale
    if bias is not None:
        s = s + bias.astype(np.float64)
    if softcap is not None:
        s = softcap * np.tanh(s / softcap)
    sq, sk = s.shape[-2], s.shape[-1]
    i = np.arange(sq)[:, None]
    j = np.arange(sk)[None, :]
    offset = sk - sq
    masked = np.zeros((sq, sk), dtype=bool)
    if mask_kind in ("causal", "sliding_window"):
        masked |= j > i + offset
    if mask_kind == "sliding_window":
        assert window is not None
        masked |= j < i + offset - window
    # Keys that are masked, or whose score is -inf, get probability exactly 0.
    dead = masked | (s == -np.inf)
    live_max = np.max(np.where(dead, -np.inf, s), axis=-1, keepdims=True, initial=-np.inf)
    live_max = np.where(np.isfinite(live_max), live_max, 0.0)
    e = np.where(dead, 0.0, np.exp(np.where(dead, 0.0, s - live_max)))
    denom = np.sum(e, axis=-1, keepdims=True)
    p = np.where(denom > 0, e / np.where(denom > 0, denom, 1.0), 0.0)
    return np.matmul(p, v)


@register(AttentionOp, nargs=(3, 4))
def attention(
    ctx: OpContext, q: np.ndarray, k: np.ndarray, v: np.ndarray, bias: np.ndarray | None = None
) -> np.ndarray:
    """rlx.attention(q, k, v[, bias]) {scale, mask_kind, window, softcap}.

    q [B,H,Sq,D], k [B,Hkv,Sk,D], v [B,Hkv,Sk,Dv] -> [B,H,Sq,Dv] (layout "bshd": the
    seq and heads dims of all four swapped; the bias stays [B,H,Sq,Sk]); Hkv dividing H is
    grouped-query attention (q head h reads k/v head h // (H / Hkv)); otherwise the
    leading B,H dims follow NumPy broadcasting. mask_kind defaults to "bias" when a 4th
    operand is present, else "none".  Keys masked by the mask kind, and keys whose (biased / capped) score is -inf,
    get probability exactly 0; a row with no live key is all zeros.
    """
    for t in (q, k, v) + (() if bias is None else (bias,)):
        if not is_float(t.dtype):
            raise ctx.error(f"needs float operands, got {t.dtype}")
    if q.ndim != 4 or k.ndim != 4 or v.ndim != 4:
        raise ctx.error(f"q, k, v must have rank 4, got {q.shape}, {k.shape}, {v.shape}")
    bshd = ctx.op.layout == "bshd"
    if bshd:  # [B, S, H, D] operands: compute on the [B, H, S, D] views
        q, k, v = (np.swapaxes(x, 1, 2) for x in (q, k, v))
    if q.shape[-1] != k.shape[-1] or k.shape[-2] != v.shape[-2]:
        raise ctx.error(f"incompatible q/k/v shapes {q.shape}, {k.shape}, {v.shape}")
    mask_kind = ctx.op.mask_kind
    if mask_kind not in ("none", "causal", "sliding_window", "bias"):
        raise ctx.error(f"unknown mask_kind {mask_kind!r}")
    if (mask_kind == "bias") != (bias is not None):
        raise ctx.error("mask_kind 'bias' requires exactly 4 operands (and vice versa)")
    window = ctx.op.window
    if mask_kind == "sliding_window" and window is None:
        raise ctx.error("mask_kind 'sliding_window' requires a 'window' attribute")
    scale = ctx.op.score_scale()
    softcap = ctx.op.softcap
    try:
        out = attention_f64(
            q,
            k,
            v,
            bias,
            scale=scale,
            mask_kind=mask_kind,
            window=None if window is None else int(window),
            softcap=None if softcap is None else float(softcap),
        )
    except ValueError as e:
        raise ctx.error(str(e)) from None
    return np.ascontiguousarray(np.swapaxes(out, 1, 2)) if bshd else out


@register(RopeOp, nargs=3)
def rope(ctx: OpContext, x: np.ndarray, cos: np.ndarray, sin: np.ndarray) -> np.ndarray:
    """rlx.rope {n_rot = D}: rotate-half RoPE on the first n_rot dims of x [..., S, D].

    out[i] = x[i]·c_i − x[i+h]·s_i, out[i+h] = x[i+h]·c_i + x[i]·s_i for i < h = n_rot/2;
    cos/sin broadcast to [..., S, h]; the dims >= n_rot are copied.
    """
    for t in (x, cos, sin):
        if not is_float(t.dtype):
            raise ctx.error(f"needs float operands, got {t.dtype}")
    if x.ndim < 2:
        raise ctx.error(f"x must have rank >= 2, got {x.shape}")
    d = x.shape[-1]
    n_rot = ctx.op.rotated_dims()
    if n_rot % 2 or not 0 <= n_rot <= d:
        raise ctx.error(f"n_rot={n_rot} must be even and <= {d}")
    h = n_rot // 2
    xc = fcompute(x)
    c = cos.astype(xc.dtype)
    s = sin.astype(xc.dtype)
    x1, x2 = xc[..., :h], xc[..., h:n_rot]
    try:
        r1 = x1 * c - x2 * s
        r2 = x2 * c + x1 * s
    except ValueError:
        raise ctx.error(f"cos/sin {cos.shape} do not broadcast to {x1.shape}") from None
    if r1.shape != x1.shape:
        raise ctx.error(f"cos/sin {cos.shape} do not broadcast to {x1.shape}")
    return np.concatenate([r1, r2, xc[..., n_rot:]], axis=-1)


def _pair(ctx: OpContext, key: str, value: tuple[int, ...] | None, n: int) -> tuple[int, ...]:
    val = tuple(value or ())
    if len(val) != n:
        raise ctx.error(f"'{key}' must have {n} entries, got {val}")
    return val


def _out_size(ctx: OpContext, size: int, k_eff: int, stride: int) -> int:
    if stride < 1:
        raise ctx.error(f"strides must be >= 1, got {stride}")
    if size < k_eff:
        raise ctx.error(f"window of extent {k_eff} is larger than the padded input {size}")
    return (size - k_eff) // stride + 1


def _conv2d(
    ctx: OpContext, x: np.ndarray, w: np.ndarray, bias: np.ndarray | None = None
) -> np.ndarray:
    """The cross-correlation (+ bias) of conv2d and fused_conv2d_residual, in f64 (int64)."""
    if x.ndim != 4 or w.ndim != 4:
        raise ctx.error(f"x and w must have rank 4, got {x.shape}, {w.shape}")
    if x.dtype != w.dtype or x.dtype == np.bool_:
        raise ctx.error(f"unsupported element types {x.dtype}, {w.dtype}")
    strides, padding, dilations = ctx.op.spatial()
    sh, sw = _pair(ctx, "strides", strides, 2)
    pt, pl, pb, pr = _pair(ctx, "padding", padding, 4)
    dh, dw = _pair(ctx, "dilations", dilations, 2)
    g = ctx.op.groups
    n, c, _, _ = x.shape
    f, cg, kh, kw = w.shape
    if min(pt, pl, pb, pr) < 0 or dh < 1 or dw < 1:
        raise ctx.error("padding must be >= 0 and dilations >= 1")
    if g < 1 or c % g or f % g or cg * g != c:
        raise ctx.error(f"groups={g} does not fit C={c}, F={f}, w={w.shape}")
    xp = np.pad(wide(x), ((0, 0), (0, 0), (pt, pb), (pl, pr)))
    ho = _out_size(ctx, xp.shape[2], dh * (kh - 1) + 1, sh)
    wo = _out_size(ctx, xp.shape[3], dw * (kw - 1) + 1, sw)
    ww = wide(w).reshape(g, f // g, cg, kh, kw)
    out = np.zeros((n, g, f // g, ho, wo), dtype=ww.dtype)
    for a in range(kh):
        for b in range(kw):
            patch = xp[:, :, a * dh : a * dh + sh * (ho - 1) + 1 : sh,
                       b * dw : b * dw + sw * (wo - 1) + 1 : sw]  # fmt: skip
            patch = patch.reshape(n, g, cg, ho, wo)
            out += np.einsum("ngchw,gfc->ngfhw", patch, ww[:, :, :, a, b])
    out = out.reshape(n, f, ho, wo)
    if bias is not None:
        if bias.shape != (f,):
            raise ctx.error(f"bias must have shape ({f},), got {bias.shape}")
        out = out + wide(bias)[None, :, None, None]
    return out


def _conv_activation(ctx: OpContext, out: np.ndarray) -> np.ndarray:
    """The convolution's activation (`clip`: min(max(v, lo), hi), NaN propagates)."""
    act = ctx.op.activation
    if act == "clip":
        lo, hi = ctx.op.clip
        return np.minimum(np.maximum(out, lo), hi)
    out = out if act == "none" else FLOAT_UNARY[act](out)
    if ctx.op.reduce == "mean":  # the fused global average pool, on the rounded planes
        out = out.astype(ctx.result_dtype()).mean(axis=(2, 3), keepdims=True, dtype=np.float64)
    return out


def _block(ctx: OpContext, x: np.ndarray) -> int:
    """The block of a layout = "nchwc" op's blocked x, or 0 for layout "nchw"."""
    if ctx.op.layout != "nchwc":
        return 0
    if x.ndim != 5:
        raise ctx.error(f'layout "nchwc" needs a rank-5 x [N, C/B, H, W, B], got {x.shape}')
    return x.shape[4]


def _unwinograd(ctx: OpContext, w: np.ndarray) -> np.ndarray:
    """The blocked 3x3 weights of `winograd = true` weights U (`L U Lᵀ`), else w."""
    if not ctx.op.winograd:
        return w
    if w.ndim != 5 or w.shape[0] != 16:
        raise ctx.error(f"winograd weights must be [16, F/B, C/B, B, B], got {w.shape}")
    return winograd_unweight(w).astype(w.dtype)


@register(Conv2dOp, nargs=(2, 3))
def conv2d(
    ctx: OpContext, x: np.ndarray, w: np.ndarray, bias: np.ndarray | None = None
) -> np.ndarray:
    """rlx.conv2d(x [N,C,H,W], w [F,C/g,KH,KW][, bias [F]]) {strides, padding, dilations,
    groups, activation, clip, layout}: NCHW cross-correlation with zero padding [top,
    left, bottom, right], then the activation. Layout "nchwc": the same on the unblocked
    x and w (`rlx.interpreter.ops.layout`), result blocked by w's output block (x's block
    may differ: 1 for the stem form)."""
    block = _block(ctx, x) and w.shape[-1]
    if block:
        x, w = from_blocked(x), unblock_weight(_unwinograd(ctx, w))
    out = _conv_activation(ctx, _conv2d(ctx, x, w, bias))
    return to_blocked(out, block) if block else out


@register(FusedConv2dResidualOp, nargs=(3, 4))
def fused_conv2d_residual(
    ctx: OpContext,
    x: np.ndarray,
    w: np.ndarray,
    residual: np.ndarray,
    bias: np.ndarray | None = None,
) -> np.ndarray:
    """activation(conv2d(x, w) + bias + residual), in f64 until the final rounding
    (layout "nchwc": as conv2d's)."""
    block = _block(ctx, x) and w.shape[-1]
    if block:
        x, w = from_blocked(x), unblock_weight(_unwinograd(ctx, w))
        residual = from_blocked(residual)
    out = _conv2d(ctx, x, w, bias)
    if residual.shape != out.shape:
        raise ctx.error(f"residual must have shape {out.shape}, got {residual.shape}")
    out = _conv_activation(ctx, out + wide(residual))
    return to_blocked(out, block) if block else out


@register(Pool2dOp)
def pool2d(ctx: OpContext, x: np.ndarray) -> np.ndarray:
    """rlx.pool2d(x [N,C,H,W]) {kind, kernel, strides=kernel, padding=0, layout}.

    max pads with -inf (the integer minimum for integers); avg divides by the number of
    non-padded elements in each window (a window entirely in padding gives NaN). Layout
    "nchwc": the same on the unblocked x, result blocked.
    """
    block = _block(ctx, x)
    if block:
        return to_blocked(_pool2d(ctx, from_blocked(x)), block)
    return _pool2d(ctx, x)


def _pool2d(ctx: OpContext, x: np.ndarray) -> np.ndarray:
    kind = ctx.op.kind
    if kind not in ("max", "avg"):
        raise ctx.error(f"unknown pool kind {kind!r}")
    if x.ndim != 4:
        raise ctx.error(f"x must have rank 4, got {x.shape}")
    kh, kw = _pair(ctx, "kernel", ctx.op.kernel, 2)
    strides, padding = ctx.op.spatial()
    sh, sw = _pair(ctx, "strides", strides, 2)
    pt, pl, pb, pr = _pair(ctx, "padding", padding, 4)
    if min(pt, pl, pb, pr) < 0 or kh < 1 or kw < 1:
        raise ctx.error("padding must be >= 0 and kernel >= 1")
    pads = ((0, 0), (0, 0), (pt, pb), (pl, pr))
    ho = _out_size(ctx, x.shape[2] + pt + pb, kh, sh)
    wo = _out_size(ctx, x.shape[3] + pl + pr, kw, sw)

    def windows(a: np.ndarray, i: int, j: int) -> np.ndarray:
        return a[:, :, i : i + sh * (ho - 1) + 1 : sh, j : j + sw * (wo - 1) + 1 : sw]

    if kind == "max":
        if x.dtype == np.bool_:
            raise ctx.error("max pool of i1 is not supported")
        lowest = -np.inf if is_float(x.dtype) else np.iinfo(x.dtype).min
        xp = np.pad(wide(x), pads, constant_values=lowest)
        out = np.full((x.shape[0], x.shape[1], ho, wo), lowest, dtype=xp.dtype)
        for i in range(kh):
            for j in range(kw):
                out = np.maximum(out, windows(xp, i, j))
        return out
    if not is_float(x.dtype):
        raise ctx.error(f"avg pool needs a float operand, got {x.dtype}")
    xp = np.pad(x.astype(np.float64), pads)
    ones = np.pad(np.ones((1, 1) + x.shape[2:]), pads)
    total = np.zeros((x.shape[0], x.shape[1], ho, wo))
    count = np.zeros((1, 1, ho, wo))
    for i in range(kh):
        for j in range(kw):
            total += windows(xp, i, j)
            count += windows(ones, i, j)
    return total / count
