"""Registry of RLX graph-level passes: pass name -> lazy factory returning the pass class."""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from xdsl.passes import ModulePass

_PASSES: dict[str, str] = {
    "bind-dims": "rlx.transforms.bind_dims:BindDims",
    "blocked-layout": "rlx.transforms.blocked_layout:BlockedLayout",
    "bind-params": "rlx.transforms.bind_params:BindParams",
    "bind-quant-params": "rlx.transforms.bind_quant_params:BindQuantParams",
    "canonicalize": "rlx.transforms.canonicalize:RlxCanonicalizePass",
    "constant-folding": "rlx.transforms.constant_folding:ConstantFoldingPass",
    "dce": "rlx.transforms.dce:DeadCodeEliminationPass",
    "fold-batch-norm": "rlx.transforms.fold_batch_norm:FoldBatchNorm",
    "fusion": "rlx.transforms.fusion:FusionPass",
    "hoist-param-invariant": "rlx.transforms.hoist_param_invariant:HoistParamInvariant",
    "kernel-dispatch": "rlx.transforms.kernel_dispatch:KernelDispatchPass",
    "legalize": "rlx.transforms.legalize:LegalizePass",
    "precision": "rlx.transforms.precision:Precision",
    "precision-policy": "rlx.transforms.precision:PrecisionPolicy",
    "rng": "rlx.transforms.rng:RngPass",
    "scaled-quant": "rlx.transforms.scaled_quant:ScaledQuant",
    "scan-unroll": "rlx.transforms.scan_unroll:ScanUnroll",
}
"""Pass name -> "module:Class"; imported only when the pass is used (fast start-up)."""


FLAG_ALIASES: dict[str, str] = {
    "arena-alignment": "plan-memory",
    "dim-binding": "bind-dims",
    "param-bindings": "bind-params",
    "quant-param-bindings": "bind-quant-params",
    "rng-seed": "rng",
    "scan-unroll-max-length": "scan-unroll",
    "supported-ops": "legalize",
}
"""`rlx-opt` flags named after a CompileOptions field -> the pass implementing it
(`--dim-binding=batch=1` is `--bind-dims=batch=1`); the value goes to the main option."""


def _factory(target: str) -> Callable[[], type[ModulePass]]:
    module, cls = target.split(":")
    return lambda: getattr(import_module(module), cls)


def lazy_passes(table: dict[str, str]) -> dict[str, Callable[[], type[ModulePass]]]:
    """{name: "module:Class"} -> {name: factory importing the class on first use}."""
    return {name: _factory(target) for name, target in table.items()}


def get_all_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    """Every rlx transform pass, keyed by its command-line name."""
    return lazy_passes(_PASSES)
