"""Data-tiled GEMM ops (rlx.pack_rhs, rlx.packed_matmul), defined through the plain
matmul: packing is a pure relayout, so packed_matmul(x, pack_rhs(w)) == x @ w."""

from __future__ import annotations

import numpy as np

from rlx.dialects.rlx.gemm import PackedMatmulOp, PackRhsOp
from rlx.interpreter.ops._core import OpContext, is_float, register
from rlx.interpreter.ops.fused import ACTIVATIONS


@register(PackRhsOp, nargs=1)
def pack_rhs(ctx: OpContext, w: np.ndarray) -> np.ndarray:
    """w [K, N] -> f32 [ceil(N / width), K, width], zero past N {width}."""
    width = int(ctx.op.width)
    if w.ndim != 2 or width < 1 or not is_float(w.dtype):
        raise ctx.error(f"needs a float [K, N] operand and width >= 1, got {w.shape}, {width}")
    k, n = w.shape
    p = -(-n // width)
    padded = np.zeros((k, p * width), np.float32)
    padded[:, :n] = w.astype(np.float32)
    return np.ascontiguousarray(padded.reshape(k, p, width).transpose(1, 0, 2))


@register(PackedMatmulOp, nargs=(2, 3))
def packed_matmul(ctx: OpContext, x: np.ndarray, wp: np.ndarray, *bias: np.ndarray) -> np.ndarray:
    """act(x @ unpack(w_packed)[:, :n] + bias) {n, activation="none"}, in f64."""
    n = int(ctx.op.n)
    act = ctx.op.activation
    if act not in ACTIVATIONS:
        raise ctx.error(f"unknown activation {act!r}")
    if wp.ndim != 3 or not 0 < n <= wp.shape[0] * wp.shape[2]:
        raise ctx.error(f"w_packed {wp.shape} does not hold n={n} columns")
    w = wp.astype(np.float64).transpose(1, 0, 2).reshape(wp.shape[1], -1)[:, :n]
    y = np.matmul(x.astype(np.float64), w)
    if bias:
        y = y + bias[0].astype(np.float64)
    return ACTIVATIONS[act](y)
