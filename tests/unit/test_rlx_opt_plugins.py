"""Out-of-tree passes and dialects, the static pass index, mlir-opt pipelines, and
translation validation (`--check-equivalence`, `CompileOptions(check_equivalence=True)`)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from xdsl.dialects import builtin

from rlx.runtime import equivalence
from rlx.runtime.options import CompileOptions
from rlx.tools import pass_index
from rlx.tools.pass_flags import PassOptionError, mlir_pipeline_to_xdsl
from rlx.tools.rlx_opt import main

ROOT = Path(__file__).resolve().parents[2]

PLUGIN = '''
from dataclasses import dataclass
from xdsl.dialects.builtin import StringAttr
from xdsl.passes import ModulePass
from xdsl.universe import Universe


@dataclass(frozen=True)
class Mark(ModulePass):
    """Mark the module."""

    name = "fake-mark"
    value: str = "v"

    def apply(self, ctx, op):
        op.attributes["fake.mark"] = StringAttr(self.value)


UNIVERSE = Universe(all_passes={"fake-mark": lambda: Mark})
'''

NEG_RELU = """\
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = rlx.neg %x : (tensor<4xf32>) -> tensor<4xf32>
  %b = rlx.relu %a : (tensor<4xf32>) -> tensor<4xf32>
  func.return %b : tensor<4xf32>
}
"""


def _fake_distribution(root: Path) -> None:
    """An installed distribution with an `xdsl.universe` entry point, on `root`."""
    (root / "fakeplug").mkdir()
    (root / "fakeplug" / "__init__.py").write_text(PLUGIN)
    info = root / "fakeplug-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: fakeplug\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[xdsl.universe]\nfake = fakeplug:UNIVERSE\n")


def test_entry_point_plugin_in_rlx_opt_and_compile(tmp_path: Path) -> None:
    _fake_distribution(tmp_path)
    source = tmp_path / "in.mlir"
    source.write_text(NEG_RELU)
    code = textwrap.dedent(
        f"""
        import contextlib, io
        from rlx.tools.rlx_opt import main
        import rlx
        from rlx.runtime.options import CompileOptions
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            assert main(["--list-passes"]) == 0
            assert main([{str(source)!r}, "-p", "fake-mark{{value=x}}"]) == 0
        assert "fake-mark" in out.getvalue() and "[plugin]" in out.getvalue()
        assert 'fake.mark = "x"' in out.getvalue()
        g = rlx.compile({str(source)!r}, CompileOptions(extra_passes={{"after:dce": "fake-mark{{value=y}}"}}))
        assert 'fake.mark = "y"' in g.ir("rlx")
        print("ok")
        """
    )
    env = {"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin", "RLX_NUM_THREADS": "1"}
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().endswith("ok")


def test_extra_passes_validation() -> None:
    with pytest.raises(ValueError, match="must be 'before:STAGE' or 'after:STAGE'"):
        CompileOptions(extra_passes={"during:fusion": "cse"})
    with pytest.raises(ValueError, match="expected a pass pipeline string"):
        CompileOptions(extra_passes={"after:fusion": ""})
    import rlx

    with pytest.raises(ValueError, match="unknown stage 'fuse' in 'after:fuse'; stages: .*fusion"):
        rlx.compile(NEG_RELU, CompileOptions(extra_passes={"after:fuse": "cse"}))
    with pytest.raises(ValueError, match="invalid pipeline 'no-such-pass'"):
        rlx.compile(NEG_RELU, CompileOptions(extra_passes={"after:fusion": "no-such-pass"}))


def test_extra_passes_run_at_their_stage() -> None:
    import rlx

    opts = CompileOptions(extra_passes={"before:canonicalize": "cse", "after:rng": "dce"})
    plan = __import__("rlx.runtime.option_pipeline", fromlist=["build_plan"]).build_plan(
        opts, Path(".")
    )
    names = [p.name for p in plan.passes]
    assert names.index("cse") < names.index("canonicalize")
    assert names.index("rng") < len(names) - 1 - names[::-1].index("dce")
    g = rlx.compile(NEG_RELU, opts)
    x = np.array([-1, 2, -3, 4], np.float32)
    assert np.array_equal(g.run(x)[0], np.maximum(-x, 0))


def test_pass_index_matches_the_pass_classes() -> None:
    """pass_index_data.py is generated from the classes: regenerate it when this fails."""
    assert pass_index.main([]) == 0, "run: python -m rlx.tools.pass_index --write"


def test_list_passes_imports_no_pass() -> None:
    code = (
        "import contextlib, io, sys\n"
        "from rlx.tools.rlx_opt import main\n"
        "with contextlib.redirect_stdout(io.StringIO()) as out:\n"
        "    assert main(['--list-passes']) == 0\n"
        "assert 'fusion' in out.getvalue()\n"
        "loaded = [m for m in sys.modules if m.startswith(('rlx.transforms.', 'rlx.lowering.'))]\n"
        "assert not loaded, loaded\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_list_passes_shows_options(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--list-passes"]) == 0
    lines = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("fusion ")]
    assert "[rlx]" in lines[0]
    assert any("max-steps: int = 0" in ln for ln in lines[1:])


def test_help_has_one_line_per_pass(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    for name in ("fusion", "cse", "lower-to-llvm", "convert-scf-to-cf"):
        lines = [ln for ln in out.splitlines() if ln.split()[:1] == [f"--{name}"]]
        assert len(lines) == 1 and len(lines[0].split()) > 2, (name, lines)


def test_mlir_pipeline_text() -> None:
    assert mlir_pipeline_to_xdsl("builtin.module(fusion{swiglu=false},dce)") == (
        "fusion{swiglu=false},dce"
    )
    assert mlir_pipeline_to_xdsl("builtin.module(func.func(cse,canonicalize),dce)") == (
        "cse,canonicalize,dce"
    )
    with pytest.raises(PassOptionError, match="not an op anchor"):
        mlir_pipeline_to_xdsl("module(dce)")


def test_pattern_pass_error_is_located(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A PassFailedException raised in match_and_rewrite is reported at that op."""
    from dataclasses import dataclass

    from xdsl.passes import ModulePass
    from xdsl.pattern_rewriter import PatternRewriteWalker, RewritePattern
    from xdsl.utils.exceptions import PassFailedException

    from rlx.tools.opt_main import RlxOptMain

    class Refuse(RewritePattern):
        def match_and_rewrite(self, op, rewriter) -> None:  # noqa: ANN001
            if op.name == "rlx.relu":
                raise PassFailedException("no relu here")

    @dataclass(frozen=True)
    class RefusePass(ModulePass):
        name = "test-refuse"

        def apply(self, ctx, op: builtin.ModuleOp) -> None:  # noqa: ANN001
            PatternRewriteWalker(Refuse()).rewrite_module(op)

    class Tool(RlxOptMain):
        def register_all_passes(self) -> None:
            super().register_all_passes()
            self.register_pass("test-refuse", lambda: RefusePass)

    path = tmp_path / "in.mlir"
    path.write_text(NEG_RELU)
    assert main([str(path), "--test-refuse"], tool_class=Tool) == 1
    assert capsys.readouterr().err.startswith(f"{path}:3:3: error: no relu here\n")
    lines = NEG_RELU.splitlines()
    lines.insert(2, "  // expected-error @+1 {{no relu here}}")
    path.write_text("\n".join(lines) + "\n")
    assert main([str(path), "--test-refuse", "--verify-diagnostics"], tool_class=Tool) == 0


