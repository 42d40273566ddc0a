"""Det (was missing from the importer): LU elimination with partial pivoting unrolled into
rlx ops (`ops_linalg`), against NumPy's `linalg.det` (LAPACK getrf) in f64, compiled and
by the reference interpreter, for 1x1 to 9x9, batches, singular and pivot-needing matrices,
f32 / f16 inputs; bad shapes are an OnnxImportError naming the node."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

import rlx
from rlx.frontends.onnx import OnnxImportError, import_model

TYPES = {"f32": (TensorProto.FLOAT, np.float32, 1e-4), "f64": (TensorProto.DOUBLE, np.float64, 1e-10),
         "f16": (TensorProto.FLOAT16, np.float16, 2e-2)}  # fmt: skip


def _model(shape: list[int], dtype: str = "f32", t: int | None = None):  # noqa: ANN202
    g = helper.make_graph(
        [helper.make_node("Det", ["x"], ["y"], name="det")], "g",
        [helper.make_tensor_value_info("x", t or TYPES[dtype][0], shape)],
        [helper.make_empty_tensor_value_info("y")],
    )  # fmt: skip
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 22)])


def _check(x: np.ndarray, dtype: str) -> None:
    model = _model(list(x.shape), dtype)
    module = import_model(model)[0]
    want = np.linalg.det(x.astype(np.float64))
    got = rlx.compile(module).run(x)[0]
    (ref,) = rlx.reference.run(import_model(model)[0], [x])
    assert got.shape == want.shape and got.dtype == x.dtype
    tol = TYPES[dtype][2]
    scale = max(1.0, float(np.abs(want).max(initial=0.0)))
    for v in (got, np.asarray(ref)):
        np.testing.assert_allclose(v.astype(np.float64), want, rtol=tol, atol=tol * scale)


@pytest.mark.parametrize(
    ("shape", "dtype"),
    [([1, 1], "f64"), ([3, 3], "f64"), ([2, 4, 4], "f32"), ([3, 2, 5, 5], "f32"),
     ([9, 9], "f64"), ([2, 3, 3], "f16")],
)  # fmt: skip
def test_random_matrices_match_numpy(shape: list[int], dtype: str) -> None:
    x = np.random.default_rng(sum(shape)).standard_normal(shape).astype(TYPES[dtype][1])
    _check(x, dtype)


def test_pivoting_and_singular_matrices() -> None:
    """A zero leading entry (needs a row swap: the sign flips), a rank-deficient matrix
    (exactly 0, not NaN: a zero pivot divides by 1), a zero matrix and a permutation."""
    x = np.array(
        [
            [[0.0, 2.0, 1.0], [1.0, 0.0, 3.0], [4.0, 1.0, 0.0]],
            [[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]],
            [[0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]],
            [[0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [1.0, 0.0, 0.0]],
        ]
    )
    _check(x, "f64")
    got = rlx.compile(import_model(_model([4, 3, 3], "f64"))[0]).run(x)[0]
    assert got[1] == 0.0 and got[2] == 0.0 and got[3] == 1.0


@pytest.mark.parametrize(
    ("shape", "t", "msg"),
    [
        ([3, 4], None, "square matrices"),
        ([5], None, "square matrices"),
        ([2, 2], TensorProto.INT64, "Det takes bfloat16, double, float, float16"),  # schema
        ([65, 65], None, "at most 64x64"),
    ],
)
def test_bad_input_is_an_import_error(shape: list[int], t: int | None, msg: str) -> None:
    with pytest.raises(OnnxImportError, match=rf"det.*{msg}"):
        import_model(_model(shape, t=t))
