"""Fuzzing the IR text: mutated inputs to `rlx-opt` give diagnostics, never a traceback,
an internal error or a hang.

Mutations of valid modules (the examples, the dialect round-trip tests and a few
snippets): deleting, duplicating or swapping spans and lines, inserting tokens that
open or close constructs, unterminated strings, huge or negative numbers, and
truncation. Each input runs through `rlx-opt`'s in-process entry point (parse, verify,
print) under a timer; the exit code must be 0 or 1 and a 1 must come with an `error:`
line. CI runs `RLX_FUZZ_EXAMPLES` (default 10) x 20 derandomized examples; see
docs/fuzzing.md for a longer run.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rlx.tools.rlx_opt import main

ROOT = Path(__file__).resolve().parents[2]
SEEDS = [
    (ROOT / "examples" / "mlp.mlir").read_text(),
    (ROOT / "examples" / "transformer_block.mlir").read_text(),
    (ROOT / "tests" / "filecheck" / "dialects" / "rlx" / "ops.mlir").read_text(),
    """func.func @main(%c: i1, %x: i32) -> i32 {
  %y = arith.addi %x, %x : i32
  cf.cond_br %c, ^a, ^b(%y : i32)
^a:
  cf.br ^b(%x : i32)
^b(%v: i32):
  func.return %v : i32
}
""",
    """func.func @main(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %c = rlx.constant dense<"0x0000803F0000004000004040000080400000A0400000C040"> : tensor<2x3xf32>
  %s = rlx.constant dense<[[1.5, -2.0, 3.0], [0.0, 1.0e-3, 7.0]]> : tensor<2x3xf32>
  %a = rlx.add %x, %c : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %m = "rlx.mul"(%a, %s) {rlx.note = {k = [1, 2, "v"]}} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %m : tensor<2x3xf32>
}
""",
]
TOKENS = [
    '"',
    '"abc',
    "\\",
    "%",
    "%0",
    "^",
    "^bb9",
    "#",
    "!",
    "@",
    "$",
    "{",
    "}",
    "(",
    ")",
    "[",
    "]",
    "<",
    ">",
    "->",
    ":",
    ",",
    "=",
    "?",
    "x",
    "dense<",
    "tensor<",
    "memref<",
    "0x",
    "9223372036854775808",
    "18446744073709551616",
    "-1",
    "0",
    "1e999",
    "nan",
    "loc(",
    "#loc",
    "{-#",
    "#-}",
    "// -----",
    "\n",
    "rlx.add",
    "func.return",
    "builtin.module",
    "private",
    "i1",
    "f8E4M3FN",
    "\u00e9",
    "\x00",
    "{" * 80,
    "[" * 80,
]
EXAMPLES = int(os.environ.get("RLX_FUZZ_EXAMPLES", "10")) * 20
RANDOM = os.environ.get("RLX_FUZZ_RANDOM", "") not in ("", "0")
TIMEOUT_SECONDS = 20


class Hang(Exception):
    """rlx-opt did not finish within TIMEOUT_SECONDS."""


def _alarm(signum: int, frame: object) -> None:
    raise Hang(f"rlx-opt ran longer than {TIMEOUT_SECONDS} s")


@st.composite
def mutated(draw: st.DrawFn) -> str:
    text = draw(st.sampled_from(SEEDS))
    for _ in range(draw(st.integers(1, 4))):
        n = len(text)
        i = draw(st.integers(0, n))
        j = draw(st.integers(i, min(n, i + 40)))
        kind = draw(st.integers(0, 5))
        if kind == 0:  # delete a span
            text = text[:i] + text[j:]
        elif kind == 1:  # duplicate a span
            text = text[:j] + text[i:j] + text[j:]
        elif kind == 2:  # insert a token
            text = text[:i] + draw(st.sampled_from(TOKENS)) + text[i:]
        elif kind == 3:  # replace a span by a token
            text = text[:i] + draw(st.sampled_from(TOKENS)) + text[j:]
        elif kind == 4:  # swap two lines
            lines = text.split("\n")
            a = draw(st.integers(0, len(lines) - 1))
            b = draw(st.integers(0, len(lines) - 1))
            lines[a], lines[b] = lines[b], lines[a]
            text = "\n".join(lines)
        else:  # truncate
            text = text[:i]
    return text


def run_opt(path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, TIMEOUT_SECONDS)
    try:
        code = main([str(path), "--allow-unregistered-dialect", "--split-input-file"])
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    return code, capsys.readouterr().err


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=not RANDOM,
    database=None,
    suppress_health_check=list(HealthCheck),
)
@given(text=mutated())
def test_mutated_ir_gives_diagnostics(tmp_path_factory, capsys, text: str) -> None:
    path = tmp_path_factory.mktemp("fuzz") / "in.mlir"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    code, err = run_opt(path, capsys)
    assert "internal error" not in err and "Traceback" not in err, f"{err}\n--- input:\n{text}"
    assert code in (0, 1), f"exit {code}: {err}\n--- input:\n{text}"
    if code == 1:
        assert "error:" in err, f"exit 1 without a diagnostic\n--- input:\n{text}"


def test_seeds_are_valid(tmp_path, capsys) -> None:
    for i, text in enumerate(SEEDS):
        path = tmp_path / f"seed{i}.mlir"
        path.write_text(text)
        code, err = run_opt(path, capsys)
        assert code == 0, err
