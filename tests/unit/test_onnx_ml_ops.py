"""`ai.onnx.ml` converters of `ops_ml` and `ops_ml_linear` (Binarizer, ArrayFeatureExtractor,
Scaler, Normalizer, Imputer, OneHotEncoder, FeatureVectorizer, LabelEncoder 2 / 4, the linear
models and SVMs) against onnxruntime, and against onnx.reference where the converter's
docstring says the two agree: every mode, attribute and post transform, float / double /
integer, 1-D and 2-D inputs, NaN. The variants are nodes of one graph, run by rlx's
interpreter; one graph with a node of each converter is compiled against it. Malformed
nodes are an OnnxImportError naming the node; OneHotEncoder zeros=0 and
ArrayFeatureExtractor's bad index are run-time IndexErrors naming it."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest
from onnx import ModelProto, helper, numpy_helper
from onnx import TensorProto as T
from onnx.reference import ReferenceEvaluator

import rlx
from rlx.frontends.onnx import OnnxImportError, import_model
from rlx.interpreter import run

ML = "ai.onnx.ml"
HAVE_ORT = importlib.util.find_spec("onnxruntime") is not None
POSTS = ("NONE", "SOFTMAX", "LOGISTIC", "SOFTMAX_ZERO", "PROBIT")
KERNELS = [("LINEAR", [0.0, 0.0, 0.0]), ("POLY", [0.5, 0.3, 3.0]), ("POLY", [0.5, 1.0, 2.5]),
           ("RBF", [0.3, 0.0, 0.0]), ("SIGMOID", [0.4, 0.2, 0.0])]  # fmt: skip
_TYPES = {np.float32: T.FLOAT, np.float64: T.DOUBLE, np.int64: T.INT64, np.int32: T.INT32}


def _in(x: np.ndarray, name: str = "x") -> tuple:
    return name, _TYPES[x.dtype.type], list(x.shape)


def _graph(ins: list, *nodes: tuple, opset: int = 3) -> ModelProto:
    """Nodes (op, attrs[, outputs]) all reading the inputs (name, type, shape); one node is
    named 'ml', several 'ml0', 'ml1', ..."""
    made, outs = [], []
    for k, (op, attrs, *rest) in enumerate(nodes):
        o = [f"y{k}_{j}" for j in range(rest[0] if rest else 1)]
        name = "ml" if len(nodes) == 1 else f"ml{k}"
        made.append(helper.make_node(op, [i[0] for i in ins], o, name=name, domain=ML, **attrs))
        outs += o
    g = helper.make_graph(made, "g", [helper.make_tensor_value_info(*i) for i in ins],
                          [helper.make_empty_tensor_value_info(o) for o in outs])  # fmt: skip
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17),
                                               helper.make_opsetid(ML, opset)])  # fmt: skip


def _ort(model: ModelProto, *xs: np.ndarray) -> list:
    ort = pytest.importorskip("onnxruntime")
    s = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return s.run(None, {i.name: x for i, x in zip(s.get_inputs(), xs, strict=True)})


def _ref(model: ModelProto, *xs: np.ndarray) -> list:
    r = ReferenceEvaluator(model)
    with np.errstate(all="ignore"):
        return r.run(None, dict(zip(r.input_names, xs, strict=True)))


def _rlx(model: ModelProto, *xs: np.ndarray) -> list:
    module, params = import_model(model)
    return run(module, list(xs), params)


def _check(model: ModelProto, *xs: np.ndarray, ref=(), skip=(), ort=True, atol=1e-6) -> list:
    """rlx against onnxruntime on every output but `skip` (where it is installed: it is no
    test dependency), and onnx.reference on `ref` (always); a skip when neither applies."""
    got = _rlx(model, *xs)
    ort = ort and HAVE_ORT
    wants = [(_ort(model, *xs), [i for i in range(len(got)) if i not in skip])] if ort else []
    wants += [(_ref(model, *xs), ref)] if ref else []
    if not wants:
        pytest.skip("onnxruntime is not installed, and onnx.reference differs here")
    for want, which in wants:
        for i in which:
            assert got[i].dtype == want[i].dtype and got[i].shape == want[i].shape, i
            np.testing.assert_allclose(got[i], want[i], rtol=1e-5, atol=atol, err_msg=str(i))
    return got


_X = np.array([[1, -2, 3], [0, 0, 0], [-1, -4, -0.5], [2.5, 0, -2], [0.25, 7, 1]], np.float32)


@pytest.mark.parametrize(
    ("dt", "threshold"), [(np.float32, 0.25), (np.float64, None), (np.int64, -0.5), (np.int32, 1.5)]
)
def test_binarizer(dt: type, threshold: float | None) -> None:
    """NaN gives 0 (onnx.reference; onnxruntime fails on it, and has a float kernel only)."""
    x = (np.arange(12).reshape(3, 4) - 5).astype(dt)
    if x.dtype.kind == "f":
        x = x / 4
        x[0, 0] = np.nan
    model = _graph([_in(x)], ("Binarizer", {} if threshold is None else {"threshold": threshold}))
    got = _check(model, x, ref=[0], ort=False)[0]
    if dt is np.float32:
        np.testing.assert_array_equal(got[1:], _ort(model, np.nan_to_num(x))[0][1:])


@pytest.mark.parametrize(
    ("xs", "ks"), [([5], [3]), ([2, 3, 6], [4]), ([4, 5], [1, 3]), ([4, 5], [2, 2])]
)
def test_array_feature_extractor(xs: list[int], ks: list[int]) -> None:
    x = np.random.default_rng(0).standard_normal(xs).astype(np.float32)
    i = np.random.default_rng(1).integers(0, xs[-1], ks).astype(np.int64)
    _check(_graph([_in(x), _in(i, "i")], ("ArrayFeatureExtractor", {})), x, i, ref=[0])


def test_array_feature_extractor_bad_index_names_the_input() -> None:
    model = _graph([("x", T.FLOAT, [2, 3]), ("i", T.INT64, [2])], ("ArrayFeatureExtractor", {}))
    g = rlx.compile(import_model(model)[0])
    for bad in (3, -1):
        with pytest.raises(IndexError, match=rf"index {bad} .*\[computed from input 'i'\]$"):
            g.run(np.zeros((2, 3), np.float32), np.array([0, bad]))


@pytest.mark.parametrize("dt", [np.float32, np.float64, np.int64, "1-D"])
def test_normalizer_max_l1_l2(dt: type | str) -> None:
    """A zero row is copied; MAX divides by the max (not max |x|: onnx.reference)."""
    x = _X[2] if dt == "1-D" else _X.astype(dt)
    model = _graph([_in(x)], ("Normalizer", {}), ("Normalizer", {"norm": "L1"}),
                   ("Normalizer", {"norm": "L2"}))  # fmt: skip
    _check(model, x, ref=[1, 2] if dt is np.float32 else [])


@pytest.mark.parametrize("dt", [np.float32, np.float64, np.int64, np.int32, "1-D"])
def test_scaler(dt: type | str) -> None:
    """One value or one per feature; float32 out, double computed in double."""
    x = _X[4] if dt == "1-D" else _X.astype(dt)
    model = _graph([_in(x)], ("Scaler", {"offset": [0.5], "scale": [2.0]}),
                   ("Scaler", {"offset": [0.5, 1.0, -1.0], "scale": [2.0, -0.5, 3.0]}))  # fmt: skip
    _check(model, x, ref=[0, 1] if x.dtype == np.float32 else [])


def test_scaler_without_offset_or_scale_takes_0_and_1() -> None:
    """Both runtimes refuse a missing attribute; rlx reads the identity's values."""
    model = _graph(
        [_in(_X)], ("Scaler", {"scale": [2.0, 1.0, -1.0]}), ("Scaler", {"offset": [1.0]})
    )
    np.testing.assert_array_equal(_rlx(model, _X), [_X * [2, 1, -1], _X - 1])


