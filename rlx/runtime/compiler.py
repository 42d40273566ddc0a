"""`rlx.compile`: source -> verified module -> graph passes -> memref ABI -> LLVM -> JIT.

The pass list comes from `rlx.runtime.option_pipeline` (the one options -> passes table); the
result is cached by `rlx.runtime.cache`. Errors in the input (parse, verify, a pass
rejecting the graph) raise `ValueError` (`CompileError`) with an MLIR-style
`file:line:col: error: ...` message where the location is known.

Verbose (`verbose=True` or `RLX_VERBOSE=1`): `[rlx]`-prefixed lines on stderr with each
pass's op count before/after and its time, every field not at its default and not applied
(e.g. `disable_mpsgraph = True: no effect (Metal only: no effect on the CPU backend)`), the
cache outcome and `[rlx] arena: <bytes> bytes (<unplanned> unplanned), alignment <a>`, then
the dispatch and fusion reports (also printed alone with RLX_DISPATCH_REPORT=1 /
RLX_FUSION_REPORT=1; `CompiledGraph.dispatch_report()` / `fusion_report()` return them).

With `cache_param_invariant`, `hoist-param-invariant` splits the entry into `@prepare`
(weight-only) and the rest; both are lowered and JIT-compiled into one module, and the
`CompiledGraph` runs `@prepare` when its params change.
"""

from __future__ import annotations

import functools
import gc
import os
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from xdsl.context import Context
from xdsl.dialects.builtin import (
    ModuleOp,
)
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import DiagnosticException

from rlx.diagnostics import (
    SourceManager,
)
from rlx.runtime import (
    counters,
    llvm_worker,
    option_pipeline,
    parallel,
    parallel_build,
    pipeline_passes,
    text_later,
)
from rlx.runtime.abi import Artifact, check_prepared
from rlx.runtime.cache import CACHE, emit_object, load_artifact, make_key
from rlx.runtime.compiled import CompiledGraph
from rlx.runtime.entry_abi import (
    CompileError,
    check_memory,
    extract_signature,
    find_entry,
    find_prepare,
    rlx_dtypes,
    source_params,
)
from rlx.runtime.equivalence import EquivalenceChecker, check_jit
from rlx.runtime.ir_key import structural_text
from rlx.runtime.jit import JitModule, UnresolvedSymbolError, to_llvm_ir
from rlx.runtime.llvm_host import Codegen
from rlx.runtime.loading import (
    diag_text,
    find_failure,
    key_text,
    load_module,
    make_context,
    source_module,
)
from rlx.runtime.options import CompileOptions
from rlx.transforms.bind_dims import unbound_dims

BACKEND = "llvm-cpu"
"""Part of the cache key: names the code generator."""
CODEGEN = Codegen()
"""How `rlx.compile` has LLVM optimise and generate code (`JitModule`'s defaults: O3, no
unrolling, the host CPU); the serial build and a parallel build's children use it alike."""


class UnboundDimsError(CompileError):
    """Dynamic dims left unbound; `hint` says how to bind them (tools substitute their flag)."""

    def __init__(self, dims: list[str], hint: str | None = None) -> None:
        self.dims = list(dims)
        example = ", ".join(f'"{d}": ...' for d in self.dims)
        hint = hint or f"CompileOptions(dim_binding={{{example}}})"
        super().__init__(
            f"unbound dynamic dims: {', '.join(self.dims)}; RLX compiles static shapes only: "
            f"bind them with {hint}"
        )


class _Log:
    def __init__(self, on: bool) -> None:
        self.on = on

    def __call__(self, msg: str) -> None:
        if self.on:
            sys.stderr.write(f"[rlx] {msg}\n")
            sys.stderr.flush()


# ----------------------------------------------------------------------------- pipeline


def _count(module: ModuleOp) -> int:
    return sum(1 for _ in module.walk())


def _check_static(module: ModuleOp) -> None:
    """Code generation needs static shapes: name the dynamic dims still unbound."""

    missing = unbound_dims(module)
    if missing:
        raise UnboundDimsError(missing)


