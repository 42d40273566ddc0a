"""RoiAlign (was missing from the importer) with run-time rois and batch indices, against
onnx.reference (tight tolerance: the backend test data are rounded to 4 decimals) and
onnxruntime where installed: avg / max, both coordinate modes, spatial_scale, rois past
the borders and malformed (x2 < x1), batches, f32 / f16, compiled and interpreted; a bad
batch index is a run-time IndexError naming the input, bad attributes an OnnxImportError
naming the node."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

import rlx
from rlx.frontends.onnx import OnnxImportError, import_model

ROIS = np.array(
    [[0.0, 0.0, 9.0, 9.0], [0.5, 5.0, 4.0, 9.5], [5.0, 5.0, 9.0, 9.0], [-3.0, -2.0, 12.0, 14.0],
     [6.0, 7.0, 2.0, 3.0], [2.2, 1.7, 2.6, 2.4]],
    np.float32,
)  # fmt: skip


def _model(x_shape: list[int], r: int, t: int = TensorProto.FLOAT, **attrs):  # noqa: ANN202
    g = helper.make_graph(
        [helper.make_node("RoiAlign", ["x", "rois", "b"], ["y"], name="roi", **attrs)], "g",
        [helper.make_tensor_value_info("x", t, x_shape),
         helper.make_tensor_value_info("rois", t, [r, 4]),
         helper.make_tensor_value_info("b", TensorProto.INT64, [r])],
        [helper.make_empty_tensor_value_info("y")],
    )  # fmt: skip
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 16)])


CASES = [
    dict(mode="avg", coordinate_transformation_mode="half_pixel", sampling_ratio=2),
    dict(mode="avg", coordinate_transformation_mode="output_half_pixel", sampling_ratio=3,
         output_height=3, output_width=4),
    dict(mode="max", coordinate_transformation_mode="half_pixel", sampling_ratio=2,
         spatial_scale=0.5, output_height=2, output_width=2),
    dict(mode="max", coordinate_transformation_mode="output_half_pixel", sampling_ratio=1),
]  # fmt: skip


@pytest.mark.parametrize("case", range(len(CASES)))
@pytest.mark.parametrize("dtype", ["f32", "f16"])
def test_matches_onnx_reference(case: int, dtype: str) -> None:
    attrs = dict(output_height=5, output_width=5) | CASES[case]
    t, dt, tol = (
        (TensorProto.FLOAT, np.float32, 1e-5) if dtype == "f32" else (TensorProto.FLOAT16, np.float16, 3e-3)
    )  # fmt: skip
    model = _model([2, 3, 10, 10], len(ROIS), t, **attrs)
    rng = np.random.default_rng(case)
    x = rng.random((2, 3, 10, 10)).astype(dt)
    rois, b = ROIS.astype(dt), np.array([0, 1, 1, 0, 1, 0], np.int64)
    (want,) = ReferenceEvaluator(model).run(None, {"x": x, "rois": rois, "b": b})
    module = import_model(model)[0]
    got = rlx.compile(module).run(x, rois, b)[0]
    (ref,) = rlx.reference.run(import_model(model)[0], [x, rois, b])
    for v in (got, np.asarray(ref)):
        assert v.shape == want.shape and v.dtype == want.dtype
        np.testing.assert_allclose(v.astype(np.float64), want.astype(np.float64), rtol=tol,
                                   atol=tol)  # fmt: skip


def test_matches_onnxruntime() -> None:
    ort = pytest.importorskip("onnxruntime")
    model = _model([2, 3, 10, 10], len(ROIS), output_height=4, output_width=3, sampling_ratio=2)
    x = np.random.default_rng(7).random((2, 3, 10, 10)).astype(np.float32)
    b = np.array([1, 0, 1, 1, 0, 0], np.int64)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    (want,) = sess.run(None, {"x": x, "rois": ROIS, "b": b})
    got = rlx.compile(import_model(model)[0]).run(x, ROIS, b)[0]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_bad_batch_index_names_the_input() -> None:
    model = _model([2, 1, 4, 4], 1, sampling_ratio=1)
    g = rlx.compile(import_model(model)[0])
    x = np.zeros((2, 1, 4, 4), np.float32)
    for bad in (2, -1):  # -1 is no index here (onnxruntime refuses it too)
        with pytest.raises(
            IndexError, match=rf"index {bad} .* size 2 \[computed from input 'b'\]$"
        ):
            g.run(x, ROIS[:1], np.array([bad]))


@pytest.mark.parametrize(
    ("attrs", "msg"),
    [
        (dict(sampling_ratio=0), "sampling_ratio 0"),
        (dict(sampling_ratio=2, mode="sum"), "mode must be avg or max"),
        (dict(sampling_ratio=2, output_height=0), "must be positive"),
    ],
)
def test_bad_attributes_are_import_errors(attrs: dict, msg: str) -> None:  # type: ignore[type-arg]
    with pytest.raises(OnnxImportError, match=rf"roi.*{msg}"):
        import_model(_model([1, 1, 4, 4], 1, **attrs))


@pytest.mark.parametrize("side", ["end", "start"])
def test_hostile_rois_stay_in_bounds(side: str) -> None:
    """NaN, +-inf and 1e30 roi corners on guard pages: no access out of bounds (a NaN or
    huge position is cast to an index that the border rules clamp), no error."""
    from guarded_memory import guarded_run

    model = _model([1, 2, 6, 6], 4, sampling_ratio=2, output_height=2, output_width=3)
    g = rlx.compile(import_model(model)[0])
    x = np.random.default_rng(0).random((1, 2, 6, 6)).astype(np.float32)
    rois = np.array([[np.nan, 0, 3, 3], [-np.inf, -np.inf, np.inf, np.inf],
                     [1e30, -1e30, 2e30, 3.0], [0, 0, 5, 5]], np.float32)  # fmt: skip
    outs, status = guarded_run(g, [x, rois, np.zeros(4, np.int64)], side)
    assert status is None or status[0] == 0
    np.testing.assert_allclose(
        outs[0][3], g.run(x, rois[3:].repeat(4, 0), np.zeros(4, np.int64))[0][0]
    )