@pytest.mark.parametrize("dt", [np.float32, np.int64, np.float64, np.int32, "1-D"])
def test_imputer(dt: type | str) -> None:
    """NaN / a value (default 0; 2**40: none) replaced by 1 or per-feature values; double /
    int32: onnx.reference only (onnxruntime has no kernel)."""
    x = _X.copy()
    x[[0, 3], [1, 0]] = np.nan
    fl = dt in (np.float32, np.float64, "1-D")
    x = x[0] if dt == "1-D" else (x if fl else np.nan_to_num(x, nan=-1)).astype(dt)
    nodes = [{"imputed_value_floats": [9.0], "replaced_value_float": np.nan},
             {"imputed_value_floats": [9.0, 8.0, 7.0], "replaced_value_float": np.nan},
             {"imputed_value_floats": [9.0, 8.0, 7.0]}] if fl else [
             {"imputed_value_int64s": [9, 8, 7], "replaced_value_int64": -1},
             {"imputed_value_int64s": [9]},
             {"imputed_value_int64s": [9], "replaced_value_int64": 2**40}]  # fmt: skip
    model = _graph([_in(x)], *[("Imputer", a) for a in nodes])
    _check(model, x, ref=range(len(nodes)) if x.ndim == 2 else (),
           ort=x.dtype in (np.float32, np.int64))  # fmt: skip


