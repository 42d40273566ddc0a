"""Integer bit ops and inverse trigonometry by arithmetic, and small tensor ops:
BitShift (11-25, and 28's out-of-range shifts), BitwiseAnd/Or/Xor/Not (18-25), BitCast
between integer types of one width (26), Atan/Asin/Acos (7-25), EyeLike (9-25),
Compress with a constant condition (11-25), ReverseSequence (10-25), training-mode
BatchNormalization (14-25).

rlx has no bit ops: a shift multiplies or floor-divides by `2^s` (from a table, so
`2^(w-1)` wraps like the hardware does), bitwise ops take each of the `w` bits of the
unsigned view (`u // 2^k - 2 (u // 2^(k+1))`), combine them arithmetically and sum them
back. `atan` reduces its argument to |z| <= tan(pi/8) and sums the odd Taylor series
(error < 1e-7); `asin(x) = atan(x / sqrt((1-x)(1+x)))`, `acos = pi/2 - asin`.
"""

from __future__ import annotations

import numpy as np
from xdsl.ir import SSAValue

from rlx.dtypes import numpy_dtype
from rlx.frontends.onnx import ops_index, ops_nn, ops_scatter
from rlx.frontends.onnx.node import Node, dims_text, elem, is_static, shape
from rlx.frontends.onnx.registry import converter


def _dt(v: SSAValue) -> np.dtype:
    return np.dtype(numpy_dtype(elem(v)))


def _pow2(n: Node, s: SSAValue, dt: np.dtype) -> SSAValue:
    """`2^s` in `dt` (wrapping at the sign bit) for 0 <= s < width."""
    w = dt.itemsize * 8
    table = np.array([1 << k for k in range(w)], dtype=np.uint64).astype(dt)
    return n.emit("gather", n.constant(table, dt), n.cast(s, "i64"), axis=0)


def _floordiv(n: Node, a: SSAValue, d: SSAValue) -> SSAValue:
    """Floor division of signed integers (rlx integer division truncates)."""
    q = n.emit("div", a, d)
    r = n.emit("sub", a, n.emit("mul", q, d))
    fix = n.emit(
        "where",
        n.emit("compare", r, n.constant(0, r), predicate="ne"),
        n.emit("compare", n.emit("compare", r, n.constant(0, r), predicate="lt"),
               n.emit("compare", d, n.constant(0, d), predicate="lt"), predicate="ne"),
        n.constant(False, "bool"),
    )  # fmt: skip
    return n.emit("where", fix, n.emit("sub", q, n.constant(1, q)), q)


@converter("BitShift", attrs=("direction",))
def bitshift(n: Node) -> list[SSAValue]:
    a, b = n.input(0), n.input(1)
    dt = _dt(a)
    w = dt.itemsize * 8
    signed = dt.kind == "i"
    valid = n.emit("compare", b, n.constant(w, b), predicate="lt")
    if signed:
        valid = n.emit("where", valid, n.emit("compare", b, n.constant(0, b), predicate="ge"),
                       n.constant(False, "bool"))  # fmt: skip
    s = n.emit("where", valid, b, n.constant(0, b))
    p = _pow2(n, s, dt)
    zero = n.constant(0, a)
    if n.attr("direction") == "LEFT":
        return [n.emit("where", valid, n.emit("mul", a, p), zero)]
    if not signed:
        return [n.emit("where", valid, n.emit("div", a, p), zero)]
    sign = n.emit("where", n.emit("compare", a, zero, predicate="lt"), n.constant(-1, a), zero)
    top = n.emit("compare", s, n.constant(w - 1, s), predicate="eq")  # 2^(w-1) wrapped
    q = n.emit("where", top, sign, _floordiv(n, a, p))
    return [n.emit("where", valid, q, sign)]


def _bits(n: Node, u: SSAValue, w: int) -> list[SSAValue]:
    """The `w` bits (0/1) of unsigned `u`, least significant first."""
    out, prev = [], u
    two = n.constant(2, u)
    for _ in range(w):
        nxt = n.emit("div", prev, two)
        out.append(n.emit("sub", prev, n.emit("mul", nxt, two)))
        prev = nxt
    return out


@converter("BitwiseAnd", "BitwiseOr", "BitwiseXor", attrs=())
def bitwise(n: Node) -> list[SSAValue]:
    a, b = n.input(0), n.input(1)
    dt = _dt(a)
    w = dt.itemsize * 8
    udt = np.dtype(f"u{dt.itemsize}")
    ua, ub = n.cast(a, udt), n.cast(b, udt)
    acc = None
    for k, (x, y) in enumerate(zip(_bits(n, ua, w), _bits(n, ub, w), strict=True)):
        xy = n.emit("mul", x, y)
        if n.op_type == "BitwiseAnd":
            bit = xy
        else:
            s = n.emit("add", x, y)
            bit = n.emit("sub", s, xy if n.op_type == "BitwiseOr" else n.emit("add", xy, xy))
        term = n.emit("mul", bit, n.constant(np.array(1 << k, np.uint64).astype(udt), bit))
        acc = term if acc is None else n.emit("add", acc, term)
    return [n.cast(acc, dt)]


@converter("BitwiseNot", attrs=())
def bitwise_not(n: Node) -> list[SSAValue]:
    a = n.input(0)
    dt = _dt(a)
    if dt.kind == "u":
        return [n.emit("sub", n.constant(np.iinfo(dt).max, a), a)]
    return [n.emit("sub", n.emit("neg", a), n.constant(1, a))]


