"""ONNX Conv 1-D and 3-D through RLX's conv kernels, against onnx.reference: the importer
maps a 1-D conv to rlx.conv2d with H = 1 and a 3-D conv to a sum of rlx.conv2d over
depth taps (`rlx.frontends.onnx.ops_window`), so they take the same implicit GEMM and
direct kernels as 2-D convs (strides, pads, dilations, groups, bias, Relu / Add fused)."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import rlx
from rlx.frontends.onnx import import_model

RNG = np.random.default_rng(11)


def _model(x_shape, w_shape, attrs, relu):  # type: ignore[no-untyped-def]
    w = (RNG.standard_normal(w_shape) * 0.3).astype(np.float32)
    b = RNG.standard_normal(w_shape[0]).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], **attrs)]
    nodes.append(helper.make_node("Relu" if relu else "Identity", ["c"], ["y"]))
    graph = helper.make_graph(
        nodes, "conv",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x_shape))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")],
    )  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


CASES = [
    # 1-D: regular (implicit GEMM), strided + dilated, depthwise (direct), grouped
    ((2, 16, 37), (32, 16, 3), {"pads": [1, 1]}, True),
    ((1, 8, 41), (16, 8, 5), {"strides": [2], "dilations": [2], "pads": [2, 3]}, False),
    ((2, 12, 29), (12, 1, 7), {"group": 12, "pads": [3, 3]}, True),
    ((1, 8, 23), (16, 4, 3), {"group": 2}, False),
    # 3-D: regular and depthwise
    ((1, 4, 5, 9, 7), (8, 4, 3, 3, 3), {"pads": [1, 1, 1, 1, 1, 1]}, True),
    ((2, 6, 4, 7, 6), (6, 1, 2, 3, 3), {"group": 6, "strides": [1, 2, 2]}, False),
]


@pytest.mark.parametrize("case", range(len(CASES)))
def test_conv_nd_matches_onnx_reference(case: int) -> None:
    x_shape, w_shape, attrs, relu = CASES[case]
    model = _model(x_shape, w_shape, attrs, relu)
    x = RNG.standard_normal(x_shape).astype(np.float32)
    (want,) = ReferenceEvaluator(model).run(None, {"x": x})
    module, params = import_model(model)
    compiled = rlx.compile(module)
    compiled.set_params(params)
    linalg = compiled.ir("linalg")
    assert "conv gemm" in linalg or "conv direct" in linalg
    (got,) = compiled.run(x)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.abs(want).max())
