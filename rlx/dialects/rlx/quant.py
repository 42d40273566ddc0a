"""Quantization ops: int8 affine (de)quantization, fake quantization, scaled
low-precision GEMM (fp8/fp6/fp4 and custom fNeXmY formats) and GGML packed matmul."""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import TensorType, f32, i8
from xdsl.ir import Attribute
from xdsl.irdl import irdl_op_definition, operand_def, opt_operand_def, result_def, traits_def
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from rlx.dialects.rlx.base import (
    UI8,
    RlxOp,
    fmt_shape,
    is_float,
    normalize_axis,
    require,
    shape_of,
    tensor,
)
from rlx.dialects.rlx.fields import (
    AttrValues,
    enum_def,
    float_or_floats_def,
    int_def,
    int_or_ints_def,
    str_def,
)
from rlx.dialects.rlx.traits import Elementwise, Pinned
from rlx.formats.lowp import parse_format, parse_layout, scale_shape

Types = Sequence[TensorType]
Attrs = AttrValues
Given = Sequence[Attribute] | None


def _check_affine(attrs: Attrs, shape: tuple[int, ...]) -> None:
    """scale/zero_point are scalars (per tensor) or arrays along `axis` (per channel)."""
    scale, zp = attrs.scale, attrs.zero_point
    if isinstance(scale, float):
        require(scale > 0, f"scale must be positive, got {scale}")
        require(
            zp is None or isinstance(zp, int),
            "a per-tensor scale needs a scalar zero_point (i64)",
        )
        require(attrs.axis is None, "attribute 'axis' is only valid with per-channel scale arrays")
        return
    scales = scale
    axis = attrs.axis
    require(axis is not None, "per-channel scales need attribute 'axis'")
    ax = normalize_axis(axis, len(shape))
    require(len(scales) == shape[ax], f"{len(scales)} scales for axis {axis} of size {shape[ax]}")
    require(all(s > 0 for s in scales), "scales must be positive")
    if zp is not None:
        require(
            isinstance(zp, tuple) and len(zp) == len(scales),
            "per-channel zero_point must be an array<i64> with one value per channel",
        )


@irdl_op_definition
class QuantizeOp(RlxOp):
    """q = clamp(round_half_even(x / scale) + zero_point, -128, 127) as i8."""

    name = "rlx.quantize"
    x = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure(), Elementwise)
    scale = float_or_floats_def(doc="Per-tensor scale, or one per channel along `axis`.")
    zero_point = int_or_ints_def(None, doc="Zero point(s) (default 0).")
    axis = int_def(None, doc="The channel axis of per-channel scales.")

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs, given: Given = None) -> list[TensorType]:
        (t,) = operand_types
        require(
            is_float(t.element_type),
            f"quantize needs a floating-point operand, got {t.element_type}",
        )
        _check_affine(attrs, shape_of(t))
        return [tensor(shape_of(t), i8)]


@irdl_op_definition
class DequantizeOp(RlxOp):
    """x = (q - zero_point) * scale, in the result's float type (default f32)."""

    name = "rlx.dequantize"
    x = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure(), Elementwise)
    scale = float_or_floats_def(doc="Per-tensor scale, or one per channel along `axis`.")
    zero_point = int_or_ints_def(None, doc="Zero point(s) (default 0).")
    axis = int_def(None, doc="The channel axis of per-channel scales.")

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs, given: Given = None) -> list[TensorType]:
        (t,) = operand_types
        require(t.element_type == i8, f"dequantize needs an i8 operand, got {t.element_type}")
        _check_affine(attrs, shape_of(t))
        elem = given[0].element_type if given and isinstance(given[0], TensorType) else f32
        require(is_float(elem), f"dequantize produces floats, got {elem}")
        return [tensor(shape_of(t), elem)]


@irdl_op_definition
class FakeQuantizeOp(RlxOp):
    """Quantize then dequantize with `bits` (default 8): the rounding error, in float."""

    name = "rlx.fake_quantize"
    x = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure(), Elementwise)
    scale = float_or_floats_def(doc="Per-tensor scale, or one per channel along `axis`.")
    zero_point = int_or_ints_def(None, doc="Zero point(s) (default 0).")
    axis = int_def(None, doc="The channel axis of per-channel scales.")
    bits = int_def(8, doc="Quantized width in bits, in [2, 16].")

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs, given: Given = None) -> list[TensorType]:
        (t,) = operand_types
        require(
            is_float(t.element_type),
            f"fake_quantize needs a floating-point operand, got {t.element_type}",
        )
        _check_affine(attrs, shape_of(t))
        bits = attrs.bits
        require(2 <= bits <= 16, f"bits must be in [2, 16], got {bits}")
        return [t]


def check_format(name: str, attr: str) -> str:
    """A low-precision format name as `rlx.formats.lowp.parse_format` accepts it."""
    try:
        parse_format(name)
    except ValueError as e:
        raise VerifyException(f"attribute '{attr}': {e}") from None
    return name


def scale_type(layout: str | None, rows: int, k: int) -> TensorType:
    """per_tensor: one f32; block layouts (mx, nvfp4): one encoded byte per row per block of K."""
    try:
        kind = parse_layout(layout or "per_tensor").kind
        shape = scale_shape(layout or "per_tensor", rows, k)
    except ValueError as e:
        raise VerifyException(f"attribute 'scale_layout': {e}") from None
    return tensor(shape, f32 if kind == "per_tensor" else UI8)


