"""Pooling (MaxPool, AveragePool, LpPool: opsets 1-25), LRN (1-25) and Conv (1-25):
1-D / 2-D pools onto `rlx.pool2d` (`pool2d`), and beyond it N-D windows (3-D),
dilations, ceil mode with count_include_pad, MaxPool's Indices; 3-D Conv. A pool's pad
must be smaller than its kernel (`pool_pads`, as onnxruntime requires).

The general pool pads the input (with -inf, the lowest integer, or 0), takes one
strided `rlx.slice` per kernel offset and combines them with `max` / `add`; averages
divide by a count computed at import time (cells inside the input, or inside the
explicit pads with count_include_pad=1). MaxPool's Indices follow the running maximum
(first occurrence wins) through a constant tensor of flat input positions. 1-D/2-D pools
without these features keep `rlx.pool2d`. A 3-D Conv is a sum over depth taps of 2-D
convolutions with the depth folded into the batch.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from math import prod

import numpy as np
from xdsl.ir import SSAValue

from rlx.dialects.rlx.base import DYN, is_float
from rlx.dialects.rlx.window import window_size
from rlx.dtypes import numpy_dtype
from rlx.frontends.onnx import ops_nn
from rlx.frontends.onnx.node import Node, elem, is_static, shape
from rlx.frontends.onnx.ops_tensor import pad_axis, slice_axis
from rlx.frontends.onnx.registry import converter
from rlx.frontends.onnx.spatial import as_2d, from_2d, pads_2d, spatial_pads, to_2d
from rlx.frontends.onnx.symbolic_ops import reshape_dims, sym_of

MAX_POOL_WINDOW = 1 << 24
"""Most cells a pooling window may have (a 4096 x 4096 window)."""


def pool_pads(
    n: Node,
    in_sizes: Sequence[int],
    kernel: Sequence[int],
    strides: Sequence[int],
    dil: Sequence[int],
) -> list[int]:
    """`spatial.spatial_pads` of a pool, refusing a pad as large as the kernel: its border windows
    would lie wholly in the padding (a max of -inf with index -1, an average of nothing),
    which onnxruntime refuses too ("Pad should be smaller than kernel")."""
    k = len(in_sizes)
    pads = spatial_pads(n, in_sizes, kernel, strides, dil)
    fits = all(kernel[i] <= in_sizes[i] + pads[i] + pads[k + i] for i in range(k))
    if fits and prod(kernel) > MAX_POOL_WINDOW:  # SAME pads grow with it: 2^62 hung the run
        raise n.error(
            f"kernel_shape {list(kernel)}: windows of more than {MAX_POOL_WINDOW} cells are "
            "not supported"
        )
    for i in range(2 * k):
        if pads[i] >= kernel[i % k]:
            raise n.error(
                f"pads {pads}: pad {pads[i]} is not smaller than the kernel "
                f"({kernel[i % k]}) on spatial axis {i % k}"
            )
    return pads


_POOL_ATTRS = (
    "auto_pad", "ceil_mode", "dilations", "kernel_shape", "pads", "strides",
    "storage_order", "count_include_pad",
)  # fmt: skip


def pool2d(n: Node) -> list[SSAValue]:
    """1-D / 2-D pools onto `rlx.pool2d` (`pool` sends the other pools to `general_pool`)."""
    if n.wants(1):
        raise n.error("the Indices output of MaxPool is not supported")
    x = n.input(0)
    rank = len(shape(x))
    k = rank - 2
    kernel = list(n.attr("kernel_shape"))
    strides = list(n.attr("strides") or [1] * k)
    dil = list(n.attr("dilations") or [1] * k)
    if any(d != 1 for d in dil):
        raise n.error("pooling dilations other than 1 are not supported")
    sizes = shape(x)[2:]
    pads = pool_pads(n, sizes, kernel, strides, dil)
    if n.attr("ceil_mode", 0):
        if n.attr("count_include_pad", 0):
            raise n.error("ceil_mode=1 with count_include_pad=1 is not supported")
        if DYN in sizes:
            raise n.error("ceil_mode=1 needs static spatial sizes")
        for i in range(k):
            out = _pool_out(n, sizes[i], pads[i], pads[k + i], kernel[i], strides[i], 1)
            pads[k + i] += max(
                (out - 1) * strides[i] + kernel[i] - (sizes[i] + pads[i] + pads[k + i]), 0
            )
    x2 = to_2d(n, x)
    kind = "max" if n.op_type == "MaxPool" else "avg"
    if kind == "avg" and n.attr("count_include_pad", 0) and any(pads):
        c = shape(x2)[1]
        if c == DYN:
            raise n.error("count_include_pad=1 needs a static channel count")
        kk = as_2d(kernel, rank, 1)
        wv = np.full([c, 1, *kk], 1.0 / (kk[0] * kk[1]))
        y = n.emit(
            "conv2d", x2, n.constant(wv, x2), strides=as_2d(strides, rank, 1),
            padding=pads_2d(pads, rank), groups=c,
        )  # fmt: skip
        return [from_2d(n, y, rank)]
    small_int = numpy_dtype(elem(x2)) in (np.int8, np.uint8)
    y = n.emit(
        "pool2d", n.cast(x2, "f32") if small_int else x2, kind=kind, kernel=as_2d(kernel, rank, 1),
        strides=as_2d(strides, rank, 1), padding=pads_2d(pads, rank),
    )  # fmt: skip
    return [from_2d(n, n.cast(y, elem(x2)), rank)]


def _pool_out(n: Node, size: int, lo: int, hi: int, k: int, st: int, dil: int) -> int:
    """Windows along one axis of `size` cells padded `lo` / `hi` (`window_size`); with
    `ceil_mode` the last partial window counts unless it would start inside the end padding."""
    if not n.attr("ceil_mode", 0):
        return window_size(size, k, st, lo + hi, dil)
    out = -(-(size + lo + hi - ((k - 1) * dil + 1)) // st) + 1
    return out - 1 if (out - 1) * st >= size + lo else out


def _geometry(n: Node, sizes: list[int], kernel: list[int]):  # noqa: ANN202
    """(strides, dilations, explicit pads, output sizes) of a pooling node."""
    k = len(sizes)
    st = list(n.attr("strides") or [1] * k)
    dil = list(n.attr("dilations") or [1] * k)
    pads = pool_pads(n, sizes, kernel, st, dil)
    out = []
    for i in range(k):
        o = _pool_out(n, sizes[i], pads[i], pads[k + i], kernel[i], st[i], dil[i])
        if o < 1:  # a kernel of 2^31 built 2^31 window slices (all memory)
            raise n.error(
                f"kernel {kernel[i]} (dilation {dil[i]}) does not fit the padded input "
                f"({sizes[i] + pads[i] + pads[k + i]}) on spatial axis {i}"
            )
        out.append(o)
    return st, dil, pads, out


def _windows(n: Node, x: SSAValue, kernel, st, dil, pads, out, fill):  # noqa: ANN001,ANN202
    """Padded `x` and a function giving its strided slice for one kernel offset."""
    k = len(kernel)
    s = list(shape(x))
    for i in range(k):
        need = (out[i] - 1) * st[i] + (kernel[i] - 1) * dil[i] + 1
        extra = max(need - (s[2 + i] + pads[i] + pads[k + i]), 0)
        x = pad_axis(n, x, 2 + i, pads[i], pads[k + i] + extra, fill)
    ps = shape(x)

    def at(off: tuple[int, ...], v: SSAValue = x) -> SSAValue:
        starts = [0, 0, *(o * d for o, d in zip(off, dil, strict=True))]
        limits = [
            ps[0],
            ps[1],
            *(a + (o - 1) * t + 1 for a, o, t in zip(starts[2:], out, st, strict=True)),
        ]
        return n.emit("slice", v, starts=starts, limits=limits, strides=[1, 1, *st])

    return at


def _count(sizes, kernel, st, dil, pads, out, include_pad: bool) -> np.ndarray:  # noqa: ANN001
    """Cells of each window inside the input (or inside the explicit pads)."""
    k = len(sizes)
    m = np.ones(sizes)
    m = np.pad(
        m, [(pads[i], pads[k + i]) for i in range(k)], constant_values=1 if include_pad else 0
    )
    need = [(out[i] - 1) * st[i] + (kernel[i] - 1) * dil[i] + 1 for i in range(k)]
    m = np.pad(m, [(0, max(need[i] - m.shape[i], 0)) for i in range(k)])
    c = np.zeros(out)
    for off in itertools.product(*(range(kk) for kk in kernel)):
        c += m[
            tuple(
                slice(o * d, o * d + (oo - 1) * t + 1, t)
                for o, d, oo, t in zip(off, dil, out, st, strict=True)
            )
        ]
    return c


def general_pool(n: Node, kind: str) -> list[SSAValue | None]:
    """`kind` max / avg / lp pooling of any rank (see the module docstring)."""
    x = n.input(0)
    xs = list(shape(x))
    if not is_static(xs):
        raise n.error("pooling needs static shapes here")
    sizes, kernel = xs[2:], list(n.attr("kernel_shape"))
    st, dil, pads, out = _geometry(n, sizes, kernel)
    offsets = list(itertools.product(*(range(kk) for kk in kernel)))
    dt = numpy_dtype(elem(x))
    if kind == "max":
        low = -np.inf if is_float(elem(x)) else np.iinfo(dt).min
        at = _windows(n, x, kernel, st, dil, pads, out, low)
        best, bi = None, None
        want_idx = n.wants(1)
        if want_idx:
            sp = np.arange(int(np.prod(sizes))).reshape(sizes)
            if n.attr("storage_order", 0):
                sp = np.arange(int(np.prod(sizes))).reshape(sizes[::-1]).T
            ix = n.constant(sp.reshape([1, 1, *sizes]), "i64")
            ix = n.typed("broadcast_to", ix, [1, 1, *sizes])
            at_i = _windows(n, ix, kernel, st, dil, pads, out, -1)
        for off in offsets:
            v = at(off)
            if best is None:
                best, bi = v, (at_i(off) if want_idx else None)
                continue
            take = n.emit("compare", v, best, predicate="gt")
            best = n.emit("where", take, v, best)
            if want_idx:
                bi = n.emit("where", take, at_i(off), bi)
        if not want_idx:
            return [best, None]
        per = int(np.prod(sizes))
        base = (np.arange(xs[0] * xs[1]) * per).reshape([xs[0], xs[1]] + [1] * len(sizes))
        return [best, n.emit("add", bi, n.constant(base, "i64"))]
    p = float(n.attr("p", 2)) if kind == "lp" else 0.0
    if kind == "lp":
        x = _lp_power(n, x, p)
    at = _windows(n, x, kernel, st, dil, pads, out, 0)
    acc = None
    for off in offsets:
        v = at(off)
        acc = v if acc is None else n.emit("add", acc, v)
    assert acc is not None
    if kind == "lp":
        return [_lp_root(n, acc, p)]
    cnt = _count(sizes, kernel, st, dil, pads, out, bool(n.attr("count_include_pad", 0)))
    return [n.emit("div", acc, n.constant(cnt.reshape([1, 1, *out]), acc))]


@converter("MaxPool", "AveragePool", attrs=_POOL_ATTRS)
def pool(n: Node) -> list[SSAValue | None]:
    rank = len(shape(n.input(0)))
    dil = n.attr("dilations") or []
    special = (
        rank > 4
        or any(d != 1 for d in dil)
        or n.wants(1)
        or (n.attr("ceil_mode", 0) and n.attr("count_include_pad", 0))
    )
    if not special:
        return pool2d(n)
    return general_pool(n, "max" if n.op_type == "MaxPool" else "avg")


@converter(
    "LpPool", attrs=("auto_pad", "ceil_mode", "dilations", "kernel_shape", "p", "pads", "strides")
)
def lp_pool(n: Node) -> list[SSAValue | None]:
    return general_pool(n, "lp")[:1]


def _lp_power(n: Node, x: SSAValue, p: float) -> SSAValue:
    """|x|^p, the terms of an Lp pool (x * x for p = 2)."""
    a = n.emit("abs", x)
    return n.emit("mul", a, a) if p == 2 else n.emit("pow", a, n.constant(p, a))


def _lp_root(n: Node, acc: SSAValue, p: float) -> SSAValue:
    """acc^(1/p), an Lp pool's sum of terms made a norm (sqrt for p = 2)."""
    return n.emit("sqrt", acc) if p == 2 else n.emit("pow", acc, n.constant(1 / p, acc))


