"""Compute ops: matmul, reductions, normalization, attention and rope. The window ops
(conv2d, pool2d) are in `window`."""

from __future__ import annotations

import math
from collections.abc import Sequence

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute
from xdsl.irdl import irdl_op_definition, operand_def, opt_operand_def, result_def, traits_def
from xdsl.traits import Pure

from rlx.dialects.rlx.base import (
    DYN,
    RlxOp,
    broadcast_shapes,
    dims_compatible,
    fmt_shape,
    is_float,
    is_numeric,
    normalize_axis,
    require,
    same_elem,
    shape_of,
    tensor,
)
from rlx.dialects.rlx.fields import (
    AttrValues,
    bool_def,
    enum_def,
    float_def,
    int_def,
    ints_def,
)
from rlx.dialects.rlx.traits import Compute, DataMovement, Reduction

Types = Sequence[TensorType]
Attrs = AttrValues
Given = Sequence[Attribute] | None


def matmul_shape(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    """NumPy matmul of rank >= 2 operands with broadcast batch dims."""
    require(
        len(a) >= 2 and len(b) >= 2,
        f"matmul operands must have rank >= 2, got tensor<{fmt_shape(a)}> and tensor<{fmt_shape(b)}>",
    )
    require(
        dims_compatible(a[-1], b[-2]),
        f"contracting dimensions differ: lhs tensor<{fmt_shape(a)}> has K={a[-1]}, rhs tensor<{fmt_shape(b)}> has K={b[-2]}",
    )
    batch = broadcast_shapes(a[:-2], b[:-2], what="matmul batch dimensions")
    return (*batch, a[-2], b[-1])


@irdl_op_definition
class MatmulOp(RlxOp):
    """NumPy matmul: [..., M, K] x [..., K, N] -> [..., M, N], batch dims broadcast."""

    name = "rlx.matmul"
    a = operand_def(TensorType)
    b = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure(), Compute)

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs, given: Given = None) -> list[TensorType]:
        e = same_elem(operand_types)
        require(is_numeric(e), f"matmul needs numeric operands, got {e}")
        return [tensor(matmul_shape(shape_of(operand_types[0]), shape_of(operand_types[1])), e)]


REDUCE_KINDS = ("sum", "mean", "max", "min", "prod")


@irdl_op_definition
class ReduceOp(RlxOp):
    """Reduce `axes` (all when omitted) with `kind`; `keepdims` keeps them as size 1."""

    name = "rlx.reduce"
    x = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure(), Reduction)
    kind = enum_def(REDUCE_KINDS, doc="The reduction.")
    axes = ints_def(None, doc="The reduced axes (all when absent).")
    keepdims = bool_def(False, doc="Keep the reduced axes as size 1.")

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs, given: Given = None) -> list[TensorType]:
        (t,) = operand_types
        shape = shape_of(t)
        require(is_numeric(t.element_type), f"reduce needs a numeric operand, got {t.element_type}")
        axes = attrs.axes if attrs.axes is not None else tuple(range(len(shape)))
        norm = [normalize_axis(a, len(shape), "reduction axis") for a in axes]
        require(len(set(norm)) == len(norm), f"reduction axes repeat: {list(axes)}")
        keep = attrs.keepdims
        out = (
            [1 if i in norm else d for i, d in enumerate(shape)]
            if keep
            else [d for i, d in enumerate(shape) if i not in norm]
        )
        return [tensor(out, t.element_type)]


@irdl_op_definition
class SoftmaxOp(RlxOp):
    """Softmax along `axis` (default -1)."""

    name = "rlx.softmax"
    x = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure(), Reduction)
    axis = int_def(-1, doc="The normalized axis.")

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs, given: Given = None) -> list[TensorType]:
        (t,) = operand_types
        require(
            is_float(t.element_type),
            f"softmax needs a floating-point operand, got {t.element_type}",
        )
        normalize_axis(attrs.axis, len(shape_of(t)))
        return [t]


