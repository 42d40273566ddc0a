"""In-process tests of the `rlx-opt` driver: pass flags, diagnostics, exit codes.

Test-only passes are registered through a subclass of `RlxOptMain` (`opt_probes`), since
the real rlx passes are written elsewhere; `main(..., tool_class=...)` keeps main's error
handling. The diagnostics helpers themselves: `test_diagnostics.py`.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from opt_probes import (
    FUNC,
    NoMainPass,
    ProbeBoolPass,
    ProbeIntPass,
    ProbeOpt,
    ProbeStrPass,
    run_main,
)
from xdsl.context import Context
from xdsl.dialects import builtin
from xdsl.passes import ModulePass

from rlx.diagnostics import (
    emit_warning,
)
from rlx.tools.opt_main import RlxOptMain
from rlx.tools.pass_flags import PassFlag, build_pass_from_flag, split_pass_flags
from rlx.tools.rlx_opt import main, version_string


@pytest.fixture
def input_file(tmp_path: Path) -> Path:
    path = tmp_path / "input.mlir"
    path.write_text(FUNC)
    return path


# --------------------------------------------------------------------------------------
# Version and start-up
# --------------------------------------------------------------------------------------


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("rlx-opt ") and "(xDSL " in out
    assert out.strip() == version_string()


def test_version_is_import_light() -> None:
    """`--version` must answer without importing xDSL's IR (start-up time)."""
    probe = "import sys, rlx; print('xdsl.ir' in sys.modules)"
    heavy_package = subprocess.run(
        [sys.executable, "-c", probe], check=True, capture_output=True, text=True
    ).stdout.strip()
    if heavy_package == "True":
        pytest.skip("`import rlx` itself imports xDSL eagerly (rlx/__init__.py)")
    code = (
        "import sys\n"
        "from rlx.tools.rlx_opt import main\n"
        "assert main(['--version']) == 0\n"
        "heavy = [m for m in ('xdsl.ir', 'xdsl.xdsl_opt_main', 'xdsl.dialects.builtin')"
        " if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)


# --------------------------------------------------------------------------------------
# Registration
# --------------------------------------------------------------------------------------


def test_closed_world_registration(input_file: Path) -> None:
    from rlx.dialects import get_all_dialects
    from rlx.lowering import get_all_lowering_passes
    from rlx.transforms import get_all_passes

    tool = RlxOptMain(args=[str(input_file)])
    assert set(tool.ctx.registered_dialect_names) == set(get_all_dialects())
    rlx_passes = {**get_all_passes(), **get_all_lowering_passes()}
    assert tool.rlx_pass_names == set(rlx_passes)
    for name, factory in rlx_passes.items():
        assert tool.available_passes[name]() is factory()  # rlx overrides upstream names
    assert "convert-scf-to-cf" in tool.available_passes


def test_list_passes(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_main(["--list-passes"]) == 0
    lines = capsys.readouterr().out.splitlines()
    names = [line.split()[0] for line in lines]
    assert names == sorted(names)
    probe = next(line for line in lines if line.startswith("test-probe-str "))
    assert "[xdsl]" in probe and probe.endswith("Test pass with a string main option.")


# --------------------------------------------------------------------------------------
# Pass flags and main options
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("flag", "expected"),
    [
        ("--test-probe-str", ProbeStrPass()),
        ("--test-probe-str=f16", ProbeStrPass(mode="f16")),
        ("--test-probe-str=batch=1,seq=128", ProbeStrPass(mode="batch=1,seq=128")),
        ("--test-probe-str=max-steps=32 swiglu=false", ProbeStrPass(max_steps=32, swiglu=False)),
        ("--test-probe-str=mode=x max_steps=2", ProbeStrPass(mode="x", max_steps=2)),
        ('--test-probe-str=mode="a b"', ProbeStrPass(mode="a b")),
        ("--test-probe-str=f16 max-steps=3", ProbeStrPass(mode="f16 max-steps=3")),
        ("-test-probe-str=f8e4m3", ProbeStrPass(mode="f8e4m3")),
        ("--test-probe-int=7", ProbeIntPass(seed=7)),
        ("--test-probe-int=0x80", ProbeIntPass(seed=128)),
        ("--test-probe-int=seed=3", ProbeIntPass(seed=3)),
        ("--test-probe-bool=false", ProbeBoolPass(enabled=False)),
        ("--test-probe-bool=yes", ProbeBoolPass(enabled=True)),
        ("--test-probe-bool=sizes=1,2,3", ProbeBoolPass(sizes=(1, 2, 3))),
        ("--test-no-main=level=3", NoMainPass(level=3)),
    ],
)
def test_pass_flag_values(input_file: Path, flag: str, expected: ModulePass) -> None:
    tool = ProbeOpt(args=[str(input_file), flag])
    assert tool.passes == [expected]


def test_pass_flags_keep_command_line_order(input_file: Path) -> None:
    tool = ProbeOpt(args=["--test-probe-int=1", str(input_file), "--cse", "--test-probe-int=2"])
    assert [p.name for p in tool.passes] == ["test-probe-int", "cse", "test-probe-int"]
    assert tool.passes[0] == ProbeIntPass(seed=1)
    assert tool.passes[2] == ProbeIntPass(seed=2)
    assert tool.args.input_file == str(input_file)


def test_pass_flag_does_not_swallow_input_file() -> None:
    rest, flags = split_pass_flags(["--cse", "in.mlir", "--", "--cse"], ["cse"])
    assert rest == ["in.mlir", "--", "--cse"]
    assert flags == [PassFlag("cse", None, "--cse")]


def test_pipeline_options(input_file: Path) -> None:
    tool = ProbeOpt(args=[str(input_file), "-p", "test-probe-str{max-steps=4},cse"])
    assert tool.passes[0] == ProbeStrPass(max_steps=4)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--test-probe-int=abc"], "invalid value 'abc' for option 'seed'"),
        (["--test-probe-bool=maybe"], "expected a boolean"),
        (["--test-no-main=3"], "declares no main option"),
        (["--test-no-main=levle=3"], "unknown option 'levle'"),
        (["--test-bad-main=x"], "declares main_option='missing'"),
        (["-p", "test-probe-int{seed=x}"], "invalid options for pass 'test-probe-int'"),
        (["-p", "nope"], "unknown pass 'nope'"),
        (["-p", "cse", "--cse"], "cannot be combined with pass flags"),
    ],
)
def test_bad_pass_options(
    input_file: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    assert run_main([str(input_file), *args]) == 1
    err = capsys.readouterr().err
    assert message in err
    assert "Traceback" not in err


def test_main_option_conversion_direct() -> None:
    assert build_pass_from_flag(ProbeIntPass, PassFlag("test-probe-int", "42", "--x")) == (
        ProbeIntPass(seed=42)
    )


# --------------------------------------------------------------------------------------
# Running, diagnostics and exit codes
# --------------------------------------------------------------------------------------


def test_runs_passes_and_prints(input_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_main([str(input_file), "--test-probe-str=max-steps=2", "--cse"]) == 0
    assert 'probe = "default/2"' in capsys.readouterr().out


def test_output_file(input_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.mlir"
    assert run_main([str(input_file), "-o", str(out)]) == 0
    assert "arith.addi" in out.read_text()


def test_stdin_name(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    bad = "func.func @f(%x: i64) -> i32 {\n  func.return %x : i64\n}\n"
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(bad.encode())))
    assert run_main(["-"]) == 1
    err = capsys.readouterr().err
    assert err.startswith(
        "<stdin>:2:3: error: 'func.return' op Expected arguments to have the same types"
    )
    assert err.splitlines()[1:3] == ["  func.return %x : i64", "  ^"]


def test_missing_input(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_main(["/nonexistent/x.mlir"]) == 1
    assert "cannot read input file '/nonexistent/x.mlir'" in capsys.readouterr().err


def test_pass_error_is_located(input_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_main([str(input_file), "--test-fail-at-return"]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    name = str(input_file)
    assert captured.err.splitlines() == [
        f"{name}:1:1: warning: visiting f",
        "func.func @f(%x: i32) -> i32 {",
        "^",
        f"{name}:3:3: error: cannot handle this return",
        "  func.return %0 : i32",
        "  ^",
        f"{name}:1:1: note: in here",
        "func.func @f(%x: i32) -> i32 {",
        "^",
    ]


def test_verify_after_pass(input_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_main([str(input_file), "--test-break-ir", "--print-ir-after-all"]) == 1
    err = capsys.readouterr().err
    assert (
        f"{input_file}:3:3: error: 'func.return' op Expected arguments to have the same types"
        in err
    )
    assert "// -----// IR Dump After test-break-ir Failed //----- //" in err


def test_verify_diagnostics_with_pass(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "diag.mlir"
    path.write_text(
        "// expected-warning @+2 {{visiting f}}\n"
        "// expected-note @+1 {{in here}}\n"
        "func.func @f(%x: i32) -> i32 {\n"
        "  func.return %x : i32 // expected-error {{cannot handle}}\n"
        "}\n"
    )
    assert run_main([str(path), "--test-fail-at-return", "--verify-diagnostics"]) == 0
    assert capsys.readouterr().err == ""
    path.write_text(path.read_text().replace("cannot handle", "can handle"))
    assert run_main([str(path), "--test-fail-at-return", "--verify-diagnostics"]) == 1
    err = capsys.readouterr().err
    assert "error: unexpected error: cannot handle this return" in err
    assert 'error: expected error "can handle" was not produced' in err


def test_warnings_do_not_fail(input_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A warning is printed but the exit code stays 0 and the IR is printed."""

    @dataclass(frozen=True)
    class WarnPass(ModulePass):
        name = "test-warn"

        def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
            emit_warning(op.body.block.first_op, "just saying")

    class Tool(ProbeOpt):
        def register_all_passes(self) -> None:
            super().register_all_passes()
            self.register_pass("test-warn", lambda: WarnPass)

    assert main([str(input_file), "--test-warn"], tool_class=Tool) == 0
    captured = capsys.readouterr()
    assert "func.func @f" in captured.out
    assert f"{input_file}:1:1: warning: just saying" in captured.err


def test_internal_error(
    input_file: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("RLX_DEBUG", raising=False)
    assert run_main([str(input_file), "--test-crash"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(
        "rlx-opt: internal error (while running pass 'test-crash'): RuntimeError: boom\n"
    )
    assert "RLX_DEBUG=1" in err and "Traceback" not in err

    monkeypatch.setenv("RLX_DEBUG", "1")
    assert run_main([str(input_file), "--test-crash"]) == 2
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err and 'raise RuntimeError("boom")' in err


def test_usage_errors_exit_1(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_main(["--no-such-flag"]) == 1
    assert "unrecognized arguments: --no-such-flag" in capsys.readouterr().err
    assert run_main(["-t", "nope"]) == 1


def test_rlx_opt_main_run_returns_code(input_file: Path) -> None:
    assert RlxOptMain(args=[str(input_file), "--cse"]).run() == 0


def test_split_input_keeps_line_numbers(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "split.mlir"
    path.write_text(FUNC + "// -----\n" + FUNC.replace("%x : i32", "%y : i32"))
    assert run_main([str(path), "--split-input-file"]) == 1
    captured = capsys.readouterr()
    assert captured.out.count("builtin.module") == 1
    assert f"{path}:7:23: error:" in captured.err  # line 7 of the file, 2nd chunk


def test_tools_wrapper_runs_from_checkout() -> None:
    wrapper = Path(__file__).resolve().parents[2] / "tools" / "rlx-opt"
    assert os.access(wrapper, os.X_OK)
    result = subprocess.run(
        [sys.executable, str(wrapper), "--version"], capture_output=True, text=True, check=True
    )
    assert result.stdout.startswith("rlx-opt ")
