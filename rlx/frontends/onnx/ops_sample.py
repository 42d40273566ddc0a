"""GridSample (opsets 16-25: nearest / (bi)linear / (bi)cubic, zeros / border /
reflection padding, align_corners, 2-D and 3-D) with run-time grids.

Per spatial axis the grid coordinate is denormalized, clamped or reflected into range
(`padding_mode`), and turned into 1, 2 or 4 taps (index, weight, in-range) with
elementwise ops, exactly as `onnx.reference` does; every combination of taps is one
`rlx.gather` of rows of the `[N * pixels, C]` view of the input, weighted and summed.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np
from xdsl.ir import SSAValue

from rlx.frontends.onnx.node import Node, elem, is_static, shape
from rlx.frontends.onnx.registry import converter

_A = -0.75


def _reflect(n: Node, x: SSAValue, lo: float, hi: float) -> SSAValue:
    """Reflect `x` at the borders until it lies in [lo, hi] (the reference's loop)."""
    rng = hi - lo

    def c(v: float) -> SSAValue:
        return n.constant(v, x)

    def fold(dx: SSAValue, near: float, far: float) -> SSAValue:
        k = n.emit("floor", n.emit("div", dx, c(rng)))
        r = n.emit("sub", dx, n.emit("mul", k, c(rng)))
        odd = n.emit("sub", k, n.emit("mul", n.emit("floor", n.emit("div", k, c(2))), c(2)))
        even = n.emit("compare", odd, c(0), predicate="eq")
        toward = n.emit("add", c(near), r) if near < far else n.emit("sub", c(near), r)
        back = n.emit("sub", c(far), r) if near < far else n.emit("add", c(far), r)
        return n.emit("where", even, toward, back)

    below = n.emit("compare", x, c(lo), predicate="lt")
    above = n.emit("compare", x, c(hi), predicate="gt")
    y = n.emit("where", below, fold(n.emit("sub", c(lo), x), lo, hi), x)
    return n.emit("where", above, fold(n.emit("sub", x, c(hi)), hi, lo), y)


def _clamp(n: Node, x: SSAValue, lo: float, hi: float) -> SSAValue:
    return n.emit("min", n.emit("max", x, n.constant(lo, x)), n.constant(hi, x))


def _cubic(n: Node, t: SSAValue) -> list[SSAValue]:
    def c(v: float) -> SSAValue:
        return n.constant(v, t)

    def far(u: SSAValue) -> SSAValue:  # ((A u - 5A) u + 8A) u - 4A
        p = n.emit(
            "add", n.emit("mul", n.emit("sub", n.emit("mul", c(_A), u), c(5 * _A)), u), c(8 * _A)
        )
        return n.emit("sub", n.emit("mul", p, u), c(4 * _A))

    def near(u: SSAValue) -> SSAValue:  # ((A+2) u - (A+3)) u u + 1
        p = n.emit("sub", n.emit("mul", c(_A + 2), u), c(_A + 3))
        return n.emit("add", n.emit("mul", n.emit("mul", p, u), u), c(1))

    one_t = n.emit("sub", c(1), t)
    return [far(n.emit("add", t, c(1))), near(t), near(one_t), far(n.emit("add", one_t, c(1)))]


Tap = tuple[SSAValue, SSAValue | None, SSAValue | None]
"""(index i64, weight or None: 1, in range bool or None: always) of one sample on one axis."""


def _taps(n: Node, g: SSAValue, d: int, mode: str, pad: str, ac: bool) -> list[Tap]:
    """The taps of normalized grid coordinates `g` on a spatial axis of size `d`."""
    x = (n.emit("mul", n.emit("div", n.emit("add", g, n.constant(1, g)), n.constant(2, g)), n.constant(d - 1, g))
         if ac else n.emit("div", n.emit("sub", n.emit("mul", n.emit("add", g, n.constant(1, g)), n.constant(d, g)),
                                          n.constant(1, g)), n.constant(2, g)))  # fmt: skip
    return axis_taps(n, x, d, mode, pad, ac)


def axis_taps(n: Node, x: SSAValue, d: int, mode: str, pad: str, ac: bool = True) -> list[Tap]:
    """The taps of pixel coordinates `x` on an axis of size `d` (GridSample's modes and
    padding; `ac`: align_corners' reflection bounds); indices are always clamped into
    [0, d), out-of-range taps (zeros padding) flagged."""
    if mode == "nearest":
        x = n.emit("round", x)
    lo, hi = (0.0, d - 1.0) if ac else (-0.5, d - 0.5)
    if pad == "border":
        x = _clamp(n, x, 0, d - 1)
    elif pad == "reflection":
        x = _reflect(n, x, lo, hi)
    if mode == "nearest":
        starts, weights = [n.cast(x, "i64")], [None]
    else:
        x0 = n.emit("floor", x)
        t = n.emit("sub", x, x0)
        i0 = n.cast(x0, "i64")
        if mode == "linear":
            weights = [n.emit("sub", n.constant(1, t), t), t]
            offs = [0, 1]
        else:
            weights, offs = _cubic(n, t), [-1, 0, 1, 2]
        starts = [n.emit("add", i0, n.constant(o, "i64")) for o in offs]
    out = []
    for i, w in zip(starts, weights, strict=True):
        valid = None
        if pad == "zeros":
            valid = n.emit("where", n.emit("compare", i, n.constant(0, "i64"), predicate="ge"),
                           n.emit("compare", i, n.constant(d, "i64"), predicate="lt"), n.constant(False, "bool"))  # fmt: skip
        elif pad == "reflection" and mode != "nearest":
            i = n.cast(_reflect(n, n.cast(i, elem(x)), lo, hi), "i64")
        i = n.emit("min", n.emit("max", i, n.constant(0, "i64")), n.constant(d - 1, "i64"))
        out.append((i, w, valid))
    return out


@converter("GridSample", attrs=("align_corners", "mode", "padding_mode"))
def grid_sample(n: Node) -> list[SSAValue]:
    x, grid = n.input(0), n.input(1)
    xs, gs = shape(x), shape(grid)
    if not (is_static(xs) and is_static(gs)):
        raise n.error("GridSample needs static shapes")
    mode = {"bilinear": "linear", "bicubic": "cubic"}.get(
        n.attr("mode", "linear"), n.attr("mode", "linear")
    )
    if n.ctx.opset < 20 and "mode" not in n.attrs:
        mode = "linear"
    pad = n.attr("padding_mode", "zeros")
    ac = bool(n.attr("align_corners", 0))
    nb, c, dims = xs[0], xs[1], list(xs[2:])
    k = len(dims)
    if len(gs) != k + 2 or gs[0] != nb or gs[-1] != k:  # a grid of 5 coordinates per point
        raise n.error(f"Grid of shape {list(gs)} must be [{nb}, <{k} output sizes>, {k}]")
    out_sp = list(gs[1:-1])
    taps = []
    for i in range(k):  # the grid's last axis lists coordinates innermost-first (x, y, z)
        j = k - 1 - i
        gi = n.reshape(
            n.emit("slice", grid, starts=[0] * (len(gs) - 1) + [j], limits=[*gs[:-1], j + 1]),
            gs[:-1],
        )
        taps.append(_taps(n, gi, dims[i], mode, pad, ac))
    pixels = int(np.prod(dims))
    perm = [0, *range(2, 2 + k), 1]
    rows = n.reshape(n.emit("transpose", x, permutation=perm), [nb * pixels, c])
    base = n.constant((np.arange(nb) * pixels).reshape([nb] + [1] * k), "i64")
    strides = [int(np.prod(dims[i + 1 :])) for i in range(k)]
    acc = gather_taps(n, rows, base, taps, strides, [nb, *out_sp])
    return [n.emit("transpose", acc, permutation=[0, k + 1, *range(1, k + 1)])]


def gather_taps(n: Node, rows: SSAValue, base: SSAValue, taps: Sequence[Sequence[Tap]],
                strides: Sequence[int], out: Sequence[int], combine: str = "add") -> SSAValue:  # fmt: skip
    """Over every choice of one tap per axis, the row `base + Σ index · stride` of `rows`
    (`[pixels, C]`), 0 where a tap is out of range, times the taps' weights; the choices
    combined by `combine` ("add", or "max"): `[*out, C]` (the taps and `base` broadcast
    to `out`)."""
    acc = None
    for combo in itertools.product(*taps):
        flat = base
        w: SSAValue | None = None
        valid: SSAValue | None = None
        for (idx, wt, ok), s in zip(combo, strides, strict=True):
            flat = n.emit("add", flat, n.emit("mul", idx, n.constant(s, "i64")))
            if wt is not None:
                w = wt if w is None else n.emit("mul", w, wt)
            if ok is not None:
                valid = (
                    ok if valid is None else n.emit("where", valid, ok, n.constant(False, "bool"))
                )
        v = n.emit("gather", rows, flat, axis=0)  # [*out, C]
        if valid is not None:
            v = n.emit("where", n.reshape(valid, [*out, 1]), v, n.constant(0, v))
        if w is not None:
            v = n.emit("mul", v, n.reshape(n.cast(w, elem(v)), [*out, 1]))
        acc = v if acc is None else n.emit(combine, acc, v)
    assert acc is not None
    return acc
