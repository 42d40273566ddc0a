"""Shape and data-movement ONNX ops: Reshape, Transpose, Slice, Concat, Gather, Pad, ...

The ops whose results are compile-time values (Shape, Constant, ConstantOfShape, Range)
are in `ops_constants`.
"""

from __future__ import annotations

from collections.abc import Sequence
from math import prod
from typing import Any

import numpy as np
from xdsl.ir import SSAValue

from rlx.dialects.rlx.base import DYN
from rlx.frontends.onnx.node import Node, dims_text, is_static, norm_axis, shape, static_shape
from rlx.frontends.onnx.registry import converter
from rlx.frontends.onnx.symbolic import Dim, is_symbolic, mark, sizes
from rlx.frontends.onnx.symbolic_ops import (
    dynamic_slice,
    reshape_dims,
    sym_shape,
    symbolic_reshape,
    symbolic_slice,
)

Out = list[SSAValue | np.ndarray | None]


def _axes(n: Node, axes: Sequence[int], rank: int) -> list[int]:
    out = [int(a) + rank if int(a) < 0 else int(a) for a in axes]
    if any(not 0 <= a < rank for a in out) or len(set(out)) != len(out):
        raise n.error(f"axes {list(axes)} are invalid for rank {rank}")
    return out


@converter("Reshape", attrs=("allowzero",))
def reshape(n: Node) -> Out:
    x = n.input(0)
    t = n.const(1, "shape ")
    if is_symbolic(t):
        return [symbolic_reshape(n, x, t)]
    target = [int(d) for d in t]
    src = shape(x)
    allowzero = n.attr("allowzero", 0)
    zeros = [i for i, d in enumerate(target) if d == 0]
    if allowzero and zeros and -1 in target:  # the spec: no size fits the -1
        raise n.error(f"shape {target} has both 0 and -1 with allowzero=1")
    if not allowzero and zeros and zeros[-1] >= len(src):
        raise n.error(f"shape {target} copies (0) an axis the rank-{len(src)} input lacks")
    out = [src[i] if d == 0 and not allowzero else d for i, d in enumerate(target)]
    if out.count(-1) > 1:
        raise n.error("more than one -1 in the shape")
    if -1 in out:
        known = prod(d for d in out if d != -1)
        out[out.index(-1)] = (
            prod(src) // known if is_static(src) and DYN not in out and known else DYN
        )
    return [n.reshape(x, out)]


@converter("Flatten", attrs=("axis",))
def flatten(n: Node) -> Out:
    x = n.input(0)
    s = shape(x)
    axis = norm_axis(n, n.attr("axis", 1), len(s), end=True)

    def p(ds: Sequence[int]) -> int:
        return DYN if DYN in ds else prod(ds)

    return [n.reshape(x, [p(s[:axis]), p(s[axis:])])]


def _axes_input(n: Node) -> np.ndarray | None:
    """Axes from input #1 (opset >= 13) or the `axes` attribute (older opsets)."""
    if "axes" in n.attrs:
        return np.array(n.attr("axes"), np.int64)
    return n.const(1, "axes ")


@converter("Squeeze", attrs=("axes",))
def squeeze(n: Node) -> Out:
    x = n.input(0)
    s = shape(x)
    axes = _axes_input(n)
    if axes is None:
        drop = [i for i, d in enumerate(s) if d == 1]
        if DYN in s:
            raise n.error("Squeeze without axes needs a static input shape")
    else:
        drop = _axes(n, axes.tolist(), len(s))
    wide = [a for a in drop if s[a] not in (1, DYN)]
    if wide:
        raise n.error(f"axis {wide[0]} of {dims_text(s)} has size {s[wide[0]]}, not 1")
    return [n.reshape(x, [d for i, d in enumerate(s) if i not in drop])]


@converter("Unsqueeze", attrs=("axes",))
def unsqueeze(n: Node) -> Out:
    x = n.input(0)
    s = list(shape(x))
    ax = _axes_input(n)
    if ax is None:
        raise n.error("axes are required")
    axes = sorted(_axes(n, ax.reshape(-1).tolist(), len(s) + ax.size))
    for a in axes:
        s.insert(a, 1)
    return [n.reshape(x, s)]


