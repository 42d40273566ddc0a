"""ONNX RandomUniform / RandomNormal (+Like) and Bernoulli onto `rlx.rng_*`: the values come
from RLX's Philox stream, so they are checked against the reference interpreter (compiled)
and against the distribution (range, moments), and seeds against ONNX's meaning."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

import rlx
from rlx.frontends.onnx import OnnxImportError, import_model
from rlx.interpreter import run

F, I64 = TensorProto.FLOAT, TensorProto.INT64


def _model(nodes, inputs, outputs, opset: int = 17):  # noqa: ANN001,ANN202
    g = helper.make_graph(
        nodes, "r",
        [helper.make_tensor_value_info(*i) for i in inputs],
        [helper.make_tensor_value_info(*o) for o in outputs],
    )  # fmt: skip
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def _both(m, feeds: list[np.ndarray]) -> list[np.ndarray]:  # noqa: ANN001
    """The reference interpreter's outputs, after checking the compiled graph's agree."""
    module, params = import_model(m)
    want = run(module, feeds, params)
    g = rlx.compile(module)
    g.set_params(params)
    for got, w in zip(g.run(*feeds), want, strict=True):
        np.testing.assert_allclose(got, w, rtol=1e-6, atol=1e-6)
    return want


def test_uniform_and_normal_distributions() -> None:
    m = _model(
        [
            helper.make_node("RandomUniform", [], ["u"], shape=[4000], low=-2.0, high=3.0),
            helper.make_node("RandomNormalLike", ["x"], ["n"], mean=1.0, scale=2.0),
        ],
        [("x", F, [50, 80])],
        [("u", F, [4000]), ("n", F, [50, 80])],
    )
    u, n = _both(m, [np.zeros((50, 80), np.float32)])
    assert u.dtype == np.float32 and u.shape == (4000,)
    assert u.min() >= -2.0 and u.max() < 3.0
    assert abs(u.mean() - 0.5) < 0.1 and abs(u.std() - 5 / np.sqrt(12)) < 0.1
    assert n.shape == (50, 80) and abs(n.mean() - 1.0) < 0.15 and abs(n.std() - 2.0) < 0.15


def test_seeds_select_streams() -> None:
    """The same ONNX seed gives the same numbers; unseeded ops never share a stream."""
    mk = lambda out, **kw: helper.make_node("RandomUniform", [], [out], shape=[64], **kw)  # noqa: E731
    m = _model(
        [mk("a", seed=3.0), mk("b", seed=3.0), mk("c", seed=4.0), mk("d"), mk("e")],
        [],
        [(o, F, [64]) for o in "abcde"],
    )
    a, b, c, d, e = _both(m, [])
    np.testing.assert_array_equal(a, b)
    for x, y in [(a, c), (a, d), (d, e)]:
        assert not np.array_equal(x, y)


def test_bernoulli_draws_one_with_probability_p() -> None:
    """As the operator is defined (and onnxruntime draws), not as ONNX's function body
    (`Greater(uniform, p)`: 1 with probability 1 - p)."""
    m = _model(
        [helper.make_node("Bernoulli", ["p"], ["y"])], [("p", F, [2000])], [("y", F, [2000])]
    )
    p = np.where(np.arange(2000) < 1000, 0.2, 0.9).astype(np.float32)
    (y,) = _both(m, [p])
    assert set(np.unique(y)) <= {0.0, 1.0}
    assert abs(y[:1000].mean() - 0.2) < 0.05 and abs(y[1000:].mean() - 0.9) < 0.05


@pytest.mark.parametrize(
    ("node", "inputs", "match"),
    [
        (helper.make_node("RandomUniform", [], ["y"], shape=[2], dtype=I64), [],
         "dtype must be a floating-point type"),
        (helper.make_node("RandomUniform", [], ["y"], shape=[2], low=2.0, high=1.0), [],
         r"low \(2.0\) must not exceed high \(1.0\)"),
        (helper.make_node("RandomNormal", [], ["y"], shape=[2], scale=-1.0), [],
         "scale must be non-negative"),
        (helper.make_node("RandomNormal", [], ["y"], shape=[-1]), [], "must be non-negative"),
        (helper.make_node("RandomNormal", [], ["y"]), [], "'shape' is required"),
        (helper.make_node("RandomUniformLike", ["x"], ["y"]), [("x", F, ["n", 2])],
         "need a static shape"),
        (helper.make_node("RandomUniformLike", ["x"], ["y"]), [("x", I64, [2])],
         "not floating point"),
        (helper.make_node("Bernoulli", ["x"], ["y"]), [("x", I64, [2])],
         "Bernoulli takes double, float, float16"),
    ],
)  # fmt: skip
def test_bad_random_nodes_are_named(node, inputs, match: str) -> None:  # noqa: ANN001
    m = _model([node], inputs, [("y", F, None)])
    with pytest.raises(OnnxImportError, match=f"node 'y' .*{match}"):
        import_model(m)


def test_bernoulli_output_dtype_and_huge_seed() -> None:
    m = _model(
        [helper.make_node("Bernoulli", ["p"], ["y"], dtype=TensorProto.BOOL, seed=1e30)],
        [("p", F, [3])],
        [("y", TensorProto.BOOL, [3])],
        opset=15,
    )
    (y,) = _both(m, [np.array([0.0, 1.0, 1.0], np.float32)])
    np.testing.assert_array_equal(y, [False, True, True])  # p = 0 never, p = 1 always


def test_training_dropout_keeps_and_scales() -> None:
    ratio = np.float32(0.25)
    m = _model(
        [
            helper.make_node("Constant", [], ["r"], value=helper.make_tensor("r", F, [], [ratio])),
            helper.make_node(
                "Constant", [], ["t"], value=helper.make_tensor("t", TensorProto.BOOL, [], [True])
            ),
            helper.make_node("Dropout", ["x", "r", "t"], ["y", "mask"]),
        ],
        [("x", F, [40, 50])],
        [("y", F, [40, 50]), ("mask", TensorProto.BOOL, [40, 50])],
    )
    x = np.random.default_rng(0).standard_normal((40, 50)).astype(np.float32)
    y, mask = _both(m, [x])
    np.testing.assert_allclose(y, np.where(mask, x / (1 - ratio), 0), rtol=1e-6)
    assert abs(mask.mean() - 0.75) < 0.05


def test_training_dropout_ratio_one_is_refused() -> None:
    m = _model(
        [
            helper.make_node("Constant", [], ["r"], value=helper.make_tensor("r", F, [], [1.0])),
            helper.make_node(
                "Constant", [], ["t"], value=helper.make_tensor("t", TensorProto.BOOL, [], [True])
            ),
            helper.make_node("Dropout", ["x", "r", "t"], ["y"]),
        ],
        [("x", F, [4])],
        [("y", F, [4])],
    )
    with pytest.raises(OnnxImportError, match=r"node 'y' \(Dropout\): ratio must be in \[0, 1\)"):
        import_model(m)
