"""The honest weight table (issue 16 item 3): values produced by folding (a transposed
param from ONNX `Gemm transB=1`, scale x weight, batch-norm statistics) enter the table,
get packed like any other weight, and every matmul left dense says why."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import rlx
import rlx.bake
from rlx import interpreter
from rlx.bake import artifact

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

from rlx.frontends.onnx import import_model  # noqa: E402

RNG = np.random.default_rng(7)
F = np.float32


def _model(nodes: list, inputs: list, outputs: list, inits: dict[str, np.ndarray]) -> object:
    g = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in outputs],
        [numpy_helper.from_array(v, k) for k, v in inits.items()],
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(m)
    return m


def _gemm_transb() -> object:
    inits = {
        "w": (RNG.standard_normal((48, 64)) * 0.1).astype(F),
        "b": RNG.standard_normal(48).astype(F),
    }
    nodes = [helper.make_node("Gemm", ["x", "w", "b"], ["y"], transB=1)]
    return _model(nodes, [("x", [4, 64])], [("y", [4, 48])], inits)


def _inline_bytes(text: str) -> list[str]:
    """Dense literals of more than one value left in the module text."""
    return [m for m in re.findall(r"dense<([^>]*)>", text) if m.startswith(("[", '"0x'))]


def test_gemm_transb_fully_in_table_and_packed(tmp_path: Path) -> None:
    m = _gemm_transb()
    module, params = import_model(m)
    x = RNG.standard_normal((4, 64)).astype(F)
    (want,) = ReferenceEvaluator(m).run(None, {"x": x})
    for profile in ("exact", "size"):
        path, rep = rlx.bake.bake_with_report(module, params, profile, tmp_path / f"{profile}.rlx")
        art = artifact.read(path)
        assert _inline_bytes(art.module_text) == [] and art.header["meta"]["constant_bytes"] == 0
        table = {e["name"]: e for e in art.weights}
        folded = [e for e in table.values() if e["shape"] == [64, 48]]
        assert len(folded) == 1, table  # transpose(w) folded, back in the table
        (wt,) = folded
        if profile == "size":
            assert wt["encoding"] == "gguf_q8_0" and rep.quant_packed == 1 and rep.kept_dense == []
            assert wt["nbytes"] == 48 * (64 // 32) * 34
        else:
            assert wt["encoding"] == "f32" and "computed by folding" in wt["note"]
            assert rep.kept_dense == [f"{wt['name']}: not ternary: profile exact packs only "
                                      "ternary weights (lossless); --opt size or --quant packs "
                                      "Q8_0 (lossy)"]  # fmt: skip
        (y,) = rlx.load(path).run(x)
        tol = 0.02 * np.abs(want).max() if profile == "size" else 1e-5
        np.testing.assert_allclose(y, want, atol=tol, rtol=1e-5)
    info = str(rlx.bake.inspect(tmp_path / "size.rlx"))
    assert "gguf_q8_0" in info and "Q8_0-packed: 1" in info


SCALED = """
func.func @main(%x: tensor<4x64xf32> {rlx.name = "x"}) -> tensor<4x32xf32> {
  %w = rlx.param "w" : tensor<64x32xf32>
  %v = rlx.param "v" : tensor<32xf32>
  %half = rlx.constant dense<0.5> : tensor<64x32xf32>
  %two = rlx.constant dense<2.0> : tensor<32xf32>
  %s = rlx.mul %w, %half : (tensor<64x32xf32>, tensor<64x32xf32>) -> tensor<64x32xf32>
  %y = rlx.matmul %x, %s : (tensor<4x64xf32>, tensor<64x32xf32>) -> tensor<4x32xf32>
  %c = rlx.mul %v, %two : (tensor<32xf32>, tensor<32xf32>) -> tensor<32xf32>
  %z = rlx.add %y, %c : (tensor<4x32xf32>, tensor<32xf32>) -> tensor<4x32xf32>
  func.return %z : tensor<4x32xf32>
}
"""


def test_scale_times_weight_enters_table(tmp_path: Path) -> None:
    w = {"w": RNG.standard_normal((64, 32)).astype(F), "v": RNG.standard_normal(32).astype(F)}
    x = RNG.standard_normal((4, 64)).astype(F)
    (want,) = interpreter.run(SCALED, [x], w)
    path, rep = rlx.bake.bake_with_report(SCALED, w, "size", tmp_path / "s.rlx")
    art = artifact.read(path)
    assert _inline_bytes(art.module_text) == []
    enc = sorted(e["encoding"] for e in art.weights)
    assert enc == ["f32", "gguf_q8_0"] and rep.quant_packed == 1  # 2*v (f32) and 0.5*w (Q8_0)
    (y,) = rlx.load(path).run(x)
    np.testing.assert_allclose(y, want, atol=0.02 * np.abs(want).max())


def test_conv_batchnorm_statistics_enter_table(tmp_path: Path) -> None:
    c = 24
    inits = {
        "k": (RNG.standard_normal((c, 3, 3, 3)) * 0.2).astype(F),
        "g": RNG.random(c).astype(F) + 0.5, "beta": RNG.standard_normal(c).astype(F),
        "mean": RNG.standard_normal(c).astype(F), "var": RNG.random(c).astype(F) + 0.1,
    }  # fmt: skip
    nodes = [
        helper.make_node("Conv", ["x", "k"], ["h"], pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["h", "g", "beta", "mean", "var"], ["y"]),
    ]
    m = _model(nodes, [("x", [1, 3, 6, 6])], [("y", [1, c, 6, 6])], inits)
    module, params = import_model(m)
    x = RNG.standard_normal((1, 3, 6, 6)).astype(F)
    (want,) = ReferenceEvaluator(m).run(None, {"x": x})
    path, rep = rlx.bake.bake_with_report(module, params, "exact", tmp_path / "bn.rlx")
    art = artifact.read(path)
    assert _inline_bytes(art.module_text) == [] and art.header["meta"]["constant_bytes"] == 0
    assert any("computed by folding" in e["note"] for e in art.weights)
    # fold-batch-norm put the statistics into the conv's weights and bias: no affine left
    assert "rlx.conv2d" in art.module_text
    assert not any(f"rlx.{k} " in art.module_text for k in ("mul", "add", "sub", "div"))
    (y,) = rlx.load(path).run(x)
    np.testing.assert_allclose(y, want, atol=1e-4, rtol=1e-4)


def test_every_dense_matmul_has_a_reason(tmp_path: Path) -> None:
    text = SCALED.replace('%w = rlx.param "w"', '%w = rlx.param "w_unbound"')
    w = {"v": RNG.standard_normal(32).astype(F)}
    for profile in ("merge", "exact"):
        _, rep = rlx.bake.bake_with_report(text, w, profile, tmp_path / "r.rlx", targets=())
        assert rep.kept_dense == ["%s: weight is computed at run time (by rlx.mul), not a constant"]
    mlp = Path(__file__).resolve().parents[2] / "examples" / "mlp.mlir"
    b = {
        "b1": np.zeros(128, F),
        "b2": np.zeros(10, F),
        "w2": RNG.standard_normal((128, 10)).astype(F),
    }
    _, rep = rlx.bake.bake_with_report(mlp, b, "fold", tmp_path / "m.rlx", targets=())
    assert rep.kept_dense == ["w1: weight is a param left unbound (no value given to the bake)",
                              "w2: profile fold does not pack matmul weights"]  # fmt: skip
