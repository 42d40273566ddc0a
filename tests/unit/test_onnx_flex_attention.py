"""ai.onnx.preview FlexAttention (the importer took no op outside the default domain): scores,
the score_mod / prob_mod subgraphs, softmax precision, GQA and scale, compiled and
interpreted against onnx.reference; ops of a domain the importer does not know, or
FlexAttention in the default domain, are refused naming the node."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

import rlx
from rlx.frontends.onnx import OnnxImportError, import_model

F, H = TensorProto.FLOAT, TensorProto.FLOAT16


def _soft_cap() -> object:
    """score_mod: 5 tanh(s / 5)."""
    nodes = [helper.make_node("Constant", [], ["c"], value_float=5.0),
             helper.make_node("Div", ["s", "c"], ["d"]), helper.make_node("Tanh", ["d"], ["t"]),
             helper.make_node("Mul", ["t", "c"], ["o"])]  # fmt: skip
    return helper.make_graph(nodes, "cap", [helper.make_tensor_value_info("s", F, None)],
                             [helper.make_tensor_value_info("o", F, None)])  # fmt: skip


def _square() -> object:
    """prob_mod: p * p."""
    return helper.make_graph([helper.make_node("Mul", ["p", "p"], ["o"])], "sq",
                             [helper.make_tensor_value_info("p", F, None)],
                             [helper.make_tensor_value_info("o", F, None)])  # fmt: skip


def _model(qs, ks, vs, t=F, domain="ai.onnx.preview", **attrs):  # noqa: ANN001, ANN202
    g = helper.make_graph(
        [helper.make_node("FlexAttention", ["q", "k", "v"], ["y"], name="flex", domain=domain,
                          **attrs)], "g",
        [helper.make_tensor_value_info(nm, t, s) for nm, s in (("q", qs), ("k", ks), ("v", vs))],
        [helper.make_empty_tensor_value_info("y")],
    )  # fmt: skip
    ops = [helper.make_opsetid("", 26), helper.make_opsetid("ai.onnx.preview", 1)]
    return helper.make_model(g, opset_imports=ops)


CASES = [
    ([2, 4, 5, 8], [2, 4, 7, 8], [2, 4, 7, 3], F, {}),
    ([1, 6, 4, 8], [1, 2, 6, 8], [1, 2, 6, 8], F, dict(scale=0.3)),
    ([1, 2, 3, 4], [1, 2, 5, 4], [1, 2, 5, 4], F, dict(score_mod=_soft_cap())),
    ([1, 2, 3, 4], [1, 2, 5, 4], [1, 2, 5, 4], F, dict(prob_mod=_square(), softmax_precision=11)),
    ([2, 2, 4, 8], [2, 2, 4, 8], [2, 2, 4, 8], H, {}),
]  # fmt: skip


@pytest.mark.parametrize("case", range(len(CASES)))
def test_matches_onnx_reference(case: int) -> None:
    qs, ks, vs, t, attrs = CASES[case]
    if "prob_mod" in attrs:  # the subgraph then runs in f64: declare it so
        g = attrs["prob_mod"]
        g.input[0].type.tensor_type.elem_type = g.output[0].type.tensor_type.elem_type = 11
    model = _model(qs, ks, vs, t, **attrs)
    dt = np.float32 if t == F else np.float16
    rng = np.random.default_rng(case)
    feeds = {nm: rng.standard_normal(s).astype(dt) for nm, s in (("q", qs), ("k", ks), ("v", vs))}
    (want,) = ReferenceEvaluator(model).run(None, feeds)
    got = rlx.compile(import_model(model)[0]).run(**feeds)[0]
    (ref,) = rlx.reference.run(import_model(model)[0], list(feeds.values()))
    tol = 1e-5 if t == F else 2e-3
    for v in (got, np.asarray(ref)):
        assert v.shape == want.shape and v.dtype == want.dtype
        np.testing.assert_allclose(v.astype(np.float64), want.astype(np.float64), rtol=tol,
                                   atol=tol)  # fmt: skip


@pytest.mark.parametrize(
    ("qs", "ks", "domain", "attrs", "msg"),
    [
        ([1, 3, 4, 8], [1, 2, 4, 8], "ai.onnx.preview", {}, "not a multiple"),
        ([1, 2, 4, 8], [1, 2, 4, 4], "ai.onnx.preview", {}, "do not match"),
        ([1, 2, 4, 8], [1, 2, 4, 8], "ai.onnx.preview", dict(softmax_precision=7), "not a float"),
        ([1, 2, 4, 8], [1, 2, 4, 8], "", {}, "op type 'FlexAttention' is not supported"),
        ([1, 2, 4, 8], [1, 2, 4, 8], "com.example", {}, "op domain 'com.example'"),
    ],
)
def test_bad_input_is_an_import_error(qs, ks, domain, attrs, msg) -> None:  # noqa: ANN001
    with pytest.raises(OnnxImportError, match=rf"flex.*{msg}"):
        import_model(_model(qs, ks, ks, domain=domain, **attrs))
