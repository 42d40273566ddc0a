"""MLIR-style diagnostics for RLX tools: located errors, rendering, `--verify-diagnostics`.

Why this exists: xDSL's exceptions carry no source location of the offending op, and
xDSL's `--verify-diagnostics` only prints the error. RLX tools want what `mlir-opt` does:

* every diagnostic is `file:line:col: error: message`, followed by the source line and a
  caret (see `render`);
* passes report a failure *at an op* by raising `OpError(op, "message")` (a
  `PassFailedException`, so it survives xDSL's pattern walker unchanged) and emit
  warnings/remarks with `emit_warning(op, ...)` / `emit_remark(op, ...)`;
* tests put the expectations into the input (`// expected-error @+1 {{substring}}`) and
  `verify_expectations` checks emitted against expected diagnostics.

Only light xDSL modules are imported here so that importing this module stays cheap.
"""

from __future__ import annotations

import re
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


# --------------------------------------------------------------------------------------
# --verify-diagnostics: expectations in the input
# --------------------------------------------------------------------------------------

_EXPECTED_RE = re.compile(
    r"expected-(error|note|remark|warning)(-re)?[ \t]*"
    r"(@(?:[+-][0-9]+|above|below|unknown))?[ \t]*\{\{(.*)\}\}[ \t]*$"
)
_LOOKS_LIKE_DIRECTIVE_RE = re.compile(
    r"expected-(error|note|remark|warning)(-re)?[ \t]*(@[^ \t{]*)?[ \t]*\{"
)


@dataclass
class ExpectedDiagnostic:
    """One `expected-<severity>` directive from the input."""

    severity: Severity
    pattern: str
    """The text between the outermost `{{` and `}}`."""
    is_regex: bool
    line: int
    """Line the diagnostic must be reported at; 0 for `@unknown`."""
    directive: SourceLoc
    """Where the directive itself is written (used when it is not matched)."""
    matched: bool = False
    _regex: re.Pattern[str] | None = field(default=None, repr=False)

    def matches(self, message: str) -> bool:
        """Substring match, or for `expected-*-re` a search with `{{regex}}` pieces."""
        if not self.is_regex:
            return self.pattern in message
        if self._regex is None:
            self._regex = re.compile(_re_directive_to_regex(self.pattern))
        return self._regex.search(message) is not None


def _re_directive_to_regex(pattern: str) -> str:
    """MLIR `-re` syntax: literal text with embedded `{{regex}}` pieces."""
    parts: list[str] = []
    pos = 0
    while (start := pattern.find("{{", pos)) != -1:
        end = pattern.find("}}", start + 2)
        if end == -1:
            break
        parts.append(re.escape(pattern[pos:start]))
        parts.append(f"(?:{pattern[start + 2 : end]})")
        pos = end + 2
    parts.append(re.escape(pattern[pos:]))
    return "".join(parts)


def parse_expectations(
    text: str, filename: str
) -> tuple[list[ExpectedDiagnostic], list[Diagnostic]]:
    """All `expected-*` directives in `text`, plus errors for malformed directives.

    Follows MLIR: `@+N`/`@-N` are relative to the directive's line, `@above`/`@below` refer
    to the closest line (before/after) that holds no directive, `@unknown` matches
    diagnostics without a location, and no designator means the directive's own line.
    """
    expected: list[ExpectedDiagnostic] = []
    problems: list[Diagnostic] = []
    pending_below: list[ExpectedDiagnostic] = []
    last_plain_line = 0
    lines = text.splitlines()
    for lineno, line in enumerate(lines, start=1):
        match = _EXPECTED_RE.search(line)
        if match is None:
            if (bad := _LOOKS_LIKE_DIRECTIVE_RE.search(line)) is not None:
                problems.append(
                    Diagnostic(
                        "error",
                        f"malformed 'expected-{bad.group(1)}' directive: expected "
                        "'@+N'/'@-N'/'@above'/'@below'/'@unknown' and '{{message}}' "
                        "ending the line",
                        SourceLoc(filename, lineno, bad.start() + 1),
                    )
                )
                continue
            last_plain_line = lineno
            for exp in pending_below:
                exp.line = lineno
            pending_below.clear()
            continue
        severity: Severity = match.group(1)  # pyright: ignore[reportAssignmentType]
        designator = match.group(3)
        exp = ExpectedDiagnostic(
            severity=severity,
            pattern=match.group(4),
            is_regex=match.group(2) is not None,
            line=lineno,
            directive=SourceLoc(filename, lineno, match.start() + 1),
        )
        if designator is not None:
            designator = designator[1:]
            if designator[0] in "+-":
                exp.line = lineno + int(designator)
            elif designator == "unknown":
                exp.line = 0
            elif designator == "above":
                exp.line = last_plain_line
            else:  # below: resolved by the next line without a directive
                exp.line = len(lines)
                pending_below.append(exp)
        expected.append(exp)
    return expected, problems


def verify_expectations(
    emitted: Sequence[Diagnostic],
    expected: Sequence[ExpectedDiagnostic],
    filename: str,
) -> list[Diagnostic]:
    """Match emitted diagnostics (notes included) against expectations, MLIR-style.

    Returns the problems as error diagnostics: `unexpected error: ...` at the emitted
    location, and `expected error "..." was not produced` at the directive. Empty = pass.
    """
    problems: list[Diagnostic] = []
    for top in emitted:
        for diag in top.flatten():
            if diag.loc is None:
                line = 0
            elif diag.loc.file == filename:
                line = diag.loc.line
            else:
                line = -1  # another buffer: nothing in this input can expect it
            candidates = [e for e in expected if e.line == line and e.matches(diag.message)]
            same_kind = [e for e in candidates if e.severity == diag.severity]
            if same_kind:
                # Prefer a directive that is still unmatched; as in MLIR a matched one
                # may absorb repeats of the same diagnostic.
                chosen = next((e for e in same_kind if not e.matched), same_kind[0])
                chosen.matched = True
                continue
            if candidates:
                problems.append(
                    Diagnostic(
                        "error",
                        f"'{diag.severity}' diagnostic emitted when expecting a "
                        f"'{candidates[0].severity}': {diag.message}",
                        diag.loc,
                    )
                )
                candidates[0].matched = True
                continue
            problems.append(
                Diagnostic("error", f"unexpected {diag.severity}: {diag.message}", diag.loc)
            )
    for exp in expected:
        if not exp.matched:
            problems.append(
                Diagnostic(
                    "error",
                    f'expected {exp.severity} "{exp.pattern}" was not produced',
                    exp.directive,
                )
            )
    return problems
