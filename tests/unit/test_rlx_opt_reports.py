"""In-process tests of rlx-opt's report flags: `--fusion-report`, `--dispatch-report`,
`--assert-fusion-clean` (and their environment variables)."""

from __future__ import annotations

from pathlib import Path

import pytest
from opt_cli import run, write

# One fusable matmul + bias + gelu, and one matmul whose user is not an add (a near miss).
MLP = """\
func.func @main(%x: tensor<2x8xf32>, %w: tensor<8x16xf32>, %b: tensor<16xf32>, %w2: tensor<16x4xf32>) -> tensor<2x4xf32> {
  %mm = rlx.matmul %x, %w : (tensor<2x8xf32>, tensor<8x16xf32>) -> tensor<2x16xf32>
  %a = rlx.add %mm, %b : (tensor<2x16xf32>, tensor<16xf32>) -> tensor<2x16xf32>
  %h = rlx.gelu %a : (tensor<2x16xf32>) -> tensor<2x16xf32>
  %d = rlx.matmul %h, %w2 : (tensor<2x16xf32>, tensor<16x4xf32>) -> tensor<2x4xf32>
  %o = rlx.tanh %d : (tensor<2x4xf32>) -> tensor<2x4xf32>
  func.return %o : tensor<2x4xf32>
}
"""

CLEAN = """\
func.func @main(%x: tensor<2x8xf32>, %w: tensor<8x16xf32>, %b: tensor<16xf32>) -> tensor<2x16xf32> {
  %mm = rlx.matmul %x, %w : (tensor<2x8xf32>, tensor<8x16xf32>) -> tensor<2x16xf32>
  %a = rlx.add %mm, %b : (tensor<2x16xf32>, tensor<16xf32>) -> tensor<2x16xf32>
  %s = rlx.silu %a : (tensor<2x16xf32>) -> tensor<2x16xf32>
  func.return %s : tensor<2x16xf32>
}
"""


@pytest.fixture(autouse=True)
def _no_report_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """The reports must come from the flags under test, not from the environment."""
    for var in ("RLX_FUSION_REPORT", "RLX_DISPATCH_REPORT", "RLX_VERBOSE", "RLX_DEBUG"):
        monkeypatch.delenv(var, raising=False)


# --------------------------------------------------------------------------------------
# --fusion-report, --assert-fusion-clean
# --------------------------------------------------------------------------------------

FUSED_SUMMARY = (
    "nodes=9→7 matmul=2→1 fused_mm_act=1 fused_swiglu=0 elementwise_region=0 attention=0 missed=1"
)
UNFUSED_SUMMARY = (
    "nodes=9→9 matmul=2→2 fused_mm_act=0 fused_swiglu=0 elementwise_region=0 attention=0 missed=2"
)


@pytest.mark.parametrize("lower", [[], ["--lower-to-llvm"]])
def test_fusion_report_from_the_fusion_pass(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], lower: list[str]
) -> None:
    code, out, err = run(capsys, write(tmp_path, MLP), "--fusion", "--fusion-report", *lower)
    assert code == 0, err
    assert err.count("fusion report:") == 1
    assert FUSED_SUMMARY in err
    assert "matmul's single user is not an add" in err
    assert "fusion report" not in out


def test_fusion_report_flag_sets_the_pass_option(tmp_path: Path) -> None:
    from rlx.tools.opt_main import RlxOptMain

    src = str(write(tmp_path, MLP))
    tool = RlxOptMain(args=[src, "--fusion", "--fusion-report", "--assert-fusion-clean"])
    (fusion,) = tool.passes
    assert vars(fusion)["report"] is True and vars(fusion)["assert_clean"] is True
    tool = RlxOptMain(args=[src, "-p", "fusion{swiglu=false},dce", "--fusion-report"])
    assert vars(tool.passes[0])["report"] is True
    assert vars(tool.passes[0])["swiglu"] is False
    assert vars(tool.passes[0])["assert_clean"] is False


def test_fusion_report_without_fusion_pass(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, write(tmp_path, MLP), "--fusion-report", "--lower-to-llvm")
    assert code == 0, err
    assert UNFUSED_SUMMARY in err
    assert "matmul + bias left unfused" in err
    assert "llvm.func @main(" in out


