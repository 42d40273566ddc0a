"""RLX: an ML compiler and runtime built on xDSL and llvmlite.

Compile with `rlx.compile(source, rlx.CompileOptions(...))` (MLIR text, a .mlir path, an
xDSL ModuleOp or an `rlx.Graph`), bind weights with `CompiledGraph.set_param`, run with
`CompiledGraph.run(*arrays)`; `rlx.reference.run` is the NumPy oracle.

Exports are loaded on first use, so tools that only need a part of RLX (`rlx-opt`) start
fast.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_EXPORTS: dict[str, str] = {
    "compile": "rlx.runtime.compiler:compile",
    "CompiledGraph": "rlx.runtime.compiled:CompiledGraph",
    "CompileOptions": "rlx.runtime.options:CompileOptions",
    "FusionOptions": "rlx.runtime.options:FusionOptions",
    "RngOptions": "rlx.runtime.options:RngOptions",
    "ScaledQuantConfig": "rlx.runtime.options:ScaledQuantConfig",
    "Graph": "rlx.builder:Graph",
    "reference": "rlx.interpreter",
    "weights": "rlx.weights",
    "bake": "rlx.bake",
    "load": "rlx.bake:load",
    "set_num_threads": "rlx.runtime.parallel:set_num_threads",
    "get_num_threads": "rlx.runtime.parallel:get_num_threads",
}

__all__ = ["__version__", *_EXPORTS]

if TYPE_CHECKING:
    from rlx import bake as bake
    from rlx import interpreter as reference  # noqa: F401
    from rlx import weights as weights
    from rlx.bake import load as load
    from rlx.builder import Graph as Graph
    from rlx.runtime.compiled import CompiledGraph as CompiledGraph
    from rlx.runtime.compiler import compile as compile
    from rlx.runtime.options import (
        CompileOptions as CompileOptions,
    )
    from rlx.runtime.options import (
        FusionOptions as FusionOptions,
    )
    from rlx.runtime.options import (
        RngOptions as RngOptions,
    )
    from rlx.runtime.options import (
        ScaledQuantConfig as ScaledQuantConfig,
    )
    from rlx.runtime.parallel import get_num_threads as get_num_threads
    from rlx.runtime.parallel import set_num_threads as set_num_threads


def __getattr__(name: str) -> Any:
    target = _EXPORTS.get(name)
    if target is None:
        raise AttributeError(f"module 'rlx' has no attribute '{name}'")
    module, _, attr = target.partition(":")
    value = import_module(module)
    if attr:
        value = getattr(value, attr)
    globals()[name] = value
    return value
