"""`ai.onnx.ml` tree ensembles: TreeEnsembleRegressor and TreeEnsembleClassifier (1, 3)
and TreeEnsemble (5), the ops scikit-learn, XGBoost and LightGBM converters emit.

Each op's attributes become one `Forest` at import time: every tree's nodes in one table
(a leaf points to itself), and per node the next node for each outcome of comparing the
sample's feature with the node's threshold (less, equal, greater, unordered: NaN), so a
step of every (sample, tree) walk is three gathers and a compare chain, whatever the
node's rule (`BRANCH_LEQ`, `LT`, `GTE`, `GT`, `EQ`, `NEQ`; a NaN feature follows the
true branch where `missing_value_tracks_true`, and `NEQ` holds for NaN as in onnxruntime
and TreeEnsemble-5's definition). `BRANCH_MEMBER` (5) compares with the node's set. The
walk is an `rlx.scan` of as many steps as the deepest tree; the leaves reached gather
their weight rows, aggregated over the trees (SUM, AVERAGE, MIN, MAX), plus the base
values, then `ops_ml_scores.post_transform`. Trees with a cycle, a node id that does not resolve, or a
feature outside the input are refused at import.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from onnx import numpy_helper
from xdsl.ir import Block, SSAValue

from rlx.dialects.rlx.base import is_float
from rlx.frontends.onnx.loops import scan_op
from rlx.frontends.onnx.node import Node, elem, shape
from rlx.frontends.onnx.ops_constants import bounded
from rlx.frontends.onnx.ops_ml import ML, as_rows, count, ints
from rlx.frontends.onnx.ops_ml_scores import (
    TRANSFORMS,
    argmax_first,
    binary_label,
    binary_scores,
    pick,
    post_transform,
    transform_name,
)
from rlx.frontends.onnx.registry import converter

RULES = ("BRANCH_LEQ", "BRANCH_LT", "BRANCH_GTE", "BRANCH_GT", "BRANCH_EQ", "BRANCH_NEQ",
         "BRANCH_MEMBER")  # fmt: skip
"""TreeEnsemble-5's `nodes_modes` values index this (MEMBER is 5's only)."""

# Which outcomes (less, equal, greater, unordered) send a node to its true branch.
_TAKES = {
    "BRANCH_LEQ": (1, 1, 0), "BRANCH_LT": (1, 0, 0), "BRANCH_GTE": (0, 1, 1),
    "BRANCH_GT": (0, 0, 1), "BRANCH_EQ": (0, 1, 0), "BRANCH_NEQ": (1, 0, 1),
    "BRANCH_MEMBER": (0, 1, 0),  # the walk compares a member node's set: 1 = in it
}  # fmt: skip
AGGREGATES = ("AVERAGE", "SUM", "MIN", "MAX")
"""TreeEnsemble-5's `aggregate_function` values index this."""


@dataclass
class Forest:
    """Trees as flat node tables (see the module docstring), weights per node."""

    feature: np.ndarray  # [G] i64, 0 for leaves
    threshold: np.ndarray  # [G] f64
    next: np.ndarray  # [G, 4] i64: next node per outcome (a leaf: itself)
    members: np.ndarray | None  # [G, S] f64 set of a member node, NaN-padded; None: no sets
    weights: np.ndarray  # [G, K] f64 row added (or min / max-ed) when a walk ends at the node
    roots: np.ndarray  # [T] i64
    depth: int  # steps until every walk is at a leaf


