"""Load a script from `examples/` as a module (the example tests call its `main`)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType


def load_example(name: str) -> ModuleType:
    """`examples/<name>.py`, imported under the module name `example_<name>`."""
    path = Path(__file__).resolve().parents[2] / "examples" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"example_{name}", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod
