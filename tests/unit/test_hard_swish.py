"""`rlx.hard_swish`, the worked example of docs/adding-an-op.md: its reference against
ONNX's own evaluator, the compiled op (alone, fused into an elementwise region, and folded
on constants) against the reference, and the ONNX `HardSwish` mapping."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

import rlx
from rlx.frontends.onnx import import_model
from rlx.interpreter import parse_module, run
from rlx.transforms.constant_folding import ConstantFoldingPass

EDGES = np.array(
    [-np.inf, -1e30, -3.5, -3.0, -2.999, -1.0, -0.0, 0.0, 0.5, 2.999, 3.0, 3.5, 1e30, np.inf,
     np.nan],
    np.float32,
)  # fmt: skip
X = np.concatenate([EDGES, np.linspace(-5, 5, 241, dtype=np.float32)]).reshape(16, 16)


def _onnx_model() -> object:
    node = helper.make_node("HardSwish", ["x"], ["y"])
    g = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [16, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [16, 16])],
    )
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)])


SRC = """
func.func @main(%x: tensor<16x16xf32>) -> tensor<16x16xf32> {
  %y = rlx.hard_swish %x : (tensor<16x16xf32>) -> tensor<16x16xf32>
  func.return %y : tensor<16x16xf32>
}
"""

FUSED = """
func.func @main(%x: tensor<16x16xf32>, %b: tensor<16xf32>) -> tensor<16x16xf32> {
  %s = rlx.add %x, %b : (tensor<16x16xf32>, tensor<16xf32>) -> tensor<16x16xf32>
  %y = rlx.hard_swish %s : (tensor<16x16xf32>) -> tensor<16x16xf32>
  %z = rlx.mul %y, %s : (tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<16x16xf32>
  func.return %z : tensor<16x16xf32>
}
"""


def test_reference_matches_onnx_evaluator() -> None:
    (want,) = ReferenceEvaluator(_onnx_model()).run(None, {"x": X})
    (got,) = run(parse_module(SRC), [X])
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", ["f32", "f16", "bf16"])
def test_compiled_matches_reference(dtype: str) -> None:
    src = SRC.replace("f32", dtype)
    x = X.astype({"f32": np.float32, "f16": np.float16, "bf16": ml_dtypes.bfloat16}[dtype])
    (want,) = run(parse_module(src), [x])
    (got,) = rlx.compile(src).run(x)
    # Compiled code may contract x/6 + 1/2 into an FMA (the numeric policy allows it):
    # the gate then differs by an ulp of 1/2, i.e. |x| * 2^-24 in the result.
    np.testing.assert_allclose(
        got.astype(np.float32), want.astype(np.float32), rtol=1e-6, atol=4e-7
    )


def test_fused_region_matches_reference() -> None:
    b = np.linspace(-1, 1, 16, dtype=np.float32)
    compiled = rlx.compile(FUSED)
    assert "rlx.elementwise_region" in compiled.ir("rlx")
    (want,) = run(parse_module(FUSED), [X, b])
    (got,) = compiled.run(X, b)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=2e-6)


def test_constant_folding_uses_the_formula() -> None:
    text = """
func.func @main() -> tensor<4xf32> {
  %c = rlx.constant dense<[-4.0, -1.5, 0.25, 3.5]> : tensor<4xf32>
  %y = rlx.hard_swish %c : (tensor<4xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}"""
    (want,) = run(parse_module(text), [])
    m = parse_module(text)
    ConstantFoldingPass().apply(None, m)  # type: ignore[arg-type]
    assert "rlx.hard_swish" not in str(m)
    (got,) = run(m, [])
    np.testing.assert_array_equal(got, want)


def test_onnx_hard_swish_imports_as_the_op() -> None:
    module, params = import_model(_onnx_model())
    assert "rlx.hard_swish" in str(module)
    (want,) = ReferenceEvaluator(_onnx_model()).run(None, {"x": X})
    (got,) = rlx.compile(module).run(X)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=4e-7)  # FMA contraction, as above


def test_bad_input_is_a_verifier_error() -> None:
    bad = SRC.replace("tensor<16x16xf32>", "tensor<16x16xi32>")
    with pytest.raises(ValueError, match="floating-point element type"):
        rlx.compile(bad)
