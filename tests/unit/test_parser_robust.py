"""Hostile IR text: every malformed input gives a located diagnostic and exit 1, fast.

Covers the parser guards of `rlx.parser` (string pre-scan, nesting limit,
first-token errors, compact splats) and the verifier checks of `rlx.ir_checks`
(dominance, int64 shape bounds), through `rlx-opt` in process and through `rlx.compile`.
"""

from __future__ import annotations

import re
import time

import numpy as np
import pytest

import rlx
from rlx.parser import MAX_NESTING, prescan
from rlx.runtime.compiler import CompileError
from rlx.tools.rlx_opt import main

LOCATED = re.compile(r"^in\.mlir:\d+:\d+: error: ", re.M)


def run_opt(tmp_path, text: str, *args: str, capsys) -> tuple[int, str, str]:
    path = tmp_path / "in.mlir"
    path.write_text(text)
    import os

    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        code = main(["in.mlir", *args])
    finally:
        os.chdir(cwd)
    out, err = capsys.readouterr()
    return code, out, err


def assert_diagnostic(code: int, err: str, fragment: str) -> None:
    assert code == 1, err
    assert LOCATED.search(err), err
    assert fragment in err, err
    assert "internal error" not in err and "Traceback" not in err, err


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("%", "expected an identifier after '%'"),
        ('"abc', "unterminated string literal"),
        ("#", "expected an identifier after '#'"),
        ("@", "Unexpected end of file after @"),
        ("!", "expected an identifier after '!'"),
        ("^", "expected an identifier after '^'"),
        ("$", "Unexpected character: $"),
    ],
)
def test_first_token_lexer_errors_are_located(tmp_path, capsys, text, fragment):
    code, _, err = run_opt(tmp_path, text, capsys=capsys)
    assert_diagnostic(code, err, fragment)
    assert err.startswith("in.mlir:1:1: error:")


HANG_S = 30.0
"""A bound far above the linear time (ms) and far below the hangs these tests guard
against (exponential: hours), so a loaded machine does not make them flaky."""


def test_unterminated_string_mid_file_does_not_hang(tmp_path, capsys):
    # xDSL 0.75's string regex backtracks exponentially here (2^60 steps).
    text = (
        "func.func @f() {\n"
        '  %0 = "test.op"() {a = "' + "x" * 60 + "} : () -> ()\n"
        "  func.return\n}\n"
    )
    start = time.perf_counter()
    code, _, err = run_opt(tmp_path, text, "--allow-unregistered-dialect", capsys=capsys)
    assert time.perf_counter() - start < HANG_S
    assert_diagnostic(code, err, "unterminated string literal")
    assert "in.mlir:2:25: error:" in err


def test_bad_escape_is_reported_at_the_string(tmp_path, capsys):
    text = (
        '"test.op"() {a = "ab\\qcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyz"} : () -> ()\n'
    )
    code, _, err = run_opt(tmp_path, text, "--allow-unregistered-dialect", capsys=capsys)
    assert_diagnostic(code, err, "invalid escape sequence")


def test_prescan_ignores_comments_and_good_strings():
    text = '// a "quote in a comment\n"test.op"() {a = "x\\"y\\n\\0A", b = "//"} : () -> ()\n'
    assert prescan(text) is None
    assert prescan("%a = f() : () -> (i32) // -> >>>> ))\n") is None


def test_prescan_is_linear():
    text = '"' + "a\\n" * 200_000  # unterminated, full of escapes
    start = time.perf_counter()
    err = prescan(text)
    assert err is not None and err.span.start == 0
    assert time.perf_counter() - start < HANG_S


@pytest.mark.parametrize(
    "make",
    [
        lambda n: '"test.op"() {a = ' + "[" * n + "]" * n + "} : () -> ()\n",
        lambda n: '"test.op"() {a = ' + "{b = " * n + "1" + "}" * n + "} : () -> ()\n",
        lambda n: '"test.op"() : () -> (' + "tuple<" * n + "i32" + ">" * n + ")\n",
        lambda n: '"test.op"() ({\n' * n + '"test.op"() : () -> ()\n' + "}) : () -> ()\n" * n,
    ],
    ids=["array", "dict", "type", "region"],
)
def test_deep_nesting_is_a_diagnostic(tmp_path, capsys, make):
    code, _, err = run_opt(tmp_path, make(2000), "--allow-unregistered-dialect", capsys=capsys)
    assert_diagnostic(code, err, f"brackets nested deeper than {MAX_NESTING} levels")


def test_nesting_at_the_limit_still_parses(tmp_path, capsys):
    n = MAX_NESTING - 2  # the op's `{` and the attribute's own bracket
    text = '"test.op"() {a = ' + "{b = " * n + "1" + "}" * n + "} : () -> ()\n"
    code, out, err = run_opt(tmp_path, text, "--allow-unregistered-dialect", capsys=capsys)
    assert code == 0, err
    assert "{b = {b =" in out


SPLAT = """func.func @main() -> tensor<2147483648xf32> {
  %c = rlx.constant dense<1.5> : tensor<2147483648xf32>
  func.return %c : tensor<2147483648xf32>
}
"""


def test_huge_splat_stays_a_splat(tmp_path, capsys):
    start = time.perf_counter()
    code, out, err = run_opt(tmp_path, SPLAT, capsys=capsys)
    assert code == 0, err
    assert "dense<1.500000e+00> : tensor<2147483648xf32>" in out
    assert time.perf_counter() - start < HANG_S