def test_random_inputs_are_valid_for_their_ops() -> None:
    from rlx.interpreter import parse_module

    module = parse_module(
        """
        func.func @main(%t: tensor<5x3xf32>, %i: tensor<7xi64>, %p: tensor<4xf32>) -> (tensor<7x3xf32>, tensor<4xf32>) {
          %g = rlx.gather %t, %i {axis = 0 : i64} : (tensor<5x3xf32>, tensor<7xi64>) -> tensor<7x3xf32>
          %l = rlx.log %p : (tensor<4xf32>) -> tensor<4xf32>
          func.return %g, %l : tensor<7x3xf32>, tensor<4xf32>
        }
        """
    )
    snap = equivalence.snapshot(module, seed=3)
    t, i, p = snap.inputs["main"]
    assert i.dtype == np.int64 and i.min() >= 0 and i.max() < 5
    assert p.min() > 0 and t.dtype == np.float32
    assert all(np.isfinite(o).all() for o in snap.outputs["main"])


def test_check_equivalence_names_the_wrong_pass(tmp_path: Path, capsys) -> None:  # noqa: ANN001
    import rlx

    path = tmp_path / "in.mlir"
    path.write_text(NEG_RELU)
    wrong = _wrong_pass_registry()
    assert main([str(path), "-p", "test-drop-neg", "--check-equivalence"], tool_class=wrong) == 1
    err = capsys.readouterr().err
    assert (
        f"{path}:3:3: error: check-equivalence: pass 'test-drop-neg' (seed 0) changed output 0"
        in err
    )
    assert "max error" in err and "> tolerance 0.0001" in err
    assert main([str(path), "--fusion", "--dce", "--check-equivalence"]) == 0
    rlx.compile(NEG_RELU, CompileOptions(check_equivalence=True))