def _run_pass(
    name: str,
    p: ModulePass,
    module: ModuleOp,
    ctx: Context,
    log: _Log,
    sources: SourceManager,
    verify: bool,
) -> None:
    before = _count(module) if log.on else 0
    t0 = time.perf_counter()
    try:
        p.apply(ctx, module)
    except DiagnosticException as e:
        raise CompileError(diag_text(e, None, sources, f"pass '{name}' failed: ")) from None
    except Exception as e:
        raise RuntimeError(f"internal error in pass '{name}': {type(e).__name__}: {e}") from e
    dt = (time.perf_counter() - t0) * 1e3
    if verify and (bad := find_failure(module)) is not None:
        raise RuntimeError(
            f"pass '{name}' produced invalid IR: " + diag_text(bad[1], bad[0], sources)
        )
    if log.on:
        log(f"pass {name}: {before} -> {_count(module)} ops, {dt:.1f} ms")


def _build(module: ModuleOp, input_text: str, opts: CompileOptions, entry: str, log: _Log,
           sources: SourceManager, capture: bool, jit: bool = True,
           recheck: Callable[[], None] | None = None, jobs: int = 1) -> Artifact:  # fmt: skip
    """Run the whole pipeline on `module` (mutated). `capture` keeps the text of every stage
    below "rlx" (always kept, printed by a child when `jit`: `text_later`; missing when
    that child failed, and then regenerated on demand). That child also verifies the
    graph passes' output; `recheck()` verifies it another way when the child died first.
    `jobs`: processes for a JIT compile (`parallel_build.jobs()`, read once by `compile`;
    1: serial), for `text_later` and `parallel_build` alike."""
    rlx_text: list[Callable[[], str | None]] = []
    try:
        art = _pipeline(module, input_text, opts, entry, log, sources, capture, jit, rlx_text,
                        jobs)  # fmt: skip
    finally:  # the verification's error takes precedence over what it may have caused
        text = _rlx_text(rlx_text[0], recheck) if rlx_text else None  # reaps the child
    if text is not None:
        art.stages["rlx"] = text
    return art


def _rlx_text(get: Callable[[], str | None], recheck: Callable[[], None] | None) -> str | None:
    """The "rlx" stage's text from `get` (None: to be regenerated); RuntimeError when the
    graph passes' output is invalid (`recheck()` tells when the child checking it died)."""
    try:
        return get()
    except text_later.CheckFailed as e:
        raise RuntimeError(str(e)) from None
    except text_later.CheckUnknown:
        if recheck is None:
            raise RuntimeError("the graph passes' output could not be verified") from None
        recheck()
        return None


def _invalid_ir(module: ModuleOp, sources: SourceManager, name: str) -> str | None:
    """Why `module` (the output of pass `name`) is invalid IR, None when it is valid."""
    bad = find_failure(module)
    if bad is None:
        return None
    return f"pass '{name}' produced invalid IR: " + diag_text(bad[1], bad[0], sources)


def _graph_passes(module: ModuleOp, plan: option_pipeline.Plan, ctx: Context, log: _Log,
                  sources: SourceManager, opts: CompileOptions, verify_last: bool,
                  probe: option_pipeline.ReportProbe) -> None:  # fmt: skip
    """Run the plan's graph passes on `module`, verifying after each one when verbose or
    RLX_VERIFY_EACH=1 (to name the culprit; verifying is the costliest xDSL step on large
    graphs), else after the last one when `verify_last`."""
    graph = plan.phase("graph")
    each = _verify_each(log)
    checker = EquivalenceChecker() if opts.check_equivalence() else None
    if checker is not None:
        checker.start(module)
    for i, p in enumerate(graph):
        probe.before(p.stage, module)
        last = i == len(graph) - 1
        _run_pass(
            p.name, p.instance, module, ctx, log, sources, verify=each or (last and verify_last)
        )
        probe.after(p.stage, module)
        if checker is not None:
            try:
                checker.after_pass(p.instance, module)
            except DiagnosticException as e:
                raise CompileError(diag_text(e, None, sources)) from None


def _verify_each(log: _Log) -> bool:
    return log.on or os.environ.get("RLX_VERIFY_EACH", "") not in ("", "0")


def _recheck(source: Any, opts: CompileOptions) -> None:
    """Verify the graph passes' output of `source` here (when the child verifying it died):
    RuntimeError naming the pass when it is invalid."""
    ctx = make_context()
    module, sources = load_module(source, ctx)
    with tempfile.TemporaryDirectory(prefix="rlx-") as tmp:
        plan = option_pipeline.build_plan(opts, Path(tmp))
        probe = option_pipeline.ReportProbe(opts)
        _graph_passes(module, plan, ctx, _Log(False), sources, opts, True, probe)


