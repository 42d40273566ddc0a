"""RoiAlign (opsets 10-25: avg / max, half_pixel / output_half_pixel) with run-time rois and
batch indices, a fixed `sampling_ratio` > 0.

Per roi and axis the `g = sampling_ratio` sample positions of each output bin are computed
with elementwise ops in onnx.reference's order and type (`start + p * bin + (i + 0.5) *
bin / g`), then its two taps: a sample outside `[-1, size]` has weight 0, one below 0
reads 0, one at or past `size - 1` reads the last row / column only. Every (y tap, x tap)
pair is one `rlx.gather` of rows of the `[N * H * W, C]` view of X at `b * H * W + y * W +
x` (`ops_sample.gather_taps`; a batch index outside [0, N) is a run-time IndexError naming
it), weighted; avg sums the four taps and averages
the g x g samples of a bin, max takes the largest weighted tap per sample and then the
largest sample, as onnx.reference and onnxruntime do. An adaptive grid (`sampling_ratio` 0:
`ceil(roi size / output size)` samples) depends on the roi values: refused.
"""

from __future__ import annotations

import numpy as np
from xdsl.ir import SSAValue

from rlx.frontends.onnx.node import Node, elem, is_static, shape
from rlx.frontends.onnx.ops_index import wrap_index
from rlx.frontends.onnx.ops_sample import Tap, gather_taps
from rlx.frontends.onnx.ops_tensor import slice_axis
from rlx.frontends.onnx.registry import converter

TRANSFORMS = {"half_pixel": 0.5, "output_half_pixel": 0.0}
"""coordinate_transformation_mode -> the shift subtracted from the scaled roi corners."""


def _axis_taps(n: Node, start: SSAValue, end: SSAValue, out: int, g: int, size: int,
               clamp_one: bool, form: list[int]) -> list[Tap]:  # fmt: skip
    """The low and high taps (`ops_sample.Tap`, reshaped to `form`) of the `out * g`
    samples of each roi along one axis of `size`; a sample outside [-1, size] weighs 0."""
    length = n.emit("sub", end, start)
    if clamp_one:  # output_half_pixel: malformed rois become 1 x 1
        length = n.emit("max", length, n.constant(1.0, length))
    bin_ = n.emit("div", length, n.constant(float(out), length))
    p = np.repeat(np.arange(out), g).astype(np.float64).reshape(1, -1)
    i = np.tile(np.arange(g) + 0.5, out).reshape(1, -1)
    pos = n.emit("add", n.emit("add", start, n.emit("mul", n.constant(p, bin_), bin_)),
                 n.emit("div", n.emit("mul", n.constant(i, bin_), bin_),
                        n.constant(float(g), bin_)))  # fmt: skip
    valid = n.emit("where", n.emit("compare", pos, n.constant(-1.0, pos), predicate="lt"),
                   n.constant(False), n.emit("compare", pos, n.constant(float(size), pos),
                                             predicate="le"))  # fmt: skip
    pos = n.emit("max", pos, n.constant(0.0, pos))
    low = n.cast(pos, "i64")  # pos >= 0: truncation is floor (NaN and overflow saturate)
    last = n.emit("compare", low, n.constant(size - 1, "i64"), predicate="ge")
    top = n.constant(size - 1, "i64")
    low = n.emit("where", last, top, low)
    high = n.emit("where", last, top, n.emit("add", low, n.constant(1, "i64")))
    pos = n.emit("where", last, n.cast(top, elem(pos)), pos)
    frac = n.emit("sub", pos, n.cast(low, elem(pos)))
    weight_in = n.cast(valid, elem(frac))
    weights = (n.emit("sub", n.constant(1.0, frac), frac), frac)
    return [(n.reshape(i, form), n.reshape(n.emit("mul", w, weight_in), form), None)
            for i, w in zip((low, high), weights, strict=True)]  # fmt: skip


@converter("RoiAlign", attrs=("coordinate_transformation_mode", "mode", "output_height",
                              "output_width", "sampling_ratio", "spatial_scale"))  # fmt: skip
def roi_align(n: Node) -> list[SSAValue]:
    x, rois, batch = n.input(0), n.input(1), n.input(2)
    xs, rs = list(shape(x)), list(shape(rois))
    if len(xs) != 4 or not is_static(xs) or not is_static(rs) or len(rs) != 2 or rs[1] != 4:
        raise n.error(f"RoiAlign needs static X [N, C, H, W] and rois [R, 4], got {xs}, {rs}")
    mode = n.attr("mode", "avg")
    shift = TRANSFORMS.get(n.attr("coordinate_transformation_mode", "half_pixel"))
    if mode not in ("avg", "max") or shift is None:
        raise n.error("mode must be avg or max, coordinate_transformation_mode half_pixel "
                      "or output_half_pixel")  # fmt: skip
    oh, ow = int(n.attr("output_height", 1)), int(n.attr("output_width", 1))
    g = int(n.attr("sampling_ratio", 0))
    if oh < 1 or ow < 1:
        raise n.error(f"output_height and output_width must be positive, got {oh}, {ow}")
    if g <= 0:
        raise n.error("sampling_ratio 0 (an adaptive grid, sized by the roi values) is not "
                      "supported: give sampling_ratio > 0")  # fmt: skip
    nb, c, h, w = xs
    r = rs[0]
    scale = float(n.attr("spatial_scale", 1.0))
    edges = [n.emit("sub", n.emit("mul", slice_axis(n, rois, 1, k, k + 1, 1),
                                  n.constant(scale, rois)), n.constant(shift, rois))
             for k in range(4)]  # fmt: skip  # x1, y1, x2, y2: [R, 1] each
    ty = _axis_taps(n, edges[1], edges[3], oh, g, h, shift == 0.0, [r, oh * g, 1])
    tx = _axis_taps(n, edges[0], edges[2], ow, g, w, shift == 0.0, [r, 1, ow * g])
    rows = n.reshape(n.emit("transpose", x, permutation=[0, 2, 3, 1]), [nb * h * w, c])
    checked = n.cast(wrap_index(n, batch, nb, negative=False), "i64")  # in [0, N), else an error
    base = n.reshape(n.emit("mul", checked, n.constant(h * w, "i64")), [r, 1, 1])
    combine = "add" if mode == "avg" else "max"  # max: of the weighted taps, then samples
    acc = gather_taps(n, rows, base, [ty, tx], [w, 1], [r, oh * g, ow * g], combine)
    acc = n.reshape(acc, [r, oh, g, ow, g, c])
    kind = "sum" if mode == "avg" else "max"
    y = n.emit("reduce", acc, kind=kind, axes=[2, 4], keepdims=False)  # [R, oh, ow, C]
    if mode == "avg":
        y = n.emit("div", y, n.constant(float(g * g), y))
    return [n.emit("transpose", y, permutation=[0, 3, 1, 2])]
