"""`rlx.compile`: source -> verified module -> graph passes -> memref ABI -> LLVM -> JIT.

The pass list comes from `rlx.runtime.pipeline` (the one options -> passes table); the
result is cached by `rlx.runtime.cache`. Errors in the input (parse, verify, a pass
rejecting the graph) raise `ValueError` (`CompileError`) with an MLIR-style
`file:line:col: error: ...` message where the location is known.

Verbose (`verbose=True` or `RLX_VERBOSE=1`): `[rlx]`-prefixed lines on stderr with each
pass's op count before/after and its time, fields not (yet) applied, the cache outcome and
`[rlx] arena: <bytes> bytes (<unplanned> unplanned), alignment <a>`.
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    StringAttr,
    TensorType,
)
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import DiagnosticException, ParseError

from rlx.runtime import pipeline
from rlx.runtime.cache import CACHE, make_key
from rlx.runtime.compiled import ArgSpec, Artifact, CompiledGraph, Signature, np_dtype
from rlx.runtime.options import CompileOptions
from rlx.tools.diagnostics import (
    Diagnostic,
    SourceLoc,
    SourceManager,
    diagnostic_from_exception,
    render,
)
from rlx.tools.locating_parser import LocatingParser

BACKEND = "llvm-cpu"
"""Part of the cache key: names the code generator (tests swap in a stub backend)."""


class CompileError(ValueError):
    """The input cannot be compiled: parse/verify errors or a pass rejecting the graph."""


def jit_api() -> tuple[Callable[[ModuleOp], str], Callable[[str], Any]]:
    """(to_llvm_ir, JitModule) from rlx.runtime.jit; a function so tests can stub it."""
    from rlx.runtime.jit import JitModule, to_llvm_ir

    return to_llvm_ir, JitModule


def make_context() -> Context:
    """Closed world, as rlx-opt: rlx plus the upstream dialects."""
    from rlx.dialects import get_all_dialects

    ctx = Context()
    for name, factory in get_all_dialects().items():
        ctx.register_dialect(name, factory)
    return ctx


class _Log:
    def __init__(self, on: bool) -> None:
        self.on = on

    def __call__(self, msg: str) -> None:
        if self.on:
            sys.stderr.write(f"[rlx] {msg}\n")
            sys.stderr.flush()


# ----------------------------------------------------------------------------- loading


def _looks_like_path(s: str) -> bool:
    return "\n" not in s and "{" not in s and (s.endswith(".mlir") or Path(s).is_file())


def find_failure(op: Operation) -> tuple[Operation, DiagnosticException] | None:
    """The first op (innermost first) that fails verification, with its error."""
    for region in op.regions:
        for block in region.blocks:
            for child in block.ops:
                if (bad := find_failure(child)) is not None:
                    return bad
    try:
        op.verify(verify_nested_ops=False)
    except DiagnosticException as e:
        return op, e
    return None


def _diag_text(
    exc: BaseException, op: Operation | None, sources: SourceManager, prefix: str = ""
) -> str:
    diag = diagnostic_from_exception(exc, op)
    diag.message = prefix + diag.message
    if diag.loc is None and op is not None:
        diag.message += f"\n  in: {str(op).splitlines()[0][:200]}"
    return render(diag, sources).rstrip("\n")


def load_module(source: Any, ctx: Context) -> tuple[ModuleOp, SourceManager]:
    """A verified private ModuleOp from text, a .mlir path, a ModuleOp or an rlx.Graph."""
    sources = SourceManager()
    if hasattr(source, "module") and not isinstance(source, ModuleOp | str | Path):
        source = source.module  # rlx.Graph (duck-typed)
    if isinstance(source, ModuleOp):
        module = source.clone()
    elif isinstance(source, str | Path):
        if isinstance(source, Path) or _looks_like_path(source):
            path = Path(source)
            try:
                text, name = path.read_text(), str(path)
            except OSError as e:
                raise CompileError(f"cannot read {path}: {e.strerror or e}") from None
        else:
            text, name = source, "<string>"
        sources.add(name, text)
        parser = LocatingParser(ctx, text, name)
        try:
            module = parser.parse_located_module()
        except ParseError as e:
            line, col = parser.position_to_line_col(e.span.start)
            raise CompileError(
                render(Diagnostic("error", e.msg, SourceLoc(name, line, col)), sources).rstrip()
            ) from None
        except DiagnosticException as e:
            loc = None
            if parser.failed_op_position is not None:
                loc = SourceLoc(name, *parser.position_to_line_col(parser.failed_op_position))
            raise CompileError(render(Diagnostic("error", str(e), loc), sources).rstrip()) from None
    else:
        raise TypeError(
            f"rlx.compile: expected MLIR text, a path, a ModuleOp or an rlx.Graph; got {type(source).__name__}"
        )
    bad = find_failure(module)
    if bad is not None:
        raise CompileError(_diag_text(bad[1], bad[0], sources))
    return module, sources


def find_entry(module: ModuleOp, entry: str) -> func.FuncOp:
    funcs = [op for op in module.walk() if isinstance(op, func.FuncOp)]
    for f in funcs:
        if f.sym_name.data == entry:
            return f
    names = ", ".join("@" + f.sym_name.data for f in funcs) or "none"
    raise CompileError(f"no function @{entry} in the module (functions: {names})")


# ----------------------------------------------------------------------------- signature


def _dtype_name(elem: Any) -> str:
    from rlx.dtypes import numpy_dtype

    return numpy_dtype(elem).name


def source_params(module: ModuleOp) -> dict[str, ArgSpec]:
    from rlx.dialects.rlx.leaves import ParamOp

    out: dict[str, ArgSpec] = {}
    for op in module.walk():
        if isinstance(op, ParamOp) and op.param_name.data not in out:
            t = op.result.type
            out[op.param_name.data] = ArgSpec(
                op.param_name.data, "param", tuple(t.get_shape()), _dtype_name(t.element_type)
            )  # type: ignore[attr-defined]
    return out


def rlx_dtypes(module: ModuleOp, entry: str) -> dict[tuple[str, str | int], str]:
    """Tensor-level dtypes of the entry's I/O and params (the memref ABI is signless)."""
    f = find_entry(module, entry)
    out: dict[tuple[str, str | int], str] = {}
    for kind, types in (
        ("input", f.function_type.inputs.data),
        ("output", f.function_type.outputs.data),
    ):
        for i, t in enumerate(types):
            if isinstance(t, TensorType):
                out[kind, i] = _dtype_name(t.element_type)
    out.update({("param", n): a.dtype for n, a in source_params(module).items()})
    return out


