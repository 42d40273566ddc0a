"""`ai.onnx.ml` Binarizer and ArrayFeatureExtractor (the importer took no ai.onnx.ml op),
against onnx.reference: float and integer inputs, fractional thresholds, NaN, 1-D and 3-D
data, 2-D indices; an out-of-range index is a run-time IndexError naming the input."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

import rlx
from rlx.frontends.onnx import import_model

ML = "ai.onnx.ml"


def _model(op: str, ins: list[tuple[str, int, list[int]]], **attrs):  # noqa: ANN202
    g = helper.make_graph(
        [helper.make_node(op, [nm for nm, _, _ in ins], ["y"], name="ml", domain=ML, **attrs)],
        "g", [helper.make_tensor_value_info(nm, t, s) for nm, t, s in ins],
        [helper.make_empty_tensor_value_info("y")],
    )  # fmt: skip
    ops = [helper.make_opsetid("", 17), helper.make_opsetid(ML, 3)]
    return helper.make_model(g, opset_imports=ops)


@pytest.mark.parametrize(
    ("t", "dt", "threshold"),
    [(TensorProto.FLOAT, np.float32, 0.25), (TensorProto.DOUBLE, np.float64, None),
     (TensorProto.INT64, np.int64, -0.5), (TensorProto.INT32, np.int32, 1.5)],
)  # fmt: skip
def test_binarizer_matches_onnx_reference(t: int, dt: type, threshold: float | None) -> None:
    attrs = {} if threshold is None else {"threshold": threshold}
    model = _model("Binarizer", [("x", t, [3, 4])], **attrs)
    x = (np.arange(12).reshape(3, 4) - 5).astype(dt)
    if x.dtype.kind == "f":
        x = x / 4
        x[0, 0] = np.nan
    (want,) = ReferenceEvaluator(model).run(None, {"x": x})
    got = rlx.compile(import_model(model)[0]).run(x)[0]
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize(
    ("xs", "ks"), [([5], [3]), ([2, 3, 6], [4]), ([4, 5], [1, 3]), ([4, 5], [2, 2])]
)
def test_array_feature_extractor_matches_onnx_reference(xs: list[int], ks: list[int]) -> None:
    model = _model("ArrayFeatureExtractor", [("x", TensorProto.FLOAT, xs),
                                              ("i", TensorProto.INT64, ks)])  # fmt: skip
    x = np.random.default_rng(0).standard_normal(xs).astype(np.float32)
    i = np.random.default_rng(1).integers(0, xs[-1], ks).astype(np.int64)
    (want,) = ReferenceEvaluator(model).run(None, {"x": x, "i": i})
    got = rlx.compile(import_model(model)[0]).run(x, i)[0]
    assert got.shape == want.shape
    np.testing.assert_array_equal(got, want)


def test_array_feature_extractor_bad_index_names_the_input() -> None:
    model = _model("ArrayFeatureExtractor", [("x", TensorProto.FLOAT, [2, 3]),
                                              ("i", TensorProto.INT64, [2])])  # fmt: skip
    g = rlx.compile(import_model(model)[0])
    for bad in (3, -1):
        with pytest.raises(IndexError, match=rf"index {bad} .*\[computed from input 'i'\]$"):
            g.run(np.zeros((2, 3), np.float32), np.array([0, bad]))
