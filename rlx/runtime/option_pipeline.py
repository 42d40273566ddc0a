"""The ONE table from `CompileOptions` fields to the passes that implement them.

`ROWS` says, for each field: which pipeline stage (pass) implements it, when the field's
value needs that pass, and how the value becomes the pass's options (its dataclass fields,
as on the `rlx-opt` command line). `STAGES` gives the stage order and the registered pass
names that may implement each stage (the first registered one wins). `build_plan` turns
options into the ordered pass list plus a per-field report.

Order: scaled-quant -> bind-params -> bind-quant-params -> bind-dims -> canonicalize -> dce ->
fold-batch-norm -> constant-folding -> hoist-param-invariant -> fusion -> blocked-layout -> kernel-dispatch -> legalize ->
scan-unroll -> precision -> pack-weights -> rng | convert-rlx-to-linalg -> plan-memory -> split-graph |
LOOPS_TO_LLVM.
Scaled quantization comes first so hoisting and folding see the weight-side quantization;
hoisting precedes fusion (as in RLX) so fused ops do not hide weight-only compute; precision
runs after fusion so fused-op matchers never see casts.

Most fields at their default need no pass of their own; `scan_unroll_max_length` (default 64:
scans of length <= 64 are unrolled, as in RLX), `rng` and `arena_alignment` always do, and
`split-graph` (no field) always runs after `plan-memory`. The status of every field is in
verbose output and `CompiledGraph.pipeline_report()`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from xdsl.passes import ModulePass

from rlx.runtime.extra_passes import build_extra_passes
from rlx.runtime.options import CompileOptions, FusionOptions, KernelDispatchConfig, env_flag
from rlx.runtime.pipeline_passes import (
    FieldStatus,
    PassFactory,
    PlannedPass,
    format_value,
    pass_fields,
    pass_registry,
    registry_with_plugins,
)
from rlx.transforms.dispatch_report import count_kinds, dispatch_report
from rlx.transforms.fusion_report import analyze_fusion, fusion_counts
from rlx.weights import save

Opts = CompileOptions


@dataclass(frozen=True)
class Stage:
    """A pipeline position: the registered pass that implements it, and its phase."""

    name: str
    phase: str = "graph"  # "graph" (rlx -> rlx) or "lower" (rlx -> memref ABI)


STAGES: tuple[Stage, ...] = (
    Stage("scaled-quant"),
    Stage("bind-params"),
    Stage("bind-quant-params"),
    Stage("bind-dims"),
    Stage("canonicalize"),
    Stage("dce"),
    Stage("fold-batch-norm"),
    Stage("constant-folding"),
    Stage("hoist-param-invariant"),
    Stage("fusion"),
    Stage("blocked-layout"),
    Stage("kernel-dispatch"),
    Stage("legalize"),
    Stage("scan-unroll"),
    Stage("precision"),
    Stage("pack-weights"),
    Stage("rng"),
    Stage("convert-rlx-to-linalg", "lower"),
    Stage("plan-memory", "lower"),
    Stage("split-graph", "lower"),
)
STAGE_BY_NAME = {s.name: s for s in STAGES}


def _bindings(name: str) -> Callable[[Opts, Path], dict[str, Any]]:
    """A path is passed as is; a dict of arrays is written to `<workdir>/<name>.npz` first."""

    def options(o: Opts, workdir: Path) -> dict[str, Any]:
        v = o.get(name)
        if isinstance(v, dict):  # packed GGML tensors keep scheme and shape (rlx.weights.save)
            path = workdir / f"{name}.npz"
            save(path, {k: a if hasattr(a, "scheme") or isinstance(a, bytes | bytearray) else np.asarray(a)
                        for k, a in v.items()})  # fmt: skip
            v = path
        return {"path": str(v)}

    return options


def _fusion(o: Opts, _: Path) -> dict[str, Any]:
    return {"target": o.fusion_target() or "cpu"}


def _fusion_opts(o: Opts, _: Path) -> dict[str, Any]:
    """The non-default toggles/limits, named as the fusion pass's options."""
    fo, dflt = o.fusion_opts(), FusionOptions()
    names = [f.name for f in dataclasses.fields(fo) if f.name != "skip_fusion"]
    return {n: getattr(fo, n) for n in names if getattr(fo, n) != getattr(dflt, n)}


