"""Neural-network ONNX ops: MatMul, Gemm, the normalizations, Conv and pooling."""

from __future__ import annotations

import numpy as np
from xdsl.ir import SSAValue

from rlx.dialects.rlx.base import DYN
from rlx.frontends.onnx.node import Node, elem, shape
from rlx.frontends.onnx.registry import converter
from rlx.frontends.onnx.spatial import (
    as_2d,
    check_window,
    from_2d,
    pads_2d,
    spatial_pads,
    to_2d,
)


@converter("MatMul", attrs=())
def matmul(n: Node) -> list[SSAValue]:
    a, b = n.input(0), n.input(1)
    sa, sb = shape(a), shape(b)
    if len(sa) == 1:
        a = n.reshape(a, [1, sa[0]])
    if len(sb) == 1:
        b = n.reshape(b, [sb[0], 1])
    y = n.emit("matmul", a, b)
    if len(sa) == 1 or len(sb) == 1:
        sy = list(shape(y))
        drop = ([len(sy) - 2] if len(sa) == 1 else []) + ([len(sy) - 1] if len(sb) == 1 else [])
        y = n.reshape(y, [d for i, d in enumerate(sy) if i not in drop])
    return [y]


@converter("Gemm", attrs=("alpha", "beta", "transA", "transB"))
def gemm(n: Node) -> list[SSAValue]:
    a, b = n.input(0), n.input(1)
    if n.attr("transA", 0):
        a = n.emit("transpose", a, permutation=[1, 0])
    if n.attr("transB", 0):
        b = n.emit("transpose", b, permutation=[1, 0])
    y = n.emit("matmul", a, b)
    alpha, beta = n.attr("alpha", 1.0), n.attr("beta", 1.0)
    if alpha != 1.0:
        y = n.emit("mul", y, n.constant(alpha, y))
    if n.has(2):
        c = n.input(2)
        if beta != 1.0:
            c = n.emit("mul", c, n.constant(beta, c))
        cs, ys = shape(c), shape(y)
        pairs = zip(cs[::-1], ys[::-1], strict=False)
        if len(cs) > 2 or any(d not in (1, e) and DYN not in (d, e) for d, e in pairs):
            raise n.error(  # a [5, 4] C made a [1, 4] product [5, 4]
                f"C of shape {list(cs)} does not broadcast to the product {list(ys)}"
            )
        y = n.emit("add", y, c)
    return [y]


def per_channel(n: Node, v: SSAValue, rank: int) -> SSAValue:
    """A per-channel `[C]` vector reshaped to broadcast against `[N, C, ...]`."""
    return n.reshape(v, [shape(v)[0]] + [1] * (rank - 2))


def batch_norm(n: Node) -> list[SSAValue]:
    """Inference BatchNormalization (the converter is `ops_math.batch_norm`)."""
    if n.attr("training_mode", 0) or n.n_outputs > 1:
        raise n.error("training mode (running statistics outputs) is not supported")
    x = n.input(0)
    r = len(shape(x))
    scale, bias, mean, var = (per_channel(n, n.input(i), r) for i in range(1, 5))
    inv = n.emit("rsqrt", n.emit("add", var, n.constant(n.attr("epsilon", 1e-5), var)))
    y = n.emit("mul", n.emit("sub", x, mean), n.emit("mul", inv, scale))
    return [n.emit("add", y, bias)]


def _normalize(
    n: Node, x: SSAValue, axes: list[int], eps: float, rms: bool = False
) -> tuple[SSAValue, SSAValue, SSAValue]:
    """(x - mean) * inv_std (or x * inv_rms) over `axes`; returns (y, mean, inv_std)."""
    mean = n.emit("reduce", x, kind="mean", axes=axes, keepdims=True)
    d = x if rms else n.emit("sub", x, mean)
    var = n.emit("reduce", n.emit("mul", d, d), kind="mean", axes=axes, keepdims=True)
    inv = n.emit("rsqrt", n.emit("add", var, n.constant(eps, var)))
    return n.emit("mul", d, inv), mean, inv


def _stash(n: Node, x: SSAValue) -> SSAValue:
    st = n.attr("stash_type", 1)
    if st not in (1, 11):
        raise n.error(f"stash_type={st} is not supported")
    return n.cast(x, "f32" if st == 1 else "f64")