@pytest.mark.parametrize("dt", [np.float32, np.float64, np.int64, "1-D"])
def test_one_hot_encoder(dt: type | str) -> None:
    """Floats truncate toward 0 (onnx.reference matches no fraction); NaN and 1e20 match no
    category; a repeated category (3) takes its last index."""
    x = np.array([[1, -1, 3], [0, 5, 7], [-1, 2, 3]]) if dt is np.int64 else np.array([3, 1, 4])
    if dt not in (np.int64, "1-D"):
        x = np.array([[1.7, -0.5, 3], [np.nan, 5, 7], [-1.2, 2, 1e20]], dt)
    model = _graph([_in(x)], ("OneHotEncoder", {"cats_int64s": [1, 3, 0, -1, 7, 3]}),
                   ("OneHotEncoder", {"cats_int64s": [4, 1, 3], "zeros": 1}))  # fmt: skip
    _check(model, x)


@pytest.mark.parametrize("dt", [np.int64, np.float32])
def test_one_hot_encoder_zeros_0_fails_at_run_time(dt: type) -> None:
    ok, bad = np.array([[1, 2], [5, 5]], dt), np.array([[1, 2], [4, 5]], dt)
    model = _graph([_in(ok)], ("OneHotEncoder", {"cats_int64s": [1, 2, 5], "zeros": 0}))
    g = rlx.compile(import_model(model)[0])
    np.testing.assert_array_equal(g.run(ok)[0], _ort(model, ok)[0])
    with pytest.raises(IndexError, match=r"^node 'ml' \(OneHotEncoder\): .*index -1 is out of"):
        g.run(bad)
    with pytest.raises(Exception, match="Unknown Category"):
        _ort(model, bad)


@pytest.mark.parametrize(
    ("ins", "widths"),
    [([[2, 3], [2, 4]], [5, 2]), ([[2, 3], [2, 4], [2, 3, 2]], [3, 0, 4]), ([[3], [2]], [2, 4])],
)
@pytest.mark.parametrize("dt", [np.float32, np.int64])
def test_feature_vectorizer_cuts_and_pads(ins: list, widths: list[int], dt: type) -> None:
    """Rank 3 is flattened after axis 0 (onnx.reference refuses it), 1-D is one row (a column
    in onnx.reference), integers become float32 (onnx.reference keeps them)."""
    xs = [(np.arange(np.prod(s)).reshape(s) - 3).astype(dt) for s in ins]
    model = _graph([_in(x, f"x{i}") for i, x in enumerate(xs)],
                   ("FeatureVectorizer", {"inputdimensions": widths}))  # fmt: skip
    _check(model, *xs, ref=[0] if dt is np.float32 and len(ins) == 2 and ins[0] == [2, 3] else [])


def _t(v: list, dt: type) -> object:
    return numpy_helper.from_array(np.array(v, dt))