def _pipeline(module: ModuleOp, input_text: str, opts: CompileOptions, entry: str, log: _Log,
              sources: SourceManager, capture: bool, jit: bool,
              rlx_text: list[Callable[[], str | None]], jobs: int) -> Artifact:  # fmt: skip
    """`_build`'s body; appends the getter of the "rlx" stage's text to `rlx_text`."""
    counters.bump("pipeline")
    ctx = make_context()
    find_entry(module, entry)
    params = source_params(module)
    stages = {"input": input_text}
    probe = option_pipeline.ReportProbe(opts)
    with tempfile.TemporaryDirectory(prefix="rlx-") as tmp:
        plan = option_pipeline.build_plan(opts, Path(tmp))
        for r in plan.report:
            if r.status not in ("default", "applied"):
                log(r.line())
        # The last graph pass's output is verified by the child printing it, beside the
        # compile (`text_later`), unless a pass is verified here anyway.
        graph = plan.phase("graph")
        here = not jit or capture or _verify_each(log) or opts.check_equivalence() or not graph
        _graph_passes(module, plan, ctx, log, sources, opts, here, probe)
    # always kept (what tests and users inspect most); printed beside the compile
    check = None if here else functools.partial(_invalid_ir, module, sources, graph[-1].name)
    try:
        rlx_text.append(
            text_later.later(module, check, jobs=jobs)
            if jit and not capture
            else lambda t=str(module): t
        )
    except text_later.CheckFailed as e:  # checked here (a small module)
        raise RuntimeError(str(e)) from None
    _check_static(module)
    reports = probe.finish(module)
    reports["ran"] = ",".join(sorted(probe.ran))
    graph_params = source_params(module)  # after the graph passes (walked once for both)
    ref = rlx_dtypes(module, entry, graph_params)
    prep_f = find_prepare(module, entry)
    prep_name = None if prep_f is None else prep_f.sym_name.data
    prep_ref = None if prep_name is None else rlx_dtypes(module, prep_name, graph_params)
    for p in plan.phase("lower"):
        _run_pass(p.name, p.instance, module, ctx, log, sources, verify=False)
    if capture:
        stages["linalg"] = str(module)
    align = opts.arena_alignment()
    sig = extract_signature(module, entry, align, ref)
    prep = None if prep_name is None else extract_signature(module, prep_name, align, prep_ref)
    try:
        check_prepared(sig, prep)
    except ValueError as e:
        raise CompileError(str(e)) from None
    live = {a.name for s in (sig, prep) if s is not None for a in s.of("param")}
    sig.dead_params = {k: v for k, v in params.items() if k not in live}
    check_memory(sig, prep)

    def lower(m: ModuleOp, quiet: bool = False) -> None:
        for p in pipeline_passes.llvm_pipeline():
            _run_pass(p.name, p, m, ctx, _Log(False) if quiet else log, sources, verify=False)
            if capture and p.name == "convert-linalg-to-loops":
                stages["loops"] = str(m)

    # Kernels lowered and LLVM-optimised in forked children as well (parallel_build)
    split = parallel_build.split_module(module, jobs) if jit and not capture else None
    built = None if split is None else parallel_build.lower_split(split, lower, CODEGEN)
    if built is None:
        lower(module)
    else:
        log(f"parallel: {built.children} helper process(es) lowered part of the kernels")
    if capture:
        stages["llvm"] = str(module)
        stages.setdefault("loops", stages["linalg"])
    report = [vars(r) for r in plan.report]
    if not jit:
        return Artifact(sig, None, 0, report, stages, prepare=prep, reports=reports)

    t0 = time.perf_counter()
    parallel.register()  # outside the try: a bad RLX_NUM_THREADS is a ValueError naming it
    try:
        engine = JitModule(to_llvm_ir(module), **asdict(CODEGEN)) if built is None else built.jit()
        llvm_ir = engine.llvm_ir
        address = engine.address(entry)
        prep_address = 0 if prep is None else engine.address(prep.entry)
    except UnresolvedSymbolError as e:
        raise CompileError(str(e)) from None
    except Exception as e:
        raise RuntimeError(
            f"internal error in LLVM code generation: {type(e).__name__}: {e}"
        ) from e
    log(f"jit: {(time.perf_counter() - t0) * 1e3:.1f} ms")
    return Artifact(sig, engine, address, report, stages, llvm_ir, prep, prep_address, reports)