def test_compact_splat_values_match_the_reference():
    text = """func.func @main(%x: tensor<3x4xi32>) -> tensor<3x4xi32> {
  %c = rlx.constant dense<-7> : tensor<3x4xi32>
  %h = rlx.constant dense<"0x02000000"> : tensor<3x4xi32>
  %s = rlx.add %x, %c : (tensor<3x4xi32>, tensor<3x4xi32>) -> tensor<3x4xi32>
  %y = rlx.mul %s, %h : (tensor<3x4xi32>, tensor<3x4xi32>) -> tensor<3x4xi32>
  func.return %y : tensor<3x4xi32>
}
"""
    x = np.arange(12, dtype=np.int32).reshape(3, 4)
    got = rlx.compile(text).run(x)
    got = got[0] if isinstance(got, list | tuple) else got
    np.testing.assert_array_equal(np.asarray(got), (x - 7) * 2)


def test_hex_dense_shape_mismatch_is_a_diagnostic(tmp_path, capsys):
    text = '%c = rlx.constant dense<"0x0100000002000000"> : tensor<3xi32>\n'
    code, _, err = run_opt(tmp_path, text, capsys=capsys)
    assert_diagnostic(code, err, "Shape mismatch in dense literal")


USE_BEFORE_DEF = {
    "self": """func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = rlx.add %0, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
""",
    "later": """func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %1 = rlx.add %0, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %0 = rlx.exp %x : (tensor<4xf32>) -> tensor<4xf32>
  func.return %1 : tensor<4xf32>
}
""",
    "cfg": """func.func @main(%c: i1, %x: i32) -> i32 {
  cf.cond_br %c, ^a, ^b
^a:
  %y = arith.addi %x, %x : i32
  cf.br ^b
^b:
  %z = arith.addi %y, %x : i32
  func.return %z : i32
}
""",
}


@pytest.mark.parametrize("case", sorted(USE_BEFORE_DEF))
def test_dominance_is_verified(tmp_path, capsys, case):
    code, _, err = run_opt(tmp_path, USE_BEFORE_DEF[case], capsys=capsys)
    assert_diagnostic(code, err, "operand #0 does not dominate this use")


def test_dominance_across_blocks_and_graph_regions_accepted(tmp_path, capsys):
    text = """func.func @main(%c: i1, %x: i32) -> i32 {
  %y = arith.addi %x, %x : i32
  cf.cond_br %c, ^a, ^b(%y : i32)
^a:
  %w = arith.addi %y, %x : i32
  cf.br ^b(%w : i32)
^b(%v: i32):
  %z = arith.addi %v, %y : i32
  func.return %z : i32
^dead:
  %u = arith.addi %q, %x : i32
  %q = arith.addi %x, %x : i32
  cf.br ^dead
}
"""
    code, _, err = run_opt(tmp_path, text, capsys=capsys)
    assert code == 0, err


def test_use_before_def_rejected_by_compile():
    with pytest.raises(CompileError, match=r"<string>:2:3: .*does not dominate this use"):
        rlx.compile(USE_BEFORE_DEF["self"])


@pytest.mark.parametrize(
    ("shape", "fragment"),
    [
        ("9223372036854775808", "dimension 9223372036854775808 is outside [0, 2^63 - 1]"),
        ("4294967296x4294967296", "18446744073709551616 elements exceed 2^63 - 1"),
        ("2305843009213693952", "9223372036854775808 bytes exceed 2^63 - 1"),  # 2^61 x f32
    ],
)
def test_shapes_beyond_int64_are_rejected(tmp_path, capsys, shape, fragment):
    text = (
        f"func.func @main(%x: tensor<{shape}xf32>) -> tensor<{shape}xf32> {{\n"
        f"  %y = rlx.exp %x : (tensor<{shape}xf32>) -> tensor<{shape}xf32>\n"
        f"  func.return %y : tensor<{shape}xf32>\n}}\n"
    )
    code, _, err = run_opt(tmp_path, text, capsys=capsys)
    assert_diagnostic(code, err, fragment)
    with pytest.raises(CompileError, match=re.escape(fragment)):
        rlx.compile(text)


def test_private_or_bodiless_entry_is_a_clear_error():
    with pytest.raises(CompileError, match=r"@main is a declaration \(no body\)"):
        rlx.compile("func.func private @main(tensor<4xf32>) -> tensor<4xf32>\n")
    body = "func.func private @main(%x: tensor<4xf32>) -> tensor<4xf32> {\n  func.return %x : tensor<4xf32>\n}\n"
    with pytest.raises(CompileError, match=r"@main is private: the entry function must be public"):
        rlx.compile(body)


def test_block_redeclared_after_a_forward_use_is_a_diagnostic(tmp_path, capsys):
    # xDSL 0.75 raises KeyError here (found by test_fuzz_ir_text)
    text = """func.func @main(%c: i1, %x: i32) -> i32 {
  cf.cond_br %c, ^a, ^a
^a:
  cf.br ^a
^a:
  func.return %x : i32
}
"""
    code, _, err = run_opt(tmp_path, text, capsys=capsys)
    assert_diagnostic(code, err, "re-declaration of block 'a'")
    assert "in.mlir:5:1: error:" in err
