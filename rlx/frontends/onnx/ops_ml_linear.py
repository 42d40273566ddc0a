"""`ai.onnx.ml` linear models and support vector machines: LinearRegressor,
LinearClassifier, SVMRegressor and SVMClassifier, as onnxruntime computes them (each
converter says where onnx.reference differs). Scores are float32 [N, C] rows (`as_rows`),
transformed by `ops_ml_scores.post_transform`.
Integer labels only: rlx has no string tensors. SVM probability outputs (prob_a / prob_b,
libsvm's iterative pairwise coupling) are refused."""

from __future__ import annotations

import numpy as np
from xdsl.ir import SSAValue

from rlx.frontends.onnx.node import Node, shape
from rlx.frontends.onnx.ops_ml import ML, as_rows, count, floats, ints, no_strings
from rlx.frontends.onnx.ops_ml_scores import (
    argmax_first,
    binary_label,
    binary_scores,
    pick,
    post_transform,
    transform_name,
)
from rlx.frontends.onnx.registry import converter

KERNELS = ("LINEAR", "POLY", "RBF", "SIGMOID")


# ---------------------------------------------------------------- linear models
def linear_scores(
    n: Node, x: SSAValue, coefs: list[float], icpts: list[float], rows: int | None = None
) -> SSAValue:
    """`x @ W.T + b` [N, R] for rows x [N, F]: `coefficients` holds R rows of F weights
    (`rows` when fixed), `intercepts` none or R values."""
    f = shape(x)[1]
    r = rows if rows is not None else len(coefs) // max(f, 1)
    if not coefs or len(coefs) != r * f:
        want = f"{r} rows of {f}" if rows is not None else f"a multiple of the {f} input features"
        raise n.error(f"coefficients has {len(coefs)} values; expected {want}")
    if icpts and len(icpts) != r:
        raise n.error(f"intercepts has {len(icpts)} values for {r} coefficient rows")
    w = np.array(coefs, np.float32).reshape(r, f).T
    s = n.emit("matmul", x, n.constant(w, "f32"))
    return n.emit("add", s, n.constant(np.array(icpts, np.float32), "f32")) if icpts else s


@converter(
    "LinearRegressor", attrs=("coefficients", "intercepts", "targets", "post_transform"),
    domain=ML,
)  # fmt: skip
def linear_regressor(n: Node) -> list[SSAValue]:
    """[N, targets] float32 `x @ W.T + b`, then post_transform; a 1-D x is one row
    (onnxruntime's [1, targets]; onnx.reference gave [targets]). onnx.reference applies
    none but NONE; onnxruntime's rule is kept: a single target gets PROBIT only."""
    how = transform_name(n)
    targets = count(n, "targets", 1)
    x = as_rows(n, n.input(0))
    s = linear_scores(n, x, floats(n, "coefficients"), floats(n, "intercepts"), targets)
    return [post_transform(n, s, how)]


@converter(
    "LinearClassifier",
    attrs=("classlabels_ints", "classlabels_strings", "coefficients", "intercepts",
           "multi_class", "post_transform"),
    domain=ML,
)  # fmt: skip
def linear_classifier(n: Node) -> list[SSAValue]:
    """Y [N] i64 labels and Z [N, C] float32 scores of `x @ W.T + b` (multi_class is
    unused by both runtimes; no intercepts are zeros, where onnxruntime refuses). C > 1: Y is
    the label of the first largest *raw* score (onnxruntime; onnx.reference takes the
    transformed one, which SOFTMAX_ZERO can reorder), Z the transformed scores; no labels
    give the index (onnxruntime refuses them). One coefficient row: Y = labels[1] if the
    score > 0 else labels[0] (default 1 / 0); Z has two columns with two labels
    (`ops_ml_scores.binary_scores`: `[1 - s, s]`; PROBIT of `[-s, s]`, as onnx.reference), else
    the one (`post_transform`)."""
    no_strings(n, "classlabels_strings")
    how = transform_name(n)
    x = as_rows(n, n.input(0))
    s = linear_scores(n, x, floats(n, "coefficients"), floats(n, "intercepts"))
    c, labels = shape(s)[1], ints(n, "classlabels_ints")
    if c == 1:
        if labels and len(labels) != 2:
            raise n.error(f"one coefficient row (binary) takes 2 class labels, got {len(labels)}")
        neg, pos = labels or [0, 1]
        z = binary_scores(n, s, how, complement=True) if labels else post_transform(n, s, how)
        return [binary_label(n, s, 0.0, neg, pos), z]
    if labels and len(labels) != c:
        raise n.error(f"{c} coefficient rows (classes) but {len(labels)} class labels")
    return [pick(n, labels or range(c), argmax_first(n, s)), post_transform(n, s, how)]


