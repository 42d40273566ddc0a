"""The bake pipeline: `bake(module, weights, profile) -> Path` and `load(path) -> CompiledGraph`.

specialize -> skip zero -> ternary -> Q8_0 -> unfold -> simplify -> DCE -> fold batch norm ->
constant fold ->
dedupe -> weight table -> memory mode -> write. See docs/bake.md.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType

import rlx
from rlx.bake import artifact, memory, rewrites
from rlx.bake.profiles import BakeOptions, BakeProfile
from rlx.bake.report import BakeReport
from rlx.bake.table import explain_dense, param_entries, weight_table
from rlx.dialects.rlx.base import DYN, shape_of
from rlx.dialects.rlx.leaves import ConstantOp, ParamOp
from rlx.dtypes import type_name
from rlx.interpreter import _arg_names
from rlx.runtime.compiler import load_module, make_context
from rlx.transforms.bind_dims import bind_dims
from rlx.transforms.bind_params import LossyBindingWarning
from rlx.transforms.canonicalize import RlxCanonicalizePass
from rlx.transforms.constant_folding import ConstantFoldingPass
from rlx.transforms.dce import DeadCodeEliminationPass
from rlx.transforms.fold_batch_norm import FoldBatchNorm
from rlx.weights import load

Progress = Callable[[str, int, int], None]
"""progress(stage, index, total): called before each pipeline stage."""

STAGES = (
    "load", "specialize", "skip-zero", "ternary", "q8_0", "unfold", "simplify", "dce",
    "fold-batch-norm", "constant-fold", "dedupe", "table", "memory", "code", "write",
)  # fmt: skip


def _count(module: ModuleOp) -> int:
    return sum(1 for op in module.walk() if not isinstance(op, ModuleOp))


def entry_func(module: ModuleOp, entry: str = "main") -> func.FuncOp:
    funcs = [op for op in module.ops if isinstance(op, func.FuncOp) and not op.is_declaration]
    for f in funcs:
        if f.sym_name.data == entry:
            return f
    if len(funcs) == 1 and entry == "main":
        return funcs[0]  # the default entry: a module's only function, whatever its name
    names = ", ".join("@" + f.sym_name.data for f in funcs) or "none"
    raise ValueError(f"no function @{entry} in the module (functions: {names})")


def _io(t: Any, name: str) -> dict[str, Any]:
    if not isinstance(t, TensorType):
        return {"name": name, "shape": [], "dtype": str(t)}
    return {
        "name": name,
        "shape": [-1 if d == DYN else d for d in shape_of(t)],
        "dtype": type_name(t.element_type),
    }


def signature(module: ModuleOp, entry: str = "main") -> dict[str, Any]:
    """Inputs (`rlx.name` or `arg<i>`) and outputs (`out<i>`) of the entry function."""

    f = entry_func(module, entry)
    ins = list(f.function_type.inputs.data)
    names = _arg_names(f, len(ins))
    return {
        "name": f.sym_name.data,
        "inputs": [_io(t, n) for t, n in zip(ins, names, strict=True)],
        "outputs": [_io(t, f"out{i}") for i, t in enumerate(f.function_type.outputs.data)],
    }


def _params(module: ModuleOp) -> list[str]:
    names = [op.param_name for op in module.walk() if isinstance(op, ParamOp)]
    return list(dict.fromkeys(n for n in names if not n.startswith(artifact.PLACEHOLDER_PREFIX)))


def _weights(weights: Any) -> Mapping[str, Any]:
    if weights is None:
        return {}
    if isinstance(weights, str | Path):
        return load(weights)
    if not isinstance(weights, Mapping):
        raise TypeError(
            f"weights must be a path or a name -> array mapping, got {type(weights).__name__}"
        )
    return weights


@dataclass
class Baked:
    """The result of `bake_module`: the baked module (memory mode applied), the weight
    table and the report."""

    module: ModuleOp
    table: list[rewrites.WeightEntry]
    report: BakeReport
    options: BakeOptions
    sig: dict[str, Any]


class BakeError(ValueError):
    """The graph and weights cannot be baked (a binding mismatch, a pass rejecting the graph)."""


def bake_module(
    source: Any,
    weights: Any,
    options: BakeOptions,
    *,
    dim_binding: Mapping[str, int] | None = None,
    entry: str = "main",
    progress: Progress | None = None,
) -> Baked:
    """Run the bake pipeline on MLIR text, a .mlir path, a ModuleOp or an rlx.Graph."""
    from xdsl.utils.exceptions import DiagnosticException

    try:
        return _bake_module(source, weights, options, dim_binding, entry, progress)
    except DiagnosticException as e:
        raise BakeError(f"bake: {e}") from None


def _bake_module(
    source: Any,
    weights: Any,
    options: BakeOptions,
    dim_binding: Mapping[str, int] | None,
    entry: str,
    progress: Progress | None,
) -> Baked:

    t0 = time.perf_counter()
    step = iter(range(len(STAGES)))

    def stage(name: str) -> None:
        if progress is not None:
            progress(name, next(step), len(STAGES))

    o = options
    report = BakeReport(profile=o.profile.value, options=o.to_json())
    stats = rewrites.RewriteStats()
    stage("load")
    ctx = make_context()
    module, _ = load_module(source, ctx)
    if dim_binding:
        bind_dims(module, dict(dim_binding))
    values = _weights(weights)
    report.ops_before = _count(module)
    graph_params = set(_params(module))
    report.unused_weights = sorted(set(values) - graph_params)
    stage("specialize")
    # runtime mode: the weights are set at run time, so nothing is bound (or stored)
    bound = [] if o.memory == "runtime" else rewrites.specialize(module, values, report.rounded)
    for note in report.rounded:  # the graph's declared type wins, but never silently
        warnings.warn(note, LossyBindingWarning, stacklevel=2)
    report.params_bound = bound
    report.weight_bytes_before = sum(_nbytes(values[n]) for n in bound)
    before = rewrites.snapshot(module)
    original = {id(op) for op in rewrites.constants(module) if rewrites.const_name(op) is None}
    # Weight rewrites run on the bound weights, then again on the values folding produced
    # (a transposed param, scale x weight): "re-unfold" of the surviving folded weights.
    rewrites.weight_rewrites(module, o, stats, stage)
    for name, on, p in (
        ("simplify", o.simplify, RlxCanonicalizePass()),
        ("dce", o.dce, DeadCodeEliminationPass()),
        ("fold-batch-norm", o.constant_folding, FoldBatchNorm()),  # into the conv's weights
        ("constant-fold", o.constant_folding, ConstantFoldingPass()),
    ):
        stage(name)
        if on:
            p.apply(ctx, module)
    if o.constant_folding:
        rewrites.weight_rewrites(module, o, stats, None)
        if o.dce:
            DeadCodeEliminationPass().apply(ctx, module)
    stage("dedupe")
    if o.dedupe:
        stats.constants_deduped = rewrites.dedupe_constants(module)
    stage("table")
    table = weight_table(module, bound, before, o.keep_folded_bindings, stats, original)
    if o.memory == "runtime":
        table = param_entries(module)
    stats.kept_dense = list(dict.fromkeys(stats.kept_dense + explain_dense(module, o)))
    module.verify()
    sig = signature(module, entry)
    report.ops_after = _count(module)
    report.params_remaining = _params(module)
    stage("memory")
    if o.memory == "compact":
        stats.graph_bytes_stripped = memory.strip_weights(module, {e.name for e in table if e.live})
    unique = {e.data.tobytes() if o.dedupe else id(e): e.nbytes for e in table if e.live}
    report.weight_bytes_after = sum(unique.values())
    for k in ("skipped_zero_matmuls", "ternary_packed", "quant_packed", "constants_deduped",
              "folded_bindings_dropped", "graph_bytes_stripped", "kept_dense"):  # fmt: skip
        setattr(report, k, getattr(stats, k))
    report.seconds = time.perf_counter() - t0
    return Baked(module, table, report, o, sig)


def _nbytes(v: Any) -> int:
    data = getattr(v, "data", None)
    if data is not None and hasattr(v, "scheme"):
        return int(np.asarray(data).nbytes)
    return int(np.asarray(v).nbytes)


def resolve_options(
    profile: str | BakeProfile | BakeOptions, overrides: Mapping[str, Any]
) -> BakeOptions:
    """Profile settings with `overrides` (BakeOptions field names) applied."""
    base = profile if isinstance(profile, BakeOptions) else BakeOptions.from_profile(profile)
    return base.replace(**overrides) if overrides else base


def bake_with_report(
    module: Any,
    weights: Any,
    profile: str | BakeProfile | BakeOptions = "exact",
    output: str | Path | None = None,
    *,
    dim_binding: Mapping[str, int] | None = None,
    entry: str = "main",
    progress: Progress | None = None,
    targets: Sequence[str] = ("host",),
    compile_options: Any = None,
    **overrides: Any,
) -> tuple[Path, BakeReport]:
    """`bake`, also returning the BakeReport."""

    t0 = time.perf_counter()
    opts = resolve_options(profile, overrides)
    out = _output_path(module, output)
    b = bake_module(module, weights, opts, dim_binding=dim_binding, entry=entry, progress=progress)
    if progress is not None:
        progress("code", len(STAGES) - 2, len(STAGES))
    code = _object_code(b, targets, compile_options)
    if progress is not None:
        progress("write", len(STAGES) - 1, len(STAGES))
    b.report.seconds = time.perf_counter() - t0
    meta = {
        **b.sig,
        "params_remaining": b.report.params_remaining,
        "nodes": b.report.ops_after,
        "params_baked": len(b.report.params_bound),
        "weight_count": sum(e.live for e in b.table),
        "weight_bytes": b.report.weight_bytes_after,
        "constant_bytes": _constant_bytes(b.module),
        "skipped_zero_matmuls": b.report.skipped_zero_matmuls,
        "ternary_packed": b.report.ternary_packed,
        "quant_packed": b.report.quant_packed,
    }
    header = {
        "format": "rlx-bake",
        "rlx_version": getattr(rlx, "__version__", "unknown"),
        "profile": opts.profile.value,
        "options": opts.to_json(),
        "memory": opts.memory,
        "meta": meta,
        "report": asdict(b.report),
        "module": {"form": "custom", "entry": b.sig["name"]},
    }
    blobs = [
        (
            {
                "name": e.name, "shape": e.shape, "encoding": e.encoding, "dtype": e.dtype,
                "stored_shape": e.stored_shape, "live": e.live, "note": e.note,
            },
            e.data,
        )
        for e in b.table
    ]  # fmt: skip
    size = artifact.write(out, header, str(b.module), blobs, dedupe=opts.dedupe, code=code)
    b.report.file_bytes = size
    return out, b.report


def _object_code(
    b: Baked, targets: Sequence[str], options: Any
) -> list[tuple[dict[str, Any], bytes, dict[str, bytes]]]:
    """Native code of the baked module for each target CPU ("host" or a name of
    `aot.CPU_FEATURES`), compiled from its placeholder form (weights are params bound to the
    table at load), with the runtime pieces it calls (thread pool, BLAS wrappers, bf16
    helpers: a load links them without LLVM)."""
    from rlx.runtime import aot

    if not targets:
        return []
    module = b.module
    if b.options.memory == "duplex":
        module = module.clone()
        memory.strip_weights(module, {e.name for e in b.table if e.live})
    out = []
    for cpu in dict.fromkeys(targets):
        try:
            aot.target_key(cpu, options)  # an unknown CPU name is an error, not a crash
        except ValueError as e:
            raise BakeError(f"bake: {e}") from None
        try:
            obj = aot.compile_object(module, options, b.sig["name"], cpu)
        except ValueError as e:  # e.g. unbound dynamic dims: the IR alone is stored
            first = str(e).splitlines()[0]
            b.report.code.append(f"no code for {cpu}: {first} (rlx.load compiles the IR)")
            continue
        out.append((obj.meta(), obj.data, obj.runtime))
        b.report.code.append(f"code for {obj.key.triple} cpu {obj.key.cpu}: {len(obj.data)} bytes")
    return out


def _constant_bytes(module: ModuleOp) -> int:
    return sum(len(rewrites.raw_bytes(op)) for op in module.walk() if isinstance(op, ConstantOp))


def _output_path(module: Any, output: str | Path | None) -> Path:
    if output is not None:
        return Path(output)
    if isinstance(module, Path) or (
        isinstance(module, str) and module.endswith(".mlir") and "\n" not in module
    ):
        return Path(module).with_suffix(".rlx")
    raise ValueError("bake: output= is required when the module is not a .mlir path")


def bake(
    module: Any,
    weights: Any,
    profile: str | BakeProfile | BakeOptions = "exact",
    output: str | Path | None = None,
    **overrides: Any,
) -> Path:
    """Bake `weights` (a name -> array mapping or a .safetensors/.npz/.gguf path) into
    `module` (MLIR text, .mlir path, ModuleOp or rlx.Graph) and write one `.rlx` artifact.

    `profile`: merge | fold | exact (default) | size (or an alias, or a BakeOptions);
    `overrides`: BakeOptions fields (skip_zero=False, quant=True, memory="duplex", ...),
    plus `dim_binding`, `entry`, `progress`, `targets` (CPUs to store native code for:
    "host" (default) or LLVM CPU names; empty: IR only) and `compile_options` (the
    CompileOptions the code is compiled with; `rlx.load` with other options recompiles). Returns the artifact path (default: the
    .mlir path with suffix .rlx).
    """
    return bake_with_report(module, weights, profile, output, **overrides)[0]
