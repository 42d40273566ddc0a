"""Registry of lowering passes (rlx -> linalg -> loops -> llvm): name -> lazy factory."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # importing this package must not import xDSL (rlx.runtime.aot links
    from xdsl.passes import ModulePass  # stored code through lowering.blas_abi)

_PASSES: dict[str, str] = {
    "convert-arith-to-llvm": "rlx.lowering.convert_arith_to_llvm:ConvertArithToLLVMPass",
    "convert-cf-to-llvm": "rlx.lowering.convert_cf_to_llvm:ConvertCfToLLVMPass",
    "convert-func-to-llvm": "rlx.lowering.convert_func_to_llvm:ConvertFuncToLLVMPass",
    "convert-math-to-llvm": "rlx.lowering.convert_math_to_llvm:ConvertMathToLLVMPass",
    "convert-memref-to-llvm": "rlx.lowering.convert_memref_to_llvm:ConvertMemRefToLLVMPass",
    "convert-rlx-to-linalg": "rlx.lowering.convert_rlx_to_linalg:ConvertRlxToLinalgPass",
    "convert-scf-to-cf": "rlx.lowering.loop_hints:ConvertScfToCfPass",
    "convert-to-llvm": "rlx.lowering.convert_to_llvm:ConvertToLLVMPass",
    "expand-small-floats": "rlx.lowering.expand_small_floats:ExpandSmallFloatsPass",
    "lower-to-llvm": "rlx.lowering.lower_to_llvm:LowerToLLVMPass",
    "pack-weights": "rlx.lowering.pack_weights:PackWeights",
    "plan-memory": "rlx.lowering.plan_memory:PlanMemoryPass",
    "retype-small-floats": "rlx.lowering.expand_small_floats:RetypeSmallFloatsPass",
    "split-graph": "rlx.lowering.split_graph:SplitGraphPass",
}
"""Pass name -> "module:Class"; imported only when the pass is used (fast start-up)."""


def get_all_lowering_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    """Every lowering pass, keyed by its command-line name."""
    from rlx.transforms import lazy_passes

    return lazy_passes(_PASSES)