def _rng(o: Opts, _: Path) -> dict[str, Any]:
    return {"seed": o.rng_seed(), "backend": o.rng_backend()}


def _dispatch(o: Opts, _: Path) -> dict[str, Any]:
    kd = o.kernel_dispatch()
    return {
        "policy": kd.policy,
        "force_common_kinds": kd.force_common_kinds,
        "force_native_kinds": kd.force_native_kinds,
    }


def _policy(o: Opts, _: Path) -> dict[str, Any]:
    """A named policy, or a custom dict {op or class: precision} as policy=custom."""
    p = o.policy()
    if isinstance(p, str):
        return {"policy": p}
    return {
        "policy": "custom",
        "custom": ",".join(f"{k.replace('_', '-')}={v}" for k, v in p.items()),
    }


@dataclass(frozen=True)
class Row:
    """One CompileOptions field (None: a stage without a field) and the stage it drives."""

    field: str | None
    stage: str | None  # None: the field needs no pass (see `note`)
    needed: Callable[[Opts], bool] = lambda o: False
    options: Callable[[Opts, Path], dict[str, Any]] = lambda o, w: {}
    note: str = ""
    passless: str = "no effect"
    """Status of a non-default value when `stage` is None: "applied" or "no effect"."""


def blocked_layout_on(o: CompileOptions) -> bool:
    """Whether `blocked-layout` runs: as set, or by default (None) when the conv weight
    reorders it adds cost no run time: folded into bound weights (`param_bindings`) or
    computed once in `@prepare` (`cache_param_invariant`). Param weights outside
    `@prepare` would be reordered at every run (slower than the NCHW kernels reading them
    in place)."""
    v = o.blocked_layout()
    if v is not None:
        return bool(v)
    return bool(o.cache_param_invariant() or o.param_bindings() is not None)


def _on_cpu(o: Opts) -> bool:
    """Fusion runs for the CPU target unless disabled (target "none" or skip_fusion)."""
    return o.fusion_target() != "none" and not o.fusion_opts().skip_fusion


ROWS: tuple[Row, ...] = (
    Row("scaled_quant", "scaled-quant", lambda o: o.scaled_quant() is not None,
        lambda o, w: {"formats": str(o.scaled_quant())}),
    Row("param_bindings", "bind-params", lambda o: o.param_bindings() is not None, _bindings("param_bindings")),
    Row("quant_param_bindings", "bind-quant-params", lambda o: o.quant_param_bindings() is not None,
        _bindings("quant_param_bindings")),
    Row("dim_binding", "bind-dims", lambda o: bool(o.dim_binding()),
        lambda o, w: {"dims": ",".join(f"{k}={v}" for k, v in o.dim_binding().items())}),
    Row(None, "canonicalize", lambda o: o.dce, note="also removes dead ops, so it runs only with dce on"),
    Row("dce", "dce", lambda o: o.dce),
    Row("constant_folding", "constant-folding", lambda o: o.constant_folding),
    Row("constant_folding", "fold-batch-norm", lambda o: o.constant_folding,
        note="per-channel affine after conv2d folded into its weights (f32: ~2e-7 relative)"),
    Row("fusion_target", "fusion", _on_cpu, _fusion, note="None means the device's target: cpu"),
    Row("fusion_opts", "fusion", _on_cpu, _fusion_opts),
    Row("assert_fusion_clean", "fusion", lambda o: o.assert_fusion_clean(), lambda o, w: {"assert_clean": True}),
    Row("blocked_layout", "blocked-layout", lambda o: blocked_layout_on(o),
        lambda o, w: {"prepare_weights": o.cache_param_invariant()},
        note="NCHWc (channel blocks of the vector width) for conv-heavy regions, after fusion; "
             "default (None): on with cache_param_invariant or param_bindings"),
    Row("kernel_dispatch", "kernel-dispatch", lambda o: o.kernel_dispatch() != KernelDispatchConfig(), _dispatch),
    Row("supported_ops", "kernel-dispatch", lambda o: o.supported_ops() is not None,
        lambda o, w: {"supported_ops": o.supported_ops()}),
    Row("supported_ops", "legalize", lambda o: o.supported_ops() is not None,
        lambda o, w: {"supported_ops": o.supported_ops()}),
    Row("scan_unroll_max_length", "scan-unroll", lambda o: o.scan_unroll_max_length() > 0,
        lambda o, w: {"max_length": o.scan_unroll_max_length()}),
    Row("cache_param_invariant", "hoist-param-invariant", lambda o: o.cache_param_invariant()),
    Row("cache_param_invariant", "pack-weights", lambda o: o.cache_param_invariant(),
        note="matmul weights packed once in @prepare for the generated GEMM"),
    Row("policy", "precision", lambda o: o.policy() is not None, _policy),
    Row("precision", "precision", lambda o: o.precision() != "f32", lambda o, w: {"precision": o.precision()},
        note="without a policy: the whole graph in that type, f32 I/O (a policy overrides it)"),
    Row("rng", "rng", lambda o: True, _rng, note="recorded on the module; the code generator reads it"),
    Row(None, "convert-rlx-to-linalg", lambda o: True),
    Row("arena_alignment", "plan-memory", lambda o: True, lambda o, w: {"alignment": o.arena_alignment()}),
    Row(None, "split-graph", lambda o: True,
        note="graph functions of more than 256 kernel calls -> noinline parts (LLVM time stays linear)"),
    Row("verbose", None, note="logging on stderr, no pass", passless="applied"),
    Row("disable_mpsgraph", None, note="Metal only: no effect on the CPU backend"),
    Row("extra_passes", None, note="inserted at their stages (rlx.runtime.extra_passes)", passless="applied"),
    Row("check_equivalence", None, note="reference interpreter after every graph pass", passless="applied"),
)  # fmt: skip


