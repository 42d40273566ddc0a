"""An initializer named like a graph input (ONNX IR >= 4: that input's default value).

Decided in session 9 (docs/onnx-coverage.md): it is imported as the param of that name,
so the default is used unless `set_param` overrides it, as onnxruntime lets a caller feed
such an input; its declared type and shape must be the initializer's (onnxruntime refuses
the model with "Type Error"; rlx ignored the declaration), a dim_param or -1 matching any
size.
"""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import rlx
from rlx.frontends.onnx import OnnxImportError, import_model


def _model(elem: int, dims: list | None) -> object:
    w = (helper.make_tensor_value_info("w", elem, dims) if dims is not None
         else helper.make_tensor_value_info("w", elem, None))  # fmt: skip
    g = helper.make_graph(
        [helper.make_node("Add", ["x", "w"], ["y"], name="add")], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4]), w],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])],
        [numpy_helper.from_array(np.arange(4, dtype=np.float32), "w")],
    )  # fmt: skip
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize("dims", [[4], ["n"], [-1], None])
def test_default_is_used_and_set_param_overrides_it(dims) -> None:  # noqa: ANN001
    model = _model(TensorProto.FLOAT, dims)
    module, params = import_model(model)
    g = rlx.compile(module)
    assert [n for n, _, _ in g.inputs] == ["x"] and "w" in g.params
    g.set_params(params)
    x = np.ones(4, np.float32)
    np.testing.assert_array_equal(g.run(x)[0], x + np.arange(4))
    g.set_param("w", np.full(4, 5, np.float32))
    ort = pytest.importorskip("onnxruntime")
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    (want,) = sess.run(None, {"x": x, "w": np.full(4, 5, np.float32)})
    np.testing.assert_array_equal(g.run(x)[0], want)


@pytest.mark.parametrize(
    ("elem", "dims", "message"),
    [
        (TensorProto.FLOAT, [3], r"graph input 'w' is declared of shape \[3\] but its initializer"),
        (TensorProto.FLOAT, [1, 4], r"declared of shape \[1, 4\] .* has shape \[4\]"),
        (TensorProto.FLOAT, [], r"declared of shape \[\] .* has shape \[4\]"),
        (TensorProto.INT64, [4], "graph input 'w' is declared INT64 but its initializer"),
    ],
)
def test_declaration_must_match_the_initializer(elem: int, dims: list, message: str) -> None:
    with pytest.raises(OnnxImportError, match=message):
        import_model(_model(elem, dims))


def test_shape_input_fed_at_run_time_names_the_fix() -> None:
    """A Reshape / Slice / TopK ... size fed as a graph input is refused at import (RLX
    compiles static shapes); the error says how to freeze it, and that works."""
    g = helper.make_graph(
        [helper.make_node("Reshape", ["x", "s"], ["y"], name="r")], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 3]),
         helper.make_tensor_value_info("s", TensorProto.INT64, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )  # fmt: skip
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(OnnxImportError, match=r"freeze the graph input with constants=\{'s'"):
        import_model(model)
    module, _ = import_model(model, constants={"s": np.array([3, 4])})
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    np.testing.assert_array_equal(rlx.compile(module).run(x)[0], x.reshape(3, 4))