def test_fusion_report_env_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RLX_FUSION_REPORT", "1")
    src = write(tmp_path, MLP)
    code, _, err = run(capsys, src, "--fusion", "--lower-to-llvm")
    assert code == 0 and err.count("fusion report:") == 1 and FUSED_SUMMARY in err
    code, _, err = run(capsys, src, "--fusion", "--fusion-report")
    assert code == 0 and err.count("fusion report:") == 1


def test_no_report_without_flags(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, write(tmp_path, MLP), "--fusion", "--lower-to-llvm")
    assert code == 0 and err == ""


def test_assert_fusion_clean_with_fusion_pass(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = write(tmp_path, MLP)
    code, out, err = run(capsys, src, "--fusion", "--assert-fusion-clean", "--lower-to-llvm")
    assert code == 1 and out == ""
    assert f"{src}:5:3: error: fusion contract violated: 1 missed patterns" in err
    assert FUSED_SUMMARY in err
    # Same failure as the pass option.
    code2, _, err2 = run(capsys, src, "-p", "fusion{assert-clean=true}")
    assert code2 == 1
    assert err2.splitlines()[0] == err.splitlines()[0]


def test_assert_fusion_clean_without_fusion_pass(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = write(tmp_path, MLP)
    code, out, err = run(capsys, src, "--assert-fusion-clean", "--lower-to-llvm")
    assert code == 1 and out == ""
    assert f"{src}:1:" not in err
    assert "error: fusion contract violated: 2 missed patterns" in err
    assert UNFUSED_SUMMARY in err
    assert f"{src}:2:3: error:" in err  # located at the first missed op


def test_assert_fusion_clean_passes_clean_graph(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = write(tmp_path, CLEAN)
    code, out, err = run(capsys, src, "--fusion", "--assert-fusion-clean", "--lower-to-llvm")
    assert code == 0, err
    assert err == "" and "llvm.func @main(" in out
    # Unfused, the same graph has a near miss.
    code, _, err = run(capsys, src, "--assert-fusion-clean")
    assert code == 1 and "matmul + bias left unfused" in err


# --------------------------------------------------------------------------------------
# --dispatch-report
# --------------------------------------------------------------------------------------


def test_dispatch_report_before_lowering(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(
        capsys,
        write(tmp_path, MLP),
        "--kernel-dispatch=common",
        "--dispatch-report",
        "--lower-to-llvm",
    )
    assert code == 0, err
    assert 'rlx dispatch report — backend "cpu", policy common, supported_ops claim=0' in err
    assert "    - gelu ×1 op logical" in err
    assert "    - matmul ×2 ops" in err
    assert "rewritten" not in err  # the snapshot is taken before the lowering
    assert "compile-ready: yes" in err
    assert "dispatch report" not in out


CLAIM = "matmul,add,tanh,mul,div,erf"
"""gelu is not claimed: kernel-dispatch decomposes it into claimed kinds."""


def test_dispatch_report_uses_the_pipeline_claim(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(
        capsys,
        write(tmp_path, MLP),
        "-p",
        f"kernel-dispatch{{supported-ops={CLAIM}}},legalize{{supported-ops={CLAIM}}}",
        "--dispatch-report",
    )
    assert code == 0, err
    assert "policy prefer-native, supported_ops claim=6" in err
    assert "common-ir:\n    - gelu ×1 op logical" in err


def test_dispatch_report_without_dispatch_passes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, write(tmp_path, MLP), "--dispatch-report")
    assert code == 0
    assert "policy prefer-native, supported_ops claim=0" in err
    assert (
        "native:\n    - add ×1 op\n    - gelu ×1 op logical\n    - matmul ×2 ops\n    - tanh ×1 op"
        in err
    )


def test_reports_not_printed_when_a_pass_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, write(tmp_path, MLP), "--lower-to-llvm=3", "--dispatch-report")
    assert code == 1
    # The graph part succeeded: its report is printed before the failing lowering.
    assert "rlx dispatch report" in err and "alignment must be a power of two" in err
