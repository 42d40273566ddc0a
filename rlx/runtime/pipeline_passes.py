"""What `option_pipeline.build_plan` resolves and records: the pass registries stage names
are looked up in (rlx transforms and lowerings over upstream xDSL's, plus plugins'), the
LLVM tail of the pipeline, and the plan's records (`PlannedPass`, `FieldStatus`). The
CompileOptions -> pass table itself stays in `option_pipeline`."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from xdsl.passes import ModulePass

from rlx.lowering import get_all_lowering_passes
from rlx.lowering.lower_to_llvm import LOOPS_TO_LLVM
from rlx.plugins import plugin_passes
from rlx.transforms import get_all_passes

PassFactory = Callable[[], type[ModulePass]]


@dataclass
class PlannedPass:
    """A pass instance to run at a stage, and the fields it implements."""

    stage: str
    name: str
    instance: ModulePass
    fields: tuple[str, ...]

    @property
    def spec(self) -> str:
        try:
            return str(self.instance.spec())
        except Exception:
            return self.name


@dataclass
class FieldStatus:
    """How one CompileOptions field was honoured by the pipeline."""

    field: str
    value: str
    status: str  # "default" | "applied" | "skipped" | "no effect"
    detail: str = ""

    def line(self) -> str:
        return f"{self.field} = {self.value}: {self.status}" + (
            f" ({self.detail})" if self.detail else ""
        )


def pass_registry() -> dict[str, PassFactory]:
    """Upstream xDSL passes overridden by rlx transforms and lowerings (as rlx-opt does)."""
    from xdsl.transforms import get_all_passes as upstream

    reg = dict(upstream())
    reg.update(get_all_passes())
    reg.update(get_all_lowering_passes())
    return reg


def registry_with_plugins() -> dict[str, PassFactory]:
    """`pass_registry()` plus the passes of installed `xdsl.universe` entry points."""
    reg = pass_registry()
    for name, factory in plugin_passes().items():
        reg.setdefault(name, factory)
    return reg


def llvm_pipeline() -> tuple[ModulePass, ...]:
    """LOOPS_TO_LLVM: the memref-level ABI module -> llvm dialect."""

    return tuple(LOOPS_TO_LLVM)


def pass_fields(cls: type[ModulePass]) -> set[str]:
    """The options of pass class `cls` (its init dataclass fields)."""
    return (
        {f.name for f in dataclasses.fields(cls) if f.init}
        if dataclasses.is_dataclass(cls)
        else set()
    )


def format_value(v: Any) -> str:
    """An option value for a `FieldStatus` (arrays in a dict as `<dtype[shape]>`)."""
    if isinstance(v, dict) and any(isinstance(x, np.ndarray) for x in v.values()):
        return (
            "{"
            + ", ".join(f"{k!r}: <{np.asarray(a).dtype}{list(np.shape(a))}>" for k, a in v.items())
            + "}"
        )
    return repr(v)