@converter("GlobalLpPool", attrs=("p",))
def global_lp_pool(n: Node) -> list[SSAValue]:
    """The Lp norm over every spatial position (LpPool's formula, one window)."""
    x = n.input(0)
    xs = list(shape(x))
    if len(xs) < 3 or 0 in xs[2:]:
        raise n.error(f"GlobalLpPool needs a non-empty spatial extent, got shape {xs}")
    p = float(n.attr("p", 2))
    if p <= 0:
        raise n.error(f"p must be positive, got {n.attr('p', 2)}")
    terms = _lp_power(n, x, p)
    acc = n.emit("reduce", terms, kind="sum", axes=list(range(2, len(xs))), keepdims=True)
    return [_lp_root(n, acc, p)]


@converter("LRN", attrs=("alpha", "beta", "bias", "size"))
def lrn(n: Node) -> list[SSAValue]:
    x = n.input(0)
    xs = list(shape(x))
    size = int(n.attr("size"))
    c = xs[1]
    if c == DYN:
        raise n.error("LRN needs a static channel count")
    if size < 1:
        raise n.error(f"size must be positive, got {size}")
    sq = n.emit("mul", x, x)
    lo, hi = (size - 1) // 2, size - 1 - (size - 1) // 2
    lo, hi = min(lo, c - 1), min(hi, c - 1)  # beyond the channels the window adds zeros
    padded = pad_axis(n, sq, 1, lo, hi, 0)
    acc = None
    for j in range(lo + hi + 1):  # size 2^62 hung building 2^62 slices
        s = list(shape(padded))
        v = n.emit(
            "slice", padded, starts=[0, j] + [0] * (len(s) - 2), limits=[s[0], j + c, *s[2:]]
        )
        acc = v if acc is None else n.emit("add", acc, v)
    alpha, beta, bias = n.attr("alpha", 1e-4), n.attr("beta", 0.75), n.attr("bias", 1.0)
    d = n.emit("add", n.emit("mul", acc, n.constant(alpha / size, x)), n.constant(bias, x))
    return [n.emit("div", x, n.emit("pow", d, n.constant(beta, x)))]