def extract_signature(module: ModuleOp, entry: str, alignment: int, params: dict[str, ArgSpec],
                      ref: dict[tuple[str, str | int], str] | None = None) -> Signature:  # fmt: skip
    """The ABI of the lowered entry (arg attrs `rlx.kind` / `rlx.name`, func attrs).

    `ref` (from `rlx_dtypes` before lowering) restores signedness lost by the signless ABI.
    """
    f = find_entry(module, entry)
    attrs = f.arg_attrs.data if isinstance(f.arg_attrs, ArrayAttr) else ()
    args: list[ArgSpec] = []
    counts = {"input": 0, "output": 0}
    for i, t in enumerate(f.function_type.inputs.data):
        d = attrs[i].data if i < len(attrs) and isinstance(attrs[i], DictionaryAttr) else {}
        kind, name = d.get("rlx.kind"), d.get("rlx.name")
        if not (
            isinstance(kind, StringAttr)
            and isinstance(name, StringAttr)
            and isinstance(t, MemRefType)
        ):
            raise RuntimeError(
                f"lowered @{entry}: argument {i} lacks rlx.kind/rlx.name or is not a memref ({t})"
            )
        shape = tuple(t.get_shape())
        if any(s < 0 for s in shape):
            raise CompileError(
                f"{kind.data} '{name.data}' has a dynamic shape {t}; bind its dims with dim_binding"
            )
        dtype = _dtype_name(t.element_type)
        key: tuple[str, str | int] = (kind.data, name.data)
        if kind.data in counts:
            key = (kind.data, counts[kind.data])
            counts[kind.data] += 1
        want = (ref or {}).get(key)
        if want is not None and np_dtype(want).itemsize == np_dtype(dtype).itemsize:
            dtype = want
        args.append(ArgSpec(name.data, kind.data, shape, dtype))
    order = "".join(
        {"input": "i", "param": "p", "output": "o", "arena": "a"}.get(a.kind, "?") for a in args
    )
    if (
        order.rstrip("a") + "a" != order
        or "?" in order
        or order.count("a") != 1
        or order != "".join(sorted(order, key="ipoa".index))
    ):
        raise RuntimeError(
            f"lowered @{entry}: unexpected argument kinds order {order!r} (want inputs, params, outputs, arena)"
        )

    def i64(name: str) -> int:
        a = f.attributes.get(name) or f.properties.get(name)
        return a.value.data if isinstance(a, IntegerAttr) else 0

    live = {a.name for a in args if a.kind == "param"}
    dead = {k: v for k, v in params.items() if k not in live}
    return Signature(
        entry, args, i64("rlx.arena_bytes"), i64("rlx.unplanned_bytes"), alignment, dead
    )


# ----------------------------------------------------------------------------- pipeline


def _count(module: ModuleOp) -> int:
    return sum(1 for _ in module.walk())


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
        raise CompileError(_diag_text(e, None, sources, f"pass '{name}' failed: ")) from None
    except Exception as e:
        raise RuntimeError(f"internal error in pass '{name}': {type(e).__name__}: {e}") from e
    dt = (time.perf_counter() - t0) * 1e3
    if verify and (bad := find_failure(module)) is not None:
        raise RuntimeError(
            f"pass '{name}' produced invalid IR: " + _diag_text(bad[1], bad[0], sources)
        )
    if log.on:
        log(f"pass {name}: {before} -> {_count(module)} ops, {dt:.1f} ms")