def _lookup(
    source: Any, opts: CompileOptions, entry: str, log: _Log, jobs: int
) -> tuple[Artifact, bool, ModuleOp | None]:
    """The artifact of `source` from the cache, or built and cached (a miss) with `jobs`
    processes; whether it was a hit; the verified source module when the options check
    equivalence, else None."""
    ctx = make_context()
    # The key hashes the source as given (text) or its structure (ModuleOp / Graph): a hit
    # neither parses, prints, clones nor verifies (an identical source was verified when
    # it was cached).
    source = source_module(source)
    keyed = key_text(source)
    key = None if keyed is None else make_key(keyed, opts, entry, BACKEND)
    hit = None if key is None else CACHE.get(key, load_artifact)
    original = None
    if hit is None or opts.check_equivalence():
        module, sources = load_module(source, ctx)
        if opts.check_equivalence():
            original = module.clone()
        if key is None:  # unreachable for readable sources: key the printed module
            key = make_key("structure\0" + structural_text(module), opts, entry, BACKEND)
            hit = CACHE.get(key, load_artifact)
    if hit is not None:
        art, where = hit
        log(f"cache: hit ({where}) {key[:16]}")
        for r in art.report:
            if r["status"] not in ("default", "applied"):
                log(pipeline_passes.FieldStatus(**r).line())
        if "input" not in art.stages:  # an entry written without it
            art.stages["input"] = str(load_module(source, ctx)[0])
        return art, True, original
    log(f"cache: miss {key[:16]}")
    input_later = text_later.later(module, jobs=jobs)  # printed beside the compile
    try:
        art = _build(module, "", opts, entry, log, sources, capture=False,
                     recheck=lambda: _recheck(source, opts), jobs=jobs)  # fmt: skip
    finally:
        text = input_later()  # reaps the child in any case
    # the source itself is unchanged (load_module copied it): print it if the child failed
    art.stages["input"] = text if text is not None else str(load_module(source, ctx)[0])
    ir = art.llvm_ir
    meta = {
        "signature": art.signature.to_json(),
        "prepare": None if art.prepare is None else art.prepare.to_json(),
        "report": art.report,
        "reports": art.reports,
        "rlx": art.stages.get("rlx", ""),
        "input": art.stages["input"],
    }
    obj = getattr(art.jit, "object_code", None)
    CACHE.put(key, art, meta, ir, lambda: obj if obj is not None else emit_object(ir))
    return art, False, original


def compile(
    source: Any, options: CompileOptions | None = None, entry: str = "main"
) -> CompiledGraph:
    """Compile MLIR text, a .mlir path, an xDSL ModuleOp or an rlx.Graph into a CompiledGraph."""
    opts = CompileOptions() if options is None else options
    if not isinstance(opts, CompileOptions):
        raise TypeError(f"rlx.compile: options must be a CompileOptions, got {type(opts).__name__}")
    log = _Log(opts.verbose)
    llvm_worker.mode()  # a bad RLX_LLVM_WORKER fails here, not inside code generation
    jobs = parallel_build.jobs()  # read once (a bad RLX_COMPILE_JOBS fails here)
    t0 = time.perf_counter()
    # No cyclic GC while compiling: the IR is ~10^5 long-lived objects that every
    # collection walks (~10 % of a CNN's compile; the source module and the IR made
    # from it are young, so even a young-generation collection walks them), and the
    # compile leaves few cycles behind (+5-10 MB peak on densenet121 / a 5k-op graph).
    # Re-enabled once `_lookup` has returned: the compile's IR is garbage by then and
    # the first collection frees it instead of walking it live (and again later).
    gc_was_on = gc.isenabled()
    gc.disable()
    try:
        art, hit, original = _lookup(source, opts, entry, log, jobs)
    finally:
        if gc_was_on:
            gc.enable()
    input_text = art.stages["input"]
    sig = art.signature
    log(
        f"arena: {sig.arena_bytes} bytes ({sig.unplanned_bytes} unplanned), alignment {sig.alignment}"
    )
    if art.prepare is not None:
        log(f"prepare: @{art.prepare.entry} computes {len(art.prepare.of('output'))} value(s)")
    log(f"compile: {(time.perf_counter() - t0) * 1e3:.1f} ms")
    option_pipeline.print_reports(art.reports, opts, built=not hit)

    def regenerate() -> Artifact:
        m, s = load_module(input_text, make_context())
        return _build(m, input_text, opts, entry, _Log(False), s, capture=True, jit=False)

    graph = CompiledGraph(art, regenerate)
    graph.cache_hit = hit
    if original is not None:
        with tempfile.TemporaryDirectory(prefix="rlx-") as tmp:
            ran = [p.instance for p in option_pipeline.build_plan(opts, Path(tmp)).passes]
        check_jit(graph, original, entry, 0, ran)
    return graph
