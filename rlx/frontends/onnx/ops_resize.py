"""Resize (opsets 10-19) and Upsample (opsets 9-10), decomposed per axis into gathers.

Resize is separable: each resized axis maps output position `o` to `n` source taps
`idx[o, k]` with weights `w[o, k]` (1 tap for nearest, 2 for linear, 4 for cubic, wider
with antialias). Both are computed at import time in NumPy from the static shapes
(mirroring `onnx.reference`'s per-axis algorithm), and the axis is resized with one
`rlx.gather` per tap, `mul` by the weights and `add` (nearest: the gather alone, exact
for every dtype). `tf_crop_and_resize` positions outside the input get
`extrapolation_value` through `rlx.where`. Scales and sizes must be compile-time values.
"""

from __future__ import annotations

import math

import numpy as np
from xdsl.ir import SSAValue

from rlx.dialects.rlx.base import DYN, is_float
from rlx.dtypes import numpy_dtype
from rlx.frontends.onnx.node import Node, elem, is_static, norm_axis, shape
from rlx.frontends.onnx.registry import OnnxImportError, converter


def _nearest(mode: str):  # noqa: ANN202
    def f(r: float, s: float) -> np.ndarray:
        if float(r).is_integer():
            return np.array([0.0, 1.0])
        pick = {
            "round_prefer_floor": r > 0.5, "round_prefer_ceil": r >= 0.5,
            "floor": False, "ceil": True,
        }[mode]  # fmt: skip
        return np.array([0.0, 1.0]) if pick else np.array([1.0, 0.0])

    return f


def _linear(antialias: bool):  # noqa: ANN202
    def f(r: float, s: float) -> np.ndarray:
        if not antialias:
            return np.array([1 - r, r])
        s = min(s, 1.0)
        start = int(np.floor(-1 / s) + 1)
        args = (np.arange(start, start + 2 - 2 * start) - r) * s
        c = np.clip(1 - np.abs(args), 0, 1)
        return c / c.sum()

    return f


def _cubic(a: float, antialias: bool):  # noqa: ANN202
    def k(x: float) -> float:
        x = abs(x)
        if x <= 1:
            return (a + 2) * x**3 - (a + 3) * x**2 + 1
        return a * x**3 - 5 * a * x**2 + 8 * a * x - 4 * a if x < 2 else 0.0

    def f(r: float, s: float) -> np.ndarray:
        if not antialias:
            return np.array([k(r + 1), k(r), k(1 - r), k(2 - r)])
        s = min(s, 1.0)
        i0 = int(np.floor(-2 / s) + 1)
        c = np.array([k(s * (i - r)) for i in range(i0, 2 - i0)])
        return c / c.sum()

    return f


def _source(ctm: str, y: np.ndarray, scale: float, w_in: int, w_out: int, roi) -> np.ndarray:  # noqa: ANN001
    """Source coordinate of each output position (`coordinate_transformation_mode`)."""
    w = scale * w_in
    if ctm == "align_corners":
        return np.zeros(w_out) if w == 1 else y * (w_in - 1) / (w - 1)
    if ctm == "asymmetric":
        return y / scale
    if ctm == "tf_crop_and_resize":
        x = np.full(w_out, (roi[1] - roi[0]) * (w_in - 1) / 2) if w == 1 else (
            y * (roi[1] - roi[0]) * (w_in - 1) / (w - 1))  # fmt: skip
        return x + roi[0] * (w_in - 1)
    if ctm == "pytorch_half_pixel":
        return np.full(w_out, -0.5) if w == 1 else (y + 0.5) / scale - 0.5
    if ctm == "half_pixel":
        return (y + 0.5) / scale - 0.5
    if ctm == "half_pixel_symmetric":
        return w_in / 2 * (1 - w_out / w) + (y + 0.5) / scale - 0.5
    raise ValueError(f"coordinate_transformation_mode '{ctm}' is not supported")


