"""DeformConv (19-25, 2-D): a convolution whose every tap reads X at its regular position
plus a learned run-time offset, bilinearly, times an optional run-time mask.

Per offset group, kernel tap and output pixel the sample point is `(-pad + stride * i +
dilation * a + dy, ...)`, sampled as GridSample samples (bilinear, zero padding:
`ops_sample.axis_taps` / `gather_taps` on the `[OG * N * H * W, C / OG]` view of X), which
is how onnx.reference defines it. The sampled
columns `[N * OH * OW, C * KH * KW]` then meet the weights in one batched `rlx.matmul`
per group (the im2col form), plus the bias.
"""

from __future__ import annotations

import numpy as np
from xdsl.ir import SSAValue

from rlx.frontends.onnx.node import Node, elem, is_static, shape
from rlx.frontends.onnx.ops_sample import axis_taps, gather_taps
from rlx.frontends.onnx.registry import converter


@converter("DeformConv", attrs=("dilations", "group", "kernel_shape", "offset_group", "pads",
                                "strides"))  # fmt: skip
def deform_conv(n: Node) -> list[SSAValue]:
    x, w, off = n.input(0), n.input(1), n.input(2)
    bias, mask = n.opt(3), n.opt(4)
    xs, ws, os_ = list(shape(x)), list(shape(w)), list(shape(off))
    if len(xs) != 4 or not all(is_static(s) for s in (xs, ws, os_)):
        raise n.error(f"DeformConv: only 2-D with static shapes, got X {xs}")
    nb, c, h, wd = xs
    oc, cpg, kh, kw = ws
    g, og = int(n.attr("group", 1)), int(n.attr("offset_group", 1))
    ks = [int(k) for k in n.attr("kernel_shape", [kh, kw])]
    sh, sw = (int(v) for v in n.attr("strides", [1, 1]))
    dh, dw = (int(v) for v in n.attr("dilations", [1, 1]))
    pt, pl, pb, pr = (int(v) for v in n.attr("pads", [0, 0, 0, 0]))
    if ks != [kh, kw]:
        raise n.error(f"kernel_shape {ks} differs from the weight's {[kh, kw]}")
    if g < 1 or og < 1 or c != cpg * g or oc % g or c % og:
        raise n.error(f"channels: X has {c}, W {ws}, group {g}, offset_group {og}")
    if min(sh, sw, dh, dw) < 1 or min(pt, pl, pb, pr) < 0:
        raise n.error("strides and dilations must be positive, pads not negative")
    oh = (h + pt + pb - (kh - 1) * dh - 1) // sh + 1
    ow = (wd + pl + pr - (kw - 1) * dw - 1) // sw + 1
    taps = kh * kw
    if os_ != [nb, og * taps * 2, oh, ow]:
        raise n.error(f"offset shape {os_}, expected {[nb, og * taps * 2, oh, ow]}")
    if mask is not None and list(shape(mask)) != [nb, og * taps, oh, ow]:
        raise n.error(f"mask shape {list(shape(mask))}, expected {[nb, og * taps, oh, ow]}")
    cg = c // og
    t = elem(x)
    off = n.reshape(off, [nb, og, kh, kw, 2, oh, ow])

    a, b, i, j = np.meshgrid(np.arange(kh), np.arange(kw), np.arange(oh), np.arange(ow),
                             indexing="ij")  # fmt: skip
    regular = (-pt + sh * i + dh * a, -pl + sw * j + dw * b)  # each [KH, KW, OH, OW]

    def coord(k: int) -> SSAValue:
        """Regular position + offset along axis k (0: y, 1: x): [N, OG, KH, KW, OH, OW]."""
        d = n.emit("slice", off, starts=[0, 0, 0, 0, k, 0, 0],
                   limits=[nb, og, kh, kw, k + 1, oh, ow])  # fmt: skip
        grid = regular[k].reshape(1, 1, kh, kw, oh, ow).astype(np.float64)
        return n.emit("add", n.reshape(d, [nb, og, kh, kw, oh, ow]), n.constant(grid, t))

    group_base = (np.arange(og)[None, :] * nb + np.arange(nb)[:, None]) * (h * wd)
    gbase = n.constant(group_base.reshape(nb, og, 1, 1, 1, 1).astype(np.int64), "i64")
    rows = n.reshape(n.emit("transpose", n.reshape(x, [nb, og, cg, h, wd]),
                            permutation=[1, 0, 3, 4, 2]), [og * nb * h * wd, cg])  # fmt: skip
    per_axis = [axis_taps(n, coord(k), size, "linear", "zeros") for k, size in ((0, h), (1, wd))]
    acc = gather_taps(n, rows, gbase, per_axis, [wd, 1], [nb, og, kh, kw, oh, ow])  # [..., Cg]
    if mask is not None:
        m = n.reshape(n.cast(mask, t), [nb, og, kh, kw, oh, ow, 1])
        acc = n.emit("mul", acc, m)
    # columns [G, N * OH * OW, C / G * KH * KW], channel c = og * Cg + cg
    cols = n.emit("transpose", acc, permutation=[0, 4, 5, 1, 6, 2, 3])  # N, OH, OW, OG, Cg, KH, KW
    cols = n.reshape(cols, [nb * oh * ow, g, cpg * taps])
    cols = n.emit("transpose", cols, permutation=[1, 0, 2])
    wt = n.emit("transpose", n.reshape(w, [g, oc // g, cpg * taps]), permutation=[0, 2, 1])
    out = n.emit("matmul", cols, wt)  # [G, N * OH * OW, OC / G]
    out = n.emit("transpose", n.reshape(out, [g, nb, oh, ow, oc // g]), permutation=[1, 0, 4, 2, 3])
    out = n.reshape(out, [nb, oc, oh, ow])
    if bias is not None:
        out = n.emit("add", out, n.reshape(bias, [1, oc, 1, 1]))
    return [out]
