"""Fused ops produced by the `fusion` pass (and writable by hand)."""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute
from xdsl.irdl import (
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.traits import Pure

from rlx.dialects.rlx.base import (
    RlxOp,
    broadcast_shapes,
    fmt_shape,
    is_float,
    require,
    same_elem,
    shape_of,
    tensor,
    types_compatible,
)
from rlx.dialects.rlx.compute import LayerNormOp, RmsNormOp, epsilon_def, matmul_shape
from rlx.dialects.rlx.fields import AttrValues, bool_def, enum_def
from rlx.dialects.rlx.traits import Compute, Reduction
from rlx.dialects.rlx.window import Conv2dOp, conv2d_type, conv_reduced

Types = Sequence[TensorType]
Attrs = AttrValues
Given = Sequence[Attribute] | None

ACTIVATIONS = ("none", "relu", "gelu", "gelu_tanh", "silu")


@irdl_op_definition
class FusedMatmulBiasActOp(RlxOp):
    """activation(x @ w + bias) with bias of rank <= 1."""

    name = "rlx.fused_matmul_bias_act"
    x = operand_def(TensorType)
    w = operand_def(TensorType)
    bias = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure(), Compute)
    activation = enum_def(ACTIVATIONS, "none", doc="Applied to x @ w + bias.")

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs, given: Given = None) -> list[TensorType]:
        e = same_elem(operand_types)
        require(is_float(e), f"fused_matmul_bias_act needs floating-point operands, got {e}")
        mm = matmul_shape(shape_of(operand_types[0]), shape_of(operand_types[1]))
        bs = shape_of(operand_types[2])
        require(len(bs) <= 1, f"bias must have rank <= 1, got tensor<{fmt_shape(bs)}>")
        out = broadcast_shapes(mm, bs, what="matmul result and bias")
        require(
            out == mm,
            f"bias tensor<{fmt_shape(bs)}> must broadcast into the matmul result tensor<{fmt_shape(mm)}>",
        )
        return [tensor(mm, e)]


@irdl_op_definition
class FusedSwigluOp(RlxOp):
    """silu(x @ w_gate) * (x @ w_up), or with one packed operand [..., 2N]:
    silu(gate half) * up half (up first unless gate_first)."""

    name = "rlx.fused_swiglu"
    operands_ = var_operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure(), Compute)
    gate_first = bool_def(False, doc="Packed form: the gate half comes first.")

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs, given: Given = None) -> list[TensorType]:
        require(
            len(operand_types) in (1, 3),
            f"fused_swiglu takes (x, w_gate, w_up) or one packed operand, got {len(operand_types)} operands",
        )
        e = same_elem(operand_types)
        require(is_float(e), f"fused_swiglu needs floating-point operands, got {e}")
        gate_first = attrs.gate_first
        if len(operand_types) == 1:
            s = shape_of(operand_types[0])
            require(
                len(s) >= 1 and s[-1] % 2 == 0,
                f"packed operand needs an even last dim, got tensor<{fmt_shape(s)}>",
            )
            return [tensor((*s[:-1], s[-1] // 2), e)]
        require(not gate_first, "gate_first applies only to the packed form")
        x, wg, wu = (shape_of(t) for t in operand_types)
        g = matmul_shape(x, wg)
        u = matmul_shape(x, wu)
        require(
            g == u,
            f"gate and up projections differ: tensor<{fmt_shape(g)}> vs tensor<{fmt_shape(u)}>",
        )
        return [tensor(g, e)]


def _residual(operand_types: Types) -> None:
    x, r = operand_types[:2]
    require(types_compatible(x, r), f"x and residual must have the same type, got {x} and {r}")


@irdl_op_definition
class FusedResidualLayerNormOp(RlxOp):
    """layer_norm(x + residual, gamma, beta)."""

    name = "rlx.fused_residual_layer_norm"
    x = operand_def(TensorType)
    residual = operand_def(TensorType)
    gamma = operand_def(TensorType)
    beta = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure(), Reduction)
    epsilon = epsilon_def()

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs, given: Given = None) -> list[TensorType]:
        _residual(operand_types)
        return LayerNormOp.infer([operand_types[0], *operand_types[2:]], attrs)


@irdl_op_definition
class FusedResidualRmsNormOp(RlxOp):
    """rms_norm(x + residual, gamma[, beta])."""

    name = "rlx.fused_residual_rms_norm"
    x = operand_def(TensorType)
    residual = operand_def(TensorType)
    gamma = operand_def(TensorType)
    beta = opt_operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure(), Reduction)
    epsilon = epsilon_def()

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs, given: Given = None) -> list[TensorType]:
        _residual(operand_types)
        return RmsNormOp.infer([operand_types[0], *operand_types[2:]], attrs)


_CONV_FIELDS = Conv2dOp.fields()


@irdl_op_definition
class FusedConv2dResidualOp(RlxOp):
    """activation(conv2d(x, w) + bias + residual): a convolution whose epilogue adds a
    tensor of the result's type (a residual shortcut) before the activation (the residual
    has the unreduced type when `reduce = "mean"` averages each plane)."""

    name = "rlx.fused_conv2d_residual"
    x = operand_def(TensorType)
    w = operand_def(TensorType)
    residual = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure(), Compute)
    strides = _CONV_FIELDS["strides"]
    padding = _CONV_FIELDS["padding"]
    dilations = _CONV_FIELDS["dilations"]
    groups = _CONV_FIELDS["groups"]
    activation = _CONV_FIELDS["activation"]
    clip = _CONV_FIELDS["clip"]
    layout = _CONV_FIELDS["layout"]
    reduce = _CONV_FIELDS["reduce"]
    winograd = _CONV_FIELDS["winograd"]

    def spatial(self) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
        """(strides, padding, dilations) with their defaults."""
        return self.strides or (1, 1), self.padding, self.dilations  # type: ignore[return-value]

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs, given: Given = None) -> list[TensorType]:
        require(
            len(operand_types) in (3, 4),
            "fused_conv2d_residual takes x, w, residual and an optional bias",
        )
        x, w, r = operand_types[:3]
        out = conv2d_type([x, w, *operand_types[3:]], attrs)
        require(
            types_compatible(out, r),
            f"residual must have the convolution's result type {out}, got {r}",
        )
        return [conv_reduced(out, attrs)]
