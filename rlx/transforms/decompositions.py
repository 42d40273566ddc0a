"""Common-IR decompositions of rlx logical kernels into primitive rlx ops (shared by
`kernel-dispatch`, `legalize` and the dispatch report).

A decomposition is a pure function `op -> (new_ops, value) | None`: it builds (but does
not insert) the replacement ops and names the value that replaces the op's result; None
means "this instance cannot be decomposed" (e.g. a shape the expansion needs is dynamic).

* `LOGICAL_KERNELS`: kinds with a native kernel *and* a common decomposition; which one
  is used is decided by `kernel_dispatch.DispatchConfig`.
* `LOWERINGS`: cheap rewrites of non-kernel kinds (relu, rsqrt) that `legalize` also
  uses (with the unfusing of `rlx.elementwise_region`, defined in legalize.py).

Fused kernels expand one level (e.g. `fused_residual_layer_norm` -> `add` +
`layer_norm`); the ops they produce are then dispatched/legalized by their own kind.
`scaled_matmul` and `dequant_matmul` decode their codes, scales and GGML blocks through
`gather` lookup tables (quant_decompositions.py), bit-exactly.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from xdsl.dialects.builtin import i1
from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter
from xdsl.utils.exceptions import VerifyException

from rlx.dialects.rlx import OPS_BY_NAME
from rlx.dialects.rlx.base import DYN, shape_of, tensor
from rlx.dialects.rlx.compute import AttentionOp, LayerNormOp, RmsNormOp, RopeOp, SoftmaxOp
from rlx.dialects.rlx.elementwise import GeluOp, GeluTanhOp, ReluOp, RsqrtOp, SigmoidOp, SiluOp
from rlx.dialects.rlx.fused import (
    FusedMatmulBiasActOp,
    FusedResidualLayerNormOp,
    FusedResidualRmsNormOp,
    FusedSwigluOp,
)
from rlx.dialects.rlx.quant import DequantMatmulOp, ScaledMatmulOp
from rlx.transforms.expansion import Expansion, TensorScalar, _elem, static_shape
from rlx.transforms.quant_decompositions import dequant_matmul, scaled_matmul

# ----------------------------------------------------------------------------- kinds


def kind_of(op: Operation | type[Operation]) -> str:
    """The op kind used by dispatch and legalization: the op name without `rlx.`."""
    return op.name.removeprefix("rlx.")


Decomposition = Callable[[Operation], "tuple[list[Operation], SSAValue] | None"]


# ----------------------------------------------------------------------------- activations


def _formula(op: Operation) -> tuple[list[Operation], SSAValue]:
    """An elementwise op as its formula over whole tensors (gelu, silu, relu, rsqrt, ...)."""
    e = Expansion()
    return e.ops, op.formula(TensorScalar(e), *op.operands)  # type: ignore[attr-defined]


# ----------------------------------------------------------------------------- reductions


def softmax_of(e: Expansion, x: SSAValue, axis: int) -> SSAValue:
    """exp(x - max) / sum(exp(x - max)) along `axis`."""
    ex = e.emit("exp", e.sub(x, e.reduce(x, "max", axis)))
    return e.div(ex, e.reduce(ex, "sum", axis))


def _softmax(op: Operation) -> tuple[list[Operation], SSAValue]:
    e = Expansion()
    axis = op.axis
    assert axis is not None
    return e.ops, softmax_of(e, op.operands[0], axis)


def _eps(op: Operation) -> float:
    v = op.epsilon
    assert v is not None
    return v


def layer_norm_of(
    e: Expansion, x: SSAValue, g: SSAValue, b: SSAValue | None, eps: float
) -> SSAValue:
    """(x - mean) / sqrt(var + eps) · gamma + beta over the last axis (biased var)."""
    d = e.sub(x, e.reduce(x, "mean"))
    var = e.reduce(e.mul(d, d), "mean")
    y = e.mul(e.div(d, e.emit("sqrt", e.add(var, e.const(eps, _elem(x))))), g)
    return y if b is None else e.add(y, b)


def rms_norm_of(e: Expansion, x: SSAValue, g: SSAValue, b: SSAValue | None, eps: float) -> SSAValue:
    """x / sqrt(mean(x²) + eps) · gamma (+ beta) over the last axis."""
    ms = e.reduce(e.mul(x, x), "mean")
    y = e.mul(e.div(x, e.emit("sqrt", e.add(ms, e.const(eps, _elem(x))))), g)
    return y if b is None else e.add(y, b)


def _layer_norm(op: Operation) -> tuple[list[Operation], SSAValue]:
    e = Expansion()
    x, g, b = op.operands
    return e.ops, layer_norm_of(e, x, g, b, _eps(op))


def _rms_norm(op: Operation) -> tuple[list[Operation], SSAValue]:
    e = Expansion()
    x, g, *b = op.operands
    return e.ops, rms_norm_of(e, x, g, b[0] if b else None, _eps(op))


# ----------------------------------------------------------------------------- attention / rope


def _repeat_heads(e: Expansion, x: SSAValue, g: int) -> SSAValue:
    """[B, Hkv, S, D] -> [B, Hkv·g, S, D], each head repeated g times in place (HF's
    repeat_kv: reshape, broadcast_to, reshape)."""
    b, hk, s, d = shape_of(x.type)
    t = _elem(x)
    x5 = e.emit("reshape", x, result_type=tensor((b, hk, 1, s, d), t))
    xb = e.emit("broadcast_to", x5, result_type=tensor((b, hk, g, s, d), t))
    return e.emit("reshape", xb, result_type=tensor((b, hk * g, s, d), t))


def _attention(op: Operation) -> tuple[list[Operation], SSAValue] | None:
    """softmax(mask(softcap(q·kᵀ·scale + bias)))·v with the reference's masking rules:
    masked and -inf scores get probability 0, a row with no live key is all zeros."""
    q, k, v, *bias = op.operands
    e = Expansion()
    bshd = op.layout == "bshd"
    if bshd:  # [B, S, H, D] operands: decompose on their [B, H, S, D] transposes
        q, k, v = (e.emit("transpose", x, permutation=[0, 2, 1, 3]) for x in (q, k, v))
    qs, ks = shape_of(q.type), shape_of(k.type)
    kind = op.mask_kind
    sq, sk = qs[2], ks[2]
    if kind in ("causal", "sliding_window") and DYN in (sq, sk):
        return None
    if qs[1] != ks[1] and (DYN in (*qs[:2], *ks, *shape_of(v.type)) or ks[1] == 0):
        return None  # grouped-query attention needs static shapes to repeat k and v
    if qs[1] != ks[1]:  # grouped-query attention: repeat each k/v head H / Hkv times
        k, v = (_repeat_heads(e, x, qs[1] // ks[1]) for x in (k, v))
    t = _elem(q)
    if op.scale is None and qs[3] == DYN:
        return None  # the default scale 1/sqrt(head_dim) needs a static head_dim
    scale = op.score_scale()
    s = e.emit("matmul", q, e.emit("transpose", k, permutation=[0, 1, 3, 2]))
    s = e.mul(s, e.const(scale, t))
    if bias:
        s = e.add(s, bias[0])
    softcap = op.softcap
    if softcap is not None:
        c = e.const(softcap, t)
        s = e.mul(c, e.emit("tanh", e.div(s, c)))
    ninf = e.const(-np.inf, t)
    if kind in ("causal", "sliding_window"):
        i = np.arange(sq)[:, None]
        j = np.arange(sk)[None, :]
        dead = j > i + (sk - sq)
        if kind == "sliding_window":
            dead |= j < i + (sk - sq) - (op.window or 0)
        s = e.emit("where", e.const(~dead, i1, (sq, sk)), s, ninf)
    m = e.reduce(s, "max")
    m = e.emit("where", e.emit("compare", m, ninf, predicate="eq"), e.const(0.0, t), m)
    ex = e.emit("exp", e.sub(s, m))
    den = e.reduce(ex, "sum")
    zero = e.const(0.0, t)
    den = e.emit("where", e.emit("compare", den, zero, predicate="gt"), den, e.const(1.0, t))
    out = e.emit("matmul", e.div(ex, den), v)
    return e.ops, e.emit("transpose", out, permutation=[0, 2, 1, 3]) if bshd else out


def _rope(op: Operation) -> tuple[list[Operation], SSAValue] | None:
    """Rotate-half RoPE: [x1·c − x2·s, x2·c + x1·s, x[n_rot:]] along the last axis."""
    x, c, s = op.operands
    if static_shape(x) is None:
        return None
    d = shape_of(x.type)[-1]
    n_rot = op.rotated_dims()
    assert n_rot is not None
    h = n_rot // 2
    e = Expansion()
    x1, x2 = e.slice_last(x, 0, h), e.slice_last(x, h, n_rot)
    parts = [e.sub(e.mul(x1, c), e.mul(x2, s)), e.add(e.mul(x2, c), e.mul(x1, s))]
    if n_rot < d:
        parts.append(e.slice_last(x, n_rot, d))
    return e.ops, e.emit("concat", *parts, axis=-1)


# ----------------------------------------------------------------------------- fused ops (unfuse)


def _fused_matmul_bias_act(op: Operation) -> tuple[list[Operation], SSAValue]:
    e = Expansion()
    x, w, b = op.operands
    y = e.add(e.emit("matmul", x, w), b)
    act = op.activation
    return e.ops, y if act == "none" else e.emit(str(act), y)


def _fused_swiglu(op: Operation) -> tuple[list[Operation], SSAValue] | None:
    e = Expansion()
    if len(op.operands) == 3:
        x, wg, wu = op.operands
        gate, up = e.emit("matmul", x, wg), e.emit("matmul", x, wu)
    else:
        (p,) = op.operands
        if static_shape(p) is None:
            return None
        n = shape_of(p.type)[-1]
        first, second = e.slice_last(p, 0, n // 2), e.slice_last(p, n // 2, n)
        gate_first = op.gate_first
        gate, up = (first, second) if gate_first else (second, first)
    return e.ops, e.mul(e.emit("silu", gate), up)


def _fused_residual_layer_norm(op: Operation) -> tuple[list[Operation], SSAValue]:
    e = Expansion()
    x, r, g, b = op.operands
    return e.ops, e.emit("layer_norm", e.add(x, r), g, b, epsilon=_eps(op))


def _fused_residual_rms_norm(op: Operation) -> tuple[list[Operation], SSAValue]:
    e = Expansion()
    x, r, *rest = op.operands
    return e.ops, e.emit("rms_norm", e.add(x, r), *rest, epsilon=_eps(op))


# ----------------------------------------------------------------------------- registries

DecompositionTable = dict[type[Operation], Decomposition]

LOGICAL: DecompositionTable = {
    SoftmaxOp: _softmax,
    LayerNormOp: _layer_norm,
    RmsNormOp: _rms_norm,
    AttentionOp: _attention,
    RopeOp: _rope,
    GeluOp: _formula,
    GeluTanhOp: _formula,
    SiluOp: _formula,
    SigmoidOp: _formula,
    FusedMatmulBiasActOp: _fused_matmul_bias_act,
    FusedSwigluOp: _fused_swiglu,
    FusedResidualLayerNormOp: _fused_residual_layer_norm,
    FusedResidualRmsNormOp: _fused_residual_rms_norm,
    ScaledMatmulOp: scaled_matmul,
    DequantMatmulOp: dequant_matmul,
}
"""Logical kernels (op class -> decomposition): native op or common-IR decomposition,
chosen by `DispatchConfig`."""

PRIMITIVE: DecompositionTable = {ReluOp: _formula, RsqrtOp: _formula}
"""Rewrites of primitive-ish ops used by `legalize` only."""

LOGICAL_KERNELS: dict[str, Decomposition] = {kind_of(c): f for c, f in LOGICAL.items()}
"""`LOGICAL` by kind name (the names `supported-ops` / `force-native` take)."""

LOWERINGS: dict[str, Decomposition] = {kind_of(c): f for c, f in PRIMITIVE.items()}
"""`PRIMITIVE` by kind name."""

ALWAYS_LEGAL = frozenset({"param", "constant", "yield"})
"""Kinds every backend materializes itself (leaves and the region terminator)."""

ALL_KINDS = tuple(sorted(n.removeprefix("rlx.") for n in OPS_BY_NAME))
"""Every rlx op kind (valid entries of `supported_ops`)."""


def decompose(
    op: Operation, table: DecompositionTable = LOGICAL
) -> tuple[list[Operation], SSAValue] | None:
    """The expansion of `op` from `table`, or None when its class has none / it cannot."""
    fn = table.get(type(op))
    if fn is None:
        return None
    try:
        return fn(op)
    except VerifyException:
        return None  # an intermediate type is not expressible (e.g. dynamic dims): keep op


def rewrite_with_decomposition(
    op: Operation, table: DecompositionTable, rewriter: PatternRewriter
) -> bool:
    """Replace `op` by its expansion from `table` (new ops keep its location); False if none."""
    expansion = decompose(op, table)
    if expansion is None:
        return False
    ops, value = expansion
    for new in ops:
        new.location = op.location
    rewriter.replace(op, ops, [value])
    return True
