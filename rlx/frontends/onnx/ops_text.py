"""TfIdfVectorizer (9-25) on integer token ids: n-gram counts against a constant pool.

For every gram size n in [min_gram_length, max_gram_length] and skip distance d in
1 .. max_skip_count + 1 (unigrams once, at d = 1), the n-grams starting at positions
i < L - d (n - 1) are `x[i], x[i + d], ..., x[i + d (n - 1)]`; each of the n slices is
compared with column k of the pool's n-gram matrix `[G, n]`, the n comparisons multiplied
and summed over the positions: the counts `[B, G]`, which a constant one-hot matmul sends
to the output columns `ngram_indexes`. Then TF (counts), IDF (the weight, default 1, where
the count is positive) or TFIDF (weight x count), as onnx.reference and onnxruntime count;
a pool holding an n-gram twice is refused, as onnxruntime refuses it. String pools have no
rlx type.
"""

from __future__ import annotations

import numpy as np
from xdsl.ir import SSAValue

from rlx.dialects.rlx.base import is_int
from rlx.frontends.onnx.node import Node, elem, is_static, shape
from rlx.frontends.onnx.ops_tensor import slice_axis
from rlx.frontends.onnx.registry import converter

MAX_POOL = 1 << 16
"""Largest pool (ids): the counts are a `[B, positions, G]` comparison per gram size."""


def _pool(n: Node, pool: np.ndarray, counts: list[int], lo: int, hi: int
          ) -> dict[int, list[tuple[tuple[int, ...], int]]]:  # fmt: skip
    """{gram size: [(gram, pool n-gram id)]} for the sizes in [lo, hi]."""
    out: dict[int, list[tuple[tuple[int, ...], int]]] = {}
    seen: set[tuple[int, ...]] = set()
    gid = 0
    for i, start in enumerate(counts):
        size = i + 1
        end = counts[i + 1] if i + 1 < len(counts) else len(pool)
        if end < start or (end - start) % size:
            raise n.error(f"ngram_counts {counts} do not cut the pool into {size}-grams")
        for j in range(start, end, size):
            gram = tuple(int(v) for v in pool[j : j + size])
            if gram in seen:  # onnxruntime refuses it too; onnx.reference counts it oddly
                raise n.error(f"the pool holds the {size}-gram {list(gram)} twice")
            seen.add(gram)
            if lo <= size <= hi:
                out.setdefault(size, []).append((gram, gid))
            gid += 1
    return out


@converter("TfIdfVectorizer", attrs=("max_gram_length", "max_skip_count", "min_gram_length",
                                     "mode", "ngram_counts", "ngram_indexes", "pool_int64s",
                                     "pool_strings", "weights"))  # fmt: skip
def tfidf(n: Node) -> list[SSAValue]:
    x = n.input(0)
    xs = list(shape(x))
    if n.attr("pool_strings") is not None or not is_int(elem(x)):
        raise n.error("TfIdfVectorizer: only integer tokens (pool_int64s) are supported")
    if not is_static(xs) or len(xs) not in (1, 2):
        raise n.error(f"TfIdfVectorizer needs a static [C] or [N, C] input, got {xs}")
    pool = np.asarray(n.attr("pool_int64s", []), np.int64)
    counts = [int(v) for v in n.attr("ngram_counts", [])]
    idx = [int(v) for v in n.attr("ngram_indexes", [])]
    lo, hi = int(n.attr("min_gram_length", 1)), int(n.attr("max_gram_length", 1))
    skip = int(n.attr("max_skip_count", 0))
    mode = n.attr("mode", "TF")
    weights = [float(v) for v in n.attr("weights", [])]
    if mode not in ("TF", "IDF", "TFIDF") or not 1 <= lo <= hi or skip < 0:
        raise n.error(f"mode {mode!r}, gram lengths {lo}..{hi}, max_skip_count {skip}")
    if not idx or len(pool) > MAX_POOL or min(idx) < 0:
        raise n.error(f"ngram_indexes {idx[:8]} / a pool of {len(pool)} ids (at most {MAX_POOL})")
    grams = _pool(n, pool, counts, lo, hi)
    if sum(len(g) for g in grams.values()) > len(idx) or any(
        gid >= len(idx) for g in grams.values() for _, gid in g
    ):
        raise n.error(f"{len(idx)} ngram_indexes for the pool's n-grams")
    width = max(idx) + 1
    if weights and len(weights) != width:
        raise n.error(f"{len(weights)} weights for {width} output columns")
    x2 = n.cast(x if len(xs) == 2 else n.reshape(x, [1, xs[0]]), "i64")
    b, length = xs if len(xs) == 2 else [1, xs[0]]
    out = None
    for size, items in sorted(grams.items()):
        table = np.array([g for g, _ in items], np.int64)  # [G, size]
        hot = np.zeros((len(items), width), np.float32)
        hot[np.arange(len(items)), [idx[gid] for _, gid in items]] = 1.0
        total = None
        for d in range(1, (skip + 1 if size > 1 else 1) + 1):
            places = length - d * (size - 1)
            if places <= 0:
                continue
            hit = None
            for k in range(size):
                part = n.reshape(slice_axis(n, x2, 1, k * d, k * d + places, 1), [b, places, 1])
                eq = n.cast(n.emit("compare", part, n.constant(table[:, k].reshape(1, 1, -1),
                                                               "i64"), predicate="eq"), "f32")  # fmt: skip
                hit = eq if hit is None else n.emit("mul", hit, eq)
            got = n.emit("reduce", hit, kind="sum", axes=[1], keepdims=False)  # [B, G]
            total = got if total is None else n.emit("add", total, got)
        if total is not None:
            cols = n.emit("matmul", total, n.constant(hot))
            out = cols if out is None else n.emit("add", out, cols)
    y = n.constant(np.zeros((b, width), np.float32)) if out is None else out
    w = n.constant(np.asarray(weights or [1.0] * width, np.float32).reshape(1, width))
    if mode == "IDF":
        pos = n.emit("compare", y, n.constant(0.0, y), predicate="gt")
        y = n.emit("where", pos, n.emit("mul", w, n.constant(np.ones((b, 1), np.float32))),
                   n.constant(0.0, y))  # fmt: skip
    elif mode == "TFIDF":
        y = n.emit("mul", y, w)
    return [y if len(xs) == 2 else n.reshape(y, [width])]
