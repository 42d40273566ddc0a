"""Reducing rlx ops: reduce, softmax, cumsum, matmul, layer_norm, rms_norm.

Float inputs (f32 included) are accumulated in f64 and rounded once to the result type;
integer inputs accumulate in int64 (uint64 for unsigned) and wrap to the result type.
"""

from __future__ import annotations

import numpy as np

from rlx.dialects.rlx.compute import CumsumOp, LayerNormOp, MatmulOp, ReduceOp, RmsNormOp, SoftmaxOp
from rlx.errors import IntegerDivisionError
from rlx.interpreter.ops._core import OpContext, fcompute, is_float, register, wide
from rlx.interpreter.ops.tensor import norm_axis


def _identity(kind: str, dt: np.dtype) -> object:
    """The identity of max/min for a dtype (so empty max/min reductions are defined)."""
    if dt == np.bool_:
        return kind == "min"
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return info.min if kind == "max" else info.max
    return -np.inf if kind == "max" else np.inf


@register(ReduceOp)
def reduce(ctx: OpContext, x: np.ndarray) -> np.ndarray:
    """rlx.reduce {kind, axes (default all), keepdims=false}.

    sum/prod of nothing are 0/1; max/min of nothing are -inf/+inf (int min/max for
    integers); mean of nothing is NaN.  Integer mean truncates toward zero.  max/min
    propagate NaN.
    """
    kind = ctx.op.kind
    axes_attr = ctx.op.axes
    keepdims = ctx.op.keepdims
    axes = tuple(range(x.ndim)) if axes_attr is None else tuple(axes_attr)
    axes = tuple(norm_axis(ctx, a, x.ndim) for a in axes)
    if len(set(axes)) != len(axes):
        raise ctx.error(f"duplicate reduction axes {axes_attr}")
    if kind in ("max", "min"):
        fn = np.max if kind == "max" else np.min
        # Floats compare in their compute type: the -inf/+inf identity does not exist in
        # every small float (f8E4M3FN would turn it into NaN and poison the result).
        xc = fcompute(x) if is_float(x.dtype) else x
        return fn(xc, axis=axes, keepdims=keepdims, initial=_identity(kind, xc.dtype))
    if kind not in ("sum", "mean", "prod"):
        raise ctx.error(f"unknown reduction kind {kind!r}")
    if x.dtype == np.bool_:
        raise ctx.error(f"'{kind}' reduction of i1 is not supported")
    w = wide(x)
    if kind == "prod":
        return np.prod(w, axis=axes, keepdims=keepdims)
    s = np.sum(w, axis=axes, keepdims=keepdims)
    if kind == "sum":
        return s
    count = int(np.prod([x.shape[a] for a in axes], dtype=np.int64))
    if is_float(x.dtype):
        return s / np.float64(count) if count else np.full_like(s, np.nan)
    if count == 0:
        raise IntegerDivisionError("integer mean over no elements")
    q = np.abs(s) // count
    return np.where(s < 0, -q, q) if x.dtype.kind == "i" else q


def softmax_f64(x: np.ndarray, axis: int) -> np.ndarray:
    """Numerically stable softmax in f64 (a row of all -inf gives NaN, like NumPy/JAX)."""
    x = x.astype(np.float64)
    if x.size == 0:
        return x
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


@register(SoftmaxOp)
def softmax(ctx: OpContext, x: np.ndarray) -> np.ndarray:
    """rlx.softmax {axis=-1}: exp(x - max) / sum(exp(x - max)) along axis, in f64."""
    if not is_float(x.dtype):
        raise ctx.error(f"needs a float operand, got {x.dtype}")
    return softmax_f64(x, norm_axis(ctx, ctx.op.axis, x.ndim))


@register(CumsumOp)
def cumsum(ctx: OpContext, x: np.ndarray) -> np.ndarray:
    """rlx.cumsum {axis=-1, exclusive=false}: running sum; exclusive starts at 0."""
    if x.dtype == np.bool_:
        raise ctx.error("cumsum of i1 is not supported")
    axis = norm_axis(ctx, ctx.op.axis, x.ndim)
    w = wide(x)
    c = np.cumsum(w, axis=axis)
    if ctx.op.exclusive:
        zero_shape = list(x.shape)
        zero_shape[axis] = 1
        head = np.zeros(zero_shape, dtype=c.dtype)
        body = np.take(c, np.arange(max(x.shape[axis] - 1, 0)), axis=axis)
        c = np.concatenate([head, body], axis=axis) if x.shape[axis] else c
    return c


def matmul_wide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """np.matmul accumulated in f64 (floats) or int64 (integers)."""
    return np.matmul(wide(a), wide(b))


@register(MatmulOp, nargs=2)
def matmul(ctx: OpContext, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """rlx.matmul: np.matmul for rank >= 2 operands, batch dims broadcast."""
    if a.ndim < 2 or b.ndim < 2:
        raise ctx.error(f"operands must have rank >= 2, got {a.shape} and {b.shape}")
    if a.dtype != b.dtype or a.dtype == np.bool_:
        raise ctx.error(f"unsupported operand element types {a.dtype}, {b.dtype}")
    try:
        return matmul_wide(a, b)
    except ValueError as e:
        raise ctx.error(str(e)) from None


def layer_norm_f64(
    x: np.ndarray, gamma: np.ndarray, beta: np.ndarray | None, eps: float
) -> np.ndarray:
    """(x - mean) / sqrt(var + eps) · gamma + beta over the last axis, biased var, f64."""
    x = x.astype(np.float64)
    mean = np.mean(x, axis=-1, keepdims=True)
    var = np.mean(np.square(x - mean), axis=-1, keepdims=True)
    y = (x - mean) / np.sqrt(var + eps) * gamma.astype(np.float64)
    return y if beta is None else y + beta.astype(np.float64)


def rms_norm_f64(
    x: np.ndarray, gamma: np.ndarray, beta: np.ndarray | None, eps: float
) -> np.ndarray:
    """x / sqrt(mean(x²) + eps) · gamma (+ beta) over the last axis, f64."""
    x = x.astype(np.float64)
    ms = np.mean(np.square(x), axis=-1, keepdims=True)
    y = x / np.sqrt(ms + eps) * gamma.astype(np.float64)
    return y if beta is None else y + beta.astype(np.float64)


def _check_float(ctx: OpContext, *xs: np.ndarray) -> None:
    for x in xs:
        if not is_float(x.dtype):
            raise ctx.error(f"needs float operands, got {x.dtype}")


@register(LayerNormOp, nargs=3)
def layer_norm(ctx: OpContext, x: np.ndarray, gamma: np.ndarray, beta: np.ndarray) -> np.ndarray:
    """rlx.layer_norm {epsilon=1e-5}: over the last axis, in f64."""
    _check_float(ctx, x, gamma, beta)
    return layer_norm_f64(x, gamma, beta, ctx.op.epsilon)


@register(RmsNormOp, nargs=(2, 3))
def rms_norm(
    ctx: OpContext, x: np.ndarray, gamma: np.ndarray, beta: np.ndarray | None = None
) -> np.ndarray:
    """rlx.rms_norm {epsilon=1e-5}: x / sqrt(mean(x²) + eps) · gamma (+ beta), in f64."""
    _check_float(ctx, x, gamma, *([] if beta is None else [beta]))
    return rms_norm_f64(x, gamma, beta, ctx.op.epsilon)
