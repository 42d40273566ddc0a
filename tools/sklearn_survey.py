"""Survey: scikit-learn models exported with skl2onnx, imported into RLX, against onnxruntime.

    .venv/bin/pip install scikit-learn skl2onnx     # optional tools, not rlx dependencies
    .venv/bin/python tools/sklearn_survey.py [--only logreg,svc] [--rows 50]

Each model is fitted on a small synthetic problem, exported with `skl2onnx.to_onnx` (opset
17, ai.onnx.ml 3, `zipmap=False` for classifiers: rlx has no sequences of maps), imported
with its anonymous batch dim bound at import (`dims={"X_0": rows}`, the name the importer
gives it), compiled and run on `rows` samples; every output is compared with onnxruntime
as `tools/onnx_survey.py` compares (`compare`: types and shapes, integers and labels
exactly), floats to 1e-4 x (1 + max |reference|). Prints one line per model and exits
non-zero when any fails.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np


def models() -> dict[str, tuple[Callable[[], Any], str]]:
    """name -> (estimator factory, problem: "cls" 3 classes, "bin", "reg", "nan" or "x")."""
    from sklearn import (
        cluster,
        decomposition,
        discriminant_analysis,
        ensemble,
        impute,
        linear_model,
        naive_bayes,
        neighbors,
        neural_network,
        pipeline,
        preprocessing,
        svm,
        tree,
    )

    e, lm, pp = ensemble, linear_model, preprocessing
    return {
        "logreg": (lambda: lm.LogisticRegression(max_iter=500), "cls"),
        "logreg_bin": (lambda: lm.LogisticRegression(max_iter=500), "bin"),
        "linreg": (lm.LinearRegression, "reg"),
        "ridge": (lm.Ridge, "reg"),
        "sgd": (lm.SGDClassifier, "cls"),
        "svc_rbf": (svm.SVC, "cls"),
        "svc_linear_bin": (lambda: svm.SVC(kernel="linear"), "bin"),
        "svc_poly": (lambda: svm.SVC(kernel="poly"), "cls"),
        "nusvc": (svm.NuSVC, "cls"),
        "linear_svc": (svm.LinearSVC, "cls"),
        "svr": (svm.SVR, "reg"),
        "linear_svr": (svm.LinearSVR, "reg"),
        "one_class_svm": (svm.OneClassSVM, "x"),
        "tree_cls": (lambda: tree.DecisionTreeClassifier(max_depth=6), "cls"),
        "tree_reg": (lambda: tree.DecisionTreeRegressor(max_depth=6), "reg"),
        "forest_cls": (lambda: e.RandomForestClassifier(20, max_depth=5, random_state=0), "cls"),
        "forest_bin": (lambda: e.RandomForestClassifier(20, max_depth=5, random_state=0), "bin"),
        "forest_reg": (lambda: e.RandomForestRegressor(20, max_depth=5, random_state=0), "reg"),
        "extra_trees": (lambda: e.ExtraTreesClassifier(10, max_depth=4), "cls"),
        "gboost_bin": (lambda: e.GradientBoostingClassifier(n_estimators=20), "bin"),
        "gboost_cls": (lambda: e.GradientBoostingClassifier(n_estimators=20), "cls"),
        "gboost_reg": (lambda: e.GradientBoostingRegressor(n_estimators=20), "reg"),
        "adaboost": (lambda: e.AdaBoostClassifier(n_estimators=10), "cls"),
        "bagging_reg": (lambda: e.BaggingRegressor(n_estimators=5), "reg"),
        "isolation_forest": (lambda: e.IsolationForest(n_estimators=10), "x"),
        "knn_cls": (lambda: neighbors.KNeighborsClassifier(3), "cls"),
        "knn_reg": (lambda: neighbors.KNeighborsRegressor(3), "reg"),
        "gaussian_nb": (naive_bayes.GaussianNB, "cls"),
        "mlp_cls": (lambda: neural_network.MLPClassifier((16,), max_iter=200), "cls"),
        "kmeans": (lambda: cluster.KMeans(3, n_init=2), "x"),
        "lda": (discriminant_analysis.LinearDiscriminantAnalysis, "cls"),
        "pca": (lambda: decomposition.PCA(4), "x"),
        "truncated_svd": (lambda: decomposition.TruncatedSVD(4), "x"),
        "kbins_ordinal": (lambda: pp.KBinsDiscretizer(4, encode="ordinal"), "x"),
        "kbins_onehot": (lambda: pp.KBinsDiscretizer(4, encode="onehot-dense"), "x"),
        "polynomial": (lambda: pp.PolynomialFeatures(2), "x"),
        "robust_scaler": (pp.RobustScaler, "x"),
        "max_abs_scaler": (pp.MaxAbsScaler, "x"),
        "binarizer": (lambda: pp.Binarizer(threshold=0.1), "x"),
        "simple_imputer": (impute.SimpleImputer, "nan"),
        "scale_normalize_logreg": (
            lambda: pipeline.make_pipeline(
                pp.StandardScaler(), pp.Normalizer(), lm.LogisticRegression(max_iter=500)
            ),
            "cls",
        ),
        "minmax_svc": (lambda: pipeline.make_pipeline(pp.MinMaxScaler(), svm.SVC()), "cls"),
    }


def problem(kind: str) -> tuple[np.ndarray, np.ndarray | None]:
    """A float32 [200, 8] problem: 3-class / binary classification, regression, or bare X
    (with NaN holes for "nan")."""
    from sklearn.datasets import make_classification, make_regression

    if kind == "reg":
        x, y = make_regression(200, 8, random_state=0)
    else:
        classes = 2 if kind == "bin" else 3
        x, y = make_classification(200, 8, n_informative=5, n_classes=classes, random_state=0)
    x = x.astype(np.float32)
    if kind == "nan":
        x[::7, 2] = np.nan
    return x, (y if kind in ("cls", "bin", "reg") else None)


def check(name: str, factory: Callable[[], Any], kind: str, rows: int) -> str | None:
    """None when RLX matches onnxruntime on every output, else what differs."""
    import onnxruntime as ort
    from onnx_survey import compare  # tools/ is on sys.path when run as a script
    from skl2onnx import to_onnx

    import rlx
    from rlx.frontends.onnx import import_model

    x, y = problem(kind)
    model = factory()
    model.fit(x, y) if y is not None else model.fit(x)
    opset = {"": 17, "ai.onnx.ml": 3}
    try:  # classifiers with probabilities: without ZipMap
        onx = to_onnx(model, x[:1], options={id(model): {"zipmap": False}}, target_opset=opset)
    except NameError:  # the converter has no such option (no ZipMap either)
        onx = to_onnx(model, x[:1], target_opset=opset)
    sess = ort.InferenceSession(onx.SerializeToString(), providers=["CPUExecutionProvider"])
    feed = x[:rows]
    want = sess.run(None, {sess.get_inputs()[0].name: feed})
    module, params = import_model(onx, dims={f"{onx.graph.input[0].name}_0": rows})
    compiled = rlx.compile(module)
    if params:
        compiled.set_params(params)
    got = compiled(feed)
    got = list(got) if isinstance(got, list | tuple) else [got]
    ok, _, diff, detail = compare(got, want, tol=1e-4)
    return None if ok else detail or f"max |diff| {diff:.3g}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="", help="comma-separated model name prefixes")
    ap.add_argument("--rows", type=int, default=50)
    args = ap.parse_args()
    try:
        import onnxruntime  # noqa: F401
        import skl2onnx  # noqa: F401
        import sklearn  # noqa: F401
    except ImportError as e:
        print(f"skip: {e.name} is not installed (pip install scikit-learn skl2onnx onnxruntime)")
        return 0
    warnings.filterwarnings("ignore")
    only = [p for p in args.only.split(",") if p]
    failed = 0
    for name, (factory, kind) in models().items():
        if only and not any(name.startswith(p) for p in only):
            continue
        try:
            why = check(name, factory, kind, args.rows)
        except Exception as e:  # a survey reports every model, whatever fails
            why = f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"
        failed += why is not None
        print(f"{name:24s} {'ok' if why is None else 'FAIL ' + why}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