_LI = np.array([[1, 5, -3], [7, 0, 2]], np.int64)
_LF = np.array([[1.5, np.nan, -3], [7, 0, -0.0]], np.float32)
_K3 = {"keys_int64s": [1, 7, -3]}
LABEL_ENCODERS = [
    (2, _LI, [_K3 | {"values_floats": [0.5, 1.5, 2.5]},
              _K3 | {"values_floats": [0.5, 1.5, 2.5], "default_float": 9.0},
              _K3 | {"values_int64s": [3, 4, 5], "default_int64": 6}]),
    (2, _LI[0], [_K3 | {"values_int64s": [3, 4, 5]}]),
    (2, _LF, [{"keys_floats": [1.5, 0.0, np.nan], "values_int64s": [10, 20, 30]},
              {"keys_floats": [1.5, 7.0], "values_int64s": [10, 20], "default_int64": -7},
              {"keys_floats": [1.5, 7.0], "values_floats": [-1.0, 2.0]}]),
    (4, _LF, [{"keys_tensor": _t([1.5, np.nan, 0.0], np.float32),
               "values_tensor": _t([1, 2, 3], np.int64)},
              {"keys_floats": [-0.0, np.nan], "values_floats": [1.0, 2.0]}]),
    (4, _LF.astype(np.float64), [{"keys_tensor": _t([1.5, 7, 0], np.float64),
                                  "values_tensor": _t([1, 2, 3], np.float64),
                                  "default_tensor": _t([-5.0], np.float64)}]),
    (4, _LI, [{"keys_tensor": _t([1, 7, -3], np.int64), "values_tensor": _t([1, 2, 3], np.float64)},
              {"keys_tensor": _t([1, 7], np.int64), "values_tensor": _t([1, 2], np.int64),
               "default_int64": 42},
              _K3 | {"values_tensor": _t([1, 2, 3], np.float32), "default_float": 4.5}]),
]  # fmt: skip


@pytest.mark.parametrize(("opset", "x", "nodes"), LABEL_ENCODERS)
def test_label_encoder(opset: int, x: np.ndarray, nodes: list[dict]) -> None:
    """Opset 4 matches a NaN key to NaN, opset 2 does not (onnx.reference: never; it agrees
    on opset 2 and has no opset-4 tensor attributes)."""
    model = _graph([_in(x)], *[("LabelEncoder", a) for a in nodes], opset=opset)
    _check(model, x, ref=range(len(nodes)) if opset == 2 else ())


_P = np.random.default_rng(3).uniform(0.05, 0.95, size=(6, 3)).astype(np.float32)
_P[5] = 0.5  # PROBIT's p = 0.5


def test_linear_regressor_every_post_transform() -> None:
    """Scores in (0, 1) so that PROBIT is finite; one target gets PROBIT only."""
    rng = np.random.default_rng(4)
    nodes = [("LinearRegressor", {"coefficients": (rng.uniform(0, 0.3, 3 * t)).tolist(),
                                  "intercepts": [0.05] * t, "targets": t, "post_transform": p})
             for p in POSTS for t in (1, 3)]  # fmt: skip
    nodes.append(("LinearRegressor", {"coefficients": [0.5, -1.0, 2.0]}))
    _check(_graph([_in(_P)], *nodes), _P, atol=2e-5)
    _check(_graph([_in(_P)], nodes[1]), _P, ref=[0])  # onnx.reference: NONE only
    assert _check(_graph([_in(_P[0])], nodes[3]), _P[0])[0].shape == (1, 3)  # 1-D: one row


@pytest.mark.parametrize("post", POSTS)
def test_linear_classifier(post: str) -> None:
    """Binary with / without labels, three classes; labels of the raw scores (onnx.reference:
    of the transformed ones, which SOFTMAX_ZERO reorders in node 3); binary PROBIT follows
    onnx.reference (onnxruntime leaves half of its scores uninitialized). NaN rows pick the
    first class."""
    rng, x = np.random.default_rng(5), np.concatenate([_P, np.full((1, 3), np.nan, np.float32)])
    model = _graph([_in(x)], *[("LinearClassifier", a | {"post_transform": post}, 2) for a in (
        {"coefficients": rng.uniform(0, 0.3, 3).tolist(), "intercepts": [-0.2],
         "classlabels_ints": [4, 9]},
        {"coefficients": rng.uniform(-0.3, 0.3, 3).tolist(), "intercepts": [0.1]},
        {"coefficients": rng.uniform(0, 0.3, 9).tolist(), "intercepts": [0.05, 0.1, 0.0],
         "classlabels_ints": [7, 3, 5]},
        {"coefficients": [0.0] * 6, "intercepts": [-1e-8, -5.0], "classlabels_ints": [1, 2]},
    )])  # fmt: skip
    probit = post == "PROBIT"
    _check(model, x, skip=[1] if probit else [], ref=[1, 4, 5] if probit else [4, 5], atol=2e-5)