@irdl_op_definition
class CumsumOp(RlxOp):
    """Inclusive (or `exclusive`) running sum along `axis` (default -1)."""

    name = "rlx.cumsum"
    x = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure(), Reduction)
    axis = int_def(-1, doc="The summed axis.")
    exclusive = bool_def(False, doc="Exclude the current element from its sum.")

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs, given: Given = None) -> list[TensorType]:
        (t,) = operand_types
        require(is_numeric(t.element_type), f"cumsum needs a numeric operand, got {t.element_type}")
        normalize_axis(attrs.axis, len(shape_of(t)))
        return [t]


def _check_norm_params(x: TensorType, params: Types, names: Sequence[str]) -> None:
    shape = shape_of(x)
    require(len(shape) >= 1, "normalization needs an operand of rank >= 1")
    require(
        is_float(x.element_type),
        f"normalization needs a floating-point operand, got {x.element_type}",
    )
    for n, p in zip(names, params, strict=False):
        ps = shape_of(p)
        require(
            len(ps) == 1 and dims_compatible(ps[0], shape[-1]),
            f"{n} must have shape [{shape[-1]}] (the normalized last axis), got tensor<{fmt_shape(ps)}>",
        )
        require(
            p.element_type == x.element_type,
            f"{n} element type {p.element_type} differs from {x.element_type}",
        )


EPSILON = 1e-5
"""The default epsilon of every normalization op (the one place it is written)."""


def epsilon_def() -> object:
    """The `epsilon` field shared by the normalization ops."""
    return float_def(EPSILON, doc="Added to the variance (mean square) before the root.")


def _check_epsilon(attrs: Attrs) -> None:
    eps = attrs.epsilon
    require(eps >= 0, f"epsilon must be non-negative, got {eps}")


@irdl_op_definition
class LayerNormOp(RlxOp):
    """(x - mean) / sqrt(var + epsilon) * gamma + beta over the last axis."""

    name = "rlx.layer_norm"
    x = operand_def(TensorType)
    gamma = operand_def(TensorType)
    beta = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure(), Reduction)
    epsilon = epsilon_def()

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs, given: Given = None) -> list[TensorType]:
        _check_norm_params(operand_types[0], operand_types[1:], ("gamma", "beta"))
        _check_epsilon(attrs)
        return [operand_types[0]]


@irdl_op_definition
class RmsNormOp(RlxOp):
    """x / sqrt(mean(x^2) + epsilon) * gamma (+ beta) over the last axis."""

    name = "rlx.rms_norm"
    x = operand_def(TensorType)
    gamma = operand_def(TensorType)
    beta = opt_operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure(), Reduction)
    epsilon = epsilon_def()

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs, given: Given = None) -> list[TensorType]:
        _check_norm_params(operand_types[0], operand_types[1:], ("gamma", "beta"))
        _check_epsilon(attrs)
        return [operand_types[0]]


MASK_KINDS = ("none", "causal", "sliding_window", "bias")

ATTENTION_LAYOUTS = ("bhsd", "bshd")
"""Dim order of rlx.attention's q, k, v and result: [batch, heads, seq, head_dim] or
[batch, seq, heads, head_dim] (the projections' layout in ONNX / torch exports)."""


def heads_first(s: Sequence[int], layout: str) -> tuple[int, ...]:
    """The [batch, heads, seq, dim] order of a rank-4 shape `s` in `layout` (an involution:
    it also maps a [batch, heads, seq, dim] shape to `layout`)."""
    return (s[0], s[2], s[1], s[3]) if layout == "bshd" else tuple(s)


