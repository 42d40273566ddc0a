"""`ai.onnx.ml` tree ensembles (TreeEnsembleRegressor / Classifier 1-3, TreeEnsemble 5)
against onnx.reference on random forests: every branch rule, NaN features with and
without `missing_value_tracks_true`, every aggregate and post transform, binary and
multi-class, several targets, 1-D input, set membership; onnxruntime where installed;
malformed trees refused at import with the node named."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import rlx
from rlx.frontends.onnx import OnnxImportError, import_model

ML = "ai.onnx.ml"
RULES = ["BRANCH_LEQ", "BRANCH_LT", "BRANCH_GTE", "BRANCH_GT", "BRANCH_EQ", "BRANCH_NEQ"]
FEATURES = 5


def _model(op: str, x: tuple[int, list[int]], outs: list[str], opset: int = 3, **attrs):  # noqa: ANN202
    node = helper.make_node(op, ["x"], outs, name="trees", domain=ML, **attrs)
    g = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", x[0], x[1])],
        [helper.make_empty_tensor_value_info(o) for o in outs],
    )  # fmt: skip
    ops = [helper.make_opsetid("", 17), helper.make_opsetid(ML, opset)]
    return helper.make_model(g, opset_imports=ops)


def _trees(seed: int, n_trees: int, depth: int, targets: int, rules: list[str]) -> list[dict]:
    """Random binary trees as flat node lists: (tree, id, mode, feature, value, true, false,
    missing) plus leaf weight entries (tree, id, target, weight)."""
    rng = np.random.default_rng(seed)
    trees = []
    for t in range(n_trees):
        nodes: list[list] = []
        weights: list[tuple[int, int, int, float]] = []

        def grow(d: int, nodes: list[list] = nodes, weights: list = weights, t: int = t) -> int:
            i = len(nodes)
            if d == 0 or (d < depth and rng.random() < 0.25):
                nodes.append([t, i, "LEAF", 0, 0.0, 0, 0, 0])
                for k in rng.choice(targets, size=rng.integers(1, targets + 1), replace=False):
                    weights.append((t, i, int(k), round(float(rng.normal()), 3)))
                return i
            rule = str(rng.choice(rules))
            exact = rule in ("BRANCH_EQ", "BRANCH_NEQ") or rng.random() < 0.5
            value = float(rng.integers(-2, 3)) if exact else round(float(rng.normal()), 2)
            nodes.append([t, i, rule, int(rng.integers(FEATURES)), value, 0, 0,
                          int(rng.integers(2))])  # fmt: skip
            nodes[i][5] = grow(d - 1)
            nodes[i][6] = grow(d - 1)
            return i

        grow(depth)
        trees.append({"nodes": nodes, "weights": weights})
    return trees


def _v3_attrs(trees: list[dict], kind: str) -> dict:
    nodes = [nd for tr in trees for nd in tr["nodes"]]
    ws = [w for tr in trees for w in tr["weights"]]
    a = {
        "nodes_treeids": [nd[0] for nd in nodes], "nodes_nodeids": [nd[1] for nd in nodes],
        "nodes_modes": [nd[2] for nd in nodes], "nodes_featureids": [nd[3] for nd in nodes],
        "nodes_values": [nd[4] for nd in nodes], "nodes_truenodeids": [nd[5] for nd in nodes],
        "nodes_falsenodeids": [nd[6] for nd in nodes],
        "nodes_missing_value_tracks_true": [nd[7] for nd in nodes],
    }  # fmt: skip
    p = "target" if kind == "regressor" else "class"
    a |= {f"{p}_treeids": [w[0] for w in ws], f"{p}_nodeids": [w[1] for w in ws],
          f"{p}_ids": [w[2] for w in ws], f"{p}_weights": [w[3] for w in ws]}  # fmt: skip
    return a


def _x(rows: int, seed: int = 5, dtype: type = np.float32) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(rows, FEATURES))
    x[rng.random(x.shape) < 0.2] = np.nan
    hits = rng.random(x.shape) < 0.3  # exactly on integer thresholds (every rule has some)
    x[hits] = rng.integers(-2, 3, int(hits.sum()))
    x[:, 0] = rng.integers(-2, 3, rows)  # exact hits for EQ / NEQ / LEQ thresholds
    return x.astype(dtype)


def _run(model, *xs: np.ndarray) -> list[np.ndarray]:  # noqa: ANN001
    return rlx.compile(import_model(model)[0]).run(*xs)


# onnx.reference's TreeEnsembleRegressor/Classifier send a NaN at a BRANCH_NEQ node by
# `missing_value_tracks_true` alone, where onnxruntime and TreeEnsemble-5 take NaN != value
# as true (what RLX does): the reference comparisons use rules without NEQ.
NO_NEQ = RULES[:5]


@pytest.mark.parametrize(
    ("aggregate", "targets", "rows"),
    [("SUM", 1, 7), ("SUM", 3, 4), ("AVERAGE", 3, 4), ("MIN", 3, 4), ("MAX", 1, 7)],
)
def test_regressor_matches_onnx_reference(aggregate: str, targets: int, rows: int) -> None:
    trees = _trees(1, 4, 4, targets, NO_NEQ)
    attrs = _v3_attrs(trees, "regressor") | {"n_targets": targets,
                                               "aggregate_function": aggregate}  # fmt: skip
    if aggregate == "SUM":
        attrs["base_values"] = [0.5 * k for k in range(targets)]
    model = _model("TreeEnsembleRegressor", (TensorProto.FLOAT, [rows, FEATURES]), ["y"],
                   **attrs)  # fmt: skip
    x = _x(rows)
    (want,) = ReferenceEvaluator(model).run(None, {"x": x})
    (got,) = _run(model, x)
    assert got.dtype == np.float32 and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_regressor_double_and_int_inputs_and_one_row() -> None:
    attrs = _v3_attrs(_trees(2, 3, 3, 1, NO_NEQ), "regressor") | {"n_targets": 1}
    for t, dt in ((TensorProto.DOUBLE, np.float64), (TensorProto.INT64, np.int64)):
        model = _model("TreeEnsembleRegressor", (t, [6, FEATURES]), ["y"], **attrs)
        x = np.nan_to_num(_x(6, dtype=np.float64), nan=0.5)
        x = x.astype(dt)
        # onnx.reference sums an integer input's weights in its integer type: as floats
        ref = _model("TreeEnsembleRegressor", (TensorProto.FLOAT, [6, FEATURES]), ["y"], **attrs)
        want = ReferenceEvaluator(model if dt is np.float64 else ref).run(
            None, {"x": x if dt is np.float64 else x.astype(np.float32)}
        )[0]
        (got,) = _run(model, x)
        assert got.dtype == np.float32  # the spec's (and onnxruntime's) output type
        np.testing.assert_allclose(got, want.astype(np.float32), rtol=1e-6, atol=1e-6)
    model = _model("TreeEnsembleRegressor", (TensorProto.FLOAT, [FEATURES]), ["y"], **attrs)
    x = _x(1)[0]
    (want,) = ReferenceEvaluator(model).run(None, {"x": x})
    np.testing.assert_allclose(_run(model, x)[0], want, rtol=1e-6)


@pytest.mark.parametrize(
    ("post", "classes"),
    [("NONE", 2), ("SOFTMAX", 4), ("LOGISTIC", 2), ("SOFTMAX_ZERO", 4), ("PROBIT", 4)],
)
def test_classifier_matches_onnx_reference(post: str, classes: int) -> None:
    trees = _trees(3, 5, 4, classes, NO_NEQ)
    attrs = _v3_attrs(trees, "classifier") | {
        "classlabels_int64s": [10 * k + 3 for k in range(classes)], "post_transform": post,
        "base_values": [0.1 * k for k in range(classes)],
    }  # fmt: skip
    if post == "PROBIT":  # scores in (0, 1)
        attrs["class_weights"] = [abs(w) / 20 for w in attrs["class_weights"]]
        attrs["base_values"] = [0.05] * classes
    model = _model("TreeEnsembleClassifier", (TensorProto.FLOAT, [9, FEATURES]),
                   ["label", "scores"], **attrs)  # fmt: skip
    x = _x(9)
    want_l, want_s = ReferenceEvaluator(model).run(None, {"x": x})
    got_l, got_s = _run(model, x)
    assert got_l.dtype == np.int64 and got_s.dtype == np.float32
    np.testing.assert_allclose(got_s, want_s, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(got_l, want_l)


def _agrees_with_reference(post: str, positive: bool) -> bool:
    """Where onnx.reference's binary scores are onnxruntime's (PROBIT: rlx follows it)."""
    return post == "PROBIT" or (post, positive) in (("NONE", True), ("LOGISTIC", False))


BINARY = [
    (post, positive, labels, base)
    for post in ("NONE", "LOGISTIC", "SOFTMAX", "PROBIT")
    for positive in (False, True)
    for labels, base in (([0, 1], None), ([3, 7], [0.1]), ([1], None))
    # one label 1: onnxruntime refuses it, so only where onnx.reference agrees
    if len(labels) == 2 or _agrees_with_reference(post, positive)
]


@pytest.mark.parametrize(("post", "positive", "labels", "base"), BINARY)
def test_binary_classifier(post: str, positive: bool, labels: list[int], base: list | None) -> None:
    """One class id: onnxruntime's `[1 - s, s]` (weights all >= 0) or `[-s, s]`, LOGISTIC
    `[sigmoid(-s), sigmoid(s)]`, label by s > 0.5 / 0; one base value is the score's
    (scikit-learn's binary gradient boosting). PROBIT (onnxruntime writes one column) and
    the cases where they agree against onnx.reference (run without onnxruntime too)."""
    attrs = _v3_attrs(_trees(4, 3, 3, 1, NO_NEQ), "classifier")
    if positive:
        attrs["class_weights"] = [abs(w) / 8 for w in attrs["class_weights"]]
    attrs |= {"classlabels_int64s": labels, "post_transform": post}
    attrs |= {"base_values": base} if base else {}
    model = _model("TreeEnsembleClassifier", (TensorProto.FLOAT, [8, FEATURES]),
                   ["label", "scores"], **attrs)  # fmt: skip
    x = _x(8)
    got = _run(model, x)
    wants = []
    if _agrees_with_reference(post, positive):
        wants.append(ReferenceEvaluator(model).run(None, {"x": x}))
    if post != "PROBIT" and len(labels) == 2 and importlib.util.find_spec("onnxruntime"):
        import onnxruntime as ort

        sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
        wants.append(sess.run(None, {"x": x}))
    if not wants:
        pytest.skip("onnxruntime is not installed, and onnx.reference differs here")
    for want_l, want_s in wants:
        np.testing.assert_allclose(got[1], want_s, rtol=1e-5, atol=1e-6)
        if post != "PROBIT":  # onnx.reference: argmax of the probits, s > 0.5
            np.testing.assert_array_equal(got[0], want_l)


def _v5_attrs(trees: list[dict], targets: int) -> dict:
    """The same forest in TreeEnsemble-5's layout (leaves in their own arrays)."""
    splits, feats, modes, t_ids, f_ids, t_leaf, f_leaf, missing = ([] for _ in range(8))
    leaf_w, leaf_t, roots = [], [], []
    for tr in trees:
        nodes, index = tr["nodes"], {}
        for nd in nodes:
            if nd[2] != "LEAF":
                index[nd[1]] = len(splits)
                splits.append(nd[4])
                feats.append(nd[3])
                modes.append(RULES.index(nd[2]))
                missing.append(nd[7])
                t_ids.append(0)
                f_ids.append(0)
                t_leaf.append(0)
                f_leaf.append(0)
        leaves: dict[int, int] = {}
        for nd in nodes:  # one leaf entry per (leaf, target) weight: a leaf node per entry
            if nd[2] == "LEAF":
                w = [e for e in tr["weights"] if e[1] == nd[1]][0]
                leaves[nd[1]] = len(leaf_w)
                leaf_w.append(w[3])
                leaf_t.append(w[2])
        for nd in nodes:
            if nd[2] != "LEAF":
                i = index[nd[1]]
                for k, (ids, flags) in ((5, (t_ids, t_leaf)), (6, (f_ids, f_leaf))):
                    leaf = nodes[nd[k]][2] == "LEAF"
                    ids[i] = leaves[nd[k]] if leaf else index[nd[k]]
                    flags[i] = int(leaf)
        roots.append(index[nodes[0][1]])
    t = lambda v, dt: numpy_helper.from_array(np.array(v, dt))  # noqa: E731
    return {
        "nodes_splits": t(splits, np.float32), "nodes_featureids": feats,
        "nodes_modes": t(modes, np.uint8), "nodes_truenodeids": t_ids,
        "nodes_falsenodeids": f_ids, "nodes_trueleafs": t_leaf, "nodes_falseleafs": f_leaf,
        "nodes_missing_value_tracks_true": missing, "leaf_weights": t(leaf_w, np.float32),
        "leaf_targetids": leaf_t, "tree_roots": roots, "n_targets": targets,
    }  # fmt: skip


@pytest.mark.parametrize("aggregate", [0, 1, 3])
def test_tree_ensemble_5_matches_onnx_reference(aggregate: int) -> None:
    trees = [t for t in _trees(6, 6, 4, 2, RULES) if t["nodes"][0][2] != "LEAF"]
    attrs = _v5_attrs(trees, 2) | {"aggregate_function": aggregate}
    model = _model("TreeEnsemble", (TensorProto.FLOAT, [10, FEATURES]), ["y"], opset=5,
                   **attrs)  # fmt: skip
    x = _x(10)
    (want,) = ReferenceEvaluator(model).run(None, {"x": x})
    (got,) = _run(model, x)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_tree_ensemble_5_set_membership_and_f64() -> None:
    """Node 0 tests x[0] in {1, 3} (NaN-separated sets), node 1 x[1] < 0.5."""
    t = lambda v, dt: numpy_helper.from_array(np.array(v, dt))  # noqa: E731
    attrs = {
        "nodes_splits": t([0.0, 0.5], np.float64), "nodes_featureids": [0, 1],
        "nodes_modes": t([6, 1], np.uint8), "nodes_truenodeids": [0, 1],
        "nodes_falsenodeids": [1, 2], "nodes_trueleafs": [1, 1], "nodes_falseleafs": [0, 1],
        "leaf_weights": t([1.0, 2.0, 3.0], np.float64), "leaf_targetids": [0, 0, 0],
        "tree_roots": [0], "n_targets": 1, "membership_values": t([1.0, 3.0, np.nan], np.float64),
    }  # fmt: skip
    model = _model("TreeEnsemble", (TensorProto.DOUBLE, [6, 2]), ["y"], opset=5, **attrs)
    x = np.array([[1, 0], [3, 9], [2, 0], [2, 9], [np.nan, 0], [0, np.nan]], np.float64)
    (want,) = ReferenceEvaluator(model).run(None, {"x": x})
    (got,) = _run(model, x)
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got[:, 0], [1, 1, 2, 3, 2, 3])


