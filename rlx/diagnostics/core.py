"""Diagnostics proper (see the package docstring): locations, `Diagnostic`, `OpError`,
the engine collecting warnings / remarks, exceptions as diagnostics, `render`."""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from xdsl.utils.exceptions import PassFailedException

if TYPE_CHECKING:
    from xdsl.ir import Attribute, Operation

Severity = Literal["error", "warning", "note", "remark"]
SEVERITIES: tuple[Severity, ...] = ("error", "warning", "note", "remark")


@dataclass(frozen=True)
class SourceLoc:
    """A 1-based `file:line:col` position in an input buffer."""

    file: str
    line: int
    col: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


@dataclass
class Diagnostic:
    """One message with a severity and an optional location (None = unknown location)."""

    severity: Severity
    message: str
    loc: SourceLoc | None = None
    notes: list[Diagnostic] = field(default_factory=list["Diagnostic"])

    def flatten(self) -> Iterator[Diagnostic]:
        """This diagnostic followed by its notes, as MLIR's verifier sees them."""
        yield self
        for note in self.notes:
            yield from note.flatten()


# --------------------------------------------------------------------------------------
# Locations of ops
# --------------------------------------------------------------------------------------


def loc_from_attr(attr: Attribute) -> SourceLoc | None:
    """The `SourceLoc` carried by an xDSL location attribute, if it has a usable one.

    `FileLineColLoc` with line 0 (the implicit module's location) counts as unknown.
    """
    from xdsl.dialects.builtin import CallSiteLoc, FileLineColLoc, FusedLoc, NameLoc

    if isinstance(attr, FileLineColLoc):
        if attr.line.data <= 0:
            return None
        return SourceLoc(attr.filename.data, attr.line.data, attr.column.data)
    if isinstance(attr, NameLoc):
        return loc_from_attr(attr.location)
    if isinstance(attr, CallSiteLoc):
        return loc_from_attr(attr.callee)
    if isinstance(attr, FusedLoc):
        for sub in attr.locations.data:  # pyright: ignore[reportAttributeAccessIssue]
            if (loc := loc_from_attr(sub)) is not None:
                return loc
    return None


def op_loc(op: Operation | None) -> SourceLoc | None:
    """Source location of `op`, falling back to its closest ancestor that has one.

    Ops created by passes often carry no location; pointing at the enclosing parsed op is
    more useful than "unknown" (and predictable in `--verify-diagnostics` tests).
    """
    while op is not None:
        if (loc := loc_from_attr(op.location)) is not None:
            return loc
        op = op.parent_op()
    return None


def op_name(op: Operation | None) -> str | None:
    """The name of a `loc("name")` on `op`, an op inside it (what it was fused from) or
    its closest ancestor: the importers' name of what the op came from."""
    from xdsl.dialects.builtin import NameLoc
    from xdsl.traits import IsolatedFromAbove

    isolated = op is None or op.has_trait(IsolatedFromAbove)  # a function: not its ops'
    inner = [] if isolated else list(op.walk())  # type: ignore[union-attr]
    while op is not None:
        inner.append(op)
        op = op.parent_op()
    for o in inner:
        if isinstance(o.location, NameLoc):
            return o.location.desc.data
    return None


# --------------------------------------------------------------------------------------
# Raising and emitting diagnostics from passes
# --------------------------------------------------------------------------------------


class OpError(PassFailedException):
    """A pass failure located at an op: `raise OpError(op, "cannot lower dtype f8")`.

    `rlx-opt` prints it as `file:line:col: error: message` at the op's source location;
    `notes` are `(op or None, message)` pairs printed as `note:` lines after it.
    """

    def __init__(
        self,
        op: Operation,
        message: str,
        notes: Sequence[tuple[Operation | None, str]] = (),
    ) -> None:
        super().__init__(message)
        self.op = op
        self.message = message
        self.notes = tuple(notes)