# ---------------------------------------------------------------- support vector machines
def _kernel(n: Node, x: SSAValue, sv: np.ndarray, kind: str, params: list[float]) -> SSAValue:
    """K(x_i, sv_j) [N, S] for rows x [N, F] and vectors sv [S, F], as onnxruntime's
    `batched_kernel_dot`: LINEAR `x.v`, POLY `(gamma x.v + coef0)^degree`, SIGMOID
    `tanh(gamma x.v + coef0)`, RBF `exp(-gamma |x - v|^2)`. A fractional degree is kept
    (onnx.reference truncates it to an integer)."""
    gamma, coef0, degree = params
    if kind == "RBF":
        rows, f = shape(x)
        d = n.emit("sub", n.reshape(x, [rows, 1, f]), n.constant(sv[None], "f32"))
        sq = n.emit("reduce", n.emit("mul", d, d), kind="sum", axes=[2])
        return n.emit("exp", n.emit("mul", sq, n.constant(-gamma, "f32")))
    dot = n.emit("matmul", x, n.constant(sv.T, "f32"))
    if kind == "LINEAR":
        return dot
    t = n.emit("add", n.emit("mul", dot, n.constant(gamma, "f32")), n.constant(coef0, "f32"))
    if kind == "SIGMOID":
        return n.emit("tanh", t)
    if degree != int(degree) or degree < 0:
        return n.emit("pow", t, n.constant(degree, "f32"))
    y = n.constant(np.ones(shape(t), np.float32), "f32")
    for _ in range(int(degree)):  # a product: pow of a negative base is NaN in some libms
        y = n.emit("mul", y, t)
    return y


def _svm_common(n: Node) -> tuple[str, list[float], list[float]]:
    """kernel_type, kernel_params (gamma, coef0, degree; absent: zeros, as onnx.reference;
    onnxruntime requires them) and rho (>= 1)."""
    kind = n.attr("kernel_type", "LINEAR")
    if kind not in KERNELS:
        raise n.error(f"kernel_type '{kind}' is not one of {', '.join(KERNELS)}")
    params = floats(n, "kernel_params") or [0.0, 0.0, 0.0]
    if len(params) != 3:
        raise n.error(f"kernel_params takes 3 values (gamma, coef0, degree), got {len(params)}")
    rho = floats(n, "rho")
    if not rho:
        raise n.error("rho is required")
    return kind, params, rho


def _vectors(n: Node, count: int, f: int) -> np.ndarray:
    """support_vectors as [count, f]."""
    sv = floats(n, "support_vectors")
    if len(sv) != count * f:
        raise n.error(
            f"support_vectors has {len(sv)} values; {count} vectors of {f} take {count * f}"
        )
    return np.array(sv, np.float32).reshape(count, f)


@converter(
    "SVMRegressor",
    attrs=("coefficients", "kernel_params", "kernel_type", "n_supports", "one_class",
           "post_transform", "rho", "support_vectors"),
    domain=ML,
)  # fmt: skip
def svm_regressor(n: Node) -> list[SSAValue]:
    """[N, 1] float32: `K(x, sv) @ coefficients + rho[0]` (n_supports > 0), else the
    linear `x . coefficients + rho[0]`; one_class maps it to 1 (> 0) / -1. A post_transform
    other than NONE is refused (onnxruntime ignores it, onnx.reference refuses it)."""
    kind, params, rho = _svm_common(n)
    if transform_name(n) != "NONE":
        raise n.error(
            "post_transform other than NONE: onnxruntime ignores it, onnx.reference refuses it"
        )
    x = as_rows(n, n.input(0))
    f, count = shape(x)[1], int(n.attr("n_supports", 0))
    coefs = floats(n, "coefficients")
    if count > 0:
        if len(coefs) != count:
            raise n.error(f"coefficients has {len(coefs)} values for {count} support vectors")
        k = _kernel(n, x, _vectors(n, count, f), kind, params)
        y = n.emit("matmul", k, n.constant(np.array(coefs, np.float32).reshape(count, 1), "f32"))
    else:  # liblinear: the kernel is LINEAR whatever kernel_type says (both runtimes)
        if len(coefs) != f:
            raise n.error(f"coefficients has {len(coefs)} values for {f} input features")
        y = n.emit("matmul", x, n.constant(np.array(coefs, np.float32).reshape(f, 1), "f32"))
    y = n.emit("add", y, n.constant(rho[0], "f32"))
    if n.attr("one_class", 0):
        above = n.emit("compare", y, n.constant(0.0, y), predicate="gt")
        y = n.emit("where", above, n.constant(1.0, y), n.constant(-1.0, y))
    return [y]


def _pairwise(vpc: list[int], coefs: np.ndarray, rho: list[float]) -> tuple[np.ndarray, ...]:
    """libsvm's one-vs-one layout as matrices: W [V, P] so that `K @ W + rho` is each class
    pair's (i < j) decision value, and the [P, C] one-hot matrices of i and j (the votes)."""
    c, v = len(vpc), sum(vpc)
    start = np.concatenate([[0], np.cumsum(vpc)]).astype(int)
    pairs = [(i, j) for i in range(c) for j in range(i + 1, c)]
    w = np.zeros((v, len(pairs)), np.float32)
    win, lose = np.zeros((len(pairs), c), np.float32), np.zeros((len(pairs), c), np.float32)
    for p, (i, j) in enumerate(pairs):
        w[start[i] : start[i + 1], p] = coefs[j - 1, start[i] : start[i + 1]]
        w[start[j] : start[j + 1], p] = coefs[i, start[j] : start[j + 1]]
        win[p, i], lose[p, j] = 1, 1
    return w, np.array(rho[: len(pairs)], np.float32), win, lose