def test_neq_with_nan_takes_the_true_branch_as_onnxruntime() -> None:
    attrs = {
        "nodes_treeids": [0, 0, 0], "nodes_nodeids": [0, 1, 2],
        "nodes_modes": ["BRANCH_NEQ", "LEAF", "LEAF"], "nodes_featureids": [0, 0, 0],
        "nodes_values": [1.0, 0, 0], "nodes_truenodeids": [1, 0, 0],
        "nodes_falsenodeids": [2, 0, 0], "target_treeids": [0, 0], "target_nodeids": [1, 2],
        "target_ids": [0, 0], "target_weights": [10.0, 20.0], "n_targets": 1,
    }  # fmt: skip
    model = _model("TreeEnsembleRegressor", (TensorProto.FLOAT, [3, 1]), ["y"], **attrs)
    x = np.array([[1.0], [2.0], [np.nan]], np.float32)
    (got,) = _run(model, x)
    np.testing.assert_array_equal(got[:, 0], [20, 10, 10])
    ort = pytest.importorskip("onnxruntime")
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    np.testing.assert_array_equal(got, sess.run(None, {"x": x})[0])


@pytest.mark.parametrize("op", ["TreeEnsembleRegressor", "TreeEnsembleClassifier"])
def test_matches_onnxruntime(op: str) -> None:
    ort = pytest.importorskip("onnxruntime")
    kind = "regressor" if op == "TreeEnsembleRegressor" else "classifier"
    attrs = _v3_attrs(_trees(7, 8, 5, 3, RULES), kind)
    attrs |= (
        {"n_targets": 3}
        if kind == "regressor"
        else {"classlabels_int64s": [4, 5, 6], "post_transform": "SOFTMAX"}
    )
    outs = ["y"] if kind == "regressor" else ["label", "scores"]
    model = _model(op, (TensorProto.FLOAT, [16, FEATURES]), outs, **attrs)
    x = _x(16)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for got, want in zip(_run(model, x), sess.run(None, {"x": x}), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def _bad(**change: object) -> dict:
    attrs = _v3_attrs(_trees(8, 2, 2, 1, NO_NEQ), "regressor") | {"n_targets": 1}
    return attrs | change


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"nodes_truenodeids": [99] * 14}, "does not exist"),
        ({"nodes_featureids": [FEATURES] * 14}, "feature id 5 is outside"),
        ({"nodes_modes": ["BRANCH_SOMETIMES"] * 14}, "unknown node mode"),
        ({"target_ids": [3] * 64}, r"target / class id 3 is outside \[0, 1\)"),
        ({"nodes_values": [0.0]}, "must all have"),
        ({"aggregate_function": "MEDIAN"}, "unknown aggregate_function"),
        ({"n_targets": 0}, "attribute 'n_targets' must be an integer >= 1, got 0"),
        ({"n_targets": 2**31}, "larger than the importer makes"),  # was an out-of-memory kill
    ],
)
def test_malformed_forests_are_refused(change: dict, match: str) -> None:
    attrs = _bad()
    for k, v in change.items():
        attrs[k] = v[: len(attrs[k])] if isinstance(v, list) and len(v) > 1 else v
    model = _model("TreeEnsembleRegressor", (TensorProto.FLOAT, [2, FEATURES]), ["y"], **attrs)
    with pytest.raises(
        OnnxImportError, match=rf"node 'trees' \(TreeEnsembleRegressor\): .*{match}"
    ):
        import_model(model)


def test_a_cycle_and_string_labels_are_refused() -> None:
    attrs = {
        "nodes_treeids": [0, 0], "nodes_nodeids": [0, 1], "nodes_modes": ["BRANCH_LT"] * 2,
        "nodes_featureids": [0, 0], "nodes_values": [0.0, 0.0], "nodes_truenodeids": [1, 0],
        "nodes_falsenodeids": [1, 0], "target_treeids": [0], "target_nodeids": [0],
        "target_ids": [0], "target_weights": [1.0], "n_targets": 1,
    }  # fmt: skip
    model = _model("TreeEnsembleRegressor", (TensorProto.FLOAT, [1, 1]), ["y"], **attrs)
    with pytest.raises(OnnxImportError, match="nodes form a cycle"):
        import_model(model)
    attrs = _v3_attrs(_trees(9, 1, 2, 2, NO_NEQ), "classifier") | {
        "classlabels_strings": ["a", "b"]
    }
    model = _model(
        "TreeEnsembleClassifier", (TensorProto.FLOAT, [1, FEATURES]), ["l", "s"], **attrs
    )
    with pytest.raises(OnnxImportError, match="string class labels"):
        import_model(model)