def test_linear_classifier_without_labels_other_types_and_dynamic_batch() -> None:
    """Several classes and no labels: the index (onnxruntime refuses); double and int64
    inputs; a named batch dim bound at import."""
    a = {"coefficients": [1.0, 0, 0, 0, 1, 0, 0, 0, 1], "intercepts": [0.0, 0.1, 0.2]}
    y, z = _rlx(_graph([_in(_P)], ("LinearClassifier", a, 2)), _P)
    np.testing.assert_array_equal(y, np.argmax(z, 1))
    a |= {"classlabels_ints": [5, 6, 7]}
    model = _graph([("x", T.FLOAT, ["N", 3])], ("LinearClassifier", a, 2))
    for g, w in zip(run(import_model(model, dims={"N": 6})[0], [_P]), _ort(model, _P), strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-6)
    for x in (_P.astype(np.float64), (_P * 10 - 5).astype(np.int64)):
        _check(_graph([_in(x)], ("LinearClassifier", a, 2)), x)


_SV = np.random.default_rng(6).normal(size=(5, 3)).round(2)
_XS = np.random.default_rng(7).normal(size=(6, 3)).astype(np.float32)


def test_svm_regressor_every_kernel() -> None:
    """Each kernel with and without one_class; n_supports = 0 is linear whatever the kernel."""
    base = {"coefficients": [0.5, -1.2, 0.3, 0.8, -0.1], "support_vectors": _SV.ravel().tolist(),
            "n_supports": 5, "rho": [0.3]}  # fmt: skip
    nodes = [("SVMRegressor", base | {"kernel_type": k, "kernel_params": p, "one_class": oc})
             for k, p in KERNELS for oc in (0, 1)]  # fmt: skip
    nodes.append(("SVMRegressor", {"coefficients": [0.5, -1.0, 2.0], "n_supports": 0, "rho": [0.3],
                                   "kernel_type": "RBF", "kernel_params": [1.0] * 3}))  # fmt: skip
    agree = [i for i in range(len(nodes)) if i not in (4, 5)]  # onnx.reference: POLY 2.5 -> 2
    _check(_graph([_in(_XS)], *nodes), _XS, ref=agree, atol=1e-5)
    _check(_graph([_in(_XS[0])], nodes[6]), _XS[0])  # 1-D: one row
    plain = _graph([_in(_XS)], ("SVMRegressor", base | {"kernel_type": "RBF"}))
    _check(plain, _XS, ref=[0], ort=False)  # no kernel_params: zeros (onnxruntime refuses)