@converter(
    "SVMClassifier",
    attrs=("classlabels_ints", "classlabels_strings", "coefficients", "kernel_params",
           "kernel_type", "post_transform", "prob_a", "prob_b", "rho", "support_vectors",
           "vectors_per_class"),
    domain=ML,
)  # fmt: skip
def svm_classifier(n: Node) -> list[SSAValue]:
    """Y [N] i64 labels and Z float32 scores, as onnxruntime. With support vectors
    (vectors_per_class): libsvm's one-vs-one decision values [N, C(C-1)/2] (transformed;
    two classes: two columns, `_svc_binary`), Y the label with the most votes (first on a
    tie). Without (liblinear): `x @ W.T + rho[0]` [N, C], Y the first largest score's
    label; two classes take labels[1] when the largest score is > 0 (>= 0.5 if every
    coefficient is >= 0). onnx.reference picks other labels in those binary and multi-class
    liblinear cases. prob_a / prob_b (Platt scaling and pairwise coupling) are refused."""
    no_strings(n, "classlabels_strings")
    if floats(n, "prob_a") or floats(n, "prob_b"):
        raise n.error("prob_a / prob_b (probability estimates) are not supported")
    kind, params, rho = _svm_common(n)
    how = transform_name(n)
    labels, vpc = ints(n, "classlabels_ints"), ints(n, "vectors_per_class")
    c = len(labels)
    if c < 2:
        raise n.error(f"classlabels_ints has {c} labels; an SVMClassifier needs at least 2")
    x = as_rows(n, n.input(0))
    f, coefs = shape(x)[1], floats(n, "coefficients")
    if not sum(vpc):  # liblinear: the kernel is LINEAR, rho[0] is every class's intercept
        s = linear_scores(n, x, coefs, [], c)
        s = n.emit("add", s, n.constant(rho[0], "f32"))
        at = argmax_first(n, s)
        y = pick(n, labels, at)
        if c == 2:
            m = n.emit("reduce", s, kind="max", axes=[-1])
            positive = min(coefs) >= 0
            sure = n.emit("compare", m, n.constant(0.5 if positive else 0.0, m),
                          predicate="ge" if positive else "gt")  # fmt: skip
            y = n.emit("where", sure, n.constant(labels[1], "i64"), y)
        return [y, post_transform(n, s, how)]
    if len(vpc) != c or min(vpc) < 0:
        raise n.error(f"vectors_per_class {vpc} needs one count >= 0 per class ({c})")
    v, npairs = sum(vpc), c * (c - 1) // 2
    if len(coefs) != (c - 1) * v:
        raise n.error(
            f"coefficients has {len(coefs)} values; {c - 1} rows of {v} take {(c - 1) * v}"
        )
    if len(rho) != npairs:
        raise n.error(f"rho has {len(rho)} values for {npairs} class pairs")
    w, b, win, lose = _pairwise(vpc, np.array(coefs, np.float32).reshape(c - 1, v), rho)
    k = _kernel(n, x, _vectors(n, v, f), kind, params)
    s = n.emit("add", n.emit("matmul", k, n.constant(w, "f32")), n.constant(b, "f32"))  # [N, P]
    above = n.cast(n.emit("compare", s, n.constant(0.0, s), predicate="gt"), "f32")
    below = n.emit("sub", n.constant(1.0, above), above)
    votes = n.emit("add", n.emit("matmul", above, n.constant(win, "f32")),
                   n.emit("matmul", below, n.constant(lose, "f32")))  # fmt: skip
    y = pick(n, labels, argmax_first(n, votes))
    return [y, _svc_binary(n, s, how) if c == 2 else post_transform(n, s, how)]


def _svc_binary(n: Node, s: SSAValue, how: str) -> SSAValue:
    """onnxruntime's [N, 2] scores of a two-class SVC from its one decision value s: NONE
    `[-s, s]`, the others as a one-row LinearClassifier's (`ops_ml_scores.binary_scores`;
    onnx.reference transforms `[-s, s]`, which agrees for LOGISTIC). PROBIT is refused: onnxruntime writes
    `probit(s)` into column 0 and leaves column 1 uninitialized, onnx.reference returns the
    one column [N, 1]."""
    if how == "PROBIT":
        raise n.error(
            "PROBIT on a two-class SVC is not supported (onnxruntime leaves half of its scores "
            "uninitialized, onnx.reference returns one column)"
        )
    return binary_scores(n, s, how, complement=how != "NONE")
