"""rlx-bake: offline weight bake into one `.rlx` artifact (see docs/bake.md, docs/artifact.md).

Usage::

    path = rlx.bake.bake("model.mlir", "weights.npz", profile="exact", output="m.rlx")
    graph = rlx.bake.load(path)  # a CompiledGraph: stored code linked, weights memory-mapped
    print(rlx.bake.inspect(path))  # header, code sections, decisions, weight table

The package is callable: `rlx.bake(module, weights, ...)` is `rlx.bake.bake(...)`, so the
top-level name `rlx.bake` is both the function and this namespace. Names are imported on
first use: loading an artifact with matching code imports no xDSL.
"""

import sys
import types
from importlib import import_module
from typing import TYPE_CHECKING, Any

_EXPORTS = {
    "FORMAT_VERSION": "rlx.bake.artifact", "MAGIC": "rlx.bake.artifact",
    "ArtifactError": "rlx.bake.artifact", "ArtifactInfo": "rlx.bake.report",
    "BakeError": "rlx.bake.bake", "BakeReport": "rlx.bake.bake", "bake": "rlx.bake.bake",
    "bake_module": "rlx.bake.bake", "bake_with_report": "rlx.bake.bake",
    "inspect": "rlx.bake.loader", "load": "rlx.bake.loader", "materialize": "rlx.bake.loader",
    "BakeOptions": "rlx.bake.profiles", "BakeProfile": "rlx.bake.profiles",
}  # fmt: skip
__all__ = sorted(_EXPORTS)
_SUBMODULES = ("artifact", "header", "loader", "memory", "profiles", "report", "rewrites", "table")

if TYPE_CHECKING:
    from rlx.bake.artifact import FORMAT_VERSION, MAGIC, ArtifactError  # noqa: F401
    from rlx.bake.bake import BakeError, BakeReport, bake, bake_module, bake_with_report  # noqa: F401
    from rlx.bake.loader import inspect, load, materialize  # noqa: F401
    from rlx.bake.profiles import BakeOptions, BakeProfile  # noqa: F401
    from rlx.bake.report import ArtifactInfo  # noqa: F401


class _CallableModule(types.ModuleType):
    """Module type whose instances call `bake` (so `rlx.bake(...)` works) and import
    their exports lazily."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return import_module("rlx.bake.bake").bake(*args, **kwargs)

    @property
    def bake(self) -> Any:
        """The `bake` function (importing the submodule `rlx.bake.bake` must not hide it)."""
        return import_module("rlx.bake.bake").bake

    @bake.setter
    def bake(self, value: Any) -> None:
        pass  # the import system records the submodule here: `bake` stays the function

    def __getattr__(self, name: str) -> Any:
        where = _EXPORTS.get(name)
        if where is None:
            if name in _SUBMODULES:  # `rlx.bake.artifact` without importing it first
                return import_module(f"rlx.bake.{name}")
            raise AttributeError(f"module 'rlx.bake' has no attribute {name!r}")
        value = getattr(import_module(where), name)
        setattr(self, name, value)
        return value


sys.modules[__name__].__class__ = _CallableModule