def broadcast_shape(a: Sequence[int], b: Sequence[int]) -> list[int]:
    """NumPy broadcasting of two shapes (dynamic-aware, `?` when unknown); ValueError when
    they do not broadcast (an `Expand` of [2, 3] to [5, 3] silently kept [2, 3])."""
    r = max(len(a), len(b))
    a = [1] * (r - len(a)) + list(a)
    b = [1] * (r - len(b)) + list(b)
    if any(x != y and 1 not in (x, y) and DYN not in (x, y) for x, y in zip(a, b, strict=True)):
        raise ValueError(f"shapes {dims_text(a)} and {dims_text(b)} do not broadcast")
    return [
        y if x == 1 else x if y == 1 else x if x != DYN else y for x, y in zip(a, b, strict=True)
    ]


@converter("Expand", attrs=())
def expand(n: Node) -> Out:
    x = n.input(0)
    t = n.const(1, "shape ")
    if is_symbolic(t):
        xs = sym_shape(n, 0)
        if xs is None:
            raise n.error("a symbolic Expand needs named dynamic dims on its input")
        tl = list(t.tolist())
        r = max(len(xs), len(tl))
        xs2, tl2 = [1] * (r - len(xs)) + list(xs), [1] * (r - len(tl)) + tl
        dims: list[int | Dim] = []
        for a, b in zip(xs2, tl2, strict=True):
            if isinstance(b, Dim):
                dims.append(a if (isinstance(a, Dim) or a != 1) else b)
            elif b == 1:
                dims.append(a)
            else:
                dims.append(b)
        y = x if sizes(dims) == list(shape(x)) else n.typed("broadcast_to", x, sizes(dims))
        if y is not x:
            mark(n.ctx, y, dims)
        return [y]
    out = broadcast_shape(shape(x), [int(d) for d in t])
    return [x if out == list(shape(x)) else n.typed("broadcast_to", x, out)]


@converter("Transpose", attrs=("perm",))
def transpose(n: Node) -> Out:
    x = n.input(0)
    perm = n.attr("perm") or list(reversed(range(len(shape(x)))))
    return [n.emit("transpose", x, permutation=list(perm))]


@converter("Concat", attrs=("axis",))
def concat(n: Node) -> Out:
    return [n.emit("concat", *n.inputs(), axis=n.attr("axis"))]


@converter("Gather", attrs=("axis",))
def gather(n: Node) -> Out:
    return [n.emit("gather", n.input(0), n.input(1), axis=n.attr("axis", 0))]


def slice_axis(n: Node, x: SSAValue, axis: int, start: int, end: int, step: int) -> SSAValue:
    """`x[start:end:step]` along `axis` with ONNX clamping (negative steps, and tensors
    with dynamic dims on other axes, via gather)."""
    s = list(shape(x))
    dim = s[axis]
    if step == 0:
        raise n.error("slice step must not be 0")
    if dim == DYN:
        if start == 0 and end >= 2**31 - 1 and step == 1:
            return x
        return dynamic_slice(n, x, axis, start, end, step)
    start, end, _ = slice(start, end, step).indices(dim)
    if step < 0 or DYN in s:
        idx = np.arange(start, end, step, dtype=np.int64)
        return n.emit("gather", x, n.constant(idx, "i64"), axis=axis)
    starts, limits, strides = [0] * len(s), list(s), [1] * len(s)
    starts[axis], limits[axis], strides[axis] = start, max(start, end), step
    if start == 0 and end >= dim and step == 1:
        return x
    return n.emit("slice", x, starts=starts, limits=limits, strides=strides)


def _slice_axes_steps(n: Node, starts: int, ends: int, rank: int) -> tuple[list[int], list[int]]:
    """Slice's axes (normalized) and steps, given the lengths of starts and ends; all four
    lists must have one length (a shorter one was a "malformed node" zip error)."""
    axes = n.const(3, "axes ")
    axes = _axes(n, axes.tolist() if axes is not None else range(starts), rank)
    steps = n.const(4, "steps ")
    steps = steps.tolist() if steps is not None else [1] * starts
    if not starts == ends == len(axes) == len(steps):
        raise n.error(
            f"starts, ends, axes and steps must have one length, got {starts}, {ends}, "
            f"{len(axes)}, {len(steps)}"
        )
    return list(axes), list(steps)