def axis_taps(w_in: int, w_out: int, scale: float, coeffs, ctm: str, roi, exclude: bool):  # noqa: ANN001,ANN201
    """(indices [out, n], weights [out, n], extrapolated [out] or None) of one axis."""
    x = _source(ctm, np.arange(w_out, dtype=np.float64), scale, w_in, w_out, roi)
    extra = (x < 0) | (x > w_in - 1) if ctm == "tf_crop_and_resize" else None
    xi = np.floor(x).astype(np.int64)
    ratio = np.where(x == xi, 1.0, x - xi)
    c = np.stack([coeffs(float(r), scale) for r in ratio])
    n = c.shape[1]
    pad = int(np.ceil(n / 2))
    xp = x + pad
    p = np.floor(xp).astype(np.int64)
    frac = xp - p
    if n % 2 == 0:
        off = np.where(frac == 0, -(n // 2), -(n // 2) + 1)
    else:
        off = np.where(frac <= 0.5, -((n - 1) // 2), -((n - 1) // 2) + 1)
    idx = (p + off)[:, None] + np.arange(n)[None, :] - pad
    if exclude:
        c = np.where((idx < 0) | (idx >= w_in), 0.0, c)
        tot = c.sum(axis=-1, keepdims=True)
        c = c / np.where(tot == 0, 1.0, tot)
    return np.clip(idx, 0, w_in - 1), c, extra


def resize_axis(n: Node, x: SSAValue, axis: int, taps) -> SSAValue:  # noqa: ANN001
    """Resize `axis` of `x` by the (indices, weights, extrapolated) of `axis_taps`."""
    idx, c, extra = taps
    rank = len(shape(x))
    keep = np.abs(c) > 0
    cols = [k for k in range(c.shape[1]) if keep[:, k].any()]
    wshape = [c.shape[0] if a == axis else 1 for a in range(rank)]
    # One-hot taps (nearest) select a column per output row: a weighted sum multiplied
    # the unselected taps by 0, so a NaN or Inf there made the row NaN (onnxruntime and
    # onnx.reference copy the nearest value).
    select = bool(np.isin(c, (0.0, 1.0)).all() and (c.sum(axis=1) == 1).all())
    out: SSAValue | None = None
    for k in cols:
        g = n.emit("gather", x, n.constant(idx[:, k], "i64"), axis=axis)
        if select:
            mask = n.constant((c[:, k] == 1.0).reshape(wshape), "bool")
            out = g if out is None else n.emit("where", mask, g, out)
            continue
        if not np.all(c[:, k] == 1.0):
            g = n.emit("mul", g, n.constant(c[:, k].reshape(wshape), g))
        out = g if out is None else n.emit("add", out, g)
    assert out is not None
    if extra is not None and extra.any():
        ev = n.constant(float(n.attr("extrapolation_value", 0.0)), out)
        out = n.emit("where", n.constant(extra.reshape(wshape), "bool"), ev, out)
    return out


def _sizes(n: Node, xs: list[int], scales, sizes, axes: list[int]):  # noqa: ANN001,ANN202
    """(per-axis scale, per-axis output size) as `onnx.reference` computes them."""
    r = len(xs)
    if sizes is not None:
        out = list(xs)
        for i, a in enumerate(axes):
            out[a] = int(sizes[i])
        sc = [out[i] / xs[i] for i in range(r)]
        policy = n.attr("keep_aspect_ratio_policy", "stretch")
        if policy != "stretch":
            pick = min if policy == "not_larger" else max
            s = pick(sc[a] for a in axes)
            sc = [s if i in axes else 1.0 for i in range(r)]
            out = [int(s * xs[i] + 0.5) if i in axes else xs[i] for i in range(r)]
        return sc, out
    sc = [1.0] * r
    for i, a in enumerate(axes):
        sc[a] = float(scales[i])
    return sc, [int(s * d) for s, d in zip(sc, xs, strict=True)]


def _keep_dynamic(n: Node, xs: list[int], scales, sizes, roi, axes: list[int]):  # noqa: ANN001,ANN202
    """Drop the dynamic axes of `xs` from the resized `axes` (and their scales / sizes /
    roi entries): each must keep its size (scale 1, or a size that is the input's own
    symbolic dim, as in `Concat(Shape(x)[:2], [h, w])`); else an error."""
    from rlx.frontends.onnx.symbolic_ops import sym_shape

    syms = sym_shape(n, 0)
    keep = []
    for i, a in enumerate(axes):
        if xs[a] != DYN:
            keep.append(i)
            continue
        same = (scales is not None and float(scales[i]) == 1.0) or (
            sizes is not None and syms is not None and _same_dim(sizes[i], syms[a])
        )
        if not same:
            raise n.error(f"Resize needs a static size on the resized axis {a}")
        if (
            roi is not None
            and roi.size
            and (float(roi[i]), float(roi[len(axes) + i])) != (0.0, 1.0)
        ):
            raise n.error(f"Resize with a roi needs a static size on axis {a}")
    pick = np.asarray(keep, np.int64)
    if roi is not None and roi.size:
        roi = np.concatenate([np.asarray(roi)[pick], np.asarray(roi)[pick + len(axes)]])
    scales = None if scales is None else np.asarray(scales)[pick]
    sizes = None if sizes is None else np.asarray(sizes)[pick]
    return scales, sizes, roi, [axes[i] for i in keep]


def _same_dim(a: object, b: object) -> bool:
    try:
        return bool(a == b)
    except OnnxImportError:  # an undecidable symbolic comparison
        return False


def _resize(n: Node, x: SSAValue, scales, sizes, roi, ctm: str, nearest_mode: str) -> SSAValue:  # noqa: ANN001
    xs = list(shape(x))
    r = len(xs)
    axes = [norm_axis(n, a, r, "axes entry") for a in n.attr("axes", range(r))]
    if not is_static(xs):
        scales, sizes, roi, axes = _keep_dynamic(n, xs, scales, sizes, roi, axes)
        xs = [1 if d == DYN else d for d in xs]  # the dynamic axes are not resized
    sc, out = _sizes(n, xs, scales, sizes, axes)
    full_roi = None
    if roi is not None and roi.size:
        full_roi = [0.0] * r + [1.0] * r
        for i, a in enumerate(axes):
            full_roi[a], full_roi[r + a] = float(roi[i]), float(roi[len(axes) + i])
    mode = n.attr("mode", "nearest")
    aa = bool(n.attr("antialias", 0))
    coeffs = {
        "nearest": lambda: _nearest(nearest_mode),
        "linear": lambda: _linear(aa),
        "cubic": lambda: _cubic(float(n.attr("cubic_coeff_a", -0.75)), aa),
    }.get(mode)
    if coeffs is None:
        raise n.error(f"mode '{mode}' is not supported")
    dt = numpy_dtype(elem(x))
    y = x if mode == "nearest" or is_float(elem(x)) else n.cast(x, "f32")
    for a in axes:
        roi_a = None if full_roi is None else (full_roi[a], full_roi[a + r])
        if math.isclose(sc[a], 1.0) and out[a] == xs[a] and roi_a in (None, (0.0, 1.0)):
            continue
        try:
            taps = axis_taps(
                xs[a], out[a], sc[a], coeffs(), ctm, roi_a, bool(n.attr("exclude_outside", 0))
            )
        except (ValueError, KeyError) as e:
            raise n.error(str(e)) from None
        y = resize_axis(n, y, a, taps)
    if elem(y) != elem(x):  # integer data interpolated in f32: round and saturate
        info = np.iinfo(dt)
        y = n.emit("round", y)
        y = n.emit("min", n.emit("max", y, n.constant(info.min, y)), n.constant(info.max, y))
        y = n.cast(y, dt)
    return y


@converter(
    "Resize",
    attrs=("antialias", "axes", "coordinate_transformation_mode", "cubic_coeff_a",
           "exclude_outside", "extrapolation_value", "keep_aspect_ratio_policy", "mode",
           "nearest_mode"),
)  # fmt: skip
def resize(n: Node) -> list[SSAValue]:
    if n.ctx.opset < 11:  # Resize-10: (X, scales), asymmetric coordinates
        return [_resize(n, n.input(0), n.const(1, "scales "), None, None, "asymmetric", "floor")]
    roi = n.const(1, "roi ")
    scales = n.const(2, "scales ")
    sizes = n.const(3, "sizes ")
    if scales is not None and scales.size == 0:
        scales = None
    if scales is None and sizes is None:
        raise n.error("needs scales or sizes")
    ctm = n.attr("coordinate_transformation_mode", "half_pixel")
    nm = n.attr("nearest_mode", "round_prefer_floor")
    return [_resize(n, n.input(0), scales, sizes, roi, ctm, nm)]


@converter("Upsample", attrs=("mode",))
def upsample(n: Node) -> list[SSAValue]:
    scales = n.const(1, "scales ")  # Upsample-7's attribute: an input (legacy.modernize)
    return [_resize(n, n.input(0), np.asarray(scales), None, None, "asymmetric", "floor")]
