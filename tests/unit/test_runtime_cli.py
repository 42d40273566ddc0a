"""`rlx-run`: in process on the real pipeline, plus one console-script run for the error
path (which fails before code generation)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from test_runtime_compile import fresh_fixture  # noqa: F401  (autouse fixture)

from rlx.interpreter import run as reference_run
from rlx.tools.rlx_run import _parser, main, options_from_args

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
MLP = str(EXAMPLES / "mlp.mlir")


def test_runs_an_example_with_random_data(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([MLP, "--seed", "3"]) == 0
    out, err = capsys.readouterr()
    assert "out0: shape (8, 10) float32  min " in out and " mean " in out and "first [" in out
    assert "note: input 'x' not given: using random" in err
    assert "4 param(s) not given, using random values (seed 3): w1, b1, w2, b2" in err


def test_inputs_params_outputs_and_bench(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((8, 64)).astype(np.float32)
    params = {
        "w1": rng.standard_normal((64, 128)).astype(np.float32),
        "b1": np.zeros(128, np.float32),
        "w2": rng.standard_normal((128, 10)).astype(np.float32),
        "b2": np.zeros(10, np.float32),
    }
    np.save(tmp_path / "x.npy", x)
    np.savez(tmp_path / "w.npz", **params)
    argv = [MLP, "--input", f"x={tmp_path / 'x.npy'}", "--params", str(tmp_path / "w.npz"),
            "--output-dir", str(tmp_path / "out"), "--bench", "3", "--no-dce", "--arena-alignment", "128"]  # fmt: skip
    assert main(argv) == 0
    out, err = capsys.readouterr()
    assert "not given" not in err
    assert "saved 1 output(s)" in out and "bench: 3 runs, median " in out
    got = np.load(tmp_path / "out" / "out0.npy")
    (want,) = reference_run(Path(MLP).read_text(), [x], params)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_compile_flags_map_to_options() -> None:
    a = _parser().parse_args([MLP, "--precision", "f16", "--no-constant-folding", "--rng-seed", "9",
                              "--dim-binding", "batch=2,seq=16", "--supported-ops", "matmul,add",
                              "--kernel-dispatch", "common", "--verbose"])  # fmt: skip
    o = options_from_args(a)
    assert o.precision() == "f16" and not o.constant_folding and o.rng_seed() == 9 and o.verbose
    assert o.dim_binding() == {"batch": 2, "seq": 16} and o.supported_ops() == ("matmul", "add")
    assert o.kernel_dispatch().policy == "common" and o.dce


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["missing.mlir"], "no such file: missing.mlir"),
        ([MLP, "--input", "x"], "--input: expected NAME=FILE.npy"),
        ([MLP, "--input", "y=random"], "unknown input 'y'; inputs: x"),
        ([MLP, "--input", "x=/no/such.npy"], "--input x: cannot read"),
        ([MLP, "--arena-alignment", "3"], "arena_alignment"),
        ([MLP, "--bogus"], "unrecognized arguments: --bogus"),
        ([MLP, "--dim-binding", "seq"], "--dim-binding"),
    ],
)
def test_errors_are_one_line(
    capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err.startswith("rlx-run: error: ") and message in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_wrong_input_shape(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    np.save(tmp_path / "x.npy", np.zeros((8, 63), np.float32))
    assert main([MLP, "--input", f"x={tmp_path / 'x.npy'}"]) == 1
    err = capsys.readouterr().err
    assert "input 'x': expected float32 array of shape (8, 64)" in err


def test_console_script_reports_parse_errors(tmp_path: Path) -> None:
    bad = tmp_path / "bad.mlir"
    bad.write_text("func.func @main() {\n  %0 = rlx.nope : tensor<2xf32>\n}\n")
    exe = Path(sys.executable).with_name("rlx-run")
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "rlx.tools.rlx_run"]
    env = {"RLX_CACHE": "0", "PATH": "/usr/bin:/bin"}
    r = subprocess.run([*cmd, str(bad)], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 1, r.stderr
    assert r.stderr.startswith(f"rlx-run: error: {bad}:2:") and "rlx.nope" in r.stderr
    assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1
