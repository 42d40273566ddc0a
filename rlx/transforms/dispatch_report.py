"""Kernel dispatch report: how each op kind of a module is executed after
`kernel-dispatch` / `legalize` (RLX `KernelDispatchReport`, concepts §6.1).

Public API (used by `rlx-opt --dispatch-report` and `CompiledGraph.dispatch_report()`):

    before = count_kinds(module)            # or keep a clone of the module
    KernelDispatchPass(...).apply(ctx, module)
    report = dispatch_report(before, module, supported_ops=..., policy=...)
    print(report.format())

Every kind present *before* is classified, in this order: `common-ir` (decomposed into
primitive ops), `unsupported` (still present and not claimed), `rewritten` (gone after
the rewrite), `native`. Leaves (`param`, `constant`) and `yield` are not listed.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from xdsl.ir import Operation

from rlx.env import env_flag
from rlx.transforms.decompositions import ALWAYS_LEGAL, LOGICAL_KERNELS, kind_of
from rlx.transforms.dispatch_config import DispatchConfig

PATHS = ("native", "common-ir", "rewritten", "unsupported")


def count_kinds(module: Operation) -> Counter[str]:
    """Number of ops per rlx kind in `module` (nested regions included)."""
    return Counter(kind_of(op) for op in module.walk() if op.name.startswith("rlx."))


@dataclass(frozen=True)
class KindSummary:
    """One kind of the report: how many ops it had before, and its execution path."""

    kind: str
    count: int
    path: str
    logical: bool = False
    """Whether the kind is a logical kernel (has a common-IR decomposition)."""


@dataclass(frozen=True)
class DispatchReport:
    """Per-kind dispatch summary; `format()` renders the text printed on stderr."""

    policy: str
    supported_ops: tuple[str, ...]
    summaries: tuple[KindSummary, ...]
    still_unsupported: tuple[tuple[str, int], ...] = ()
    backend: str = "cpu"
    common_lowered: tuple[str, ...] = field(default=())

    @property
    def compile_ready(self) -> bool:
        return not self.still_unsupported

    def by_path(self, path: str) -> list[KindSummary]:
        return [s for s in self.summaries if s.path == path]

    def format(self) -> str:
        claim = len(self.supported_ops)
        lines = [
            f'rlx dispatch report — backend "{self.backend}", policy {self.policy}, supported_ops claim={claim}'
        ]
        if claim == 0:
            lines.append(
                "  (empty supported_ops claim: every kind is accepted; the split below is advisory)"
            )
        if self.common_lowered:
            lines.append(
                "  common-ir lowering (claim the kind in supported_ops for the native fast path):"
            )
            lines += [f"    - {k}" for k in self.common_lowered]
        for path in PATHS:
            group = self.by_path(path)
            if not group:
                continue
            lines.append(f"  {path}:")
            for s in group:
                plural = "op" if s.count == 1 else "ops"
                lines.append(
                    f"    - {s.kind} ×{s.count} {plural}" + (" logical" if s.logical else "")
                )
        if self.still_unsupported:
            n = sum(c for _, c in self.still_unsupported)
            lines.append(f"  still unsupported after rewrite ({n} op(s)) — compile will fail:")
            lines += [f"    - rlx.{k} ×{c}" for k, c in self.still_unsupported]
            lines.append(
                "  Fix: claim the kind in supported_ops (and implement it in the backend), "
                "or add a decomposition in rlx/transforms/decompositions.py"
            )
        else:
            lines.append("  compile-ready: yes")
        return "\n".join(lines) + "\n"


def _counts(m: Operation | Mapping[str, int]) -> Mapping[str, int]:
    return m if isinstance(m, Mapping) else count_kinds(m)


def dispatch_report(
    before: Operation | Mapping[str, int],
    after: Operation | Mapping[str, int],
    *,
    supported_ops: Iterable[str] = (),
    policy: str = "prefer-native",
    force_common_kinds: Iterable[str] = (),
    force_native_kinds: Iterable[str] = (),
    common_kinds: Iterable[str] | None = None,
    backend: str = "cpu",
) -> DispatchReport:
    """Classify every kind of `before` (a module or `count_kinds` result) given `after`.

    `common_kinds`: kinds known to be decomposed; by default, the logical kernels the
    dispatch options send to the common IR and whose count dropped.
    """
    b, a = _counts(before), _counts(after)
    cfg = DispatchConfig.build(policy, force_common_kinds, force_native_kinds, supported_ops)
    claimed = cfg.supported
    if common_kinds is None:
        common = {k for k in b if cfg.is_common(k) and a.get(k, 0) < b[k]}
    else:
        common = set(common_kinds)

    def illegal(k: str) -> bool:
        return bool(claimed) and k not in claimed and k not in ALWAYS_LEGAL

    summaries = []
    for k in sorted(b):
        if k in ALWAYS_LEGAL:
            continue
        if k in common:
            path = "common-ir"
        elif a.get(k, 0) and illegal(k):
            path = "unsupported"
        elif not a.get(k, 0):
            path = "rewritten"
        else:
            path = "native"
        summaries.append(KindSummary(k, b[k], path, k in LOGICAL_KERNELS))
    still = tuple((k, a[k]) for k in sorted(a) if a[k] and illegal(k))
    return DispatchReport(
        policy, tuple(sorted(claimed)), tuple(summaries), still, backend, tuple(sorted(common))
    )


def report_requested() -> bool:
    """Whether RLX_DISPATCH_REPORT or RLX_VERBOSE asks for the report on stderr."""
    return env_flag("RLX_DISPATCH_REPORT") or env_flag("RLX_VERBOSE")


def maybe_print(report: DispatchReport) -> None:
    """Print the report on stderr when `report_requested()`."""
    if report_requested():
        sys.stderr.write(report.format())