@pytest.mark.parametrize("vpc", [[2, 3], [2, 1, 2], [1, 2, 1, 1]])
def test_svm_classifier_support_vectors(vpc: list[int]) -> None:
    """libsvm one-vs-one votes and decision values for each kernel and post transform;
    two classes: onnxruntime's two score columns (onnx.reference agrees for NONE and
    LOGISTIC), PROBIT refused."""
    c, v = len(vpc), sum(vpc)
    rng = np.random.default_rng(c)
    sv = rng.normal(size=(v, 3)).round(2).ravel().tolist()
    co = rng.normal(size=(c - 1) * v).round(2).tolist()
    rho = rng.normal(size=c * (c - 1) // 2).round(2).tolist()
    posts = POSTS[:4] if c == 2 else POSTS
    nodes = [("SVMClassifier", {"coefficients": co, "support_vectors": sv, "vectors_per_class": vpc,
              "rho": rho, "kernel_type": k, "kernel_params": p, "post_transform": post,
              "classlabels_ints": [5, 3, 8, 1][:c]}, 2)
             for k, p in KERNELS if p[2] != 2.5 for post in posts]  # fmt: skip
    agree = [i for i, nd in enumerate(nodes)
             if c > 2 or nd[1]["post_transform"] in ("NONE", "LOGISTIC")]  # fmt: skip
    x = np.concatenate([_XS, _XS[:2] / 4])
    _check(_graph([_in(x)], *nodes), x, ref=[2 * i + j for i in agree for j in (0, 1)], atol=1e-5)


@pytest.mark.parametrize("c", [2, 3])
def test_svm_classifier_liblinear(c: int) -> None:
    """No support vectors: `x @ W.T + rho[0]`, the kernel ignored; two classes pick labels[1]
    when the top score is > 0 (>= 0.5 when every coefficient is >= 0)."""
    rng = np.random.default_rng(8)
    nodes = [("SVMClassifier", {"coefficients": co, "rho": [0.1], "kernel_type": "RBF",
              "kernel_params": [0.3, 0.0, 0.0], "post_transform": p,
              "classlabels_ints": [5, 3, 8][:c]}, 2)
             for co in (rng.normal(size=3 * c).round(2).tolist(),
                        rng.uniform(0, 0.3, 3 * c).round(2).tolist()) for p in POSTS]  # fmt: skip
    x = np.concatenate([_P, np.zeros((1, 3), np.float32)])
    _check(_graph([_in(x)], *nodes), x, atol=2e-5)
    _check(_graph([_in(x[0])], nodes[0]), x[0])


_A = {"coefficients": [1.0, 2.0, 3.0], "intercepts": [0.5]}
_SVR = {"coefficients": [1.0, 2.0], "support_vectors": [0.0] * 6, "n_supports": 2, "rho": [0.1]}
_SVC = {"coefficients": [1.0, 2.0], "support_vectors": [0.0] * 6, "vectors_per_class": [1, 1],
        "rho": [0.1], "classlabels_ints": [1, 2]}  # fmt: skip


def test_compiled_matches_the_interpreter() -> None:
    """A node of each converter (NaN included) compiled: the interpreter's values."""
    x = _P.copy()
    x[2, 1] = np.nan
    sv = {"support_vectors": _SV[:3].ravel().tolist(), "kernel_params": [0.5, 0.3, 3.0]}
    nodes = [
        ("Binarizer", {"threshold": 0.5}), ("Normalizer", {"norm": "L2"}), ("Normalizer", {}),
        ("Scaler", {"offset": [0.1, 0.2, 0.3], "scale": [2.0, 1.0, -1.0]}),
        ("Imputer", {"imputed_value_floats": [9.0, 8.0, 7.0], "replaced_value_float": np.nan}),
        ("OneHotEncoder", {"cats_int64s": [1, 0]}), ("FeatureVectorizer", {"inputdimensions": [5]}),
        ("LabelEncoder", {"keys_floats": [float(x[0, 0]), np.nan], "values_int64s": [1, 2]}),
        ("LinearRegressor", {"coefficients": [0.2] * 9, "targets": 3, "post_transform": "PROBIT"}),
        ("LinearClassifier", {"coefficients": list(range(9)), "intercepts": [0.0, 1e-8, -1.0],
                              "classlabels_ints": [4, 5, 6], "post_transform": "SOFTMAX_ZERO"}, 2),
        ("LinearClassifier", _A | {"classlabels_ints": [4, 5], "post_transform": "LOGISTIC"}, 2),
        ("SVMRegressor", sv | {"coefficients": [0.5, -1.0, 0.2], "n_supports": 3, "rho": [0.1],
                               "kernel_type": "RBF"}),
        ("SVMClassifier", sv | {"coefficients": [0.5, -1.0, 0.2, 1.0, 0.3, -0.4], "rho": [0.1] * 3,
                                "vectors_per_class": [1, 1, 1], "classlabels_ints": [7, 8, 9],
                                "kernel_type": "POLY", "post_transform": "SOFTMAX"}, 2),
        ("SVMClassifier", sv | {"coefficients": [0.5, -1.0, 0.2], "rho": [0.1],
                                "vectors_per_class": [2, 1], "classlabels_ints": [7, 8]}, 2),
        ("SVMClassifier", {"coefficients": [0.1] * 6, "rho": [0.1], "classlabels_ints": [7, 8]}, 2),
    ]  # fmt: skip
    model = _graph([_in(x)], *nodes, opset=4)
    got = rlx.compile(import_model(model)[0]).run(x)
    for i, (g, w) in enumerate(zip(got, _rlx(model, x), strict=True)):
        assert g.dtype == w.dtype and g.shape == w.shape, i
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=2e-5, err_msg=str(i))


