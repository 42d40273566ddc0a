"""ONNX index ops over named dynamic dims (GatherND, GatherElements): an index outside
[-dim, dim) is a run-time IndexError, as onnxruntime refuses it, never a silently
misplaced or all-zero element; in-range (and negative) indices match onnx.reference;
the generated code reads nothing out of bounds (guard pages) for bad indices.

Was (session 5, docs/fuzzing.md): `wrap_index` with a symbolic size only wrapped
negative indices, so GatherND's per-column index of `[0, 5]` into `[n=2, m=3]` data
landed on flat position 5 (element [1, 2]) and `[2, 0]` raised only when the flat
position passed n*m.
"""

from __future__ import annotations

import numpy as np
import pytest
from guarded_memory import guarded_run
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

import rlx
from rlx.frontends.onnx import import_model

DIMS = {"n": 2, "m": 3, "k": 2}


def _model(node: str, d_dims: list, i_dims: list, **attrs: int):  # noqa: ANN202
    g = helper.make_graph(
        [helper.make_node(node, ["d", "i"], ["y"], **attrs)], "g",
        [helper.make_tensor_value_info("d", TensorProto.FLOAT, d_dims),
         helper.make_tensor_value_info("i", TensorProto.INT64, i_dims)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )  # fmt: skip
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


CASES = {
    "gather_nd": (_model("GatherND", ["n", "m"], ["k", 2]),
                  [[0, -1], [-2, 2]], [[[0, 5], [1, 0]], [[0, 1], [2, 0]], [[0, -4], [1, 0]]]),
    "gather_elements_0": (_model("GatherElements", [2, "m"], ["k", "m"], axis=0),
                          [[0, 1, -1], [-2, 0, 1]], [[[0, 2, 0], [0, 0, 0]], [[0, 0, 0], [-3, 0, 0]]]),
    "gather_elements_1": (_model("GatherElements", ["n", 3], ["n", "k"], axis=1),
                          [[0, 2], [-1, -3]], [[[0, 3], [0, 0]], [[0, 0], [-4, 0]]]),
}  # fmt: skip


@pytest.fixture(scope="module", params=sorted(CASES))
def case(request: pytest.FixtureRequest):  # noqa: ANN201
    model, good, bad = CASES[request.param]
    module, _ = import_model(model)
    compiled = rlx.compile(module, options=rlx.CompileOptions(dim_binding=DIMS))
    return model, compiled, np.array(good, np.int64), [np.array(b, np.int64) for b in bad]


DATA = np.arange(6, dtype=np.float32).reshape(2, 3) + 1.0  # no zeros: an all-zero row shows


def test_in_range_indices_match_the_reference(case) -> None:  # noqa: ANN001
    model, compiled, good, _ = case
    (want,) = ReferenceEvaluator(model).run(None, {"d": DATA, "i": good})
    (got,) = compiled.run(DATA, good)
    np.testing.assert_array_equal(got, want)


def test_out_of_range_indices_raise_like_onnxruntime(case) -> None:  # noqa: ANN001
    model, compiled, _, bad = case
    ort = pytest.importorskip("onnxruntime")
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for b in bad:
        with pytest.raises(Exception, match="(?i)out of range|invalid index"):
            sess.run(None, {"d": DATA, "i": b})
        value = int(b.reshape(-1)[np.flatnonzero(np.abs(b.reshape(-1)) >= 2)[0]])
        with pytest.raises(IndexError, match=f"index {value} is out of range"):
            compiled.run(DATA, b)


@pytest.mark.parametrize("side", ["end", "start"])
def test_bad_indices_read_nothing_out_of_bounds(case, side: str) -> None:  # noqa: ANN001
    _, compiled, good, bad = case
    for b in bad:
        _, status = guarded_run(compiled, [DATA, b], side)
        assert status is not None and status[0], "an out-of-range index was not recorded"
    outs, status = guarded_run(compiled, [DATA, good], side)
    assert status is not None and not status[0]
    np.testing.assert_array_equal(outs[0], compiled.run(DATA, good)[0])


def _loss_model(op: str, **attrs: int):  # noqa: ANN202
    g = helper.make_graph(
        [helper.make_node(op, ["x", "t"], ["y"], reduction="none", **attrs)], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3]),
         helper.make_tensor_value_info("t", TensorProto.INT64, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )  # fmt: skip
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize("op", ["NegativeLogLikelihoodLoss", "SoftmaxCrossEntropyLoss"])
def test_loss_class_index_out_of_range_raises(op: str) -> None:
    """A target class outside [-C, C) (and not `ignore_index`) is an IndexError, as in
    onnxruntime and onnx.reference (was a loss of 0: the one-hot row matched nothing);
    negative classes wrap and an out-of-range `ignore_index` is only ignored."""
    model = _loss_model(op, ignore_index=5)
    compiled = rlx.compile(import_model(model)[0])
    ref = ReferenceEvaluator(model)
    for t in ([5, -1], [2, 0], [-3, 5]):
        t = np.array(t, np.int64)
        (want,) = ref.run(None, {"x": DATA, "t": t})
        np.testing.assert_allclose(compiled.run(DATA, t)[0], want, rtol=1e-6, atol=1e-6)
    for value in (7, -4, 3):
        with pytest.raises(
            IndexError, match=f"index {value} is out of range for an axis of size 3"
        ):
            compiled.run(DATA, np.array([0, value], np.int64))
    plain = rlx.compile(import_model(_loss_model(op))[0])
    with pytest.raises(IndexError, match="index 5 is out of range"):
        plain.run(DATA, np.array([5, 0], np.int64))