@converter("Slice", attrs=())
def slice_(n: Node) -> Out:
    x = n.input(0)
    rank = len(shape(x))
    st, en = n.const(1, "starts "), n.const(2, "ends ")
    if is_symbolic(st) or is_symbolic(en):
        axes, steps = _slice_axes_steps(n, len(st), len(en), rank)
        for a, s0, e0, sp in zip(axes, st.tolist(), en.tolist(), steps, strict=True):
            if isinstance(s0, Dim) or isinstance(e0, Dim):
                x = symbolic_slice(n, x, a, s0, e0, int(sp))
            else:
                x = slice_axis(n, x, a, int(s0), int(e0), int(sp))
        return [x]
    starts, ends = st.tolist(), en.tolist()
    axes, steps = _slice_axes_steps(n, len(starts), len(ends), rank)
    for a, st, en, sp in zip(axes, starts, ends, steps, strict=True):
        x = slice_axis(n, x, a, int(st), int(en), int(sp))
    return [x]


@converter("Split", attrs=("axis", "num_outputs", "split"))
def split(n: Node) -> Out:
    x = n.input(0)
    axis = _axes(n, [n.attr("axis", 0)], len(shape(x)))[0]
    dim = shape(x)[axis]
    if dim == DYN:
        raise n.error("Split of a dynamic axis is not supported")
    sizes = n.attr("split") if "split" in n.attrs else n.const(1, "split ")
    k = n.n_outputs
    if sizes is None:
        k = n.attr("num_outputs", k)
        if k != n.n_outputs:  # a list of 2^31 sizes took minutes (and the memory)
            raise n.error(f"num_outputs {k} differs from the {n.n_outputs} outputs")
        chunk = -(-dim // k)
        sizes = [min(chunk, dim - i * chunk) for i in range(k)]
    sizes = [int(v) for v in sizes]
    if any(sz < 0 for sz in sizes) or sum(sizes) != dim or len(sizes) != n.n_outputs:
        raise n.error(
            f"split sizes {sizes} must be {n.n_outputs} non-negative sizes adding up to the "
            f"axis length {dim}"
        )
    outs: Out = []
    start = 0
    for sz in sizes:
        outs.append(slice_axis(n, x, axis, start, start + sz, 1))
        start += sz
    return outs


@converter("Tile", attrs=())
def tile(n: Node) -> Out:
    x = n.input(0)
    reps_c = n.const(1, "repeats ")
    symbolic = is_symbolic(reps_c) or not is_static(shape(x))
    s = sym_shape(n, 0) if symbolic else list(shape(x))
    if s is None:
        raise n.error(f"Tile of {dims_text(shape(x))}: a dynamic dim has no name (give dims=)")
    reps = [r if isinstance(r, Dim) else int(r) for r in reps_c.tolist()]
    if len(reps) != len(s):
        raise n.error(f"repeats has {len(reps)} entries for an input of rank {len(s)}")
    inter = [d for d in s for d in (1, d)]
    big = [v for r, d in zip(reps, s, strict=True) for v in (r, d)]
    y = n.typed("broadcast_to", reshape_dims(n, x, inter), sizes(big))
    mark(n.ctx, y, big)
    return [reshape_dims(n, y, [r * d for r, d in zip(reps, s, strict=True)])]


@converter("DepthToSpace", "SpaceToDepth", attrs=("blocksize", "mode"))
def depth_space(n: Node) -> Out:
    x = n.input(0)
    b_, c, h, w = static_shape(n, x, n.op_type)
    bs = n.attr("blocksize")
    if not isinstance(bs, int) or bs < 1:
        raise n.error(f"blocksize must be a positive integer, got {bs!r}")
    if n.op_type == "SpaceToDepth":
        y = n.reshape(x, [b_, c, h // bs, bs, w // bs, bs])
        perm = [0, 3, 5, 1, 2, 4] if n.attr("mode", "DCR") == "DCR" else [0, 1, 3, 5, 2, 4]
        y = n.emit("transpose", y, permutation=perm)
        return [n.reshape(y, [b_, c * bs * bs, h // bs, w // bs])]
    cc = c // (bs * bs)
    if n.attr("mode", "DCR") == "DCR":
        y, perm = n.reshape(x, [b_, bs, bs, cc, h, w]), [0, 3, 4, 1, 5, 2]
    else:
        y, perm = n.reshape(x, [b_, cc, bs, bs, h, w]), [0, 1, 4, 2, 5, 3]
    y = n.emit("transpose", y, permutation=perm)
    return [n.reshape(y, [b_, cc, h * bs, w * bs])]


def _pad_index(mode: str, before: int, after: int, dim: int) -> np.ndarray:
    i = np.arange(-before, dim + after)
    if mode == "edge":
        return np.clip(i, 0, dim - 1)
    if mode == "wrap":
        return np.mod(i, dim)
    period = 2 * (dim - 1) if dim > 1 else 1
    i = np.mod(i, period)
    return np.where(i >= dim, period - i, i)  # reflect


@converter("Pad", attrs=("mode",))
def pad(n: Node) -> Out:
    x = n.input(0)
    rank = len(shape(x))
    pads = [int(p) for p in n.const(1, "pads ")]
    axes = n.const(3, "axes ")
    axes = _axes(n, axes.tolist() if axes is not None else range(rank), rank)
    mode = n.attr("mode", "constant")
    cval = n.const(2, "constant_value ")
    k = len(axes)
    if len(pads) != 2 * k:
        raise n.error(f"pads {pads} must hold 2 x {k} sizes (begins and ends of the axes)")
    for a, before, after in zip(axes, pads[:k], pads[k:], strict=True):
        if shape(x)[a] != DYN and shape(x)[a] + before + after < 0:  # was a size of 0
            raise n.error(
                f"pads {pads} make axis {a} (size {shape(x)[a]}) {shape(x)[a] + before + after}"
            )
        if before < 0 or after < 0:
            x = slice_axis(n, x, a, max(-before, 0), after if after < 0 else 2**62, 1)
            before, after = max(before, 0), max(after, 0)
        if before == after == 0:
            continue
        dim = shape(x)[a]
        if dim == DYN and mode != "constant":
            raise n.error(
                f"Pad mode '{mode}' needs a static size on the padded axis {a}, got {dims_text(shape(x))}"
            )
        if mode != "constant":
            idx = _pad_index(mode, before, after, dim)
            x = n.emit("gather", x, n.constant(idx, "i64"), axis=a)
            continue
        fill = cval.reshape(()) if cval is not None and cval.size else 0
        x = pad_axis(n, x, a, before, after, fill)
    return [x]


def pad_axis(n: Node, x: SSAValue, axis: int, before: int, after: int, value: Any) -> SSAValue:
    """`x` with `before` / `after` (non-negative) cells of `value` around it on `axis`
    (Pad's constant mode, the pools' and the 3-D Conv's padding)."""
    parts = [fill_like(n, x, axis, width, value) if width else None for width in (before, after)]
    seq = [p for p in (parts[0], x, parts[1]) if p is not None]
    return seq[0] if len(seq) == 1 else n.emit("concat", *seq, axis=axis)


def fill_like(n: Node, x: SSAValue, axis: int, width: int, value: Any) -> SSAValue:
    """`value` in the shape of `x` with `width` along `axis`; with dynamic dims, `width`
    copies of the first slice of `x` along `axis` (`gather`) replaced by `value` (`where`)."""
    bs = list(shape(x))
    bs[axis] = width
    if DYN not in bs:
        return n.typed("broadcast_to", n.constant(value, x), bs)
    if shape(x)[axis] == 0:
        raise n.error(f"padding an empty axis {axis} needs static sizes on the other axes")
    rows = n.emit("gather", x, n.constant(np.zeros(width, np.int64), "i64"), axis=axis)
    true = n.constant(np.ones([1] * len(bs), bool), "bool")
    return n.emit("where", true, n.constant(value, x), rows)


@converter("Trilu", attrs=("upper",))
def trilu(n: Node) -> Out:
    x = n.input(0)
    s = static_shape(n, x, "Trilu")
    k = n.const(1, "k ")
    k = int(k) if k is not None else 0
    rows, cols = np.arange(s[-2])[:, None], np.arange(s[-1])[None, :]
    mask = cols - rows >= k if n.attr("upper", 1) else cols - rows <= k
    return [n.emit("where", n.constant(mask, "bool"), x, n.constant(0, x))]
