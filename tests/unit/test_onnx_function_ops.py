"""ONNX ops defined by a function body (no converter of their own), imported inline at
the body's own opset, in models of newer opsets, against onnx.reference."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import rlx
from rlx.frontends.onnx import import_model
from rlx.interpreter import run

F, U8 = TensorProto.FLOAT, TensorProto.UINT8


def _dynamic_quant_matmul(opset: int):  # noqa: ANN202
    """onnxruntime's `quantize_dynamic` pattern: DynamicQuantizeLinear of the activations,
    MatMulInteger with int8 weights, dequantized by the product of the scales."""
    rng = np.random.default_rng(opset)
    w = rng.integers(-128, 128, (6, 5), dtype=np.int8)
    nodes = [
        helper.make_node("DynamicQuantizeLinear", ["x"], ["xq", "xs", "xz"]),
        helper.make_node("MatMulInteger", ["xq", "w", "xz"], ["acc"]),
        helper.make_node("Cast", ["acc"], ["accf"], to=F),
        helper.make_node("Mul", ["xs", "ws"], ["s"]),
        helper.make_node("Mul", ["accf", "s"], ["y"]),
    ]
    g = helper.make_graph(
        nodes, "dq",
        [helper.make_tensor_value_info("x", F, [3, 6])],
        [helper.make_tensor_value_info("y", F, [3, 5]),
         helper.make_tensor_value_info("xq", U8, [3, 6])],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(np.float32(0.02), "ws")],
    )  # fmt: skip
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


@pytest.mark.parametrize("opset", [11, 13, 17, 21])
def test_dynamic_quantize_linear_at_newer_opsets(opset: int) -> None:
    """DynamicQuantizeLinear's body is written against opset 11; a model of opset 17 made
    `onnx.inliner` raise 'incompatible opset versions' (a raw RuntimeError)."""
    m = _dynamic_quant_matmul(opset)
    x = np.random.default_rng(0).standard_normal((3, 6)).astype(np.float32)
    want = ReferenceEvaluator(m).run(None, {"x": x})
    module, params = import_model(m)
    for got in (run(module, [x], params), _compiled(module, params, x)):
        np.testing.assert_array_equal(got[1], want[1])  # the quantized activations
        np.testing.assert_allclose(got[0], want[0], rtol=1e-6, atol=1e-6)


def _compiled(module, params: dict, x: np.ndarray) -> list[np.ndarray]:  # noqa: ANN001
    g = rlx.compile(module)
    g.set_params(params)
    return g.run(x)


def test_center_crop_pad_body_at_opset_21() -> None:
    """A context-dependent body (CenterCropPad, opset 18) in an opset-21 model."""
    nodes = [helper.make_node("CenterCropPad", ["x", "shape"], ["y"], axes=[0, 1])]
    g = helper.make_graph(
        nodes, "ccp", [helper.make_tensor_value_info("x", F, [5, 4, 2])],
        [helper.make_tensor_value_info("y", F, [3, 6, 2])],
        [numpy_helper.from_array(np.array([3, 6], np.int64), "shape")],
    )  # fmt: skip
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)])
    x = np.arange(40, dtype=np.float32).reshape(5, 4, 2)
    want = ReferenceEvaluator(m).run(None, {"x": x})
    module, params = import_model(m)
    np.testing.assert_array_equal(run(module, [x], params)[0], want[0])