def _wrong_pass_registry() -> type:
    from dataclasses import dataclass

    from xdsl.passes import ModulePass

    from rlx.tools.opt_main import RlxOptMain

    @dataclass(frozen=True)
    class DropNeg(ModulePass):
        name = "test-drop-neg"

        def apply(self, ctx, op: builtin.ModuleOp) -> None:  # noqa: ANN001
            for inner in list(op.walk()):
                if inner.name == "rlx.neg":
                    inner.results[0].replace_all_uses_with(inner.operands[0])
                    inner.detach()
                    inner.erase()

    class Tool(RlxOptMain):
        def register_all_passes(self) -> None:
            super().register_all_passes()
            self.register_pass("test-drop-neg", lambda: DropNeg)

    return Tool


@pytest.mark.parametrize(
    "example", sorted((ROOT / "examples").glob("*.mlir")), ids=lambda p: p.name
)
def test_check_equivalence_on_examples(example: Path) -> None:
    """The default pipeline passes translation validation on every shipped example."""
    import rlx

    rlx.compile(example, CompileOptions(check_equivalence=True))
    assert (
        main(
            [
                str(example),
                "--canonicalize",
                "--dce",
                "--fusion",
                "--check-equivalence",
                "-o",
                "/dev/null",
            ]
        )
        == 0
    )


# --------------------------------------------------------------------------------------
# Messages that used to mislead (issue 13, "Why")
# --------------------------------------------------------------------------------------

MLP = ROOT / "examples" / "mlp.mlir"


def test_dispatch_report_after_fusion_does_not_claim_fusions(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main([str(MLP), "--fusion", "--kernel-dispatch", "--dispatch-report"]) == 0
    err = capsys.readouterr().err
    assert "rlx dispatch report" in err and "rewritten" not in err


def test_fusion_report_does_not_count_attention_already_in_the_input() -> None:
    from rlx.interpreter import parse_module
    from rlx.transforms.fusion_report import analyze_fusion

    text = """
    func.func @main(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
      %a = rlx.attention %q, %k, %v : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
      func.return %a : tensor<1x2x4x8xf32>
    }
    """
    module = parse_module(text)
    assert analyze_fusion(module, module.clone()).count("attention") == 0


def test_pipeline_report_lists_each_field_once() -> None:
    import rlx

    claim = ["matmul", "add", "gelu", "tanh", "mul", "div", "erf", "exp", "reduce", "sub"]
    opts = CompileOptions(supported_ops=claim)
    lines = rlx.compile(MLP, opts).pipeline_report().splitlines()
    fields = [line.split(" = ")[0] for line in lines]
    assert len(fields) == len(set(fields))
    (line,) = [ln for ln in lines if ln.startswith("supported_ops")]
    assert "kernel-dispatch" in line and "legalize" in line


def test_bad_thread_count_is_a_value_error() -> None:
    code = (
        "import rlx\n"
        "try:\n"
        f"    rlx.compile(open({str(MLP)!r}).read())\n"
        "except ValueError as e:\n"
        "    print(type(e).__name__, e)\n"
    )
    env = {"RLX_NUM_THREADS": "abc", "PATH": "/usr/bin:/bin", "RLX_CACHE": "0"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert "ValueError RLX_NUM_THREADS must be a positive integer, got 'abc'" in out.stdout, out


def test_rlx_run_unbound_dim_names_its_flag(tmp_path: Path) -> None:
    from rlx.tools.rlx_run import main as rlx_run

    path = tmp_path / "dyn.mlir"
    path.write_text(
        'func.func @main(%x: tensor<?x4xf32> {rlx.dims = ["batch", 4]}) -> tensor<?x4xf32> {\n'
        "  %y = rlx.relu %x : (tensor<?x4xf32>) -> tensor<?x4xf32>\n"
        "  func.return %y : tensor<?x4xf32>\n}\n"
    )
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from rlx.tools.rlx_run import main; sys.exit(main())",
            str(path),
        ],
        capture_output=True,
        text=True,
    )
    del rlx_run
    assert result.returncode == 1
    assert "bind them with --dim-binding=batch=N" in result.stderr
    assert "CompileOptions" not in result.stderr


def test_onnx_output_names_are_kept() -> None:
    import onnx.helper as oh
    from onnx import TensorProto

    import rlx
    from rlx.frontends.onnx import import_model

    graph = oh.make_graph(
        [oh.make_node("Relu", ["x"], ["y"])],
        "g",
        [oh.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
        [oh.make_tensor_value_info("y", TensorProto.FLOAT, [4])],
    )
    module, _ = import_model(oh.make_model(graph))
    assert [name for name, _, _ in rlx.compile(module).outputs] == ["y"]