F3, I3, R3, DYN = (T.FLOAT, [2, 3]), (T.INT64, [2, 3]), (T.FLOAT, [1, 2, 3]), (T.FLOAT, ["N", 3])
BAD = {
    "ArrayFeatureExtractor": [([(T.FLOAT, []), (T.INT64, [1])], {}, "a tensor and static indices")],
    "Scaler": [(F3, {"offset": [1.0, 2.0], "scale": [1.0, 2.0]}, "offset has 2 .*takes 1 or 3"),
               (R3, {"scale": [1.0, 2.0, 3.0]}, "takes 1 for a rank-3"),
               (F3, {"offset": [1.0], "scale": [1.0, 2.0, 3.0]}, "1 values but scale 3")],
    "Normalizer": [(R3, {}, r"1-D or 2-D input, got shape \[1, 2, 3\]"),
                   (F3, {"norm": "L3"}, "norm 'L3' is not one of")],
    "Imputer": [(I3, {"imputed_value_floats": [1.0]}, "imputed_value_int64s, which is empty"),
                ((T.INT32, [2, 3]), {"imputed_value_int64s": [2**40]}, "do not fit .* int32"),
                (F3, {"imputed_value_floats": [1.0, 2.0]}, "imputed_value_floats has 2 values")],
    "OneHotEncoder": [(F3, {"cats_strings": ["a"]}, "cats_strings is not supported: rlx has no"),
                      (F3, {}, "cats_int64s is empty")],
    "FeatureVectorizer": [(F3, {"inputdimensions": [1, 2]}, "has 2 values for 1 inputs"),
                          (F3, {"inputdimensions": [-1]}, "width -1: need rank >= 1, width >= 0"),
                          (F3, {"inputdimensions": [2**40]}, "larger than the importer makes"),
                          ((T.FLOAT, []), {"inputdimensions": [1]}, r"shape \[\], width 1"),
                          ([F3, (T.FLOAT, [1, 2])], {"inputdimensions": [3, 2]}, "1 rows, input"),
                          (F3, {"inputdimensions": [0]}, "inputdimensions are all 0"),
                          (DYN, {"inputdimensions": [3]}, "input #0 needs a static shape")],
    "LabelEncoder": [
        (I3, {"keys_int64s": [1]}, r"exactly one values_\* attribute must be set, got none"),
        (I3, {"keys_int64s": [1], "keys_floats": [1.0], "values_int64s": [1]}, "keys_int64s', 'k"),
        (I3, {"keys_int64s": [1], "values_strings": ["a"]}, "values_strings is not supported"),
        (I3, {"keys_int64s": [1], "values_tensor": _t([True], bool)}, "values_tensor holds bool"),
        (I3, {"keys_int64s": [1], "values_tensor": _t([[1]], np.int64)}, "must be 1-D, got"),
        (I3, {"keys_int64s": [1, 2], "values_int64s": [1]}, "2 keys and 1 values"),
        (F3, {"keys_int64s": [1], "values_int64s": [1]}, "keys are int64 but the input is float32"),
        (I3, {"keys_int64s": [1, 1], "values_int64s": [1, 2]}, "a key repeats"),
        (F3, {"keys_floats": [np.nan] * 2, "values_int64s": [1, 2]}, "a key repeats"),
        (I3, {"keys_int64s": [1], "values_tensor": _t([1], np.int16), "default_int64": 10**6},
         "default_int64 1000000 does not fit the values' int16"),
        (I3, {"keys_int64s": [1], "values_int64s": [1], "default_tensor": _t([1, 2], np.int64)},
         "default_tensor must hold one int64, got 2 of int64")],
    "LinearRegressor": [(F3, _A | {"post_transform": "RELU"}, "post_transform 'RELU' is not one"),
                        (F3, _A | {"targets": 0}, "attribute .targets. must be an integer >= 1, got 0"),
                        (F3, _A | {"targets": 2}, "has 3 values; expected 2 rows of 3"),
                        (F3, _A | {"intercepts": [1.0, 2.0]}, "intercepts has 2 values for 1"),
                        (R3, _A, r"1-D \[F\] or 2-D \[N, F\] input"),
                        (DYN, _A, "LinearRegressor's input needs a static shape")],
    "LinearClassifier": [(F3, _A | {"coefficients": [1.0] * 4}, "a multiple of the 3 input"),
                         (F3, _A | {"classlabels_ints": [1, 2, 3]}, "takes 2 class labels, got 3"),
                         (F3, {"coefficients": [1.0] * 6, "classlabels_ints": [1]}, "2 coeffic"),
                         (F3, _A | {"classlabels_strings": ["a", "b"]}, "classlabels_strings is")],
    "SVMRegressor": [(F3, _SVR | {"kernel_type": "CUBIC"}, "kernel_type 'CUBIC' is not one of"),
                     (F3, _SVR | {"kernel_params": [1.0]}, "kernel_params takes 3 values"),
                     (F3, {k: v for k, v in _SVR.items() if k != "rho"}, "rho is required"),
                     (F3, _SVR | {"post_transform": "LOGISTIC"}, "post_transform other than"),
                     (F3, _SVR | {"n_supports": 3}, "has 2 values for 3 support vectors"),
                     (F3, _SVR | {"support_vectors": [0.0] * 5}, "support_vectors has 5 values"),
                     (F3, _SVR | {"n_supports": 0}, "has 2 values for 3 input features")],
    "SVMClassifier": [(F3, _SVC | {"prob_a": [1.0], "prob_b": [0.0]}, "prob_a / prob_b"),
                      (F3, _SVC | {"classlabels_ints": [1]}, "classlabels_ints has 1 labels"),
                      (F3, _SVC | {"classlabels_strings": ["a", "b"]}, "classlabels_strings"),
                      (F3, _SVC | {"vectors_per_class": [2, 1, -1]}, r"class \[2, 1, -1\]"),
                      (F3, _SVC | {"coefficients": [1.0]}, "1 rows of 2 take 2"),
                      (F3, _SVC | {"rho": [0.1, 0.2]}, "rho has 2 values for 1 class pairs"),
                      (F3, _SVC | {"post_transform": "PROBIT"}, "PROBIT on a two-class SVC"),
                      (F3, _SVC | {"vectors_per_class": [0, 0]}, "; expected 2 rows of 3")],
}  # fmt: skip
CASES = [(op, *case) for op, cases in BAD.items() for case in cases]