def _rank2(t: TensorType, what: str) -> tuple[int, int]:
    s = shape_of(t)
    require(len(s) == 2, f"{what} must have rank 2 [rows, K], got tensor<{fmt_shape(s)}>")
    return s[0], s[1]


@irdl_op_definition
class ScaledQuantScaleOp(RlxOp):
    """Scales that map each block of x (per tensor, or per row per block of K) onto `format`."""

    name = "rlx.scaled_quant_scale"
    x = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure(), Pinned)
    format = str_def(doc="Low-precision format of the codes (e.g. f8e4m3, f4e2m1).")
    scale_layout = str_def("per_tensor", doc="per_tensor, mx<block> or nvfp4.")

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs, given: Given = None) -> list[TensorType]:
        (t,) = operand_types
        require(t.element_type == f32, f"operand must be f32, got {t.element_type}")
        rows, k = _rank2(t, "operand")
        check_format(attrs.format, "format")
        return [scale_type(attrs.scale_layout, rows, k)]


@irdl_op_definition
class ScaledQuantizeOp(RlxOp):
    """One ui8 code per element: the nearest `format` value of x / scale."""

    name = "rlx.scaled_quantize"
    x = operand_def(TensorType)
    scale = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure(), Pinned)
    format = str_def(doc="Low-precision format of the codes (e.g. f8e4m3, f4e2m1).")
    scale_layout = str_def("per_tensor", doc="per_tensor, mx<block> or nvfp4.")

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs, given: Given = None) -> list[TensorType]:
        x, s = operand_types
        require(x.element_type == f32, f"operand must be f32, got {x.element_type}")
        rows, k = _rank2(x, "operand")
        check_format(attrs.format, "format")
        want = scale_type(attrs.scale_layout, rows, k)
        require(s == want, f"scale must be {want} for this layout, got {s}")
        return [tensor((rows, k), UI8)]


@irdl_op_definition
class ScaledMatmulOp(RlxOp):
    """f32 a·bᵀ of ui8 codes with their scales: [M,K] x [N,K] -> [M,N] (+ bias [N])."""

    name = "rlx.scaled_matmul"
    a = operand_def(TensorType)
    b = operand_def(TensorType)
    a_scale = operand_def(TensorType)
    b_scale = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure(), Pinned)
    lhs_format = str_def(doc="Format of the lhs codes (e.g. f8e4m3).")
    rhs_format = str_def(doc="Format of the rhs codes.")
    scale_layout = str_def("per_tensor", doc="per_tensor, mx<block> or nvfp4.")

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs, given: Given = None) -> list[TensorType]:
        a, b, sa, sb = operand_types[:4]
        require(a.element_type == UI8 and b.element_type == UI8, "code operands must be ui8")
        m, k = _rank2(a, "lhs codes")
        n, k2 = _rank2(b, "rhs codes")
        require(k == k2, f"lhs has K={k}, rhs has K={k2} (rhs is [N, K])")
        check_format(attrs.lhs_format, "lhs_format")
        check_format(attrs.rhs_format, "rhs_format")
        layout = attrs.scale_layout
        require(
            sa == scale_type(layout, m, k),
            f"lhs scale must be {scale_type(layout, m, k)}, got {sa}",
        )
        require(
            sb == scale_type(layout, n, k),
            f"rhs scale must be {scale_type(layout, n, k)}, got {sb}",
        )
        if len(operand_types) == 5:
            require(
                operand_types[4] == tensor((n,), f32),
                f"bias must be tensor<{n}xf32>, got {operand_types[4]}",
            )
        return [tensor((m, n), f32)]


GGML_BLOCKS = {"q8_0": (32, 34), "tq2_0": (256, 66)}


@irdl_op_definition
class DequantMatmulOp(RlxOp):
    """y = x @ Wᵀ with W [n, k] stored as GGML blocks (q8_0 or tq2_0) in a ui8 tensor."""

    name = "rlx.dequant_matmul"
    x = operand_def(TensorType)
    packed = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure(), Pinned)
    scheme = enum_def(tuple(GGML_BLOCKS), doc="GGML block format: q8_0 or tq2_0.")
    n = int_def(doc="Rows of W (output features).")
    k = int_def(doc="Columns of W (input features).")

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs, given: Given = None) -> list[TensorType]:
        x, p = operand_types
        scheme = attrs.scheme
        n, k = attrs.n, attrs.k
        require(n > 0 and k > 0, "attributes 'n' and 'k' must be positive")
        block, nbytes = GGML_BLOCKS[scheme]
        require(k % block == 0, f"k ({k}) must be a multiple of the {scheme} block size {block}")
        require(
            p.element_type == UI8 and shape_of(p) == (n * k // block * nbytes,),
            f"packed weight must be tensor<{n * k // block * nbytes}xui8> for [{n}, {k}] {scheme}, got {p}",
        )
        xs = shape_of(x)
        require(x.element_type == f32, f"x must be f32, got {x.element_type}")
        require(
            len(xs) >= 1 and xs[-1] in (k, -1), f"x must end in K={k}, got tensor<{fmt_shape(xs)}>"
        )
        return [tensor((*xs[:-1], n), f32)]
