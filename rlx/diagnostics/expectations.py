"""`--verify-diagnostics`: the `// expected-<severity>[-re] [@+N|@-N|@above|@below|@unknown]
{{...}}` directives of an input (`parse_expectations`) checked against the diagnostics a
run emitted (`verify_expectations`), as `mlir-opt` does. Re-exported by `rlx.diagnostics`."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from rlx.diagnostics.core import Diagnostic, Severity, SourceLoc

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