class _Builder:
    """Collects nodes (internal or leaf) and their links, then checks and packs them."""

    def __init__(self, n: Node, nodes: int, targets: int, aggregate: str) -> None:
        bounded(n, [nodes, targets])  # the weight table, before a row of it is made
        self.n, self.k, self.aggregate = n, targets, aggregate
        # a leaf without a weight for a target: the aggregate's identity
        self.fill = {"MIN": np.finfo(np.float32).max, "MAX": np.finfo(np.float32).min}.get(
            aggregate, 0.0
        )
        self.rule: list[str | None] = []  # None: a leaf
        self.feature: list[int] = []
        self.threshold: list[float] = []
        self.missing: list[bool] = []
        self.true: list[int] = []
        self.false: list[int] = []
        self.sets: list[list[float]] = []
        self.weights: dict[int, np.ndarray] = {}

    def node(self, rule: str | None, feature: int = 0, threshold: float = 0.0,
             missing: bool = False, members: list[float] | None = None) -> int:  # fmt: skip
        self.rule.append(rule)
        self.feature.append(feature)
        self.threshold.append(threshold)
        self.missing.append(missing)
        self.true.append(-1)
        self.false.append(-1)
        self.sets.append(members or [])
        return len(self.rule) - 1

    def weight(self, g: int, target: int, w: float) -> None:
        if not 0 <= target < self.k:
            raise self.n.error(f"target / class id {target} is outside [0, {self.k})")
        row = self.weights.setdefault(g, np.full(self.k, self.fill))
        if self.aggregate in ("SUM", "AVERAGE"):
            row[target] = (0.0 if row[target] == self.fill else row[target]) + w
        else:
            row[target] = (min if self.aggregate == "MIN" else max)(row[target], w)

    def forest(self, roots: list[int], features: int) -> Forest:
        g = len(self.rule)
        nxt = np.empty((g, 4), np.int64)
        for i, rule in enumerate(self.rule):
            if rule is None:
                nxt[i] = i
                continue
            if not 0 <= self.feature[i] < features:
                raise self.n.error(
                    f"feature id {self.feature[i]} is outside the input's {features} features"
                )
            takes = (*_TAKES[rule], int(self.missing[i] or rule == "BRANCH_NEQ"))
            nxt[i] = [self.true[i] if t else self.false[i] for t in takes]
        depth = self._depth(roots, nxt)
        weights = np.zeros((g, self.k))
        for i in range(g):
            if self.rule[i] is None:
                weights[i] = self.weights.get(i, self.fill)
        members = None
        if "BRANCH_MEMBER" in self.rule:
            s = max(len(m) for m in self.sets)
            bounded(self.n, [g, s])
            members = np.full((g, s), np.nan)
            for i, m in enumerate(self.sets):
                members[i, : len(m)] = m
        return Forest(np.array(self.feature, np.int64), np.array(self.threshold), nxt,
                      members, weights, np.array(roots, np.int64), depth)  # fmt: skip

    def _depth(self, roots: list[int], nxt: np.ndarray) -> int:
        """The longest root-to-leaf walk; a cycle is refused (the walk would not end)."""
        memo: dict[int, int] = {}
        for r in roots:
            stack, on_path = [(r, False)], set()
            while stack:
                i, done = stack.pop()
                if done:
                    on_path.discard(i)
                    kids = set(nxt[i].tolist()) - {i}
                    memo[i] = 1 + max(memo[k] for k in kids) if kids else 0
                    continue
                if i in memo:
                    continue
                if i in on_path:
                    raise self.n.error("a tree's nodes form a cycle")
                on_path.add(i)
                stack.append((i, True))
                stack += [(k, False) for k in set(nxt[i].tolist()) - {i} if k not in memo]
        return max((memo[r] for r in roots), default=0)


def _array(n: Node, name: str) -> np.ndarray | None:
    """Attribute `name` or `name_as_tensor` (the double variant of opset 3) as an array."""
    v = n.attr(name + "_as_tensor", None) if name + "_as_tensor" in n.attrs else n.attr(name)
    if v is None:
        return None
    return numpy_helper.to_array(v) if not isinstance(v, list) else np.asarray(v)


