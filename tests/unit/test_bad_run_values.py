"""NaN / Inf run-time values through ONNX ops that compute positions from data (docs/
fuzzing.md, session 9; found by `tools/fuzz/probe_run_inputs.py`-style probes):

* TopK of NaN raised "index 14 is out of range for an axis of size 12": NaN compares
  false with everything, so two elements got one rank and the picked index summed past
  the row. NaN now sorts above every number, as NumPy's sort and onnxruntime's TopK do;
* nearest Resize summed one-hot taps (`x * 0 + y * 1`), so a NaN or Inf next to the
  copied value made the output NaN: the taps are selected now (as both references do).
Expected values are onnxruntime's (checked again when it is installed).
"""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import rlx
from rlx.frontends.onnx import import_model

NAN, INF = np.nan, np.inf
X = np.array([[1.0, NAN, 3.0, -INF], [INF, NAN, NAN, 0.0], [NAN] * 4], np.float32)


def _model(op: str, inits: dict, n_out: int, **attrs):  # noqa: ANN202
    names = ["x", *inits]
    outs = [f"y{i}" for i in range(n_out)]
    g = helper.make_graph(
        [helper.make_node(op, names, outs, name="n", **attrs)], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, X.shape if op == "TopK" else [1, 1, 3, 4])],
        [helper.make_empty_tensor_value_info(o) for o in outs],
        [numpy_helper.from_array(v, k) for k, v in inits.items()],
    )  # fmt: skip
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])


TOPK = {
    1: ([[NAN, 3.0, 1.0], [NAN, NAN, INF], [NAN, NAN, NAN]], [[1, 2, 0], [1, 2, 0], [0, 1, 2]]),
    0: ([[-INF, 1.0, 3.0], [0.0, INF, NAN], [NAN, NAN, NAN]], [[3, 0, 2], [3, 0, 1], [0, 1, 2]]),
}


def _check_onnxruntime(model, x: np.ndarray, got: list[np.ndarray]) -> None:  # noqa: ANN001
    try:
        import onnxruntime as ort
    except ImportError:
        return
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for g, w in zip(got, sess.run(None, {"x": x}), strict=True):
        np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("largest", [1, 0])
def test_topk_of_nan_sorts_nan_above_numbers(largest: int) -> None:
    model = _model("TopK", {"k": np.array([3], np.int64)}, 2, largest=largest)
    g = rlx.compile(import_model(model)[0])
    vals, idx = g.run(X)
    want_vals, want_idx = TOPK[largest]
    np.testing.assert_array_equal(vals, np.array(want_vals, np.float32))
    np.testing.assert_array_equal(idx, np.array(want_idx))
    _check_onnxruntime(model, X, [vals, idx])


def test_nearest_resize_copies_nan_and_inf_without_spreading_them() -> None:
    scales = np.array([1, 1, 2, 0.5], np.float32)
    model = _model("Resize", {"roi": np.zeros(0, np.float32), "s": scales}, 1, mode="nearest")
    g = rlx.compile(import_model(model)[0])
    x = X.reshape(1, 1, 3, 4)
    (y,) = g.run(x)
    np.testing.assert_array_equal(y, np.repeat(x[:, :, :, ::2], 2, axis=2))  # half_pixel, floor
    _check_onnxruntime(model, x, [y])
