"""The `rlx` dialect: tensor-level ML ops (see docs/dialect.md).

The op classes live in the submodules (`elementwise`, `compute`, ...); this package loads
them on first use (PEP 562), so code that needs a few ops -- `rlx-opt` parsing one
function, a pass importing `rlx.dialects.rlx.leaves` -- does not pay for defining all of
them. `Rlx` (the `Dialect`), `RLX_OPS`, `OPS_BY_NAME` and every op class name are
available as attributes, as before; `op_loaders()` gives one lazy loader per op name
(used by `rlx.tools.lazy_context.LazyOpContext`).
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from xdsl.ir import Dialect, Operation

    Rlx: Dialect
    RLX_OPS: tuple[type[Operation], ...]
    OPS_BY_NAME: dict[str, type[Operation]]

OP_CLASSES: dict[str, str] = {
    "rlx.param": "leaves:ParamOp",
    "rlx.constant": "leaves:ConstantOp",
    "rlx.neg": "elementwise:NegOp",
    "rlx.abs": "elementwise:AbsOp",
    "rlx.exp": "elementwise:ExpOp",
    "rlx.log": "elementwise:LogOp",
    "rlx.sqrt": "elementwise:SqrtOp",
    "rlx.rsqrt": "elementwise:RsqrtOp",
    "rlx.sin": "elementwise:SinOp",
    "rlx.cos": "elementwise:CosOp",
    "rlx.tanh": "elementwise:TanhOp",
    "rlx.sigmoid": "elementwise:SigmoidOp",
    "rlx.relu": "elementwise:ReluOp",
    "rlx.gelu": "elementwise:GeluOp",
    "rlx.gelu_tanh": "elementwise:GeluTanhOp",
    "rlx.silu": "elementwise:SiluOp",
    "rlx.erf": "elementwise:ErfOp",
    "rlx.floor": "elementwise:FloorOp",
    "rlx.ceil": "elementwise:CeilOp",
    "rlx.round": "elementwise:RoundOp",
    "rlx.hard_swish": "elementwise:HardSwishOp",
    "rlx.add": "elementwise:AddOp",
    "rlx.sub": "elementwise:SubOp",
    "rlx.mul": "elementwise:MulOp",
    "rlx.div": "elementwise:DivOp",
    "rlx.max": "elementwise:MaxOp",
    "rlx.min": "elementwise:MinOp",
    "rlx.pow": "elementwise:PowOp",
    "rlx.compare": "elementwise:CompareOp",
    "rlx.where": "elementwise:WhereOp",
    "rlx.cast": "elementwise:CastOp",
    "rlx.matmul": "compute:MatmulOp",
    "rlx.reduce": "compute:ReduceOp",
    "rlx.softmax": "compute:SoftmaxOp",
    "rlx.cumsum": "compute:CumsumOp",
    "rlx.layer_norm": "compute:LayerNormOp",
    "rlx.rms_norm": "compute:RmsNormOp",
    "rlx.reshape": "shape:ReshapeOp",
    "rlx.transpose": "shape:TransposeOp",
    "rlx.slice": "shape:SliceOp",
    "rlx.concat": "shape:ConcatOp",
    "rlx.broadcast_to": "shape:BroadcastToOp",
    "rlx.gather": "shape:GatherOp",
    "rlx.attention": "compute:AttentionOp",
    "rlx.rope": "compute:RopeOp",
    "rlx.conv2d": "window:Conv2dOp",
    "rlx.pool2d": "window:Pool2dOp",
    "rlx.quantize": "quant:QuantizeOp",
    "rlx.dequantize": "quant:DequantizeOp",
    "rlx.fake_quantize": "quant:FakeQuantizeOp",
    "rlx.scaled_quant_scale": "quant:ScaledQuantScaleOp",
    "rlx.scaled_quantize": "quant:ScaledQuantizeOp",
    "rlx.scaled_matmul": "quant:ScaledMatmulOp",
    "rlx.dequant_matmul": "quant:DequantMatmulOp",
    "rlx.rng_normal": "leaves:RngNormalOp",
    "rlx.rng_uniform": "leaves:RngUniformOp",
    "rlx.scan": "control:ScanOp",
    "rlx.if": "control:IfOp",
    "rlx.elementwise_region": "control:ElementwiseRegionOp",
    "rlx.yield": "control:YieldOp",
    "rlx.fused_matmul_bias_act": "fused:FusedMatmulBiasActOp",
    "rlx.fused_swiglu": "fused:FusedSwigluOp",
    "rlx.fused_residual_layer_norm": "fused:FusedResidualLayerNormOp",
    "rlx.fused_residual_rms_norm": "fused:FusedResidualRmsNormOp",
    "rlx.fused_conv2d_residual": "fused:FusedConv2dResidualOp",
    "rlx.pack_rhs": "gemm:PackRhsOp",
    "rlx.packed_matmul": "gemm:PackedMatmulOp",
    "rlx.to_nchwc": "layout:ToNchwcOp",
    "rlx.from_nchwc": "layout:FromNchwcOp",
}
"""Op name -> "submodule:Class", in the dialect's op order (`RLX_OPS`, `Rlx.operations`).

Kept in sync with the op definitions by tests/unit/test_startup.py."""

_SUBMODULES = frozenset(
    {"base", "compute", "control", "elementwise", "fused", "gemm", "layout", "leaves", "quant",
     "shape", "window"}
)  # fmt: skip
_MODULE_EXPORTS: dict[str, str] = {"UNARY_OPS": "elementwise", "BINARY_OPS": "elementwise"}
_CLASS_MODULES: dict[str, str] = {
    target.partition(":")[2]: target.partition(":")[0] for target in OP_CLASSES.values()
}
"""Op class name -> submodule defining it."""


def _load(target: str) -> type[Operation]:
    module, cls = target.split(":")
    return getattr(import_module(f"{__name__}.{module}"), cls)


def op_loaders() -> dict[str, Callable[[], type[Operation]]]:
    """Op name -> function importing (only) the op's submodule and returning the class."""
    return {name: (lambda target=target: _load(target)) for name, target in OP_CLASSES.items()}


def _build_all() -> None:
    from xdsl.ir import Dialect

    ops = tuple(_load(target) for target in OP_CLASSES.values())
    globals().update(
        RLX_OPS=ops,
        Rlx=Dialect("rlx", list(ops), []),
        OPS_BY_NAME={op.name: op for op in ops},
    )


def __getattr__(name: str) -> Any:
    """PEP 562: build the dialect or import an op's submodule on first access."""
    if name in ("Rlx", "RLX_OPS", "OPS_BY_NAME"):
        _build_all()
        return globals()[name]
    module = _CLASS_MODULES.get(name) or _MODULE_EXPORTS.get(name)
    if module is not None:
        return getattr(import_module(f"{__name__}.{module}"), name)
    if name in _SUBMODULES:
        return import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
