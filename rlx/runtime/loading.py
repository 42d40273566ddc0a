"""Loading a compile's source: MLIR text, a .mlir path, a ModuleOp or an rlx.Graph -> a
verified private ModuleOp (`load_module`), the text the cache key hashes without parsing
(`key_text`), and the located diagnostics of malformed input (`find_failure`,
`diag_text`). Split from `rlx.runtime.compiler`, which imports `load_module`,
`make_context` and `find_failure` from here (and callers from it).

An rlx.Graph becomes its module one way, `source_module` (finished without xDSL's
verifier, which `load_module`'s `find_failure` runs anyway, with located diagnostics):
`rlx.compile` calls it first (the cache key hashes the module's structure; a hit verifies
nothing), `load_module` for the callers that pass a Graph to it directly (bake, aot).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.utils.exceptions import DiagnosticException, ParseError

from rlx.diagnostics import (
    Diagnostic,
    SourceLoc,
    SourceManager,
    diagnostic_from_exception,
    render,
)
from rlx.dialects import get_all_dialects
from rlx.parser import LocatingParser
from rlx.runtime.entry_abi import CompileError
from rlx.runtime.ir_key import structural_text


def make_context() -> Context:
    """Closed world, as rlx-opt: rlx plus the upstream dialects."""

    ctx = Context()
    for name, factory in get_all_dialects().items():
        ctx.register_dialect(name, factory)
    return ctx


def _looks_like_path(s: str) -> bool:
    return "\n" not in s and "{" not in s and (s.endswith(".mlir") or Path(s).is_file())


def find_failure(op: Operation) -> tuple[Operation, DiagnosticException] | None:
    """The first op (innermost first) that fails verification (xDSL verifiers, dominance,
    shape bounds: `rlx.ir_checks.find_failure`), with its error."""
    from rlx.ir_checks import find_failure as find

    return find(op)


def diag_text(
    exc: BaseException, op: Operation | None, sources: SourceManager, prefix: str = ""
) -> str:
    diag = diagnostic_from_exception(exc, op)
    diag.message = prefix + diag.message
    if diag.loc is None and op is not None:
        diag.message += f"\n  in: {str(op).splitlines()[0][:200]}"
    return render(diag, sources).rstrip("\n")


def source_module(source: Any) -> Any:
    """The ModuleOp of an rlx.Graph (duck-typed: `finish`, or a `module` attribute),
    finished without verifying (see the module docstring); any other `source` unchanged.
    The graph's own errors propagate (ValueError: a graph without outputs)."""
    if isinstance(source, ModuleOp | str | Path):
        return source
    finish = getattr(source, "finish", None)
    if callable(finish):
        return finish(verify=False)
    return getattr(source, "module", source)


def key_text(source: Any) -> str | None:
    """What the compile cache's key hashes for `source`, without parsing or printing:
    MLIR text (or a .mlir file's text) as given, a ModuleOp's exact structural text
    (`ir_key.structural_text`); None when it cannot be read (`load_module` reports why)."""
    try:
        if isinstance(source, ModuleOp):
            return "structure\0" + structural_text(source)
        if isinstance(source, Path) or (isinstance(source, str) and _looks_like_path(source)):
            return "mlir-text\0" + Path(source).read_text()
        if isinstance(source, str):
            return "mlir-text\0" + source
    except Exception:  # unreadable file or malformed IR: load_module names the problem
        return None
    return None


def load_module(source: Any, ctx: Context) -> tuple[ModuleOp, SourceManager]:
    """A verified private ModuleOp from text, a .mlir path, a ModuleOp or an rlx.Graph."""
    sources = SourceManager()
    source = source_module(source)
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
        raise CompileError(diag_text(bad[1], bad[0], sources))
    return module, sources
