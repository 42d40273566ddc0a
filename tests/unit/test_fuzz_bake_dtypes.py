"""rlx-bake and float weights of another type than their param: the graph's declared type
wins (an f64 param keeps f64 weights bit for bit), and a conversion that changes values
(f64 data for an f32 param) is never silent: a `LossyBindingWarning` naming the param,
the report's `rounded` list, `rlx-bake inspect`, and an `rlx-bake: warning:` line.
Exact conversions (widening, f64 data holding f32 values) stay quiet. Values are checked
against NumPy."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

import rlx
from rlx.bake import bake_with_report
from rlx.tools import rlx_bake
from rlx.transforms.bind_params import LossyBindingWarning

GRAPH = """
func.func @main(%x: tensor<3xT>) -> tensor<3xT> {
  %w = rlx.param "w" : tensor<3xT>
  %0 = rlx.add %x, %w : (tensor<3xT>, tensor<3xT>) -> tensor<3xT>
  func.return %0 : tensor<3xT>
}
"""
FINE = np.array([1 + 2**-40, -3e-300, 0.1])  # no value of it is an f32
SAFE = np.array([1.5, -2.0, 0.25])  # every value is an f32


def _bake(tmp_path: Path, t: str, w: np.ndarray):  # noqa: ANN202
    return bake_with_report(GRAPH.replace("T", t), {"w": w}, "exact", tmp_path / f"{t}.rlx")


def test_f64_param_keeps_f64_weights(tmp_path: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", LossyBindingWarning)
        path, report = _bake(tmp_path, "f64", FINE)
    assert report.rounded == []
    assert [w["encoding"] for w in rlx.bake.inspect(path).weights] == ["f64"]
    x = np.array([0.0, 1.0, -0.5])
    (y,) = rlx.load(path).run(x)
    assert y.dtype == np.float64
    np.testing.assert_array_equal(y, x + FINE)


@pytest.mark.parametrize(("t", "w"), [("f64", SAFE.astype(np.float32)), ("f32", SAFE),
                                      ("f32", SAFE.astype(np.float16))])  # fmt: skip
def test_exact_conversions_are_quiet(tmp_path: Path, t: str, w: np.ndarray) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", LossyBindingWarning)
        path, report = _bake(tmp_path, t, w)
    assert report.rounded == []
    x = np.zeros(3, np.float64 if t == "f64" else np.float32)
    np.testing.assert_array_equal(rlx.load(path).run(x)[0], SAFE)


def test_rounding_f64_weights_to_an_f32_param_warns(tmp_path: Path) -> None:
    with pytest.warns(LossyBindingWarning, match=r"param 'w' is f32: its f64 weight was "
                      r"rounded to f32 \(3 of 3 values changed"):  # fmt: skip
        path, report = _bake(tmp_path, "f32", FINE)
    assert len(report.rounded) == 1 and "declare the param f64" in report.rounded[0]
    assert any(d.startswith("rounded: param 'w'") for d in rlx.bake.inspect(path).decisions())
    (y,) = rlx.load(path).run(np.zeros(3, np.float32))
    np.testing.assert_array_equal(y, FINE.astype(np.float32))


def test_overflow_to_inf_is_named(tmp_path: Path) -> None:
    with pytest.warns(LossyBindingWarning, match="1 of 3 values changed, 1 overflowed to inf"):
        _bake(tmp_path, "f32", np.array([1e300, 1.0, 2.0]))


def test_cli_prints_a_warning_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src, weights = tmp_path / "g.mlir", tmp_path / "w.npz"
    src.write_text(GRAPH.replace("T", "f32"))
    np.savez(weights, w=FINE)
    assert rlx_bake.main([str(src), "--weights", str(weights), "-q", "--no-code"]) == 0
    err = capsys.readouterr().err
    assert err.startswith("rlx-bake: warning: param 'w' is f32: its f64 weight was rounded")
    assert "Traceback" not in err and "bind_params.py" not in err


def test_rlx_opt_bind_params_warns_at_the_param(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from rlx.tools.rlx_opt import main

    src, weights = tmp_path / "g.mlir", tmp_path / "w.npz"
    src.write_text(GRAPH.replace("T", "f32"))
    np.savez(weights, w=FINE)
    assert main([str(src), f"--bind-params={weights}"]) == 0
    err = capsys.readouterr().err
    assert "g.mlir:3:3: warning: param 'w' is f32: its f64 weight was rounded" in err, err
