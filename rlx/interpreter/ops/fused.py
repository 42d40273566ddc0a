"""Fused rlx ops, defined by their unfused composition.

Each fused op is evaluated entirely in f64 (no intermediate rounding to the element type)
and rounded once to its result type, as a fused kernel would keep its intermediates wide.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from rlx.dialects.rlx.fused import (
    FusedMatmulBiasActOp,
    FusedResidualLayerNormOp,
    FusedResidualRmsNormOp,
    FusedSwigluOp,
)
from rlx.interpreter.ops._core import OpContext, is_float, register
from rlx.interpreter.ops.elementwise import gelu, gelu_tanh, relu, silu
from rlx.interpreter.ops.reduce import layer_norm_f64, rms_norm_f64

ACTIVATIONS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "none": lambda x: x,
    "relu": relu,
    "gelu": gelu,
    "gelu_tanh": gelu_tanh,
    "silu": silu,
}


def _f64(ctx: OpContext, *xs: np.ndarray) -> list[np.ndarray]:
    for x in xs:
        if not is_float(x.dtype):
            raise ctx.error(f"needs float operands, got {x.dtype}")
    return [x.astype(np.float64) for x in xs]


def _mm(ctx: OpContext, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    try:
        return np.matmul(a, b)
    except ValueError as e:
        raise ctx.error(str(e)) from None


@register(FusedMatmulBiasActOp, nargs=3)
def fused_matmul_bias_act(
    ctx: OpContext, x: np.ndarray, w: np.ndarray, bias: np.ndarray
) -> np.ndarray:
    """act(x @ w + bias) {activation="none"|"relu"|"gelu"|"gelu_tanh"|"silu"}."""
    act = ctx.op.activation
    if act not in ACTIVATIONS:
        raise ctx.error(f"unknown activation {act!r}")
    x, w, bias = _f64(ctx, x, w, bias)
    return ACTIVATIONS[act](_mm(ctx, x, w) + bias)


@register(FusedSwigluOp, nargs=(1, 3))
def fused_swiglu(ctx: OpContext, *xs: np.ndarray) -> np.ndarray:
    """silu(x@w_gate)·(x@w_up), or on one packed [..., 2N] operand {gate_first=false}:
    up = first half, gate = second half (swapped when gate_first), silu(gate)·up."""
    if len(xs) == 3:
        x, wg, wu = _f64(ctx, *xs)
        return silu(_mm(ctx, x, wg)) * _mm(ctx, x, wu)
    if len(xs) != 1:
        raise ctx.error(f"expected 1 or 3 operands, got {len(xs)}")
    (p,) = _f64(ctx, xs[0])
    if p.ndim < 1 or p.shape[-1] % 2:
        raise ctx.error(f"packed operand needs an even last dim, got {p.shape}")
    h = p.shape[-1] // 2
    first, second = p[..., :h], p[..., h:]
    gate, up = (first, second) if ctx.op.gate_first else (second, first)
    return silu(gate) * up


@register(FusedResidualLayerNormOp, nargs=4)
def fused_residual_layer_norm(
    ctx: OpContext, x: np.ndarray, res: np.ndarray, gamma: np.ndarray, beta: np.ndarray
) -> np.ndarray:
    """layer_norm(x + residual) {epsilon=1e-5} (the sum is not rounded)."""
    x, res, gamma, beta = _f64(ctx, x, res, gamma, beta)
    return layer_norm_f64(x + res, gamma, beta, ctx.op.epsilon)


@register(FusedResidualRmsNormOp, nargs=(3, 4))
def fused_residual_rms_norm(
    ctx: OpContext,
    x: np.ndarray,
    res: np.ndarray,
    gamma: np.ndarray,
    beta: np.ndarray | None = None,
) -> np.ndarray:
    """rms_norm(x + residual) {epsilon=1e-5} (the sum is not rounded)."""
    xs = _f64(ctx, x, res, gamma, *([] if beta is None else [beta]))
    b = xs[3] if beta is not None else None
    return rms_norm_f64(xs[0] + xs[1], xs[2], b, ctx.op.epsilon)
