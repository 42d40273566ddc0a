"""The diagnostics helpers of the tools (rlx.diagnostics, rlx.parser): input split at
`// -----` keeping line numbers, `expected-*` directives (designators, regexes) and their
verification, rendering with a caret under tabs."""

from __future__ import annotations

from rlx.diagnostics import (
    Diagnostic,
    SourceLoc,
    parse_expectations,
    render,
    verify_expectations,
)
from rlx.parser import split_input

# --------------------------------------------------------------------------------------
# Diagnostics helpers
# --------------------------------------------------------------------------------------


def test_split_input() -> None:
    text = "a\n// -----\nb\nc\n  // -----  \nd"
    chunks = split_input(text, split=True)
    assert [c.text for c in chunks] == ["a\n", "\n\nb\nc\n", "\n\n\n\n\nd"]
    assert [(c.first_line, c.last_line) for c in chunks] == [(1, 1), (3, 4), (6, 6)]
    assert split_input(text, split=False)[0].text == text


def test_parse_expectations_designators() -> None:
    text = (
        "op1\n"  # 1
        "// expected-error @+2 {{plus}}\n"  # 2
        "// expected-warning@-1 {{minus}}\n"  # 3
        "op2 // expected-note {{same line}}\n"  # 4
        "// expected-error @above {{above}}\n"  # 5
        "// expected-remark @below {{below}}\n"  # 6
        "// expected-error @unknown {{unknown}}\n"  # 7
        "op3\n"  # 8
        "// expected-error-re {{a{{[0-9]+}}b}}\n"  # 9
    )
    expected, malformed = parse_expectations(text, "f.mlir")
    assert not malformed
    assert [(e.severity, e.pattern, e.line) for e in expected] == [
        ("error", "plus", 4),
        ("warning", "minus", 2),
        ("note", "same line", 4),
        ("error", "above", 1),  # line 4 holds a directive
        ("remark", "below", 8),
        ("error", "unknown", 0),
        ("error", "a{{[0-9]+}}b", 9),
    ]
    assert expected[-1].matches("xx a123b yy") and not expected[-1].matches("ab")


def test_verify_expectations() -> None:
    expected, _ = parse_expectations("x // expected-error {{boom}}\n", "f.mlir")
    ok = [Diagnostic("error", "big boom here", SourceLoc("f.mlir", 1, 1))]
    assert verify_expectations(ok, expected, "f.mlir") == []
    expected, _ = parse_expectations("x // expected-error {{boom}}\n", "f.mlir")
    problems = verify_expectations(
        [Diagnostic("error", "other", SourceLoc("f.mlir", 1, 1))], expected, "f.mlir"
    )
    assert [p.message for p in problems] == [
        "unexpected error: other",
        'expected error "boom" was not produced',
    ]


def test_render_caret_with_tabs() -> None:
    diag = Diagnostic("error", "msg", SourceLoc("f.mlir", 1, 3))
    from rlx.diagnostics import SourceManager

    sources = SourceManager()
    sources.add("f.mlir", "\tx y\n")
    assert render(diag, sources) == "f.mlir:1:3: error: msg\n\tx y\n\t ^\n"
    assert render(Diagnostic("error", "m")) == "error: m\n"
