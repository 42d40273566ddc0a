"""The blocked channel layout NCHWc (rlx.to_nchwc, rlx.from_nchwc) and the NumPy
statement of the blocked activation and weight layouts that the nchwc convs and pools
read (`rlx.dialects.rlx.layout`; exact for every element type: values only move)."""

from __future__ import annotations

import numpy as np

from rlx.dialects.rlx.layout import FromNchwcOp, ToNchwcOp, is_pow2
from rlx.interpreter.ops._core import OpContext, register


def to_blocked(x: np.ndarray, block: int) -> np.ndarray:
    """`[N, C, H, W]` -> `[N, C/B, H, W, B]`: out[n, cb, h, w, j] = x[n, cb·B + j, h, w]."""
    n, c, h, w = x.shape
    return np.ascontiguousarray(x.reshape(n, c // block, block, h, w).transpose(0, 1, 3, 4, 2))


def from_blocked(x: np.ndarray) -> np.ndarray:
    """`[N, C/B, H, W, B]` -> `[N, C, H, W]` (the inverse of `to_blocked`)."""
    n, cb, h, w, b = x.shape
    return np.ascontiguousarray(x.transpose(0, 1, 4, 2, 3).reshape(n, cb * b, h, w))


def block_weight(w: np.ndarray, block: int, depthwise: bool) -> np.ndarray:
    """`[F, C/g, KH, KW]` -> `[F/B, C/(g·Bi), KH, KW, Bi, B]` with Bi = B (groups = 1) or
    1 (depthwise): out[fb, cb, kh, kw, i, o] = w[fb·B + o, cb·Bi + i, kh, kw]."""
    f, cg, kh, kw = w.shape
    bi = 1 if depthwise else block
    return np.ascontiguousarray(
        w.reshape(f // block, block, cg // bi, bi, kh, kw).transpose(0, 2, 4, 5, 3, 1)
    )


def unblock_weight(w: np.ndarray) -> np.ndarray:
    """The inverse of `block_weight`: `[F/B, Cg/Bi, KH, KW, Bi, B]` -> `[F, Cg, KH, KW]`."""
    fb, cb, kh, kw, bi, b = w.shape
    return np.ascontiguousarray(w.transpose(0, 5, 1, 4, 2, 3).reshape(fb * b, cb * bi, kh, kw))


WINOGRAD_G = np.array([[1, 0, 0], [0.5, 0.5, 0.5], [0.5, -0.5, 0.5], [0, 0, 1]])
"""G of Winograd F(2x2, 3x3): U = G g Gᵀ (4x4 from a 3x3 kernel)."""
WINOGRAD_L = np.array([[1, 0, 0, 0], [0, 1, -1, 0], [0, 0, 0, 1]])
"""A left inverse of G (L G = I): g = L U Lᵀ."""


def winograd_weight(w: np.ndarray) -> np.ndarray:
    """Blocked 3x3 weights `[F/B, C/B, 3, 3, Bi, B]` -> `U [16, F/B, C/B, Bi, B]` with
    U[4a + b] = (G g Gᵀ)[a, b] over (kh, kw) (f64, rounded to w's type)."""
    u = np.einsum("ai,fcijxo,bj->abfcxo", WINOGRAD_G, w.astype(np.float64), WINOGRAD_G)
    return np.ascontiguousarray(u.reshape(16, *u.shape[2:]).astype(w.dtype))


def winograd_unweight(u: np.ndarray) -> np.ndarray:
    """The 3x3 blocked weights of a conv with `winograd = true`: g = L U Lᵀ (in f64)."""
    u4 = u.astype(np.float64).reshape(4, 4, *u.shape[1:])
    return np.ascontiguousarray(np.einsum("ia,abfcxo,jb->fcijxo", WINOGRAD_L, u4, WINOGRAD_L))


@register(ToNchwcOp)
def to_nchwc(ctx: OpContext, x: np.ndarray) -> np.ndarray:
    """rlx.to_nchwc {block}: NCHW -> [N, C/B, H, W, B]."""
    b = ctx.op.block
    if x.ndim != 4 or not is_pow2(b) or x.shape[1] % b:
        raise ctx.error(f"cannot block {x.shape} by {b}")
    return to_blocked(x, b)


@register(FromNchwcOp)
def from_nchwc(ctx: OpContext, x: np.ndarray) -> np.ndarray:
    """rlx.from_nchwc: [N, C/B, H, W, B] -> NCHW."""
    if x.ndim != 5:
        raise ctx.error(f"from_nchwc needs a rank-5 operand, got {x.shape}")
    return from_blocked(x)