def _forest_v3(n: Node, features: int, targets: int, kind: str, aggregate: str) -> Forest:
    """Opsets 1 and 3: nodes named by (tree id, node id), leaves carry weight entries."""
    trees = ints(n, "nodes_treeids")
    g = len(trees)
    ids, feats = ints(n, "nodes_nodeids", g), ints(n, "nodes_featureids", g)
    modes = [str(m.decode() if isinstance(m, bytes) else m) for m in n.attr("nodes_modes", [])]
    values = _array(n, "nodes_values")
    values = np.zeros(g) if values is None else values.astype(np.float64).reshape(-1)
    t_ids, f_ids = ints(n, "nodes_truenodeids", g), ints(n, "nodes_falsenodeids", g)
    missing = ints(n, "nodes_missing_value_tracks_true") or [0] * g
    if len(modes) != g or len(values) != g or len(missing) != g:
        raise n.error(f"the nodes_* attributes must all have {g} values")
    b = _Builder(n, g, targets, aggregate)
    at: dict[tuple[int, int], int] = {}
    for i in range(g):
        if modes[i] != "LEAF" and (modes[i] not in _TAKES or modes[i] == "BRANCH_MEMBER"):
            raise n.error(f"unknown node mode {modes[i]!r}")
        if (trees[i], ids[i]) in at:
            raise n.error(f"tree {trees[i]} has node id {ids[i]} twice")
        rule = None if modes[i] == "LEAF" else modes[i]
        at[trees[i], ids[i]] = b.node(rule, feats[i], float(values[i]), bool(missing[i]))
    for i in range(g):
        if modes[i] != "LEAF":
            for links, nid in ((b.true, t_ids[i]), (b.false, f_ids[i])):
                if (trees[i], nid) not in at:
                    raise n.error(f"tree {trees[i]}: node id {nid} does not exist")
                links[i] = at[trees[i], nid]
    prefix = "target" if kind == "target" else "class"
    w_tree = ints(n, f"{prefix}_treeids")
    e = len(w_tree)
    w_node, w_id = ints(n, f"{prefix}_nodeids", e), ints(n, f"{prefix}_ids", e)
    ws = _array(n, f"{prefix}_weights")
    ws = np.zeros(0) if ws is None else ws.astype(np.float64).reshape(-1)
    if len(ws) != e:
        raise n.error(f"'{prefix}_weights' has {len(ws)} values, expected {e}")
    for tid, nid, k, w in zip(w_tree, w_node, w_id, ws, strict=True):
        if (tid, nid) not in at:
            raise n.error(f"a weight names node ({tid}, {nid}), which does not exist")
        b.weight(at[tid, nid], k, float(w))
    roots: dict[int, int] = {}
    for i, t in enumerate(trees):  # a tree's root is its first node (as onnx.reference)
        roots.setdefault(t, i)
    return b.forest([roots[t] for t in sorted(roots)], features)


def _forest_v5(n: Node, features: int, targets: int, aggregate: str) -> Forest:
    """TreeEnsemble-5: internal nodes by index, leaves in their own arrays."""
    splits = _array(n, "nodes_splits")
    if splits is None:
        raise n.error("attribute 'nodes_splits' is required")
    g = splits.size
    feats, t_ids, f_ids = (ints(n, a, g) for a in ("nodes_featureids", "nodes_truenodeids",
                                                      "nodes_falsenodeids"))  # fmt: skip
    t_leaf, f_leaf = ints(n, "nodes_trueleafs", g), ints(n, "nodes_falseleafs", g)
    modes = _array(n, "nodes_modes")
    modes = np.zeros(g, np.int64) if modes is None else modes.astype(np.int64).reshape(-1)
    missing_v = _array(n, "nodes_missing_value_tracks_true")
    missing = np.zeros(g) if missing_v is None else missing_v.reshape(-1)
    lw = _array(n, "leaf_weights")
    lw = np.zeros(0) if lw is None else lw.astype(np.float64).reshape(-1)
    l_ids = ints(n, "leaf_targetids", lw.size)
    members = _array(n, "membership_values")
    members = [] if members is None else members.astype(np.float64).reshape(-1).tolist()
    if len(modes) != g or len(missing) != g or any(not 0 <= m < len(RULES) for m in modes):
        raise n.error(f"'nodes_modes' / 'nodes_missing_value_tracks_true' must have {g} "
                      f"values, each mode in [0, {len(RULES)})")  # fmt: skip
    b = _Builder(n, g + lw.size, targets, aggregate)
    sets = iter(members)
    for i in range(g):
        rule = RULES[modes[i]]
        chunk: list[float] = []
        if rule == "BRANCH_MEMBER":  # the next NaN-terminated run of membership_values
            while (v := next(sets, np.nan)) == v:
                chunk.append(v)
        b.node(rule, feats[i], float(splits.reshape(-1)[i]), bool(missing[i]), chunk)
    leaf_at = [b.node(None) for _ in range(lw.size)]
    for j, (k, w) in enumerate(zip(l_ids, lw, strict=True)):
        b.weight(leaf_at[j], k, float(w))
    for i in range(g):
        for links, nid, leaf in ((b.true, t_ids[i], t_leaf[i]), (b.false, f_ids[i], f_leaf[i])):
            if not 0 <= nid < (lw.size if leaf else g):
                raise n.error(f"node {i} links to {'leaf' if leaf else 'node'} {nid}, "
                              "which does not exist")  # fmt: skip
            links[i] = leaf_at[nid] if leaf else nid
    roots = ints(n, "tree_roots")
    for r in roots:
        if not 0 <= r < g:
            raise n.error(f"tree root {r} is not a node")
    # A tree that is one leaf: a root whose two branches are the same leaf.
    heads = [leaf_at[t_ids[r]] if t_leaf[r] and f_leaf[r] and t_ids[r] == f_ids[r] else r
             for r in roots]  # fmt: skip
    return b.forest(heads, features)