class DiagnosticEngine:
    """Collects the diagnostics emitted while a tool processes one input chunk."""

    def __init__(self) -> None:
        self.diagnostics: list[Diagnostic] = []

    def emit(self, diag: Diagnostic) -> None:
        """Record a diagnostic."""
        self.diagnostics.append(diag)

    @property
    def has_errors(self) -> bool:
        """Whether any error (not warning/remark) was emitted."""
        return any(d.severity == "error" for d in self.diagnostics)

    @contextmanager
    def activate(self) -> Iterator[DiagnosticEngine]:
        """Make this the engine that `emit_warning`/`emit_remark` report to."""
        token = _ACTIVE_ENGINE.set(self)
        try:
            yield self
        finally:
            _ACTIVE_ENGINE.reset(token)


_ACTIVE_ENGINE: ContextVar[DiagnosticEngine | None] = ContextVar(
    "rlx_diagnostic_engine", default=None
)


def _emit_nonfatal(severity: Severity, op: Operation | None, message: str) -> None:
    diag = Diagnostic(severity, message, op_loc(op))
    engine = _ACTIVE_ENGINE.get()
    if engine is not None:
        engine.emit(diag)
    else:
        # No tool is collecting (e.g. a pass run from Python): report directly.
        sys.stderr.write(render(diag))


def emit_warning(op: Operation | None, message: str) -> None:
    """Emit a warning at `op` without failing the pass."""
    _emit_nonfatal("warning", op, message)


def emit_remark(op: Operation | None, message: str) -> None:
    """Emit a remark (informational diagnostic) at `op`."""
    _emit_nonfatal("remark", op, message)


def diagnostic_from_exception(exc: BaseException, op: Operation | None = None) -> Diagnostic:
    """An error diagnostic for a `DiagnosticException`, located at the op it names.

    The op is `exc.op` when the exception carries one (`OpError`), else `op`, else unknown.
    """
    from xdsl.ir import Operation
    from xdsl.utils.exceptions import VerifyException

    exc_op = getattr(exc, "op", None)
    located = exc_op if isinstance(exc_op, Operation) else op
    message = exc.message if isinstance(exc, OpError) else str(exc)
    if isinstance(exc, VerifyException) and located is not None and not message.startswith("'"):
        message = f"'{located.name}' op {message}"  # as MLIR words verifier errors
    loc = op_loc(located)
    if loc is None and (name := op_name(located)) is not None:
        message = f"{name}: {message}"  # e.g. an op imported from an ONNX node
    diag = Diagnostic("error", message, loc)
    if isinstance(exc, OpError):
        for note_op, note_msg in exc.notes:
            diag.notes.append(Diagnostic("note", note_msg, op_loc(note_op)))
    return diag


class InternalError(Exception):
    """An unexpected (non-diagnostic) exception inside a tool or a pass, with context.

    Tools report it as `<tool>: internal error (<context>): ...` and exit with code 2.
    """

    def __init__(self, context: str, cause: BaseException) -> None:
        super().__init__(f"{type(cause).__name__}: {cause}")
        self.context = context
        self.cause = cause


# --------------------------------------------------------------------------------------
# Rendering
# --------------------------------------------------------------------------------------


class SourceManager:
    """Input buffers by file name, so diagnostics can show the offending source line."""

    def __init__(self) -> None:
        self._lines: dict[str, list[str]] = {}

    def add(self, name: str, text: str) -> None:
        """Register the full text of buffer `name`."""
        self._lines[name] = text.splitlines()

    def line(self, loc: SourceLoc) -> str | None:
        """The source line at `loc`, if the buffer is known."""
        lines = self._lines.get(loc.file)
        if lines is None or not 1 <= loc.line <= len(lines):
            return None
        return lines[loc.line - 1]


def render(
    diag: Diagnostic, sources: SourceManager | None = None, unknown_file: str | None = None
) -> str:
    """`file:line:col: severity: message`, then source line and caret; notes follow.

    A diagnostic without location is `unknown_file: severity: message` (or just
    `severity: message` when `unknown_file` is None).
    """
    out: list[str] = []
    for d in diag.flatten():
        if d.loc is None:
            prefix = f"{unknown_file}: " if unknown_file is not None else ""
            out.append(f"{prefix}{d.severity}: {d.message}\n")
            continue
        out.append(f"{d.loc}: {d.severity}: {d.message}\n")
        text = sources.line(d.loc) if sources is not None else None
        if text is not None:
            prefix = "".join(c if c == "\t" else " " for c in text[: max(d.loc.col - 1, 0)])
            out.append(f"{text}\n{prefix}^\n")
    return "".join(out)