@irdl_op_definition
class AttentionOp(RlxOp):
    """softmax(mask(q·kᵀ·scale [+ bias])) · v on [batch, heads, seq, head_dim] tensors
    ([batch, seq, heads, head_dim] with layout = "bshd")."""

    name = "rlx.attention"
    q = operand_def(TensorType)
    k = operand_def(TensorType)
    v = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure(), Compute)
    scale = float_def(None, doc="Score scale; absent: 1/sqrt(head_dim) (see `score_scale`).")
    mask_kind = enum_def(MASK_KINDS, "none", doc='"bias" iff a bias operand is given.')
    window = int_def(None, doc='Keys per query behind it, for mask_kind = "sliding_window".')
    softcap = float_def(None, doc="Scores become softcap * tanh(s / softcap).")
    layout = enum_def(
        ATTENTION_LAYOUTS, "bhsd", doc="Dim order of q, k, v and the result (bias: always bhsd)."
    )

    def score_scale(self) -> float:
        """The scale applied to q·kᵀ: `scale`, or 1/sqrt(head_dim) when absent."""
        if self.scale is not None:
            return self.scale
        d = shape_of(self.q.type)[-1]
        return 1.0 / math.sqrt(d) if d > 0 else 1.0

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs, given: Given = None) -> list[TensorType]:
        q, k, v = (shape_of(t) for t in operand_types[:3])
        e = same_elem(operand_types)
        require(is_float(e), f"attention needs floating-point operands, got {e}")
        for n, s in (("q", q), ("k", k), ("v", v)):
            require(
                len(s) == 4,
                f"{n} must have rank 4 [batch, heads, seq, head_dim], got tensor<{fmt_shape(s)}>",
            )
        layout = attrs.layout
        q, k, v = (heads_first(s, layout) for s in (q, k, v))
        require(
            dims_compatible(q[0], k[0])
            and all(dims_compatible(a, b) for a, b in zip(k[:3], v[:3], strict=True)),
            f"q, k, v batch/heads/seq do not agree: tensor<{fmt_shape(q)}>, tensor<{fmt_shape(k)}>, tensor<{fmt_shape(v)}>",
        )
        hq, hk = q[1], k[1]
        require(
            DYN in (hq, hk) or (hk > 0 and hq % hk == 0) or hq == hk,
            f"k/v heads ({hk}) must divide q heads ({hq}) (grouped-query attention)",
        )
        require(dims_compatible(q[3], k[3]), f"q and k head_dim differ: {q[3]} vs {k[3]}")
        kind = attrs.mask_kind
        has_bias = len(operand_types) == 4
        require(
            has_bias == (kind == "bias"),
            'a bias operand is given iff mask_kind = "bias"',
        )
        if has_bias:
            broadcast_shapes(
                shape_of(operand_types[3]),
                (q[0], q[1], q[2], k[2]),
                what="attention bias and scores",
            )
        window = attrs.window
        require(
            (window is not None) == (kind == "sliding_window"),
            "attribute 'window' is required by (and only by) mask_kind = \"sliding_window\"",
        )
        require(window is None or window >= 0, f"window must be non-negative, got {window}")
        softcap = attrs.softcap
        require(softcap is None or softcap > 0, f"softcap must be positive, got {softcap}")
        return [tensor(heads_first((q[0], q[1], q[2], v[3]), layout), e)]


@irdl_op_definition
class RopeOp(RlxOp):
    """Rotary embedding with rotate-half pairing (dims i and i + n_rot/2)."""

    name = "rlx.rope"
    x = operand_def(TensorType)
    cos = operand_def(TensorType)
    sin = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure(), DataMovement)
    n_rot = int_def(None, doc="Rotated dims (absent: all of the last dim; see `rotated_dims`).")

    def rotated_dims(self) -> int:
        """n_rot, or the whole last dim when absent."""
        return self.n_rot if self.n_rot is not None else shape_of(self.x.type)[-1]

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs, given: Given = None) -> list[TensorType]:
        x, c, s = operand_types
        xs = shape_of(x)
        e = same_elem(operand_types)
        require(is_float(e), f"rope needs floating-point operands, got {e}")
        require(
            len(xs) >= 2, f"rope needs x of rank >= 2 [..., seq, dim], got tensor<{fmt_shape(xs)}>"
        )
        n_rot = attrs.n_rot if attrs.n_rot is not None else xs[-1]
        require(n_rot > 0 and n_rot % 2 == 0, f"n_rot must be a positive even number, got {n_rot}")
        require(
            xs[-1] == DYN or n_rot <= xs[-1], f"n_rot ({n_rot}) exceeds the last dim ({xs[-1]})"
        )
        half = (*xs[:-1], n_rot // 2)
        for n, t in (("cos", c), ("sin", s)):
            require(
                broadcast_shapes(shape_of(t), half, what=f"{n} and x[..., :n_rot/2]") == half,
                f"{n} tensor<{fmt_shape(shape_of(t))}> must broadcast to tensor<{fmt_shape(half)}>",
            )
        return [x]
