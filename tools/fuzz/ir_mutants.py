"""Structured mutations of MLIR text for the CLI fuzzer (`tools/fuzz/fuzz_cli.py`) and
the unit fuzzers: each keeps the text mostly well-formed so that it reaches the verifier,
the passes and the lowering, not only the parser.

Mutations: an integer literal replaced by an odd value (0, -1, 2^31, 2^62, ...), a float
by NaN / Inf / huge, a tensor dimension by 0, 1, a huge or a dynamic size, an element
type swapped, a string attribute value replaced (another value of the corpus or junk),
an operand or a type of a list deleted or duplicated, an op name swapped for another one
of the corpus, an attribute entry deleted, an `array<i64: ...>` element deleted or
duplicated, a scalar integer / float op of a region body swapped for another one of its
family (an `arith.addi` becoming `arith.divsi` or `math.ipowi`: the checked ops of fused
regions, which the session-6 ONNX fuzzer found broken).
"""

from __future__ import annotations

import random
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

ODD_INTS = ["0", "-1", "1", "2", "-2", "3", "7", "-7", "64", "255", "256", "65535", "2147483647",
            "2147483648", "-2147483649", "4294967296", "4611686018427387904",
            "9223372036854775807", "-9223372036854775808", "18446744073709551616", "1000000000"]  # fmt: skip
ODD_FLOATS = ["0x7FC00000", "0x7F800000", "0xFF800000", "1.0e+38", "-0.0", "1.0e-45", "nan",
              "-1.0", "0.0", "3.0e+300"]  # fmt: skip
ODD_DIMS = ["0", "1", "2", "3", "?", "4611686018427387904", "65536", "2147483648"]
TYPES = ["f32", "f16", "bf16", "f64", "i1", "i8", "i32", "i64", "ui8", "index", "f8E4M3FN",
         "complex<f32>", "tensor<f32>", "none"]  # fmt: skip

INT_RE = re.compile(r"(?<![\w%#^@.x])-?\d+(?![\w.x])")
FLOAT_RE = re.compile(r"-?\d+\.\d+(e[+-]?\d+)?")
SHAPED_RE = re.compile(r"(tensor|memref|vector)<([^<>]*)>")
ELEM_RE = re.compile(r"\b(f16|bf16|f32|f64|i1|i8|i16|i32|i64|ui8|index)\b")
STRING_RE = re.compile(r'"([^"\\\n]{0,40})"')
OPNAME_RE = re.compile(r"\b(rlx|arith|func|linalg|memref|tensor|scf|math)\.[a-z_0-9]+\b")
OPERANDS_RE = re.compile(r"%[\w.$-]+(?:#\d+)?(?:, %[\w.$-]+(?:#\d+)?)+")
TYPELIST_RE = re.compile(r"\(([^()]*(?:tensor|memref)<[^()]*)\)")
ATTRDICT_RE = re.compile(r"\{([^{}]*=[^{}]*)\}")
ARRAY_RE = re.compile(r"array<i64(: [^>]*)?>")
INT_BINOPS = ["arith.addi", "arith.subi", "arith.muli", "arith.divsi", "arith.divui",
              "arith.remsi", "arith.remui", "arith.floordivsi", "arith.ceildivsi",
              "arith.ceildivui", "arith.maxsi", "arith.minui", "arith.shli", "arith.shrsi",
              "arith.andi", "math.ipowi"]  # fmt: skip
FLOAT_BINOPS = ["arith.addf", "arith.subf", "arith.mulf", "arith.divf", "arith.maximumf",
                "arith.minimumf", "arith.remf", "math.powf"]  # fmt: skip
BINOP_RE = re.compile(r"\b(?:" + "|".join(re.escape(o) for o in INT_BINOPS + FLOAT_BINOPS) + r")\b")


def corpus() -> list[str]:
    """Every chunk (split at `// -----`) of the shipped .mlir files, comment lines dropped."""
    files = sorted((ROOT / "examples").glob("*.mlir")) + sorted(
        (ROOT / "tests" / "filecheck").rglob("*.mlir")
    )
    chunks = []
    for f in files:
        for chunk in f.read_text().split("// -----"):
            text = "\n".join(ln for ln in chunk.splitlines() if not ln.lstrip().startswith("//"))
            if text.strip():
                chunks.append(text + "\n")
    return chunks