def _walk(n: Node, x: SSAValue, f: Forest) -> SSAValue:
    """The leaf each (sample, tree) walk of `x` ([N, F]) ends at: [N, T] i64."""
    rows, feats = shape(x)
    trees = f.roots.size
    at = n.constant(np.broadcast_to(f.roots, (rows, trees)), "i64")
    if f.depth == 0:
        return at
    flat = n.reshape(x, [rows * feats])
    row_base = n.constant((np.arange(rows) * feats).reshape(rows, 1), "i64")
    feature, threshold = n.constant(f.feature, "i64"), n.constant(f.threshold, x)
    nxt = n.constant(f.next.reshape(-1), "i64")
    members = None if f.members is None else n.constant(f.members, x)
    is_member = None if f.members is None else n.constant(~np.isnan(f.members[:, 0]), "i1")
    codes = [n.constant(c, "i64") for c in range(4)]
    block = Block(arg_types=[at.type])
    (i,) = block.args
    with n.ctx.g.building(block):
        v = n.emit("gather", flat, n.emit("add", n.emit("gather", feature, i, axis=0), row_base),
                   axis=0)  # fmt: skip
        t = n.emit("gather", threshold, i, axis=0)
        outcome = n.emit(
            "where", n.emit("compare", v, t, predicate="lt"), codes[0],
            n.emit("where", n.emit("compare", v, t, predicate="eq"), codes[1],
                   n.emit("where", n.emit("compare", v, t, predicate="gt"), codes[2], codes[3])),
        )  # fmt: skip
        if members is not None and is_member is not None:
            s = n.emit("gather", members, i, axis=0)  # [N, T, S]
            v3 = n.reshape(v, [rows, trees, 1])
            hit = n.emit("reduce", n.cast(n.emit("compare", s, v3, predicate="eq"), "ui8"),
                         kind="max", axes=[2], keepdims=False)  # fmt: skip
            found = n.emit("where", n.emit("compare", hit, n.constant(0, hit), predicate="ne"),
                           codes[1], n.emit("where", n.emit("compare", v, v, predicate="ne"),
                                            codes[3], codes[0]))  # fmt: skip
            outcome = n.emit("where", n.emit("gather", is_member, i, axis=0), found, outcome)
        step = n.emit("add", n.emit("mul", i, n.constant(4, "i64")), outcome)
        ys = n.ctx.yield_values(block, [n.emit("gather", nxt, step, axis=0)])
    return scan_op(n, [at], [], block, ys, f.depth).results[0]


def _scores(n: Node, x: SSAValue, f: Forest, aggregate: str, base: np.ndarray | None,
            dtype: object) -> SSAValue:  # fmt: skip
    """Per sample the aggregate of the leaf rows its walks reach, plus the base values."""
    leaves = _walk(n, x, f)
    rows = n.emit("gather", n.constant(f.weights, dtype), leaves, axis=0)  # [N, T, K]
    kind = {"SUM": "sum", "AVERAGE": "sum", "MIN": "min", "MAX": "max"}[aggregate]
    y = n.emit("reduce", rows, kind=kind, axes=[1], keepdims=False)
    if aggregate == "AVERAGE":
        y = n.emit("div", y, n.constant(float(f.roots.size), y))
    if base is not None and base.size:
        k = f.weights.shape[1]
        if base.size != k:
            raise n.error(f"'base_values' has {base.size} values, expected {k}")
        y = n.emit("add", y, n.constant(base.astype(np.float64).reshape(1, k), y))
    return y


_V3_COMMON = (
    "nodes_treeids", "nodes_nodeids", "nodes_featureids", "nodes_modes", "nodes_values",
    "nodes_values_as_tensor", "nodes_truenodeids", "nodes_falsenodeids", "nodes_hitrates",
    "nodes_hitrates_as_tensor", "nodes_missing_value_tracks_true", "base_values",
    "base_values_as_tensor", "post_transform",
)  # fmt: skip


@converter("TreeEnsembleRegressor", domain=ML, attrs=(*_V3_COMMON, "aggregate_function",
           "n_targets", "target_ids", "target_nodeids", "target_treeids", "target_weights",
           "target_weights_as_tensor"))  # fmt: skip
