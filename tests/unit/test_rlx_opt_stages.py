"""In-process tests of rlx-opt's pipeline-stage flags: `--lower-to-llvm`,
`--emit=mlir|llvm-ir|asm` (the report flags: `test_rlx_opt_reports.py`).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from opt_cli import run, write

BROADCAST_ADD = """\
func.func @main(%x: tensor<4x8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %y = rlx.add %x, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %z = rlx.relu %y : (tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return %z : tensor<4x8xf32>
}
"""

REDUCTION = """\
func.func @main(%x: tensor<8x64xf32>) -> tensor<8xf32> {
  %sq = rlx.mul %x, %x : (tensor<8x64xf32>, tensor<8x64xf32>) -> tensor<8x64xf32>
  %s = rlx.reduce %sq {kind = "sum", axes = array<i64: -1>} : (tensor<8x64xf32>) -> tensor<8xf32>
  func.return %s : tensor<8xf32>
}
"""


LOOPS_TO_LLVM = (
    "convert-linalg-to-loops,convert-scf-to-cf,expand-small-floats,convert-to-llvm,"
    "retype-small-floats,reconcile-unrealized-casts"
)


@pytest.fixture(autouse=True)
def _no_report_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """The reports must come from the flags under test, not from the environment."""
    for var in ("RLX_FUSION_REPORT", "RLX_DISPATCH_REPORT", "RLX_VERBOSE", "RLX_DEBUG"):
        monkeypatch.delenv(var, raising=False)


def has_avx2() -> bool:
    try:
        import llvmlite.binding as llvm

        return bool(llvm.get_host_cpu_features().get("avx2", False))
    except Exception:
        return False


# --------------------------------------------------------------------------------------
# lower-to-llvm
# --------------------------------------------------------------------------------------


def test_lower_to_llvm_is_registered_and_composed() -> None:
    from rlx.lowering import get_all_lowering_passes
    from rlx.lowering.lower_to_llvm import LowerToLLVMPass

    cls = get_all_lowering_passes()["lower-to-llvm"]()
    assert cls is LowerToLLVMPass
    stages = LowerToLLVMPass(alignment=128).pipeline()
    assert [p.name for p in stages] == [
        "convert-rlx-to-linalg",
        "plan-memory",
        "split-graph",
        *LOOPS_TO_LLVM.split(","),
    ]
    assert vars(stages[1])["alignment"] == 128
    assert LowerToLLVMPass().alignment == 64
    assert vars(stages[2])["max_calls"] == 256
    assert vars(LowerToLLVMPass(max_calls=8).pipeline()[2])["max_calls"] == 8


def test_lower_to_llvm_equals_the_passes_one_by_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = write(tmp_path, REDUCTION)
    code, combined, err = run(capsys, src, "--lower-to-llvm")
    assert code == 0, err
    code, separate, err = run(
        capsys, src, "-p", f"convert-rlx-to-linalg,plan-memory,split-graph,{LOOPS_TO_LLVM}"
    )
    assert code == 0, err
    assert combined == separate
    assert "llvm.func @main(" in combined
    assert "func.func" not in combined and "linalg." not in combined
    assert "llvm.noalias" in combined
    assert "#llvm.fastmath<reassoc,contract>" in combined


def test_lower_to_llvm_alignment(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = write(
        tmp_path,
        """\
func.func @main(%x: tensor<10xf32>) -> tensor<10xf32> {
  %a = rlx.exp %x : (tensor<10xf32>) -> tensor<10xf32>
  %b = rlx.exp %a : (tensor<10xf32>) -> tensor<10xf32>
  %c = rlx.add %a, %b : (tensor<10xf32>, tensor<10xf32>) -> tensor<10xf32>
  func.return %c : tensor<10xf32>
}
""",
    )
    _, default, _ = run(capsys, src, "--lower-to-llvm")
    _, flag, _ = run(capsys, src, "--lower-to-llvm=256")
    _, option, _ = run(capsys, src, "-p", "lower-to-llvm{alignment=256}")
    assert "llvm.dereferenceable = 128 : i64}" in default
    assert "llvm.mlir.constant(64) : i64" in default
    assert flag == option
    assert "llvm.dereferenceable = 512 : i64}" in flag
    assert "llvm.mlir.constant(256) : i64" in flag
    code, out, err = run(capsys, src, "--lower-to-llvm=3")
    assert code == 1 and out == ""
    assert "plan-memory: alignment must be a power of two, got 3" in err


def test_lower_to_llvm_is_one_pass_in_ir_dumps(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(
        capsys, write(tmp_path, BROADCAST_ADD), "--lower-to-llvm", "--print-ir-after-all"
    )
    assert code == 0
    headers = [line for line in err.splitlines() if "IR Dump After" in line]
    assert headers == ["// -----// IR Dump After lower-to-llvm //----- //"]


def test_lower_to_llvm_after_convert_rlx_to_linalg(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = write(tmp_path, BROADCAST_ADD)
    code, out, err = run(capsys, src, "--convert-rlx-to-linalg", "--lower-to-llvm")
    # A module already at memref level: convert-rlx-to-linalg has nothing left to do.
    assert code == 0, err
    assert "llvm.func @main(" in out


# --------------------------------------------------------------------------------------
# --emit
# --------------------------------------------------------------------------------------


def test_emit_mlir_is_the_default(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = write(tmp_path, BROADCAST_ADD)
    _, default, _ = run(capsys, src, "--lower-to-llvm")
    _, explicit, _ = run(capsys, src, "--lower-to-llvm", "--emit=mlir")
    _, spaced, _ = run(capsys, src, "--lower-to-llvm", "--emit", "mlir")
    assert default == explicit == spaced
    assert default.startswith("builtin.module {")


def test_emit_llvm_ir(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(
        capsys, write(tmp_path, BROADCAST_ADD), "--lower-to-llvm", "--emit=llvm-ir"
    )
    assert code == 0, err
    assert out.startswith("; ModuleID = 'rlx'")
    assert "define void @main(ptr noalias dereferenceable(128) %" in out
    assert "define internal void @rlx_k" in out
    assert "getelementptr inbounds float, ptr" in out
    assert "fadd contract float" in out
    assert "builtin.module" not in out
    import llvmlite.binding as llvm

    llvm.parse_assembly(out).verify()  # valid LLVM IR


def test_emit_llvm_ir_is_to_llvm_ir(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from xdsl.context import Context

    from rlx.dialects import get_all_dialects
    from rlx.lowering.llvm_ir import to_llvm_ir
    from rlx.lowering.lower_to_llvm import LowerToLLVMPass
    from rlx.parser import LocatingParser

    ctx = Context()
    for name, factory in get_all_dialects().items():
        ctx.register_dialect(name, factory)
    module = LocatingParser(ctx, REDUCTION, "in.mlir").parse_located_module(True)
    LowerToLLVMPass().apply(ctx, module)
    _, out, _ = run(capsys, write(tmp_path, REDUCTION), "--lower-to-llvm", "--emit=llvm-ir")
    expected = to_llvm_ir(module)
    assert out == (expected if expected.endswith("\n") else expected + "\n")


def test_emit_asm(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, write(tmp_path, REDUCTION), "--lower-to-llvm", "--emit=asm")
    assert code == 0, err
    assert "main:" in out
    assert "define void" not in out
    if has_avx2():  # O3 for the host: vectorized with 256-bit registers
        assert "vmulps" in out and "vaddps" in out and "%ymm" in out


def test_emit_to_output_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    dest = tmp_path / "out.ll"
    code, out, _ = run(
        capsys, write(tmp_path, BROADCAST_ADD), "--lower-to-llvm", "--emit=llvm-ir", "-o", dest
    )
    assert code == 0 and out == ""
    assert "define void @main(ptr noalias" in dest.read_text()


def test_emit_per_chunk(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = write(tmp_path, BROADCAST_ADD + "// -----\n" + REDUCTION)
    code, out, err = run(capsys, src, "--split-input-file", "--lower-to-llvm", "--emit=llvm-ir")
    assert code == 0, err
    assert out.count("define void @main(") == 2


@pytest.mark.parametrize("emit", ["llvm-ir", "asm"])
@pytest.mark.parametrize(
    "pipeline", [[], ["--convert-rlx-to-linalg"], ["-p", "convert-rlx-to-linalg,plan-memory"]]
)
def test_emit_needs_llvm_dialect(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], emit: str, pipeline: list[str]
) -> None:
    code, out, err = run(capsys, write(tmp_path, BROADCAST_ADD), *pipeline, f"--emit={emit}")
    assert code == 1
    assert out == ""
    assert f"--emit={emit} needs the llvm dialect: add --lower-to-llvm" in err
    # the first op not in the llvm dialect: lowered, the module starts with the constant
    # tables of the elementwise workers
    first = "memref.global" if pipeline else "func.func"
    assert f"(the module still has '{first}')" in err
    assert "internal error" not in err


def test_emit_half_lowered_module_names_the_offender(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(
        capsys,
        write(tmp_path, BROADCAST_ADD),
        "-p",
        "convert-rlx-to-linalg,plan-memory,convert-linalg-to-loops",
        "--emit=llvm-ir",
    )
    assert code == 1
    assert "needs the llvm dialect" in err


def test_emit_invalid_choice(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, write(tmp_path, BROADCAST_ADD), "--emit=bitcode")
    assert code == 1 and out == ""
    assert "argument --emit: invalid choice: 'bitcode'" in err


def test_emit_with_target(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(
        capsys, write(tmp_path, BROADCAST_ADD), "--lower-to-llvm", "--emit=asm", "-t", "llvm"
    )
    assert code == 1
    assert "--emit=asm cannot be combined with -t/--target llvm" in err


def test_emit_internal_error_names_emit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import rlx.runtime.jit as jit

    def broken(module: object) -> str:
        raise RuntimeError("emitter exploded")

    monkeypatch.setattr(jit, "to_llvm_ir", broken)
    code, _, err = run(capsys, write(tmp_path, BROADCAST_ADD), "--lower-to-llvm", "--emit=llvm-ir")
    assert code == 2
    assert "internal error (while printing the output with --emit=llvm-ir)" in err
    assert "emitter exploded" in err


def test_help_lists_the_flags(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--help")
    assert code == 0
    for flag in (
        "--emit",
        "--fusion-report",
        "--dispatch-report",
        "--assert-fusion-clean",
        "--lower-to-llvm",
    ):
        assert flag in out


def test_opt_main_import_stays_light() -> None:
    """The driver imports the JIT and the report modules only when asked."""
    code = (
        "import sys\n"
        "import rlx.tools.opt_main\n"
        "heavy = [m for m in ('llvmlite', 'rlx.runtime.jit', 'rlx.transforms.fusion_report',"
        " 'rlx.lowering.lower_to_llvm') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)
