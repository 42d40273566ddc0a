"""Det (11-25): the determinant of square matrices `[*, M, M] -> [*]`, by LU elimination with
partial pivoting (LAPACK's `getrf`, which NumPy's `det` calls), unrolled over the M columns
into rlx ops on the whole `[*, M, M]` tensor (static shapes, M <= MAX_DET_SIZE).

Step k: the pivot is the first row `r >= k` of largest `|A[r, k]|` (a one-hot row mask);
rows k and r are swapped arithmetically (`A + p (row_k - row_r) + e_k (row_r - row_k)`,
nothing when r = k), the sign flips when r != k, the determinant is multiplied by the pivot
`A[k, k]`, and the rows below k subtract `A[i, k] / A[k, k]` times row k. A zero pivot (the
whole column below k is zero: the matrix is singular) divides by 1 instead, so the
determinant stays exactly 0 rather than NaN. f16 / bf16 are eliminated in f32.
"""

from __future__ import annotations

import numpy as np
from xdsl.ir import SSAValue

from rlx.dialects.rlx.base import DYN
from rlx.frontends.onnx.node import Node, elem, shape
from rlx.frontends.onnx.ops_tensor import slice_axis
from rlx.frontends.onnx.registry import converter

MAX_DET_SIZE = 64
"""Largest M: the unrolled elimination emits ~20 ops per column."""


@converter("Det", attrs=())
def det(n: Node) -> list[SSAValue]:
    x = n.input(0)
    s = list(shape(x))
    if len(s) < 2 or s[-1] != s[-2] or DYN in s[-2:]:
        raise n.error(f"Det needs square matrices in the last two dims, got shape {s}")
    if DYN in s:
        raise n.error(f"Det needs a static shape, got {s}")
    m = s[-1]
    if m > MAX_DET_SIZE:
        raise n.error(f"Det of {m}x{m} matrices: at most {MAX_DET_SIZE}x{MAX_DET_SIZE}")
    batch = s[:-2]
    if m == 0:  # the empty product, as NumPy
        return [n.constant(np.ones(batch), x)]
    wide = elem(x) if elem(x).bitwidth > 16 else "f32"
    a = n.cast(x, wide)
    rows = np.arange(m).reshape(m, 1)
    iota = n.constant(rows.astype(np.int64), "i64")
    total = sign = None
    for k in range(m):
        col = slice_axis(n, a, len(s) - 1, k, k + 1, 1)  # [*, M, 1]
        cand = n.emit("where", n.constant(rows >= k), n.emit("abs", col), n.constant(-1.0, a))
        top = n.emit("reduce", cand, kind="max", axes=[len(s) - 2], keepdims=True)
        at_top = n.emit("where", n.emit("compare", cand, top, predicate="eq"), iota,
                        n.constant(m, "i64"))  # fmt: skip
        r = n.emit("reduce", at_top, kind="min", axes=[len(s) - 2], keepdims=True)  # [*, 1, 1]
        p = n.cast(n.emit("compare", iota, r, predicate="eq"), wide)  # [*, M, 1]
        row_r = n.emit("reduce", n.emit("mul", p, a), kind="sum", axes=[len(s) - 2],
                       keepdims=True)  # fmt: skip
        row_k = slice_axis(n, a, len(s) - 2, k, k + 1, 1)  # [*, 1, M]
        e_k = n.constant((rows == k).astype(np.float64), a)
        d = n.emit("sub", row_k, row_r)
        a = n.emit("sub", n.emit("add", a, n.emit("mul", p, d)), n.emit("mul", e_k, d))
        flip = n.emit("compare", r, n.constant(k, "i64"), predicate="ne")
        step = n.emit("where", flip, n.constant(-1.0, a), n.constant(1.0, a))
        sign = step if sign is None else n.emit("mul", sign, step)
        pivot = slice_axis(n, slice_axis(n, a, len(s) - 2, k, k + 1, 1), len(s) - 1, k, k + 1, 1)
        total = pivot if total is None else n.emit("mul", total, pivot)
        if k == m - 1:
            break
        safe = n.emit("where", n.emit("compare", pivot, n.constant(0.0, a), predicate="eq"),
                      n.constant(1.0, a), pivot)  # fmt: skip
        below = n.constant((rows > k).astype(np.float64), a)
        col = slice_axis(n, a, len(s) - 1, k, k + 1, 1)
        factors = n.emit("mul", n.emit("div", col, safe), below)
        row_k = slice_axis(n, a, len(s) - 2, k, k + 1, 1)
        a = n.emit("sub", a, n.emit("mul", factors, row_k))
    assert total is not None and sign is not None
    y = n.emit("reduce", n.emit("mul", total, sign), kind="sum", axes=[len(s) - 2, len(s) - 1],
               keepdims=False)  # fmt: skip
    return [n.cast(y, elem(x))]