@dataclass
class Plan:
    passes: list[PlannedPass] = field(default_factory=list)
    report: list[FieldStatus] = field(default_factory=list)

    def phase(self, phase: str) -> list[PlannedPass]:
        return [p for p in self.passes if STAGE_BY_NAME[p.stage].phase == phase]


def build_plan(
    opts: CompileOptions, workdir: Path, registry: dict[str, PassFactory] | None = None
) -> Plan:
    """Ordered passes for `opts` and the status of every field; see the module docstring."""
    reg = pass_registry() if registry is None else registry
    non_default = opts.non_defaults()
    found: dict[str, tuple[str, type[ModulePass]] | None] = {}

    def resolve(stage: str) -> tuple[str, type[ModulePass]] | None:
        """(name, class) of the stage's pass; imported only when a field needs it."""
        if stage not in found:
            if stage not in reg:
                raise RuntimeError(
                    f"pass '{stage}' is not registered (rlx.transforms / rlx.lowering)"
                )
            found[stage] = (stage, reg[stage]())
        return found[stage]

    kwargs: dict[str, dict[str, Any]] = {}
    users: dict[str, list[str]] = {}
    report: list[FieldStatus] = []
    for row in ROWS:
        value = None if row.field is None else opts.get(row.field)
        is_default = row.field is not None and row.field not in non_default
        needed = row.stage is not None and row.needed(opts)

        def status(s: str, detail: str = "", row: Row = row, value: Any = value) -> None:
            if row.field is None:
                return
            same = next((r for r in report if r.field == row.field), None)
            if same is None:
                report.append(FieldStatus(row.field, format_value(value), s, detail))
            elif detail and detail not in same.detail:  # a field several passes implement:
                same.detail = f"{same.detail}, {detail}" if same.detail else detail  # one line

        if row.stage is None:
            status("default" if is_default else row.passless, "" if is_default else row.note)
            continue
        if not needed:
            status(
                "default" if is_default else "skipped",
                "" if is_default else f"no {row.stage} pass needed",
            )
            continue
        hit = resolve(row.stage)
        assert hit is not None
        name, cls = hit
        wanted = row.options(opts, workdir)
        missing = sorted(set(wanted) - pass_fields(cls))
        if missing:
            raise RuntimeError(
                f"pass '{name}' has no option '{missing[0]}' (table row {row.field})"
            )
        status("default" if is_default else "applied", f"by pass '{name}'")
        kwargs.setdefault(row.stage, {}).update(wanted)
        users.setdefault(row.stage, []).extend([row.field] if row.field else [])
    plan = Plan(report=report)
    extra = {}
    if opts.extra_passes():
        stages = [s.name for s in STAGES]
        extra = build_extra_passes(opts.extra_passes(), stages, registry_with_plugins())
    for st in STAGES:
        for p in extra.get(f"before:{st.name}", ()):
            plan.passes.append(PlannedPass(st.name, p.name, p, ("extra_passes",)))
        if st.name in users:
            hit = resolve(st.name)
            assert hit is not None
            name, cls = hit
            try:
                inst = cls(**kwargs.get(st.name, {}))
            except (TypeError, ValueError) as e:
                raise ValueError(f"cannot configure pass '{name}' from CompileOptions: {e}") from e
            plan.passes.append(PlannedPass(st.name, name, inst, tuple(users[st.name])))
        for p in extra.get(f"after:{st.name}", ()):
            plan.passes.append(PlannedPass(st.name, p.name, p, ("extra_passes",)))
    return plan


