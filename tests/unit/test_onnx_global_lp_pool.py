"""GlobalLpPool (was missing from the importer): LpPool's formula over the whole spatial
extent, against the spec's formula in NumPy (f64; onnx.reference has no GlobalLpPool) and
onnxruntime where it is installed, for p = 1, 2, 3, 1-D to 3-D spatial ranks, f32 and f16;
an empty spatial extent or p <= 0 is an OnnxImportError naming the node."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

import rlx
from rlx.frontends.onnx import OnnxImportError, import_model

TYPES = {
    "f32": (TensorProto.FLOAT, np.float32, 1e-5),
    "f16": (TensorProto.FLOAT16, np.float16, 4e-3),
}


def _model(shape: list[int], dtype: str, p: int | None, opset: int = 22):  # noqa: ANN202
    t = TYPES[dtype][0]
    attrs = {} if p is None else {"p": p}
    g = helper.make_graph(
        [helper.make_node("GlobalLpPool", ["x"], ["y"], name="glp", **attrs)], "g",
        [helper.make_tensor_value_info("x", t, shape)],
        [helper.make_empty_tensor_value_info("y")],
    )  # fmt: skip
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


@pytest.mark.parametrize(
    ("shape", "p", "dtype"),
    [
        ([2, 3, 7], None, "f32"),
        ([1, 5, 4, 6], 1, "f32"),
        ([2, 2, 3, 3, 2], 3, "f32"),
        ([1, 16, 5, 5], 2, "f16"),
        ([1, 9, 3, 3], 3, "f16"),
    ],
)
def test_matches_onnx_reference(shape: list[int], p: int | None, dtype: str) -> None:
    model = _model(shape, dtype, p)
    x = np.random.default_rng(len(shape)).standard_normal(shape).astype(TYPES[dtype][1])
    axes = tuple(range(2, len(shape)))
    q = 2 if p is None else p
    want = (np.abs(x.astype(np.float64)) ** q).sum(axis=axes, keepdims=True) ** (1 / q)
    (got,) = rlx.compile(import_model(model)[0]).run(x)
    assert got.dtype == x.dtype
    assert got.shape == want.shape == (*shape[:2], *[1] * (len(shape) - 2))
    tol = TYPES[dtype][2]
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=tol, atol=tol)


@pytest.mark.parametrize(
    ("shape", "p", "msg"),
    [
        ([1, 3, 0, 4], 2, "non-empty spatial extent"),
        ([1, 3], 2, "non-empty spatial extent"),
        ([1, 3, 4, 4], 0, "p must be positive"),
    ],
)
def test_bad_input_is_an_import_error(shape: list[int], p: int, msg: str) -> None:
    with pytest.raises(OnnxImportError, match=rf"glp.*{msg}"):
        import_model(_model(shape, "f32", p))


def test_matches_onnxruntime() -> None:
    ort = pytest.importorskip("onnxruntime")
    model = _model([2, 4, 5, 3], "f32", 3, opset=18)  # onnxruntime has GlobalLpPool-2 only
    x = np.random.default_rng(1).standard_normal((2, 4, 5, 3)).astype(np.float32)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    (want,) = sess.run(None, {"x": x})
    (got,) = rlx.compile(import_model(model)[0]).run(x)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
