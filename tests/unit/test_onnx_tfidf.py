"""TfIdfVectorizer on integer tokens (was missing from the importer), against onnx.reference
and onnxruntime where installed: TF / IDF / TFIDF, with and without weights, gram lengths
1-3, skips 0-3, 1-D and 2-D int32 / int64 input, tokens outside the pool; string pools and
inconsistent attributes are an OnnxImportError naming the node."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

import rlx
from rlx.frontends.onnx import OnnxImportError, import_model

POOL = [2, 3, 5, 4, 2, 3, 3, 5, 5, 4, 7, 2, 3, 5, 2, 4, 7, 3]  # 4 unigrams, 4 bigrams, 2 trigrams
COUNTS = [0, 4, 12]
INDEXES = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]


def _model(shape: list[int], t: int = TensorProto.INT64, **attrs):  # noqa: ANN202
    attrs = dict(pool_int64s=POOL, ngram_counts=COUNTS, ngram_indexes=INDEXES) | attrs
    g = helper.make_graph(
        [helper.make_node("TfIdfVectorizer", ["x"], ["y"], name="tfidf", **attrs)], "g",
        [helper.make_tensor_value_info("x", t, shape)],
        [helper.make_empty_tensor_value_info("y")],
    )  # fmt: skip
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 9)])


CASES = [
    dict(mode="TF", min_gram_length=1, max_gram_length=3, max_skip_count=0),
    dict(mode="TF", min_gram_length=2, max_gram_length=3, max_skip_count=3),
    dict(mode="IDF", min_gram_length=1, max_gram_length=2, max_skip_count=1),
    dict(mode="IDF", min_gram_length=1, max_gram_length=3, max_skip_count=2,
         weights=[0.5 * i for i in range(10)]),
    dict(mode="TFIDF", min_gram_length=1, max_gram_length=3, max_skip_count=1,
         weights=[1.0 + i for i in range(10)]),
    dict(mode="TFIDF", min_gram_length=3, max_gram_length=3, max_skip_count=0),
]  # fmt: skip


@pytest.mark.parametrize("case", range(len(CASES)))
@pytest.mark.parametrize(("shape", "t"), [([3, 12], TensorProto.INT64), ([9], TensorProto.INT32)])
def test_matches_onnx_reference(case: int, shape: list[int], t: int) -> None:
    model = _model(shape, t, **CASES[case])
    dt = np.int64 if t == TensorProto.INT64 else np.int32
    x = np.random.default_rng(case).integers(1, 8, shape).astype(dt)
    # onnx.reference counts (TF); the weighting by the spec (its IDF / TFIDF without
    # weights raise TypeError: len(None))
    tf_attrs = {k: v for k, v in CASES[case].items() if k not in ("mode", "weights")}
    (counts,) = ReferenceEvaluator(_model(shape, t, mode="TF", **tf_attrs)).run(None, {"x": x})
    w = np.asarray(CASES[case].get("weights", [1.0] * 10), np.float32)
    mode = CASES[case]["mode"]
    want = {"TF": counts, "IDF": w * (counts > 0), "TFIDF": w * counts}[mode].astype(np.float32)
    got = rlx.compile(import_model(model)[0]).run(x)[0]
    (ref,) = rlx.reference.run(import_model(model)[0], [x])
    for v in (got, np.asarray(ref)):
        assert v.shape == want.shape and v.dtype == want.dtype
        np.testing.assert_allclose(v, want, rtol=1e-6)


def test_matches_onnxruntime() -> None:
    ort = pytest.importorskip("onnxruntime")
    model = _model([2, 10], **CASES[4])
    x = np.random.default_rng(3).integers(1, 8, (2, 10)).astype(np.int64)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    (want,) = sess.run(None, {"x": x})
    np.testing.assert_allclose(rlx.compile(import_model(model)[0]).run(x)[0], want, rtol=1e-6)


@pytest.mark.parametrize(
    ("attrs", "msg"),
    [
        (dict(pool_strings=["a", "b"], pool_int64s=None), "only integer tokens"),
        (dict(mode="TF", weights=[1.0, 2.0]), "2 weights for 10 output columns"),
        (dict(mode="BM25"), "mode 'BM25'"),
        (dict(ngram_counts=[0, 3]), "do not cut the pool"),
        (
            dict(
                pool_int64s=[2, 3, 2, 2, 3, 2, 3],
                ngram_counts=[0, 3],
                ngram_indexes=[0, 1, 2, 3, 4],
            ),
            r"the pool holds the 1-gram \[2\] twice",
        ),
    ],
)
def test_bad_attributes_are_import_errors(attrs: dict, msg: str) -> None:  # type: ignore[type-arg]
    attrs = {k: v for k, v in attrs.items() if v is not None}
    base = dict(pool_int64s=POOL, ngram_counts=COUNTS, ngram_indexes=INDEXES, mode="TF",
                min_gram_length=1, max_gram_length=2, max_skip_count=0)  # fmt: skip
    if "pool_strings" in attrs:
        base.pop("pool_int64s")
    g = helper.make_graph(
        [helper.make_node("TfIdfVectorizer", ["x"], ["y"], name="tfidf", **(base | attrs))], "g",
        [helper.make_tensor_value_info("x", TensorProto.INT64, [2, 5])],
        [helper.make_empty_tensor_value_info("y")],
    )  # fmt: skip
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 9)])
    with pytest.raises(OnnxImportError, match=rf"tfidf.*{msg}"):
        import_model(model)
