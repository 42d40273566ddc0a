"""The `rlx` dialect: tensor-level ML ops (see docs/dialect.md)."""

from xdsl.ir import Dialect

from rlx.dialects.rlx.compute import (
    AttentionOp,
    Conv2dOp,
    CumsumOp,
    LayerNormOp,
    MatmulOp,
    Pool2dOp,
    ReduceOp,
    RmsNormOp,
    RopeOp,
    SoftmaxOp,
)
from rlx.dialects.rlx.control import ElementwiseRegionOp, ScanOp, YieldOp
from rlx.dialects.rlx.elementwise import BINARY_OPS, UNARY_OPS, CastOp, CompareOp, WhereOp
from rlx.dialects.rlx.fused import (
    FusedMatmulBiasActOp,
    FusedResidualLayerNormOp,
    FusedResidualRmsNormOp,
    FusedSwigluOp,
)
from rlx.dialects.rlx.leaves import ConstantOp, ParamOp, RngNormalOp, RngUniformOp
from rlx.dialects.rlx.quant import (
    DequantizeOp,
    DequantMatmulOp,
    FakeQuantizeOp,
    QuantizeOp,
    ScaledMatmulOp,
    ScaledQuantizeOp,
    ScaledQuantScaleOp,
)
from rlx.dialects.rlx.shape import (
    BroadcastToOp,
    ConcatOp,
    GatherOp,
    ReshapeOp,
    SliceOp,
    TransposeOp,
)

RLX_OPS = (
    ParamOp, ConstantOp, *UNARY_OPS, *BINARY_OPS, CompareOp, WhereOp, CastOp,
    MatmulOp, ReduceOp, SoftmaxOp, CumsumOp, LayerNormOp, RmsNormOp,
    ReshapeOp, TransposeOp, SliceOp, ConcatOp, BroadcastToOp, GatherOp,
    AttentionOp, RopeOp, Conv2dOp, Pool2dOp,
    QuantizeOp, DequantizeOp, FakeQuantizeOp, ScaledQuantScaleOp, ScaledQuantizeOp,
    ScaledMatmulOp, DequantMatmulOp, RngNormalOp, RngUniformOp,
    ScanOp, ElementwiseRegionOp, YieldOp,
    FusedMatmulBiasActOp, FusedSwigluOp, FusedResidualLayerNormOp, FusedResidualRmsNormOp,
)  # fmt: skip

Rlx = Dialect("rlx", list(RLX_OPS), [])

OPS_BY_NAME = {op.name: op for op in RLX_OPS}