def _replace_match(text: str, rng: random.Random, rx: re.Pattern[str], new: str,
                   group: int = 0) -> str:  # fmt: skip
    ms = list(rx.finditer(text))
    if not ms:
        return text
    m = rng.choice(ms)
    return text[: m.start(group)] + new + text[m.end(group) :]


def _dims(text: str, rng: random.Random) -> str:
    ms = [m for m in SHAPED_RE.finditer(text) if "x" in m.group(2)]
    if not ms:
        return text
    m = rng.choice(ms)
    parts = m.group(2).split("x")
    i = rng.randrange(max(1, len(parts) - 1))
    kind = rng.random()
    if kind < 0.6:
        parts[i] = rng.choice(ODD_DIMS)
    elif kind < 0.8:
        parts.insert(i, rng.choice(["1", "2", "0"]))  # rank + 1
    else:
        del parts[i]  # rank - 1
    return text[: m.start(2)] + "x".join(parts) + text[m.end(2) :]


def _list_edit(text: str, rng: random.Random, rx: re.Pattern[str], sep: str = ", ") -> str:
    ms = list(rx.finditer(text))
    if not ms:
        return text
    m = rng.choice(ms)
    body = m.group(1) if rx.groups else m.group(0)
    start, end = (m.start(1), m.end(1)) if rx.groups else (m.start(), m.end())
    items = body.split(sep) if body else []
    if not items:
        return text
    i = rng.randrange(len(items))
    if rng.random() < 0.5:
        del items[i]
    else:
        items.insert(i, items[i])
    return text[:start] + sep.join(items) + text[end:]


def mutate(text: str, rng: random.Random, pool: list[str]) -> str:
    """One structured mutation of `text`; `pool` is the corpus (for names and strings)."""
    kind = rng.randrange(11)
    if kind == 10:
        ms = list(BINOP_RE.finditer(text))
        if ms:
            m = rng.choice(ms)
            family = INT_BINOPS if m.group(0) in INT_BINOPS else FLOAT_BINOPS
            return text[: m.start()] + rng.choice(family) + text[m.end() :]
        kind = 7
    if kind == 0:
        return _replace_match(text, rng, INT_RE, rng.choice(ODD_INTS))
    if kind == 1:
        return _replace_match(text, rng, FLOAT_RE, rng.choice(ODD_FLOATS))
    if kind == 2:
        return _dims(text, rng)
    if kind == 3:
        return _replace_match(text, rng, ELEM_RE, rng.choice(TYPES))
    if kind == 4:
        other = STRING_RE.findall(rng.choice(pool)) or ["bogus"]
        new = rng.choice([*other, "bogus", "", "nchwc", "sliding_window", "x" * 300])
        return _replace_match(text, rng, STRING_RE, f'"{new}"')
    if kind == 5:
        return _list_edit(text, rng, OPERANDS_RE)
    if kind == 6:
        return _list_edit(text, rng, TYPELIST_RE)
    if kind == 7:
        names = OPNAME_RE.findall(rng.choice(pool))
        full = [m.group(0) for m in OPNAME_RE.finditer(rng.choice(pool))]
        return _replace_match(text, rng, OPNAME_RE, rng.choice(full)) if names and full else text
    if kind == 8:
        return _list_edit(text, rng, ATTRDICT_RE)
    ms = [m for m in ARRAY_RE.finditer(text) if m.group(1)]
    if not ms:
        return _replace_match(text, rng, INT_RE, rng.choice(ODD_INTS))
    m = rng.choice(ms)
    items = m.group(1)[2:].split(", ")
    i = rng.randrange(len(items))
    if rng.random() < 0.4:
        del items[i]
    elif rng.random() < 0.5:
        items.insert(i, items[i])
    else:
        items[i] = rng.choice(ODD_INTS)
    body = ": " + ", ".join(items) if items else ""
    return text[: m.start(1)] + body + text[m.end(1) :]