@converter("BitCast", attrs=("to",))
def bitcast(n: Node) -> list[SSAValue]:
    from onnx import helper

    x = n.input(0)
    src = _dt(x)
    dst = np.dtype(helper.tensor_dtype_to_np_dtype(n.attr("to")))
    ints = {"i", "u", "b"}
    if src.kind not in ints or dst.kind not in ints or src.itemsize != dst.itemsize:
        raise n.error(
            f"bit casts {src} -> {dst} are supported only between integer types of one width"
        )
    return [n.cast(x, dst)]


def _atan(n: Node, x: SSAValue) -> SSAValue:
    one = n.constant(1, x)
    ax = n.emit("abs", x)
    big = n.emit("compare", ax, one, predicate="gt")
    t = n.emit("where", big, n.emit("div", one, ax), ax)  # t in [0, 1]
    mid = n.emit("compare", t, n.constant(np.tan(np.pi / 8), x), predicate="gt")
    z = n.emit("where", mid, n.emit("div", n.emit("sub", t, one), n.emit("add", t, one)), t)
    z2 = n.emit("mul", z, z)
    p = n.constant(1 / 17, x)
    for k in range(7, -1, -1):  # z - z^3/3 + z^5/5 - ...
        p = n.emit("add", n.emit("mul", p, n.emit("neg", z2)), n.constant(1 / (2 * k + 1), x))
    r = n.emit("mul", z, p)
    r = n.emit("where", mid, n.emit("add", r, n.constant(np.pi / 4, x)), r)
    r = n.emit("where", big, n.emit("sub", n.constant(np.pi / 2, x), r), r)
    neg = n.emit("compare", x, n.constant(0, x), predicate="lt")
    return n.emit("where", neg, n.emit("neg", r), r)


@converter("Atan", "Asin", "Acos", attrs=())
def inverse_trig(n: Node) -> list[SSAValue]:
    x = n.input(0)
    if n.op_type == "Atan":
        return [_atan(n, x)]
    one = n.constant(1, x)
    c = n.emit("sqrt", n.emit("mul", n.emit("sub", one, x), n.emit("add", one, x)))
    asin = _atan(n, n.emit("div", x, c))
    return [asin if n.op_type == "Asin" else n.emit("sub", n.constant(np.pi / 2, x), asin)]


@converter("EyeLike", attrs=("dtype", "k"))
def eye_like(n: Node) -> list[np.ndarray]:
    from onnx import helper

    x = n.input(0)
    s = shape(x)
    if not is_static(s) or len(s) != 2:
        raise n.error(f"EyeLike needs a static 2-D input, got {dims_text(s)}")
    dt = helper.tensor_dtype_to_np_dtype(n.attr("dtype")) if n.attr("dtype") else _dt(x)
    return [np.eye(s[0], s[1], k=n.attr("k", 0), dtype=dt)]


@converter("Compress", attrs=("axis",))
def compress(n: Node) -> list[SSAValue]:
    x = n.input(0)
    cond = np.asarray(n.const(1, "condition ")).astype(bool).reshape(-1)
    axis = n.attr("axis")
    if axis is None:
        x = n.reshape(x, [int(np.prod(shape(x)))])
        axis = 0
    axis %= len(shape(x))
    idx = np.nonzero(cond[: shape(x)[axis]])[0]
    return [n.emit("gather", x, n.constant(idx, "i64"), axis=axis)]


@converter("ReverseSequence", attrs=("batch_axis", "time_axis"))
def reverse_sequence(n: Node) -> list[SSAValue]:
    x, lens = n.input(0), n.cast(n.input(1), "i64")
    xs = shape(x)
    if not is_static(xs):
        raise n.error("ReverseSequence needs a static shape")
    ba, ta = n.attr("batch_axis", 1), n.attr("time_axis", 0)
    rank = len(xs)
    t = n.constant(
        np.arange(xs[ta]).reshape([xs[ta] if i == ta else 1 for i in range(rank)]), "i64"
    )
    lens = ops_index.wrap_index(n, lens, xs[ta] + 1, negative=False)  # 0 <= len <= T
    ln = n.reshape(lens, [xs[ba] if i == ba else 1 for i in range(rank)])
    rev = n.emit("sub", n.emit("sub", ln, n.constant(1, "i64")), t)
    src = n.emit("where", n.emit("compare", t, ln, predicate="lt"), rev, t)
    src = n.typed("broadcast_to", src, xs)
    pos = ops_scatter.element_positions(n, src, xs, ta)
    return [n.reshape(n.emit("gather", n.reshape(x, [int(np.prod(xs))]), pos, axis=0), xs)]


@converter("BatchNormalization", attrs=("epsilon", "momentum", "training_mode"))
def batch_norm(n: Node) -> list[SSAValue | None]:
    if not n.attr("training_mode", 0):
        return ops_nn.batch_norm(n)
    x = n.input(0)
    r = len(shape(x))
    axes = [0, *range(2, r)]
    scale, bias, mean, var = (ops_nn.per_channel(n, n.input(i), r) for i in range(1, 5))
    m = n.emit("reduce", x, kind="mean", axes=axes, keepdims=True)
    d = n.emit("sub", x, m)
    v = n.emit("reduce", n.emit("mul", d, d), kind="mean", axes=axes, keepdims=True)
    inv = n.emit("rsqrt", n.emit("add", v, n.constant(n.attr("epsilon", 1e-5), v)))
    y = n.emit("add", n.emit("mul", d, n.emit("mul", inv, scale)), bias)
    mom = n.attr("momentum", 0.9)
    c = shape(x)[1]

    def run(old: SSAValue, new: SSAValue) -> SSAValue:
        mixed = n.emit("add", n.emit("mul", old, n.constant(mom, old)),
                       n.emit("mul", new, n.constant(1 - mom, new)))  # fmt: skip
        return n.reshape(mixed, [c])

    return [y, run(mean, m) if n.wants(1) else None, run(var, v) if n.wants(2) else None]
