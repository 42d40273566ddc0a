"""MelWeightMatrix (was missing from the importer): the filterbank computed at import time
from constant inputs, against onnx.reference's implementation (which the backend node
test uses) over sizes, edges and output types; bad values are an OnnxImportError naming
the node."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import rlx
from rlx.frontends.onnx import OnnxImportError, import_model


def _model(mel: int, dft: int, rate: int, lo: float, hi: float, dtype: int | None = None):  # noqa: ANN202
    vals = {"m": np.int64(mel), "d": np.int64(dft), "r": np.int64(rate), "lo": np.float32(lo),
            "hi": np.float32(hi)}  # fmt: skip
    inits = [numpy_helper.from_array(np.array(v), k) for k, v in vals.items()]
    attrs = {} if dtype is None else {"output_datatype": dtype}
    g = helper.make_graph(
        [helper.make_node("MelWeightMatrix", list(vals), ["y"], name="mel", **attrs)], "g",
        [], [helper.make_empty_tensor_value_info("y")], initializer=inits,
    )  # fmt: skip
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize(
    ("args", "dtype"),
    [
        ((8, 16, 8192, 0.0, 4096.0), None),
        ((40, 512, 16000, 20.0, 7600.0), None),
        ((13, 400, 22050, 0.0, 11025.0), TensorProto.DOUBLE),
        ((64, 64, 16000, 300.0, 8000.0), TensorProto.FLOAT16),  # zero-width rises
    ],
)
def test_matches_onnx_reference(args: tuple, dtype: int | None) -> None:  # type: ignore[type-arg]
    model = _model(*args, dtype=dtype)
    (want,) = ReferenceEvaluator(model).run(None, {})
    (got,) = rlx.compile(import_model(model)[0]).run()
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), atol=1e-3)


@pytest.mark.parametrize(
    ("args", "msg"),
    [
        ((0, 16, 8000, 0.0, 4000.0), "must be positive"),
        ((8, 16, 8000, 100.0, 50.0), "lower_edge_hertz <= upper_edge_hertz"),
        ((8, 16, 8000, 0.0, 5000.0), "sample_rate / 2"),
        ((4096, 1 << 14, 8000, 0.0, 4000.0), "over 16777216 elements"),
    ],
)
def test_bad_values_are_import_errors(args: tuple, msg: str) -> None:  # type: ignore[type-arg]
    with pytest.raises(OnnxImportError, match=rf"mel.*{msg}"):
        import_model(_model(*args))