@converter("LayerNormalization", "RMSNormalization", attrs=("axis", "epsilon", "stash_type"))
def layer_norm(n: Node) -> list[SSAValue | None]:
    x, gamma = n.input(0), n.input(1)
    beta = n.opt(2)
    rank = len(shape(x))
    axis = n.attr("axis", -1)
    axis = axis + rank if axis < 0 else axis
    if not 0 <= axis < rank:  # range(axis, rank) of axis -2^31 took all memory
        raise n.error(f"axis {n.attr('axis')} is out of range for a rank-{rank} input")
    eps = n.attr("epsilon", 1e-5)
    rms = n.op_type == "RMSNormalization"
    d = shape(x)[-1]
    if (
        axis == rank - 1
        and n.n_outputs == 1
        and shape(gamma) == (d,)
        and (beta is None or shape(beta) == (d,))
        and d != DYN
    ):
        if rms:
            ops = [x, gamma] + ([beta] if beta is not None else [])
            return [n.emit("rms_norm", *ops, epsilon=eps)]
        beta = beta if beta is not None else n.typed("broadcast_to", n.constant(0, x), [d])
        return [n.emit("layer_norm", x, gamma, beta, epsilon=eps)]
    xs = _stash(n, x)
    y, mean, inv = _normalize(n, xs, list(range(axis, rank)), eps, rms)
    y = n.cast(y, elem(x))
    y = n.emit("mul", y, gamma)
    if beta is not None:
        y = n.emit("add", y, beta)
    return [y, None if rms else mean, None if rms else inv]


@converter("InstanceNormalization", attrs=("epsilon",))
def instance_norm(n: Node) -> list[SSAValue]:
    x = n.input(0)
    r = len(shape(x))
    y, _, _ = _normalize(n, x, list(range(2, r)), n.attr("epsilon", 1e-5))
    y = n.emit("mul", y, per_channel(n, n.input(1), r))
    return [n.emit("add", y, per_channel(n, n.input(2), r))]


# ------------------------------------------------------------------------------ conv / pool


def conv2d_of(n: Node, x: SSAValue, w: SSAValue, bias: SSAValue | None) -> SSAValue:
    """1-D / 2-D Conv onto `rlx.conv2d` (the converter is `ops_window.conv`, which adds 3-D)."""
    rank = len(shape(x))
    k = rank - 2
    kernel = list(shape(w)[2:])
    strides = list(n.attr("strides") or [1] * k)
    dil = list(n.attr("dilations") or [1] * k)
    pads = spatial_pads(n, shape(x)[2:], kernel, strides, dil)
    x2, w2 = to_2d(n, x), to_2d(n, w)
    ops = [x2, w2] + ([bias] if bias is not None else [])
    y = n.emit(
        "conv2d", *ops,
        strides=as_2d(strides, rank, 1), dilations=as_2d(dil, rank, 1),
        padding=pads_2d(pads, rank), groups=n.attr("group", 1),
    )  # fmt: skip
    return from_2d(n, y, rank)


@converter("GlobalAveragePool", "GlobalMaxPool", attrs=())
def global_pool(n: Node) -> list[SSAValue]:
    x = n.input(0)
    kind = "mean" if n.op_type == "GlobalAveragePool" else "max"
    if 0 in shape(x)[2:]:  # was -inf (max) or NaN (mean); onnxruntime refuses it too
        raise n.error(f"{n.op_type} over an empty spatial extent {list(shape(x))}")
    return [n.emit("reduce", x, kind=kind, axes=list(range(2, len(shape(x)))), keepdims=True)]


@converter("LpNormalization", attrs=("axis", "p"))
def lp_norm(n: Node) -> list[SSAValue]:
    x = n.input(0)
    axis, p = n.attr("axis", -1), n.attr("p", 2)
    if p == 1:
        norm = n.emit("reduce", n.emit("abs", x), kind="sum", axes=[axis], keepdims=True)
    elif p == 2:
        norm = n.emit(
            "sqrt", n.emit("reduce", n.emit("mul", x, x), kind="sum", axes=[axis], keepdims=True)
        )
    else:
        raise n.error(f"p={p} is not supported (1 or 2)")
    zero = n.emit("compare", norm, n.constant(0, norm), predicate="eq")
    return [n.emit("div", x, n.emit("where", zero, n.constant(1, norm), norm))]


@converter("MeanVarianceNormalization", attrs=("axes",))
def mvn(n: Node) -> list[SSAValue]:
    x = n.input(0)
    axes = [int(a) for a in n.attr("axes", [0, 2, 3])]
    mean = n.emit("reduce", x, kind="mean", axes=axes, keepdims=True)
    d = n.emit("sub", x, mean)
    var = n.emit("reduce", n.emit("mul", d, d), kind="mean", axes=axes, keepdims=True)
    return [n.emit("div", d, n.emit("add", n.emit("sqrt", var), n.constant(1e-9, var)))]


