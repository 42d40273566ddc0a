"""What `tools/fuzz/fuzz_cli.py` found (rlx-opt internal errors, exit 2, on mutated
shipped .mlir files), one row each: every input is a located diagnostic with exit 1,
through `rlx-opt` and through `rlx.compile` (docs/fuzzing.md).

* xDSL's parsers raising AssertionError / ValueError / IndexError / OverflowError on
  malformed text (`rlx.parser.MALFORMED_TEXT_ERRORS`: reported at the op);
* xDSL verifiers raising a bare `Exception` (`rlx.ir_checks.FOREIGN_VERIFIER_ERRORS`);
* rlx graph passes on a function with several blocks (`rlx.ir_checks.graph_block`).
"""

from __future__ import annotations

import os
import re

import pytest

import rlx
from rlx.runtime.compiler import CompileError
from rlx.tools.rlx_opt import main

LOCATED = re.compile(r"^in\.mlir:(\d+):(\d+): error: (.*)$", re.M)

SWITCH = """func.func @switch(%i: i32) {{
  cf.switch %i : {t}, [
    default: ^bb1,
    {v}: ^bb1
  ]
^bb1:
  func.return
}}
"""
PARSE_CASES = [
    ("%b = rlx.constant dense<3.0> : tensor<complex<f32>>\n", "malformed 'rlx.constant' op"),
    ("%b = rlx.constant dense<3.0e+300> : tensor<f32>\n",
     "invalid 'rlx.constant' op: a literal is out of the range of its element type"),
    ("%b = rlx.constant dense<70000> : tensor<2xi16>\n", "invalid 'rlx.constant' op: Integer value"),
    (SWITCH.format(t="i32", v="4294967296"), "invalid 'cf.switch' op: Integer value 4294967296"),
    (SWITCH.format(t="f16", v="0"), "malformed 'cf.switch' op: the parser failed (AssertionError"),
    ("linalg.add @f(%x: tensor<2x3xf32>) {\n  func.return\n}\n", "malformed 'linalg.add' op"),
    ("""func.func @f(%a: memref<4xf32>) {
  linalg.generic {indexing_maps = [affine_map<(i) -> (i)>], iterator_types = ["bogus"]}
    outs(%a : memref<4xf32>) {
  ^bb0(%o: f32):
    linalg.yield %o : f32
  }
  func.return
}
""", "invalid 'linalg.generic' op: 'bogus' is not a valid IteratorType"),
    # session 8 (hand-written): xDSL said only " in block definition"
    ("func.func @f(%x: f32) -> f32 {\n  func.return %x : f32\n",
     "expected '}' to close the region (or a block label) before the end of the input"),
    ("func.func @f(%x: f32) -> f32 {\n  func.return %x : f32\n  )\n}\n",
     "expected '}' to close the region (or a block label) before this token"),
]  # fmt: skip
DUP = "func.func @f() {\n  func.return\n}\nfunc.func @f() {\n  func.return\n}\n"
VERIFY_CASES = [
    ("""func.func @f(%g: memref<2x2xf32>) -> f32 {
  %c1 = arith.constant 1 : index
  %v = memref.load %g[%c1, %c1, %c1] : memref<2x2xf32>
  func.return %v : f32
}
""", "'memref.load' op expected an index for each dimension"),
    # session 9: xDSL's SymbolTable check reported it at the module, without a line
    (DUP, 'redefinition of symbol "f" (defined earlier in the module)'),
    # session 9: an empty tensor with huge other dims compiled, then `rlx.compile` raised
    # NumPy's bare "array is too big" making its strides
    ("""func.func @main(%x: tensor<0x4611686018427387904xf32>) -> tensor<0x4611686018427387904xf32> {
  %y = rlx.exp %x : (tensor<0x4611686018427387904xf32>) -> tensor<0x4611686018427387904xf32>
  func.return %y : tensor<0x4611686018427387904xf32>
}
""", "its strides span 18446744073709551616 bytes, beyond 2^63 - 1"),
]  # fmt: skip
MULTI_BLOCK = """func.func @main(%c: i1, %x: tensor<4xf32>) -> tensor<4xf32> {
  %y = rlx.exp %x : (tensor<4xf32>) -> tensor<4xf32>
  cf.cond_br %c, ^a, ^b(%y : tensor<4xf32>)
^a:
  %z = rlx.neg %y : (tensor<4xf32>) -> tensor<4xf32>
  cf.br ^b(%z : tensor<4xf32>)
^b(%v: tensor<4xf32>):
  func.return %v : tensor<4xf32>
}
"""


def test_duplicate_function_is_located_at_the_second_one(tmp_path, capsys) -> None:
    code, err = run_opt(tmp_path, capsys, DUP)
    m = LOCATED.search(err)
    assert code == 1 and m is not None and (m.group(1), m.group(2)) == ("4", "1"), err


def run_opt(tmp_path, capsys, text: str, *flags: str) -> tuple[int, str]:
    (tmp_path / "in.mlir").write_text(text)
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        code = main(["in.mlir", *flags])
    finally:
        os.chdir(cwd)
    return code, capsys.readouterr().err


