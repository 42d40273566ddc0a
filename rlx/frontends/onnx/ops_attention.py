"""ONNX Attention (opset 23+) onto `rlx.attention`, RotaryEmbedding onto `rlx.rope`,
`ai.onnx.preview` FlexAttention as matmul / softmax around its modifier subgraphs.

Masks (boolean or additive `attn_mask`, `is_causal`, sliding windows, `nonpad_kv_seqlen`)
are combined into one additive bias (`mask_kind = "bias"`); grouped-query attention
repeats the K/V heads. With `softcap` and a mask the op is decomposed (rlx caps after the
bias, ONNX before); `qk_matmul_output` (modes 0-3) is computed alongside.
"""

from __future__ import annotations

import numpy as np
from xdsl.ir import SSAValue

from rlx.dialects.rlx.base import DYN
from rlx.frontends.onnx.node import Node, elem, is_static, shape
from rlx.frontends.onnx.ops_index import wrap_index
from rlx.frontends.onnx.registry import converter


def _heads_first(n: Node, x: SSAValue, heads: int | None) -> SSAValue:
    """[B, S, H*D] -> [B, H, S, D] (4-D inputs pass through)."""
    if len(shape(x)) == 4:
        return x
    if not heads:
        raise n.error("3-D inputs need q_num_heads and kv_num_heads")
    b, s, hid = shape(x)
    y = n.reshape(x, [b, s, heads, hid // heads])
    return n.emit("transpose", y, permutation=[0, 2, 1, 3])


def _repeat_heads(n: Node, x: SSAValue, reps: int) -> SSAValue:
    if reps == 1:
        return x
    b, h, s, d = shape(x)
    y = n.typed("broadcast_to", n.reshape(x, [b, h, 1, s, d]), [b, h, reps, s, d])
    return n.reshape(y, [b, h * reps, s, d])


def _mask_bias(n: Node, m: SSAValue, like: SSAValue) -> SSAValue:
    """A boolean mask as 0 / -inf; a float mask as is."""
    if shape(m) and str(m.type.element_type) == "i1":  # type: ignore[union-attr]
        return n.emit("where", m, n.constant(0, like), n.constant(-np.inf, like))
    return m


_ATTRS = (
    "is_causal", "kv_num_heads", "q_num_heads", "qk_matmul_output_mode", "scale",
    "softcap", "softmax_precision", "left_window_size", "right_window_size",
)  # fmt: skip


@converter("Attention", attrs=_ATTRS)
def attention(n: Node) -> list[SSAValue | None]:
    q = _heads_first(n, n.input(0), n.attr("q_num_heads"))
    k = _heads_first(n, n.input(1), n.attr("kv_num_heads"))
    v = _heads_first(n, n.input(2), n.attr("kv_num_heads"))
    three_d = len(shape(n.input(0))) == 3
    past = 0
    if n.has(4) or n.has(5):
        past = shape(n.input(4))[2]
        k = n.emit("concat", n.input(4), k, axis=2)
        v = n.emit("concat", n.input(5), v, axis=2)
    for t in (q, k, v):
        if not is_static(shape(t)):
            raise n.error("Attention needs static shapes")
    b, hq, sq, _ = shape(q)
    hk, sk = shape(k)[1], shape(k)[2]
    if hq % hk:
        raise n.error(f"{hq} query heads are not a multiple of {hk} key/value heads")
    kr, vr = _repeat_heads(n, k, hq // hk), _repeat_heads(n, v, hq // hk)
    attrs: dict = {}
    if n.attr("scale") is not None:
        attrs["scale"] = float(n.attr("scale"))
    softcap = n.attr("softcap", 0.0)
    if softcap and softcap > 0:
        attrs["softcap"] = float(softcap)
    causal = bool(n.attr("is_causal", 0))
    left, right = n.attr("left_window_size", -1), n.attr("right_window_size", -1)
    if min(left, right) < -1:  # -1 is "unlimited"; -2^31 was taken as -1
        raise n.error(f"left / right_window_size {left}, {right} must be -1 or sizes >= 0")
    bias: SSAValue | None = None
    if n.has(3):
        ms, full = list(shape(n.input(3))), [b, hq, sq, sk]
        fits = 1 <= len(ms) <= 4 and ms[-1] <= sk
        fits = fits and all(m in (1, f) for m, f in zip(ms[-2::-1], full[-2::-1], strict=False))
        if not fits:  # a [.., 4, 4] mask of 1 query row made 4 output rows (onnx.reference)
            raise n.error(f"attn_mask of shape {ms} does not broadcast to {full}")
        bias = _mask_bias(n, n.input(3), q)
        pad = sk - shape(bias)[-1]
        if pad > 0:
            ps = [*shape(bias)[:-1], pad]
            fill = n.typed("broadcast_to", n.constant(-np.inf, q), ps)
            bias = n.emit("concat", bias, fill, axis=-1)
    neg_inf = n.constant(-np.inf, q)
    i, j = np.arange(sq)[:, None], np.arange(sk)[None, :]
    if n.has(6):  # per-batch key lengths: padding mask, offsets nonpad - sq
        lens = n.reshape(n.cast(n.input(6), "i64"), [b, 1, 1, 1])
        live = n.emit("compare", n.constant(j.reshape(1, 1, 1, sk), "i64"), lens, predicate="lt")
        diff = n.emit(
            "add",
            n.constant((i - j).reshape(1, 1, sq, sk), "i64"),
            n.emit("sub", lens, n.constant(sq, "i64")),
        )
        for on, bound, pred in (
            (causal, 0, "ge"),
            (left >= 0, left, "le"),
            (right >= 0, -right, "ge"),
        ):
            if on:
                ok = n.emit("compare", diff, n.constant(bound, "i64"), predicate=pred)
                live = n.emit("where", live, ok, n.constant(False, "bool"))
        pm = n.emit("where", live, n.constant(0, q), neg_inf)
        bias = pm if bias is None else n.emit("add", bias, pm)
        causal, left, right = False, -1, -1
    i = i + past
    allowed = np.ones((sq, sk), bool)
    if causal:
        allowed &= j <= i
    if left >= 0:
        allowed &= i - j <= left
    if right >= 0:
        allowed &= j - i <= right
    if bias is None and causal and left < 0 and right < 0 and past == sk - sq and not n.wants(3):
        attrs["mask_kind"] = "causal"
    elif not allowed.all():
        cb = n.constant(np.where(allowed, 0.0, -np.inf), q)
        bias = cb if bias is None else n.emit("add", bias, cb)
    if bias is not None:
        if "softcap" in attrs:  # ONNX caps before the mask: decompose
            y = n.emit("matmul", _qk_output(n, q, kr, bias, attrs, 3), vr)
        else:
            attrs["mask_kind"] = "bias"
            y = n.emit("attention", q, kr, vr, bias, **attrs)
    else:
        y = n.emit("attention", q, kr, vr, **attrs)
    if three_d:
        y = n.emit("transpose", y, permutation=[0, 2, 1, 3])
        y = n.reshape(y, [b, sq, hq * shape(y)[3]])
    mode = n.attr("qk_matmul_output_mode", 0)
    qk = _qk_output(n, q, kr, bias, attrs, mode) if n.wants(3) else None
    return [y, k if n.wants(1) else None, v if n.wants(2) else None, qk]


def _qk_output(
    n: Node, q: SSAValue, k: SSAValue, bias: SSAValue | None, attrs: dict, mode: int
) -> SSAValue:
    """The `qk_matmul_output` of `qk_matmul_output_mode` 0..3 (ONNX reference semantics)."""
    scale = attrs.get("scale", 1.0 / float(np.sqrt(shape(q)[3])))
    qk = n.emit("matmul", q, n.emit("transpose", k, permutation=[0, 1, 3, 2]))
    qk = n.emit("mul", qk, n.constant(scale, qk))
    if "softcap" in attrs:
        c = n.constant(attrs["softcap"], qk)
        qk = n.emit("mul", n.emit("tanh", n.emit("div", qk, c)), c)
    if mode >= 2 and bias is not None:
        qk = n.emit("add", qk, bias)
    if mode == 3:
        qk = n.emit("softmax", qk, axis=-1)
        if bias is not None:
            m = n.emit("reduce", bias, kind="max", axes=[-1], keepdims=True)
            dead = n.emit("compare", m, n.constant(-np.inf, m), predicate="eq")
            qk = n.emit("where", dead, n.constant(0, qk), qk)
    elif mode not in (0, 1, 2):
        raise n.error(f"qk_matmul_output_mode={mode} is not supported")
    return qk


@converter("RotaryEmbedding", attrs=("interleaved", "num_heads", "rotary_embedding_dim"))
def rotary_embedding(n: Node) -> list[SSAValue]:
    x0 = n.input(0)
    x = _heads_first(n, x0, n.attr("num_heads"))
    if not is_static(shape(x)):
        raise n.error("RotaryEmbedding needs a static input shape")
    b, _, s, d = shape(x)
    rot = n.attr("rotary_embedding_dim", 0) or d
    cos, sin = n.input(1), n.input(2)
    if n.has(3):  # position ids in [0, max_position) (onnxruntime refuses negatives)
        rows = shape(cos)[0]
        pos = n.input(3) if rows == DYN else wrap_index(n, n.input(3), rows, negative=False)
        cos = n.emit("gather", cos, pos, axis=0)
        sin = n.emit("gather", sin, pos, axis=0)
    half = rot // 2
    cos, sin = (n.reshape(c, [b, 1, s, half]) for c in (cos, sin))
    perm = None
    if n.attr("interleaved", 0):
        perm = np.concatenate([np.arange(0, rot, 2), np.arange(1, rot, 2), np.arange(rot, d)])
        x = n.emit("gather", x, n.constant(perm, "i64"), axis=3)
    y = n.emit("rope", x, cos, sin, n_rot=rot)
    if perm is not None:
        y = n.emit("gather", y, n.constant(np.argsort(perm), "i64"), axis=3)
    if len(shape(x0)) == 3:
        y = n.reshape(n.emit("transpose", y, permutation=[0, 2, 1, 3]), shape(x0))
    return [y]


_PRECISIONS = {1: "f32", 10: "f16", 16: "bf16", 11: "f64"}
"""softmax_precision (a TensorProto type) -> the compute type."""


@converter("FlexAttention", attrs=("prob_mod", "score_mod", "scale", "softmax_precision"),
           domain="ai.onnx.preview")  # fmt: skip
def flex_attention(n: Node) -> list[SSAValue]:
    """`ai.onnx.preview` FlexAttention: scores `(Q √s)(K √s)ᵀ` (s = scale, default 1/√E),
    in the softmax precision (default: the input type, f32 for f16 / bf16), the optional
    `score_mod` subgraph, softmax over the keys, the optional `prob_mod` subgraph, then
    `probs @ V` cast back to V's type; GQA repeats the K/V heads. As onnx.reference."""
    q, k, v = n.input(0), n.input(1), n.input(2)
    qs, ks, vs = shape(q), shape(k), shape(v)
    if len(qs) != 4 or len(ks) != 4 or len(vs) != 4:
        raise n.error(f"FlexAttention needs rank-4 Q, K, V, got {list(qs)}, {list(ks)}, {list(vs)}")
    hq, e, hk = qs[1], qs[3], ks[1]
    if DYN in (hq, e, hk) or vs[1] != hk or ks[3] != e or vs[2] != ks[2]:
        raise n.error(f"Q {list(qs)}, K {list(ks)}, V {list(vs)}: heads, sizes do not match")
    if hq % hk:
        raise n.error(f"q_num_heads {hq} is not a multiple of kv_num_heads {hk}")
    prec = n.attr("softmax_precision")
    if prec is not None and prec not in _PRECISIONS:
        raise n.error(f"softmax_precision {prec} is not a float type")
    t = elem(q)
    ct = _PRECISIONS[prec] if prec is not None else ("f32" if t.bitwidth < 32 else t)
    scale = n.attr("scale")
    scale = 1.0 / np.sqrt(e) if scale is None else float(scale)
    root = n.constant(float(np.sqrt(np.float32(scale))), q)
    k, v = _repeat_heads(n, k, hq // hk), _repeat_heads(n, v, hq // hk)
    kt = n.emit("transpose", n.emit("mul", k, root), permutation=[0, 1, 3, 2])
    s = n.cast(n.emit("matmul", n.emit("mul", q, root), kt), ct)
    for attr in ("score_mod", None, "prob_mod"):
        if attr is None:
            s = n.emit("softmax", s, axis=-1)
            continue
        body = n.attr(attr)
        if body is not None:
            if len(body.input) != 1 or len(body.output) != 1:
                raise n.error(f"{attr} must take and return one tensor")
            (out,) = n.ctx.run_body(body, [s])
            out = n.cast(out if isinstance(out, SSAValue) else n.constant(out), ct)
            if shape(out) != shape(s):
                raise n.error(f"{attr} returned {list(shape(out))} for {list(shape(s))}")
            s = out
    return [n.cast(n.emit("matmul", s, n.cast(v, ct)), elem(v))]
