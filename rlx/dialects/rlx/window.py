"""Window ops: `rlx.conv2d` and `rlx.pool2d` (NCHW, or blocked NCHWc), their shared
attribute checks and output-size formula (`window_size`), and the convolution epilogue
(activation, clip, plane mean) that `rlx.fused_conv2d_residual` checks the same way."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute
from xdsl.irdl import irdl_op_definition, operand_def, opt_operand_def, result_def, traits_def
from xdsl.traits import Pure

from rlx.dialects.rlx.base import (
    DYN,
    RlxOp,
    fmt_shape,
    is_float,
    require,
    same_elem,
    shape_of,
    tensor,
)
from rlx.dialects.rlx.fields import (
    AttrValues,
    bool_def,
    enum_def,
    floats_def,
    int_def,
    ints_def,
)
from rlx.dialects.rlx.layout import (
    LAYOUTS,
    blocked,
    blocked_conv_types,
    check_blocked,
    unblocked_shape,
)
from rlx.dialects.rlx.traits import Compute, DataMovement

Types = Sequence[TensorType]
Attrs = AttrValues
Given = Sequence[Attribute] | None


def window_size(size: Any, k: int, stride: int, pad: int, dil: int) -> Any:
    """Output size of a window of `k` taps `dil` apart, `stride` apart over `size` cells
    with `pad` (both ends) padding: the one spelling of the formula (the verifiers'; the
    ONNX importer applies it to symbolic sizes, so `size` may be any number-like)."""
    return (size + (pad - (dil * (k - 1) + 1))) // stride + 1


def _window_out(size: int, k: int, stride: int, pad: int, dil: int) -> int:
    if size == DYN:
        return DYN
    out = window_size(size, k, stride, pad, dil)
    eff = dil * (k - 1) + 1
    require(out >= 1, f"window of size {eff} does not fit input of size {size} with padding {pad}")
    return out


def _spatial_attrs(
    attrs: Attrs, kernel: Sequence[int] | None = None
) -> tuple[tuple[int, ...], ...]:
    strides = attrs.strides if attrs.strides is not None else tuple(kernel or (1, 1))
    padding = attrs.padding
    dil = attrs.dilations if kernel is None else (1, 1)
    require(
        len(strides) == 2 and all(s >= 1 for s in strides),
        f"strides must be 2 positive values [h, w], got {list(strides)}",
    )
    require(
        len(padding) == 4 and all(p >= 0 for p in padding),
        f"padding must be 4 non-negative values [top, left, bottom, right], got {list(padding)}",
    )
    require(
        len(dil) == 2 and all(d >= 1 for d in dil),
        f"dilations must be 2 positive values [h, w], got {list(dil)}",
    )
    return strides, padding, dil


CONV_ACTIVATIONS = (
    "none", "relu", "gelu", "gelu_tanh", "silu", "sigmoid", "hard_swish", "clip",
)  # fmt: skip
"""Activations a convolution can apply to its result: each is the unary op of that name,
except `clip`: min(max(v, clip[0]), clip[1]) (relu6 is clip [0, 6])."""


def check_conv_epilogue(attrs: Attrs, e: Attribute) -> None:
    """The activation needs a float element type; `clip` needs its `[min, max]`."""
    act = attrs.activation
    require(
        act == "none" or is_float(e), f"activation '{act}' needs floating-point operands, got {e}"
    )
    clip = attrs.clip
    if act == "clip":
        require(clip is not None, "activation 'clip' needs the clip attribute [min, max]")
        require(
            len(clip) == 2 and not clip[0] > clip[1],
            f"clip must be [min, max] with min <= max, got {list(clip)}",
        )
    else:
        require(clip is None, f"clip applies only to activation 'clip', got activation '{act}'")


def conv2d_type(operand_types: Types, attrs: Attrs) -> TensorType:
    """The result type of conv2d(x, w[, bias]) (the operand and attribute checks); with
    layout "nchwc" the checks of the equivalent NCHW conv, on blocked shapes."""
    if attrs.winograd:
        w = winograd_blocked_type(operand_types, attrs)
        operand_types = [operand_types[0], w, *operand_types[2:]]
    if attrs.layout == "nchwc":
        same_elem(operand_types)
        nchw, block = blocked_conv_types(operand_types, attrs.groups)
        return blocked(_conv2d_nchw_type(nchw, attrs), block)
    return _conv2d_nchw_type(operand_types, attrs)


def winograd_blocked_type(operand_types: Types, attrs: Attrs) -> TensorType:
    """The blocked 3x3 weight type `[F/B, C/B, 3, 3, B, B]` whose Winograd transform is the
    weights `U [16, F/B, C/B, B, B]` of a conv with `winograd = true` (`U[4a + b] = (G g
    Gᵀ)[a, b]`, docs/conv.md), after checking the attributes that transform implies."""
    ws = shape_of(operand_types[1])
    require(attrs.layout == "nchwc", 'winograd weights need layout "nchwc"')
    require(attrs.groups == 1, f"winograd weights need groups 1, got {attrs.groups}")
    strides, _, dil = _spatial_attrs(attrs)
    require(
        tuple(strides) == (1, 1) and tuple(dil) == (1, 1),
        f"winograd weights need strides and dilations [1, 1], got {list(strides)}, {list(dil)}",
    )
    require(
        len(ws) == 5 and ws[0] == 16 and ws[3] == ws[4],
        f"winograd weights must be [16, F/B, C/B, B, B], got tensor<{fmt_shape(ws)}>",
    )
    return tensor((ws[1], ws[2], 3, 3, ws[3], ws[4]), operand_types[1].element_type)


def _conv2d_nchw_type(operand_types: Types, attrs: Attrs) -> TensorType:
    e = same_elem(operand_types)
    xs, ws = shape_of(operand_types[0]), shape_of(operand_types[1])
    require(len(xs) == 4, f"x must be NCHW (rank 4), got tensor<{fmt_shape(xs)}>")
    require(len(ws) == 4, f"w must be [F, C/groups, KH, KW] (rank 4), got tensor<{fmt_shape(ws)}>")
    groups = attrs.groups
    require(groups >= 1, f"groups must be >= 1, got {groups}")
    require(
        xs[1] == DYN or xs[1] % groups == 0,
        f"channels ({xs[1]}) not divisible by groups ({groups})",
    )
    require(ws[0] % groups == 0, f"filters ({ws[0]}) not divisible by groups ({groups})")
    require(
        xs[1] == DYN or ws[1] * groups == xs[1],
        f"w has {ws[1]} input channels per group, x has {xs[1]} channels in {groups} groups",
    )
    if len(operand_types) == 3:
        bs = shape_of(operand_types[2])
        require(bs == (ws[0],), f"bias must have shape [{ws[0]}], got tensor<{fmt_shape(bs)}>")
    check_conv_epilogue(attrs, e)
    strides, pad, dil = _spatial_attrs(attrs)
    oh = _window_out(xs[2], ws[2], strides[0], pad[0] + pad[2], dil[0])
    ow = _window_out(xs[3], ws[3], strides[1], pad[1] + pad[3], dil[1])
    return tensor((xs[0], ws[0], oh, ow), e)


CONV_REDUCTIONS = ("none", "mean")
"""What a convolution does with its activated result: keep it, or average each plane
(`mean`: the result is [N, F, 1, 1], a global average pool fused into the convolution)."""


def conv_reduced(out: TensorType, attrs: Attrs) -> TensorType:
    """The result type of a convolution whose unreduced result type is `out`."""
    if attrs.reduce == "none":
        return out
    e = out.element_type
    require(is_float(e), f"reduce 'mean' needs floating-point operands, got {e}")
    require(attrs.layout == "nchw", "reduce 'mean' needs layout 'nchw'")
    xs = shape_of(out)
    return tensor((xs[0], xs[1], 1, 1), e)


@irdl_op_definition
class Conv2dOp(RlxOp):
    """NCHW 2-D cross-correlation; w is [F, C/groups, KH, KW]; optional bias [F]; with
    `reduce = "mean"` each activated output plane is averaged (a fused global pool)."""

    name = "rlx.conv2d"
    x = operand_def(TensorType)
    w = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure(), Compute)
    strides = ints_def(None, doc="[h, w] steps (default [1, 1]).")
    padding = ints_def((0, 0, 0, 0), doc="[top, left, bottom, right] zero padding.")
    dilations = ints_def((1, 1), doc="[h, w] kernel dilations.")
    groups = int_def(1, doc="Channel groups (C and F divisible by it).")
    activation = enum_def(
        CONV_ACTIVATIONS, "none", doc="Applied to the result (after the bias); float only."
    )
    clip = floats_def(None, doc="[min, max] of activation 'clip' (relu6: [0, 6]).")
    layout = enum_def(LAYOUTS, "nchw", doc='"nchwc": blocked x, w, result (docs/layout.md).')
    reduce = enum_def(
        CONV_REDUCTIONS, "none", doc="'mean': average each output plane (result [N, F, 1, 1])."
    )
    winograd = bool_def(
        False, doc="w is the Winograd F(2x2,3x3) transform U [16, F/B, C/B, B, B] (nchwc, 3x3)."
    )

    def spatial(self) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
        """(strides, padding, dilations) with their defaults."""
        return self.strides or (1, 1), self.padding, self.dilations

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs, given: Given = None) -> list[TensorType]:
        return [conv_reduced(conv2d_type(operand_types, attrs), attrs)]


POOL_KINDS = ("max", "avg")


@irdl_op_definition
class Pool2dOp(RlxOp):
    """NCHW max / average pooling (average counts only non-padded elements)."""

    name = "rlx.pool2d"
    x = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure(), DataMovement)
    kind = enum_def(POOL_KINDS, doc="max or avg.")
    kernel = ints_def(doc="[h, w] window.")
    strides = ints_def(None, doc="[h, w] steps (default: the kernel).")
    padding = ints_def((0, 0, 0, 0), doc="[top, left, bottom, right] padding.")
    layout = enum_def(LAYOUTS, "nchw", doc='"nchwc": blocked x and result [N, C/B, H, W, B].')

    def spatial(self) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """(strides, padding) with their defaults."""
        return self.strides if self.strides is not None else self.kernel, self.padding

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs, given: Given = None) -> list[TensorType]:
        (t,) = operand_types
        blocked_in = attrs.layout == "nchwc"
        block = check_blocked(t) if blocked_in else 0
        xs = unblocked_shape(shape_of(t)) if blocked_in else shape_of(t)
        require(len(xs) == 4, f"x must be NCHW (rank 4), got tensor<{fmt_shape(xs)}>")
        require(
            is_float(t.element_type), f"pool2d needs a floating-point operand, got {t.element_type}"
        )
        kernel = attrs.kernel
        require(
            len(kernel) == 2 and all(k >= 1 for k in kernel),
            f"kernel must be 2 positive values [h, w], got {list(kernel)}",
        )
        strides, pad, _ = _spatial_attrs(attrs, kernel)
        oh = _window_out(xs[2], kernel[0], strides[0], pad[0] + pad[2], 1)
        ow = _window_out(xs[3], kernel[1], strides[1], pad[1] + pad[3], 1)
        out = tensor((xs[0], xs[1], oh, ow), t.element_type)
        return [blocked(out, block) if blocked_in else out]