def _build(module: ModuleOp, input_text: str, opts: CompileOptions, entry: str, log: _Log,
           sources: SourceManager, capture: bool, jit: bool = True) -> Artifact:  # fmt: skip
    """Run the whole pipeline on `module` (mutated). `capture` keeps each stage's text."""
    ctx = make_context()
    find_entry(module, entry)
    params = source_params(module)
    stages = {"input": input_text}
    with tempfile.TemporaryDirectory(prefix="rlx-") as tmp:
        plan = pipeline.build_plan(opts, Path(tmp))
        for r in plan.report:
            if r.status not in ("default", "applied"):
                log(r.line())
        for p in plan.phase("graph"):
            _run_pass(p.name, p.instance, module, ctx, log, sources, verify=True)
    if capture:
        stages["rlx"] = str(module)
    ref = rlx_dtypes(module, entry)
    for p in plan.phase("lower"):
        _run_pass(p.name, p.instance, module, ctx, log, sources, verify=False)
    if capture:
        stages["linalg"] = str(module)
    sig = extract_signature(module, entry, opts.arena_alignment(), params, ref)
    for p in pipeline.llvm_pipeline():
        _run_pass(p.name, p, module, ctx, log, sources, verify=False)
        if capture and p.name == "convert-linalg-to-loops":
            stages["loops"] = str(module)
    if capture:
        stages["llvm"] = str(module)
        stages.setdefault("loops", stages["linalg"])
    report = [vars(r) for r in plan.report]
    if not jit:
        return Artifact(sig, None, 0, report, stages)
    to_llvm_ir, jit_module = jit_api()
    t0 = time.perf_counter()
    try:
        ir = to_llvm_ir(module)
        engine = jit_module(ir)
        address = engine.address(entry)
    except Exception as e:
        raise RuntimeError(
            f"internal error in LLVM code generation: {type(e).__name__}: {e}"
        ) from e
    log(f"jit: {(time.perf_counter() - t0) * 1e3:.1f} ms")
    return Artifact(sig, engine, address, report, stages, getattr(engine, "llvm_ir", None) or ir)


def object_api() -> tuple[Callable[[str], bytes], Callable[[bytes, str], Any]] | None:
    """(emit_object, ObjectModule) for caching host object code; None: cache IR only."""
    from rlx.runtime.cache import ObjectModule, emit_object

    return emit_object, ObjectModule


def _from_disk(meta: dict[str, Any], ir: str, obj: bytes | None) -> Artifact:
    sig = Signature.from_json(meta["signature"])
    api = object_api()
    engine = None
    if obj is not None and api is not None:
        try:
            engine = api[1](obj, ir)
            engine.address(sig.entry)
        except Exception:
            engine = None  # fall back to JIT-compiling the IR
    if engine is None:
        engine = jit_api()[1](ir)
    return Artifact(sig, engine, engine.address(sig.entry), list(meta["report"]), {}, ir)


def compile(
    source: Any, options: CompileOptions | None = None, entry: str = "main"
) -> CompiledGraph:
    """Compile MLIR text, a .mlir path, an xDSL ModuleOp or an rlx.Graph into a CompiledGraph."""
    opts = CompileOptions() if options is None else options
    if not isinstance(opts, CompileOptions):
        raise TypeError(f"rlx.compile: options must be a CompileOptions, got {type(opts).__name__}")
    log = _Log(opts.verbose)
    t0 = time.perf_counter()
    ctx = make_context()
    module, sources = load_module(source, ctx)
    input_text = str(module)
    key = make_key(input_text, opts, entry, BACKEND)
    hit = CACHE.get(key, _from_disk)
    if hit is not None:
        art, where = hit
        log(f"cache: hit ({where}) {key[:16]}")
        for r in art.report:
            if r["status"] not in ("default", "applied"):
                log(pipeline.FieldStatus(**r).line())
    else:
        log(f"cache: miss {key[:16]}")
        art = _build(module, input_text, opts, entry, log, sources, capture=False)
        api = object_api()
        ir = art.llvm_ir
        meta = {"signature": art.signature.to_json(), "report": art.report}
        CACHE.put(key, art, meta, ir, None if api is None else (lambda: api[0](ir)))
    art.stages.setdefault("input", input_text)
    sig = art.signature
    log(
        f"arena: {sig.arena_bytes} bytes ({sig.unplanned_bytes} unplanned), alignment {sig.alignment}"
    )
    log(f"compile: {(time.perf_counter() - t0) * 1e3:.1f} ms")

    def regenerate() -> Artifact:
        m, s = load_module(input_text, make_context())
        return _build(m, input_text, opts, entry, _Log(False), s, capture=True, jit=False)

    graph = CompiledGraph(art, regenerate)
    graph.cache_hit = hit is not None
    return graph