class ReportProbe:
    """Cheap snapshots of the graph phase for `CompiledGraph.dispatch_report()` /
    `fusion_report()`: op-kind counts before `kernel-dispatch` and after `legalize`
    (whether or not they run), and the module's `fusion_counts` just before `fusion`."""

    def __init__(self, opts: CompileOptions) -> None:
        self.opts = opts
        order = [s.name for s in STAGES]
        self._kd, self._lg = order.index("kernel-dispatch"), order.index("legalize")
        self._order = order
        self.counts: dict[str, Any] = {}
        self._fusion_before: Any = None
        self.texts: dict[str, str] = {}
        self.ran: set[str] = set()

    def before(self, stage: str, module: Any) -> None:
        """Call before running the pass of `stage` on `module`."""

        i = self._order.index(stage)
        if i >= self._kd and "before" not in self.counts:
            self.counts["before"] = count_kinds(module)
        if i > self._lg and "after" not in self.counts:
            self.counts["after"] = count_kinds(module)
        if stage == "fusion":
            self._fusion_before = fusion_counts(module)

    def after(self, stage: str, module: Any) -> None:
        """Call after the pass of `stage` ran."""
        self.ran.add(stage)
        if stage == "fusion" and self._fusion_before is not None:
            self.texts["fusion"] = analyze_fusion(self._fusion_before, module).format()
            self._fusion_before = None

    def finish(self, module: Any) -> dict[str, str]:
        """Report texts ("dispatch", "fusion") at the end of the graph phase."""

        before = self.counts.get("before") or count_kinds(module)
        after = self.counts.get("after") or count_kinds(module)
        kd = self.opts.kernel_dispatch()
        rep = dispatch_report(
            before, after, supported_ops=self.opts.supported_ops() or (), policy=kd.policy,
            force_common_kinds=kd.force_common_kinds, force_native_kinds=kd.force_native_kinds,
        )  # fmt: skip
        from rlx.lowering.gemm.report import gemm_lines
        from rlx.lowering.rlx_to_linalg.attention_report import attention_lines

        self.texts["dispatch"] = rep.format() + gemm_lines(module) + attention_lines(module)
        self.texts.setdefault(
            "fusion",
            "fusion report: the fusion pass did not run (fusion_target none or skip_fusion)\n",
        )
        return dict(self.texts)


def print_reports(reports: dict[str, str], opts: CompileOptions, built: bool) -> None:
    """Dispatch/fusion reports on stderr when asked (verbose, RLX_*_REPORT), unless the
    pass itself already printed it during this compile."""
    import sys

    ran = set(reports.get("ran", "").split(","))
    dispatch_env = env_flag("RLX_DISPATCH_REPORT") or env_flag("RLX_VERBOSE")
    fusion_env = env_flag("RLX_FUSION_REPORT") or opts.fusion_opts().report
    printed = {
        "dispatch": built and dispatch_env and bool(ran & {"kernel-dispatch", "legalize"}),
        "fusion": built and fusion_env and "fusion" in ran,
    }
    wanted = {"dispatch": opts.verbose or dispatch_env, "fusion": opts.verbose or fusion_env}
    for k in ("dispatch", "fusion"):
        if wanted[k] and not printed[k] and reports.get(k):
            sys.stderr.write(reports[k].rstrip("\n") + "\n")
    sys.stderr.flush()