@pytest.mark.parametrize(("text", "message"), PARSE_CASES + VERIFY_CASES)
def test_malformed_ops_are_located_diagnostics(tmp_path, capsys, text, message) -> None:
    code, err = run_opt(tmp_path, capsys, text)
    assert code == 1, err
    assert "internal error" not in err and "Traceback" not in err, err
    m = LOCATED.search(err)
    assert m is not None and message in m.group(3), err
    with pytest.raises(CompileError, match=re.escape(message)):
        rlx.compile(text)


@pytest.mark.parametrize(
    "passes",
    [
        'bind-dims{dims="n=2"}',
        "fold-batch-norm",
        "hoist-param-invariant",
        "pack-weights",
        "blocked-layout",
    ],
)
def test_graph_passes_refuse_multi_block_functions(tmp_path, capsys, passes) -> None:
    code, err = run_opt(tmp_path, capsys, MULTI_BLOCK, "-p", passes)
    assert code == 1, err
    name = passes.split("{")[0]
    assert f"error: {name}: @main must have a single block (it has 3)" in err, err


@pytest.mark.parametrize(
    "passes", ["precision{precision=bf16}", "precision-policy{policy=auto-mixed}"]
)
def test_precision_refuses_multi_block_functions(tmp_path, capsys, passes) -> None:
    code, err = run_opt(tmp_path, capsys, MULTI_BLOCK, "-p", passes)
    assert code == 1 and "error: precision: @main must have a single block" in err, err
    code, err = run_opt(tmp_path, capsys, MULTI_BLOCK, "-p", "dce")
    assert code == 0, err  # dce leaves CFG functions' returns alone


def test_compile_refuses_a_multi_block_entry() -> None:
    with pytest.raises(CompileError, match=r"@main has 3 blocks: a graph function is one block"):
        rlx.compile(MULTI_BLOCK)


LOWERED = """func.func private @k1(memref<4xf32>, memref<4xf32>) -> ()
func.func @main(%x: memref<4xf32> {{rlx.kind = "input", rlx.name = "x"}}, %out0: memref<4xf32> {attrs}) {{
  func.call @k1(%x, %out0) : (memref<4xf32>, memref<4xf32>) -> ()
  func.return
}}
"""


def test_compile_refuses_calls_of_undefined_functions() -> None:
    """A lowered module calling a declared-only function segfaulted (call of address 0)."""
    text = LOWERED.format(attrs='{rlx.kind = "output", rlx.name = "out0"}')
    with pytest.raises(CompileError, match=r"calls undefined function\(s\) @k1"):
        rlx.compile(text)
    with pytest.raises(CompileError, match=r"argument 1 lacks rlx.kind/rlx.name"):
        rlx.compile(LOWERED.format(attrs=""))


PREPARED = """func.func @prepare() -> tensor<4xf32> attributes {{rlx.prepare_for = "main"}} {{
  %w = rlx.param "w" : tensor<4xf32>
  %t = rlx.exp %w : (tensor<4xf32>) -> tensor<4xf32>
  func.return %t : tensor<4xf32>
}}
func.func @main(%x: tensor<{n}xf32>, %p: tensor<{n}xf32> {{rlx.kind = "prepared", rlx.name = "{name}"}}) -> tensor<{n}xf32> {{
  %y = rlx.add %x, %p : (tensor<{n}xf32>, tensor<{n}xf32>) -> tensor<{n}xf32>
  func.return %y : tensor<{n}xf32>
}}
"""


@pytest.mark.parametrize(
    ("n", "name", "message"),
    [
        (4, "nchwc", "prepared argument 'nchwc' is not computed by a @prepare function"),
        (
            64,
            "__rlx_prep_0",
            "prepared argument '__rlx_prep_0' is float32 [64], but @prepare computes float32 [4]",
        ),
    ],
)
def test_prepared_arguments_must_match_prepare(n, name, message) -> None:
    """A hand-hoisted module naming a value @prepare does not compute: a KeyError at the
    first run, or (another size) a read out of bounds."""
    with pytest.raises(CompileError, match=re.escape(message)):
        rlx.compile(PREPARED.format(n=n, name=name))
    import numpy as np

    g = rlx.compile(PREPARED.format(n=4, name="__rlx_prep_0"))
    g.set_param("w", np.zeros(4, np.float32))
    np.testing.assert_array_equal(g.run(np.ones(4, np.float32))[0], np.full(4, 2, np.float32))


@pytest.mark.parametrize("n", ["0", "-3"])
def test_rlx_run_bench_needs_a_positive_count(capsys, n) -> None:
    from pathlib import Path

    from rlx.tools.rlx_run import main as run_main

    mlp = Path(__file__).resolve().parents[2] / "examples" / "mlp.mlir"
    assert run_main([str(mlp), "--bench", n]) == 1
    assert f"--bench: must be a positive number of runs, got {int(n)}" in capsys.readouterr().err