def tree_regressor(n: Node) -> list[SSAValue]:
    """The scores are f32 whatever the input (the spec's and onnxruntime's output type;
    onnx.reference keeps a double input's type), computed in the input's float type."""
    x = as_rows(n, n.input(0), keep_f64=True)
    aggregate = n.attr("aggregate_function", "SUM")
    if aggregate not in AGGREGATES:
        raise n.error(f"unknown aggregate_function {aggregate!r}")
    f = _forest_v3(n, shape(x)[1], count(n, "n_targets", 1), "target", aggregate)
    y = _scores(n, x, f, aggregate, _array(n, "base_values"), elem(x))
    return [n.cast(post_transform(n, y, transform_name(n)), "f32")]


@converter("TreeEnsembleClassifier", domain=ML, attrs=(*_V3_COMMON, "class_ids",
           "class_nodeids", "class_treeids", "class_weights", "class_weights_as_tensor",
           "classlabels_int64s", "classlabels_strings"))  # fmt: skip
def tree_classifier(n: Node) -> list[SSAValue]:
    """Outputs the label (of the first largest score before the transform, as
    onnxruntime) and the scores. A binary ensemble (two labels or the one label 1, every
    weight on one class id: XGBoost's, LightGBM's and scikit-learn's gradient boosting) has
    one score s, written as onnxruntime does (`ops_ml_scores.binary_scores`): `[1 - s, s]` when
    every weight is >= 0 (label 1 where s > 0.5), else `[-s, s]` (label 1 where s > 0),
    LOGISTIC `[sigmoid(-s), sigmoid(s)]`, the other transforms not applied; PROBIT as
    onnx.reference, `probit([1 - s, s])`. onnx.reference transforms `[1 - s, s]` (NONE)
    or `[-s, s]` and takes the argmax. One base value is the score's."""
    if n.attr("classlabels_strings"):
        raise n.error("string class labels have no rlx element type (classlabels_strings)")
    labels = ints(n, "classlabels_int64s")
    if not labels:
        raise n.error("attribute 'classlabels_int64s' is required")
    x = as_rows(n, n.input(0), keep_f64=True)
    classes = len(labels)
    f = _forest_v3(n, shape(x)[1], classes, "class", "SUM")
    ids = set(ints(n, "class_ids"))
    base = _array(n, "base_values")
    mode = transform_name(n)
    if len(ids) != 1 or classes > 2:
        y = _scores(n, x, f, "SUM", base, "f32")
        return [pick(n, labels, argmax_first(n, y)), post_transform(n, y, mode)]
    if classes == 1 and labels[0] != 1:
        raise n.error(f"a single class label must be 1 (got {labels[0]})")
    neg, pos = labels if classes == 2 else [0, 1]
    (cid,) = ids
    if base is not None and base.size == 1:
        base = np.pad(base.reshape(1), (cid, classes - 1 - cid))
    y = _scores(n, x, f, "SUM", base, "f32")
    s = n.emit("slice", y, starts=[0, cid], limits=[shape(x)[0], cid + 1])
    positive = bool((f.weights >= 0).all())  # onnxruntime's weights_are_all_positive
    scores = binary_scores(n, s, mode, complement=positive, probit_complement=True)
    return [binary_label(n, s, 0.5 if positive else 0.0, neg, pos), scores]


@converter("TreeEnsemble", domain=ML, attrs=(
    "aggregate_function", "leaf_targetids", "leaf_weights", "membership_values", "n_targets",
    "nodes_falseleafs", "nodes_falsenodeids", "nodes_featureids", "nodes_hitrates",
    "nodes_missing_value_tracks_true", "nodes_modes", "nodes_splits", "nodes_trueleafs",
    "nodes_truenodeids", "post_transform", "tree_roots"))  # fmt: skip
def tree_ensemble(n: Node) -> list[SSAValue]:
    """TreeEnsemble-5: the result has the input's float type (f16 computed in f32)."""
    x0 = n.input(0)
    x = as_rows(n, x0, keep_f64=True)
    agg = int(n.attr("aggregate_function", 1))
    post = int(n.attr("post_transform", 0))
    if not 0 <= agg < len(AGGREGATES) or not 0 <= post < len(TRANSFORMS):
        raise n.error(f"aggregate_function {agg} / post_transform {post} is not defined")
    f = _forest_v5(n, shape(x)[1], count(n, "n_targets"), AGGREGATES[agg])
    y = _scores(n, x, f, AGGREGATES[agg], None, elem(x))
    y = post_transform(n, y, TRANSFORMS[post])
    return [n.cast(y, elem(x0)) if is_float(elem(x0)) else y]