@converter("Conv", attrs=("auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"))
def conv(n: Node) -> list[SSAValue]:
    return [conv_of(n, n.input(0), n.input(1), n.opt(2))]


def conv_of(n: Node, x: SSAValue, w: SSAValue, bias: SSAValue | None) -> SSAValue:
    """Conv of `x` by `w` (+ `bias`) with `n`'s attributes, 1-D to 3-D."""
    ks = n.attr("kernel_shape")
    if ks is not None and [int(k) for k in ks] != list(shape(w)[2:]):  # was ignored
        raise n.error(f"kernel_shape {list(ks)} differs from the weight's {list(shape(w)[2:])}")
    if len(shape(x)) != 5:
        return ops_nn.conv2d_of(n, x, w, bias)
    xs, ws = list(shape(x)), list(shape(w))
    if not (is_static(xs[1:]) and is_static(ws)):  # a dynamic batch is fine
        raise n.error("3-D Conv needs static shapes (but for the batch)")
    batch = xs[0]
    if batch == DYN:
        batch = (sym_of(n.ctx, x) or [None])[0]
        if batch is None:
            raise n.error("3-D Conv: the dynamic batch dim has no name (give dims=)")
    kernel = ws[2:]
    st = list(n.attr("strides") or [1] * 3)
    dil = list(n.attr("dilations") or [1] * 3)
    pads = spatial_pads(n, xs[2:], kernel, st, dil)
    x = pad_axis(n, x, 2, pads[0], pads[3], 0)
    depth = shape(x)[2]
    do = (depth - ((kernel[0] - 1) * dil[0] + 1)) // st[0] + 1
    acc = None
    for kd in range(kernel[0]):
        a = kd * dil[0]
        xd = slice_axis(n, x, 2, a, a + (do - 1) * st[0] + 1, st[0])
        xd = n.emit("transpose", xd, permutation=[0, 2, 1, 3, 4])
        xd = reshape_dims(n, xd, [batch * do, xs[1], xs[3], xs[4]])
        wd = n.emit(
            "slice", w, starts=[0, 0, kd, 0, 0], limits=[ws[0], ws[1], kd + 1, ws[3], ws[4]]
        )
        wd = n.reshape(wd, [ws[0], ws[1], ws[3], ws[4]])
        y = n.emit("conv2d", xd, wd, strides=st[1:], dilations=dil[1:],
                   padding=[pads[1], pads[2], pads[4], pads[5]], groups=n.attr("group", 1))  # fmt: skip
        acc = y if acc is None else n.emit("add", acc, y)
    assert acc is not None
    _, m, ho, wo = shape(acc)
    y = reshape_dims(n, acc, [batch, do, m, ho, wo])
    y = n.emit("transpose", y, permutation=[0, 2, 1, 3, 4])
    if bias is not None:
        y = n.emit("add", y, n.reshape(bias, [1, m, 1, 1, 1]))
    return y
