"""rlx-bake: offline weight bake into one `.rlx` artifact (see docs/bake.md, docs/artifact.md).

Usage::

    path = rlx.bake.bake("model.mlir", "weights.npz", profile="exact", output="m.rlx")
    graph = rlx.bake.load(path)  # a CompiledGraph with the weights baked in
    print(rlx.bake.inspect(path))  # header, signature, weight table

The package is callable: `rlx.bake(module, weights, ...)` is `rlx.bake.bake(...)`, so the
top-level name `rlx.bake` is both the function and this namespace.
"""

import sys
import types
from typing import Any

from rlx.bake.artifact import FORMAT_VERSION, MAGIC, ArtifactError
from rlx.bake.bake import BakeError, BakeReport, bake, bake_module, bake_with_report
from rlx.bake.loader import ArtifactInfo, inspect, load, materialize
from rlx.bake.profiles import BakeOptions, BakeProfile

__all__ = [
    "FORMAT_VERSION",
    "MAGIC",
    "ArtifactError",
    "ArtifactInfo",
    "BakeError",
    "BakeOptions",
    "BakeProfile",
    "BakeReport",
    "bake",
    "bake_module",
    "bake_with_report",
    "inspect",
    "load",
    "materialize",
]


class _CallableModule(types.ModuleType):
    """Module type whose instances call `bake` (so `rlx.bake(...)` works)."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return bake(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
