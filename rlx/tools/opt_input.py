"""Parsing one input chunk for `rlx-opt`, with every failure as a located diagnostic."""

from __future__ import annotations

import argparse
import sys

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.exceptions import DiagnosticException, ParseError, ShrinkException

from rlx.diagnostics import (
    Diagnostic,
    DiagnosticEngine,
    InternalError,
    SourceLoc,
    SourceManager,
    render,
)
from rlx.parser import InputChunk, LocatingParser


def parse_chunk(
    ctx: Context,
    chunk: InputChunk,
    name: str,
    args: argparse.Namespace,
    engine: DiagnosticEngine,
    sources: SourceManager,
) -> ModuleOp | None:
    """The chunk's module, or None after emitting the error (printed to stdout instead
    with --parsing-diagnostics, as xdsl-opt does). Unexpected exceptions become
    `InternalError`s naming the op being parsed."""
    if chunk.is_blank():
        return ModuleOp([])
    parser = LocatingParser(ctx, chunk.text, name)

    def loc(pos: int) -> SourceLoc:
        return SourceLoc(name, *parser.position_to_line_col(pos))

    try:
        return parser.parse_located_module(not args.no_implicit_module)
    except ParseError as e:
        diag = Diagnostic("error", e.msg, loc(e.span.start))
        for ref_span, ref_msg in getattr(e, "refs", ()):
            diag.notes.append(Diagnostic("note", ref_msg or "see here", loc(ref_span.start)))
        if args.parsing_diagnostics:
            sys.stdout.write(render(diag, sources, name))
        else:
            engine.emit(diag)
        return None
    except DiagnosticException as e:  # e.g. an attribute verifier failing while building
        failed_at = parser.failed_op_position
        engine.emit(Diagnostic("error", str(e), None if failed_at is None else loc(failed_at)))
        return None
    except ShrinkException:
        raise
    except Exception as e:
        failed_at = parser.failed_op_position
        where = "" if failed_at is None else f" at {loc(failed_at)}"
        raise InternalError(f"while parsing{where}", e) from e