@converter("GroupNormalization", attrs=("epsilon", "num_groups", "stash_type"))
def group_norm(n: Node) -> list[SSAValue]:
    x = n.input(0)
    s = shape(x)
    if DYN in s:
        raise n.error("GroupNormalization needs a static input shape")
    g = n.attr("num_groups")
    xs = _stash(n, n.reshape(x, [s[0], g, (s[1] // g) * int(np.prod(s[2:]))]))
    y, _, _ = _normalize(n, xs, [2], n.attr("epsilon", 1e-5))
    y = n.reshape(n.cast(y, elem(x)), list(s))
    y = n.emit("mul", y, per_channel(n, n.input(1), len(s)))
    return [n.emit("add", y, per_channel(n, n.input(2), len(s)))]


def _upsample(n: Node, x: SSAValue, axis: int, s: int) -> SSAValue:
    """Insert `s - 1` zeros between the elements of `x` along `axis`."""
    if s == 1:
        return x
    xs = list(shape(x))
    y = n.reshape(x, [*xs[: axis + 1], 1, *xs[axis + 1 :]])
    zs = [*xs[: axis + 1], s - 1, *xs[axis + 1 :]]
    y = n.emit("concat", y, n.typed("broadcast_to", n.constant(0, x), zs), axis=axis + 1)
    y = n.reshape(y, [*xs[:axis], xs[axis] * s, *xs[axis + 1 :]])
    lim = list(shape(y))
    lim[axis] = (xs[axis] - 1) * s + 1
    return n.emit("slice", y, starts=[0] * len(lim), limits=lim)


_CT_ATTRS = ("auto_pad", "dilations", "group", "kernel_shape", "output_padding", "output_shape")


@converter("ConvTranspose", attrs=(*_CT_ATTRS, "pads", "strides"))
def conv_transpose(n: Node) -> list[SSAValue]:
    """Zero-insertion upsampling + a stride-1 conv with flipped, transposed weights."""
    x, w = n.input(0), n.input(1)
    rank = len(shape(x))
    if DYN in shape(x) or DYN in shape(w):
        raise n.error("ConvTranspose needs static shapes")
    x2, w2 = to_2d(n, x), to_2d(n, w)
    g = n.attr("group", 1)
    c, fg, kh, kw = shape(w2)
    sizes, k = shape(x2)[2:], (kh, kw)
    strides = list(n.attr("strides") or [1] * (rank - 2))
    dilations = list(n.attr("dilations") or [1] * (rank - 2))
    check_window(n, rank - 2, strides=strides, dilations=dilations)
    st, dl = as_2d(strides, rank, 1), as_2d(dilations, rank, 1)
    op = as_2d(list(n.attr("output_padding") or [0] * (rank - 2)), rank, 0)
    if any(not 0 <= p < max(s, d) for p, s, d in zip(op, st, dl, strict=True)):
        raise n.error(  # 2^31 grew the output by that much; onnxruntime refuses it too
            f"output_padding {list(n.attr('output_padding'))} must be below the strides "
            f"{list(n.attr('strides') or [])} (or dilations)"
        )
    full = [st[i] * (sizes[i] - 1) + op[i] + (k[i] - 1) * dl[i] + 1 for i in range(2)]
    auto = n.attr("auto_pad", "NOTSET")
    if n.attr("output_shape") is not None or auto in ("SAME_UPPER", "SAME_LOWER"):
        outs = n.attr("output_shape")
        want = (
            as_2d(list(outs)[-(rank - 2) :], rank, 1)
            if outs
            else [sizes[i] * st[i] for i in range(2)]
        )
        tot = [full[i] - want[i] for i in range(2)]
        if auto == "SAME_UPPER":
            lo = [t // 2 for t in tot]
        else:  # SAME_LOWER, and output_shape without auto_pad (the spec; onnxruntime): a
            lo = [t - t // 2 for t in tot]  # crop of 1 is at the start (was at the end)
        pads = lo + [tot[i] - lo[i] for i in range(2)]
    elif auto == "VALID" or not n.attr("pads"):
        pads = [0, 0, 0, 0]
    else:
        pads = pads_2d(list(n.attr("pads")), rank)
    y = _upsample(n, _upsample(n, x2, 2, st[0]), 3, st[1])
    wt = n.reshape(w2, [g, c // g, fg, kh, kw])
    wt = n.reshape(n.emit("transpose", wt, permutation=[0, 2, 1, 3, 4]), [g * fg, c // g, kh, kw])
    for ax, kk in ((2, kh), (3, kw)):
        wt = n.emit("gather", wt, n.constant(np.arange(kk - 1, -1, -1), "i64"), axis=ax)
    edge = [(k[i] - 1) * dl[i] for i in range(2)]
    conv_pad = [
        edge[0] - pads[0],
        edge[1] - pads[1],
        edge[0] - pads[2] + op[0],
        edge[1] - pads[3] + op[1],
    ]
    ops = [y, wt] + ([n.input(2)] if n.has(2) else [])
    y = n.emit("conv2d", *ops, dilations=dl, padding=[max(p, 0) for p in conv_pad], groups=g)
    starts, limits = [0, 0, 0, 0], list(shape(y))
    for i in range(2):
        starts[2 + i] = max(-conv_pad[i], 0)
        limits[2 + i] -= max(-conv_pad[2 + i], 0)
    if starts != [0] * 4 or limits != list(shape(y)):
        y = n.emit("slice", y, starts=starts, limits=limits)
    return [from_2d(n, y, rank)]