def test_rlx_bake_unknown_entry_is_an_error() -> None:
    """A module's only function is the default entry; an explicit other name is an error
    (it was silently ignored)."""
    from rlx.bake.bake import entry_func

    module = rlx.Graph("f")
    module.output(module.input("x", (2,), "f32"))
    assert entry_func(module.module).sym_name.data == "f"
    with pytest.raises(ValueError, match=r"no function @nope in the module \(functions: @f\)"):
        entry_func(module.module, "nope")


def test_graph_needing_more_memory_than_the_machine_is_refused() -> None:
    """An ONNX AveragePool with pads of 2^40 compiled to a 12 TiB output (a MemoryError, or
    worse, lazily allocated pages, at the first run)."""
    n = 2**40 + 3
    text = f"""func.func @main(%x: tensor<1x1x4x4xf32>) -> tensor<1x1x{n}x3xf32> {{
  %y = rlx.pool2d %x {{kind = "avg", kernel = array<i64: 2, 2>, strides = array<i64: 1, 1>, padding = array<i64: {2**40}, 0, 0, 0>}} : (tensor<1x1x4x4xf32>) -> tensor<1x1x{n}x3xf32>
  func.return %y : tensor<1x1x{n}x3xf32>
}}
"""
    with pytest.raises(CompileError, match=r"@main needs 12288.0 GiB per run .* this machine has"):
        rlx.compile(text)


def test_negative_equivalence_seed_is_a_usage_error(tmp_path, capsys) -> None:
    code, err = run_opt(tmp_path, capsys, MULTI_BLOCK, "--check-equivalence-seed", "-1")
    assert code == 1 and "--check-equivalence-seed: must be a non-negative integer, got -1" in err


LONG_SCAN = """func.func @main(%init: tensor<2xf32>, %w: tensor<2xf32>) -> tensor<2xf32> {
  %c = rlx.scan (%init) over () {length = 4294967296 : i64} : (tensor<2xf32>), () -> (tensor<2xf32>) {
  ^bb0(%carry: tensor<2xf32>):
    %n = rlx.mul %carry, %w : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    rlx.yield %n : tensor<2xf32>
  }
  func.return %c : tensor<2xf32>
}
"""


def test_equivalence_check_skips_what_it_cannot_interpret_in_time(tmp_path, capsys) -> None:
    """session 8 (fuzz_cli --mode opt): the reference interpreter ran the 2^32 steps of a
    scan before and after each pass: a hang. Over `MAX_CHECK_STEPS` it is not checked."""
    import time

    from rlx.interpreter import parse_module
    from rlx.runtime.equivalence import MAX_CHECK_STEPS, _Unchecked, snapshot

    start = time.monotonic()
    code, err = run_opt(tmp_path, capsys, LONG_SCAN, "--check-equivalence", "-p", "canonicalize")
    assert code == 0, err
    assert time.monotonic() - start < 60
    with pytest.raises(_Unchecked, match=r"too large to interpret \(\d+ steps"):
        snapshot(parse_module(LONG_SCAN.replace("4294967296", str(MAX_CHECK_STEPS))), 0)
    snapshot(parse_module(LONG_SCAN.replace("4294967296", "3")), 0)  # small: checked


ARENA = """func.func @main(%x: memref<4xf32> {{rlx.kind = "input", rlx.name = "x"}}, %o: memref<4xf32> {{rlx.kind = "{kind}", rlx.name = "o"}}, %a: memref<1024xi8> {{rlx.kind = "arena", rlx.name = "arena"}}) attributes {{rlx.arena_bytes = {n} : i64}} {{
  func.return
}}
"""


@pytest.mark.parametrize(
    ("kind", "n", "message"),
    [
        ("output", 64, "the arena argument holds 1024 bytes but rlx.arena_bytes is 64"),
        ("bogus", 1024, "unexpected argument kinds order 'i?a'"),
    ],
)
def test_lowered_signature_must_match_its_buffers(kind, n, message) -> None:
    """The runtime sizes every buffer from the signature (the arena from rlx.arena_bytes):
    a lowered module whose types say more would be run out of bounds."""
    with pytest.raises(CompileError, match=re.escape(message)):
        rlx.compile(ARENA.format(kind=kind, n=n))


@pytest.mark.parametrize(
    ("passes", "message"),
    [
        ("constant-folding{max-elements=-1}", "constant-folding: max-elements must be >= 0, got -1"),
        ("convert-memref-to-llvm{max-alloca-bytes=-1}", "max-alloca-bytes and max-stack-bytes must be >= 0"),
        ("convert-rlx-to-linalg{rng-seed=-1}", "convert-rlx-to-linalg: rng-seed must be in [0, 2**64), got -1"),
    ],
)  # fmt: skip
def test_negative_pass_options_are_errors(tmp_path, capsys, passes, message) -> None:
    """Accepted silently before (the rng pass already refused a negative seed)."""
    code, err = run_opt(
        tmp_path, capsys, "%x = rlx.constant dense<1.0> : tensor<2xf32>\n", "-p", passes
    )
    assert code == 1 and message in err, err
