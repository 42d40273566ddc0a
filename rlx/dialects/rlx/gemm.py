"""Data-tiled GEMM ops: a weight packed once into register-tile panels, and the matmul
that reads it (produced by the `pack-weights` pass; see docs/dialect.md)."""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import Float32Type, TensorType, f32
from xdsl.ir import Attribute
from xdsl.irdl import irdl_op_definition, operand_def, opt_operand_def, result_def, traits_def
from xdsl.traits import Pure

from rlx.dialects.rlx.base import RlxOp, fmt_shape, is_float, require, shape_of, tensor
from rlx.dialects.rlx.fields import AttrValues, enum_def, int_def
from rlx.dialects.rlx.fused import ACTIVATIONS
from rlx.dialects.rlx.traits import Pinned

Types = Sequence[TensorType]
Attrs = AttrValues
Given = Sequence[Attribute] | None


def _positive(attrs: Attrs, name: str) -> int:
    v = getattr(attrs, name)
    require(isinstance(v, int) and v >= 1, f"attribute '{name}' must be a positive integer")
    return int(v)


@irdl_op_definition
class PackRhsOp(RlxOp):
    """w [K, N] -> f32 panels [ceil(N / width), K, width]: out[q, k, c] = w[k, q*width + c]
    (zero past N)."""

    name = "rlx.pack_rhs"
    w = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure(), Pinned)
    width = int_def(doc="Columns of w per panel (the microkernel's nr).")

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs, given: Given = None) -> list[TensorType]:
        (w,) = operand_types
        require(is_float(w.element_type), f"pack_rhs needs a float operand, got {w.element_type}")
        s = shape_of(w)
        require(len(s) == 2, f"pack_rhs needs a rank-2 operand [K, N], got tensor<{fmt_shape(s)}>")
        width = _positive(attrs, "width")
        return [tensor((-(-s[1] // width), s[0], width), f32)]


@irdl_op_definition
class PackedMatmulOp(RlxOp):
    """activation(x @ unpack(w_packed)[:, :n] + bias): x [..., M, K], w_packed
    [P, K, W] (f32, from rlx.pack_rhs) with (P - 1) * W < n <= P * W, optional bias of
    rank <= 1 broadcasting to [n]; the result has x's element type."""

    name = "rlx.packed_matmul"
    x = operand_def(TensorType)
    w_packed = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure(), Pinned)
    n = int_def(doc="Columns of the result (of w before packing).")
    activation = enum_def(ACTIVATIONS, "none", doc="Applied to x @ w + bias.")

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs, given: Given = None) -> list[TensorType]:
        require(
            len(operand_types) in (2, 3), "packed_matmul takes x, w_packed and an optional bias"
        )
        x, wp = operand_types[0], operand_types[1]
        e = x.element_type
        require(is_float(e), f"packed_matmul needs a float x, got {e}")
        require(isinstance(wp.element_type, Float32Type), "packed_matmul needs f32 packed panels")
        xs, ws = shape_of(x), shape_of(wp)
        require(len(xs) >= 2, f"x must have rank >= 2, got tensor<{fmt_shape(xs)}>")
        require(len(ws) == 3, f"w_packed must be [P, K, W], got tensor<{fmt_shape(ws)}>")
        n = _positive(attrs, "n")
        require(
            xs[-1] == ws[1], f"contracting dimensions differ: x has K={xs[-1]}, w_packed K={ws[1]}"
        )
        require(
            (ws[0] - 1) * ws[2] < n <= ws[0] * ws[2],
            f"n={n} does not match {ws[0]} panels of width {ws[2]}",
        )
        if len(operand_types) == 3:
            b = operand_types[2]
            require(
                b.element_type == e, f"bias must have x's element type {e}, got {b.element_type}"
            )
            bs = shape_of(b)
            require(len(bs) <= 1 and (not bs or bs[0] in (1, n)),
                    f"bias tensor<{fmt_shape(bs)}> must broadcast to [{n}]")  # fmt: skip
        return [tensor((*xs[:-1], n), e)]