@pytest.mark.parametrize(("op", "ins", "attrs", "match"), CASES, ids=[c[3][:20] for c in CASES])
def test_bad_nodes_are_refused_naming_the_node(op: str, ins: list, attrs: dict, match: str) -> None:
    ins = [(f"x{i}", *x) for i, x in enumerate(ins if isinstance(ins, list) else [ins])]
    model = _graph(ins, (op, attrs, 2 if op.endswith("Classifier") else 1),
                   opset=4 if op == "LabelEncoder" else 3)  # fmt: skip
    with pytest.raises(OnnxImportError, match=rf"^node 'ml' \({op}\): .*{match}"):
        import_model(model)


def test_an_unconverted_ml_op_is_named_with_what_to_do() -> None:
    """ZipMap (sequences of maps) is refused by name with the exporter option that avoids
    it, not as an unsupported domain; a domain rlx has no converter of is one."""
    model = _graph([_in(_X)], ("ZipMap", {"classlabels_int64s": [0, 1, 2]}))
    with pytest.raises(
        OnnxImportError, match=r"op type 'ai.onnx.ml.ZipMap' is not supported: .*zipmap"
    ):
        import_model(model)
    model.graph.node[0].domain = "com.example"
    with pytest.raises(OnnxImportError, match="op domain 'com.example' is not supported"):
        import_model(model)
