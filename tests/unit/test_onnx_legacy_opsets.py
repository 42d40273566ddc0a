"""Old op versions (opsets 7-10, as in much of the ONNX Model Zoo) import: attributes that
later versions turned into inputs (`legacy.modernize`), old-only attributes with their
today's-meaning values, and ops that only lacked negative axes. Checked against
onnx.reference, which implements the old versions."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

from rlx.frontends.onnx import OnnxImportError, import_model
from rlx.interpreter import run

F32 = TensorProto.FLOAT


def _model(node, shape, opset: int, inits=()):  # noqa: ANN001,ANN202
    nodes = node if isinstance(node, list) else [node]
    g = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", F32, shape)],
        [helper.make_tensor_value_info(o, F32, None) for o in nodes[-1].output if o],
        initializer=[numpy_helper.from_array(np.asarray(v), k) for k, v in inits],
    )  # fmt: skip
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=7)


def _check(m, x: np.ndarray) -> None:  # noqa: ANN001
    module, params = import_model(m)
    got = run(module, {"x": x}, params)
    want = ReferenceEvaluator(m).run(None, {"x": x})
    for g, w in zip(got, want, strict=True):
        assert g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


X = np.random.default_rng(0).standard_normal((2, 3, 4, 4)).astype(np.float32)


@pytest.mark.parametrize(
    ("node", "opset"),
    [
        (helper.make_node("Slice", ["x"], ["y"], starts=[1, 0], ends=[3, -1], axes=[1, 3]), 9),
        (helper.make_node("Slice", ["x"], ["y"], starts=[0, 1], ends=[1, 1000]), 7),
        (helper.make_node("Pad", ["x"], ["y"], pads=[0, 0, 1, 2, 0, 0, 2, 1], value=0.5), 9),
        (helper.make_node("Pad", ["x"], ["y"], pads=[0, 0, 1, 1, 0, 0, 1, 1], mode="reflect"), 10),
        (helper.make_node("Clip", ["x"], ["y"], min=-0.5, max=0.25), 9),
        (helper.make_node("Clip", ["x"], ["y"], max=0.0), 6),
        (helper.make_node("TopK", ["x"], ["y", "i"], k=2, axis=3), 9),
        (helper.make_node("Concat", ["x", "x"], ["y"], axis=1), 9),
        (helper.make_node("Flatten", ["x"], ["y"], axis=2), 9),
        (helper.make_node("ReduceSum", ["x"], ["y"], axes=[1, 3], keepdims=0), 11),
        (helper.make_node("Unsqueeze", ["x"], ["y"], axes=[0]), 9),
        (helper.make_node("Dropout", ["x"], ["y"], ratio=0.3), 7),
    ],
)
def test_old_op_versions_import(node, opset: int) -> None:  # noqa: ANN001
    _check(_model(node, [2, 3, 4, 4], opset), X)


def test_upsample_7_scales_attribute() -> None:
    """(onnx.reference cannot run Upsample-7: nearest upsampling is np.repeat.)"""
    node = helper.make_node("Upsample", ["x"], ["y"], scales=[1.0, 1.0, 2.0, 3.0], mode="nearest")
    module, params = import_model(_model(node, [2, 3, 4, 4], 7))
    (y,) = run(module, {"x": X}, params)
    np.testing.assert_array_equal(y, X.repeat(2, axis=2).repeat(3, axis=3))


def test_old_gather_and_batch_norm_spatial() -> None:
    c = 3
    bn = helper.make_node(
        "BatchNormalization", ["x", "s", "b", "m", "v"], ["h"], spatial=1, epsilon=1e-3
    )
    ga = helper.make_node("Gather", ["h", "idx"], ["y"], axis=1)
    rng = np.random.default_rng(1)
    inits = [("s", rng.random(c, np.float32)), ("b", rng.random(c, np.float32)),
             ("m", rng.random(c, np.float32)), ("v", rng.random(c, np.float32) + 0.5),
             ("idx", np.array([2, 0], np.int64))]  # fmt: skip
    module, params = import_model(_model([bn, ga], [2, 3, 4, 4], 7, inits))
    (y,) = run(module, {"x": X}, params)  # (onnx.reference's BatchNormalization-7 fails)
    s, b, m, v = (dict(inits)[k].reshape(1, c, 1, 1) for k in "sbmv")
    want = ((X - m) / np.sqrt(v + 1e-3) * s + b)[:, [2, 0]]
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-6)


def test_old_attribute_with_another_meaning_is_a_clear_error() -> None:
    bn = helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"], spatial=0)
    inits = [(k, np.ones(3, np.float32)) for k in "sbmv"]
    with pytest.raises(OnnxImportError, match=r"\(BatchNormalization\): spatial=0 \(opset 7\)"):
        import_model(_model(bn, [2, 3, 4, 4], 7, inits))
    with pytest.raises(OnnxImportError, match=r"\(Slice\): takes 3 to 5 inputs, got 1"):
        import_model(
            _model(helper.make_node("Slice", ["x"], ["y"], starts=[0], ends=[1]), [2, 3], 13)
        )


@pytest.mark.parametrize(("op", "opset", "added"), [("Gelu", 17, 20), ("Mish", 17, 18),
                                                    ("HardSwish", 13, 14)])  # fmt: skip
def test_op_newer_than_the_model_opset_is_refused(op: str, opset: int, added: int) -> None:
    """onnxruntime refuses these models too; the importer used the op's newest meaning."""
    m = _model(helper.make_node(op, ["x"], ["y"]), [2, 3], opset)
    with pytest.raises(
        OnnxImportError,
        match=rf"node 'y' \({op}\): {op} does not exist in opset {opset} \(it was added in "
        rf"opset {added}\)",
    ):
        import_model(m)
