"""ONNX float Mod against onnx.reference bit for bit: fmod=1 is np.fmod, fmod=0 (not
allowed for floats by the spec) is what onnx.reference runs, np.mod; reference interpreter
and compiled, f32/f16/bf16/f64, signed zeros, infinities and NaN included (f64: exact
only while trunc(a/b)·b is)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

import rlx
from rlx.frontends.onnx import import_model
from rlx.interpreter import run

A = [
    0.3,
    -0.3,
    5.5,
    -5.5,
    6.0,
    -6.0,
    0.0,
    -0.0,
    1e6,
    -7e5,
    np.inf,
    -np.inf,
    np.nan,
    7.25,
    1.0,
    -2.0,
]
B = [0.1, 0.1, -2.0, 2.0, -3.0, 3.0, -1.5, 1.5, 3.0, 0.7, 2.0, -2.0, 1.0, np.inf, -np.inf, 0.0]
TYPES = {
    "f32": (np.float32, TensorProto.FLOAT),
    "f16": (np.float16, TensorProto.FLOAT16),
    "bf16": (ml_dtypes.bfloat16, TensorProto.BFLOAT16),
    "f64": (np.float64, TensorProto.DOUBLE),
}


def _same_bits(got: np.ndarray, want: np.ndarray) -> None:
    got, want = np.asarray(got), np.asarray(want, got.dtype)
    nan = np.isnan(got.astype(np.float64)) & np.isnan(want.astype(np.float64))
    bits = (got.view(np.uint8) == want.view(np.uint8)).reshape(len(got), -1).all(1)
    assert (bits | nan).all(), (got, want)


@pytest.mark.parametrize("fmod", [0, 1])
@pytest.mark.parametrize("dt", list(TYPES))
def test_float_mod_is_onnx_reference(dt: str, fmod: int) -> None:
    np_dt, onnx_t = TYPES[dt]
    vi = helper.make_tensor_value_info
    m = helper.make_model(
        helper.make_graph([helper.make_node("Mod", ["a", "b"], ["y"], fmod=fmod)], "g",
                          [vi("a", onnx_t, [16]), vi("b", onnx_t, [16])], [vi("y", onnx_t, None)]),
        opset_imports=[helper.make_opsetid("", 17)],
    )  # fmt: skip
    with np.errstate(over="ignore"):  # 1e6 is inf in f16
        a, b = np.array(A).astype(np_dt), np.array(B).astype(np_dt)
    if dt == "f64":  # a - trunc(a/b)*b is exact in f64 only while the product is
        b[9] = 0.75  # (-7e5 % 0.7 is not: np.mod gives 0.69999..., the formula 0)
    with np.errstate(all="ignore"):
        (want,) = ReferenceEvaluator(m).run(None, {"a": a, "b": b})
    module, _ = import_model(m)
    _same_bits(run(module, [a, b])[0], want)
    if dt in ("f32", "f16"):
        _same_bits(rlx.compile(module).run(a, b)[0], want)
