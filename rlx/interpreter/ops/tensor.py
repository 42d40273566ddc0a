"""Data-movement rlx ops: constant, reshape, transpose, slice, concat, broadcast_to, gather.

These ops only move values, so they are exact for every element type.  (rlx.param is
handled by the interpreter itself, which holds the bound params.)
"""

from __future__ import annotations

import numpy as np

from rlx.dialects.rlx.leaves import ConstantOp
from rlx.dialects.rlx.shape import (
    BroadcastToOp,
    ConcatOp,
    GatherOp,
    ReshapeOp,
    SliceOp,
    TransposeOp,
)
from rlx.errors import RlxIndexError
from rlx.interpreter.ops._core import OpContext, register, to_python


def norm_axis(ctx: OpContext, axis: int, rank: int) -> int:
    """A possibly negative axis as a non-negative one; out of range is an error."""
    if not -rank <= axis < rank:
        raise ctx.error(f"axis {axis} out of range for rank {rank}")
    return axis % rank


@register(ConstantOp, nargs=0)
def constant(ctx: OpContext) -> np.ndarray:
    """rlx.constant {value: dense}: the value (a splat is broadcast to the result shape)."""
    value = to_python(ctx.op.value)
    if not isinstance(value, np.ndarray):
        raise ctx.error(f"'value' must be a dense elements attribute, got {value}")
    shape = ctx.result_shape()
    if value.shape != shape:
        if value.size != 1:
            raise ctx.error(f"value of shape {value.shape} does not fit result shape {shape}")
        value = np.full(shape, value.reshape(()), dtype=value.dtype)
    return value


@register(ReshapeOp)
def reshape(ctx: OpContext, x: np.ndarray) -> np.ndarray:
    """rlx.reshape: row-major reshape to the result shape (element count must match;
    one dynamic result dim is inferred)."""
    t = ctx.result_type()
    shape = tuple(d if d >= 0 else -1 for d in t.get_shape())  # type: ignore[attr-defined]
    if shape.count(-1) > 1:
        raise ctx.error(f"cannot infer more than one dynamic dim of {t}")
    try:
        return x.reshape(shape)
    except ValueError:
        raise ctx.error(f"cannot reshape {x.shape} to {t}") from None


@register(TransposeOp)
def transpose(ctx: OpContext, x: np.ndarray) -> np.ndarray:
    """rlx.transpose {permutation}: out.shape[i] = x.shape[permutation[i]]."""
    perm = ctx.op.permutation
    if sorted(perm) != list(range(x.ndim)):
        raise ctx.error(f"permutation {perm} is not a permutation of rank {x.ndim}")
    return np.transpose(x, perm)


@register(SliceOp)
def slice_(ctx: OpContext, x: np.ndarray) -> np.ndarray:
    """rlx.slice {starts, limits, strides}: x[starts[i]:limits[i]:strides[i]] per axis.

    Requires 0 <= start <= limit <= dim and stride >= 1.
    """
    starts = ctx.op.starts
    limits = ctx.op.limits
    strides = ctx.op.strides or (1,) * x.ndim
    if not len(starts) == len(limits) == len(strides) == x.ndim:
        raise ctx.error(f"starts/limits/strides must all have rank {x.ndim} entries")
    index = []
    for ax, (s, lim, st, d) in enumerate(zip(starts, limits, strides, x.shape, strict=True)):
        if not (0 <= s <= lim <= d) or st < 1:
            raise ctx.error(f"bad slice {s}:{lim}:{st} for axis {ax} of size {d}")
        index.append(slice(s, lim, st))
    return x[tuple(index)]


@register(ConcatOp, nargs=(1, None))
def concat(ctx: OpContext, *xs: np.ndarray) -> np.ndarray:
    """rlx.concat {axis}: concatenate along axis (negative allowed); same element type."""
    if len({x.dtype for x in xs}) != 1:
        raise ctx.error(f"operand element types differ: {[str(x.dtype) for x in xs]}")
    axis = norm_axis(ctx, ctx.op.axis, xs[0].ndim)
    try:
        return np.concatenate(xs, axis=axis)
    except ValueError as e:
        raise ctx.error(str(e)) from None


@register(BroadcastToOp)
def broadcast_to(ctx: OpContext, x: np.ndarray) -> np.ndarray:
    """rlx.broadcast_to: NumPy broadcasting to the result shape."""
    shape = ctx.result_shape()
    try:
        return np.broadcast_to(x, shape)
    except ValueError:
        raise ctx.error(f"cannot broadcast {x.shape} to {shape}") from None


@register(GatherOp, nargs=2)
def gather(ctx: OpContext, x: np.ndarray, indices: np.ndarray) -> np.ndarray:
    """rlx.gather {axis=0}: np.take(x, indices, axis); negative indices count from the end,
    out-of-range indices are an error."""
    if indices.dtype.kind not in "iu":
        raise ctx.error(f"indices must be integers, got {indices.dtype}")
    axis = norm_axis(ctx, ctx.op.axis, x.ndim)
    n = x.shape[axis]
    idx = indices.astype(np.int64)
    bad = (idx < -n) | (idx >= n)
    if indices.dtype.kind == "u":
        bad = indices.astype(np.uint64) >= n  # no wrap of huge unsigned values
    if np.any(bad):
        v = int(indices[bad].flat[0])
        raise RlxIndexError(f"index {v} is out of range for axis {axis} of size {n}")
    return np.take(x, np.where(idx < 0, idx + n, idx), axis=axis)
