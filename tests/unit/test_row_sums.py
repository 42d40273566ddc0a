"""Float sums / means over adjacent axes followed by at most 16 kept elements (global
average pools, blocked NCHWc ones, last-axis sums) take the row kernel of
`reductions._row_sums` (one loop per row carrying its sums in registers): against the
reference interpreter in f32 / f16 / bf16 / f64, odd sizes, keepdims or not, every axis,
1 to 16 kept lanes and 17 (the generic nest), and a pool large enough to be split over
the runtime's threads."""

from __future__ import annotations

import numpy as np
import pytest

import rlx
from rlx.dtypes import numpy_dtype
from rlx.interpreter import parse_module, run

TOL = {"f32": 1e-5, "f64": 1e-12, "f16": 2e-3, "bf16": 1.6e-2}


def _graph(shape: tuple[int, ...], kind: str, axes: list[int], keep: bool, dtype: str) -> str:
    t = "tensor<" + "x".join(map(str, shape)) + f"x{dtype}>"
    red = {a % len(shape) for a in axes}
    kept = [1 if i in red else d for i, d in enumerate(shape)]
    rest = kept if keep else [d for i, d in enumerate(shape) if i not in red]
    o = "tensor<" + "".join(f"{d}x" for d in rest) + f"{dtype}>"
    ax = ", ".join(map(str, axes))
    return f"""
func.func @main(%x: {t}) -> {o} {{
  %m = rlx.reduce %x {{kind = "{kind}", axes = array<i64: {ax}>, keepdims = {str(keep).lower()}}} : ({t}) -> {o}
  func.return %m : {o}
}}
"""


CASES = [
    ((2, 5, 9, 7), "mean", [2, 3], True),
    ((2, 5, 9, 7), "sum", [-1, -2], False),
    ((3, 37), "mean", [1], False),
    ((3, 4, 5), "sum", [0, 1, 2], False),
    ((1, 7, 5, 3, 8), "mean", [2, 3], True),  # a blocked (NCHWc) global pool
    ((2, 3, 11, 16), "sum", [1, 2], False),  # 16 lanes
    ((2, 9, 17), "mean", [1], True),  # 17 lanes: the generic nest
    ((9, 3), "sum", [0], False),  # a leading axis, 3 lanes
    ((2, 6, 1, 5), "mean", [1, 2], False),
    ((1, 96, 56, 56), "mean", [2, 3], True),
]


@pytest.mark.parametrize("dtype", ["f32", "f16", "bf16", "f64"])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_row_sums_match_reference(case: int, dtype: str) -> None:
    shape, kind, axes, keep = CASES[case]
    if case == len(CASES) - 1 and dtype != "f32":
        pytest.skip("the threaded case once, in f32")
    text = _graph(shape, kind, axes, keep, dtype)
    rng = np.random.default_rng(case)
    x = (rng.standard_normal(shape) + 0.5).astype(numpy_dtype(dtype))
    (want,) = run(parse_module(text), [x])
    (got,) = rlx.compile(text).run(x)
    assert got.shape == want.shape and got.dtype == want.dtype
    g, r = got.astype(np.float64), want.astype(np.float64)
    tol = TOL[dtype]
    np.testing.assert_allclose(g, r, rtol=tol, atol=tol * max(1.0, float(np.abs(r).max())))


def test_leading_axis_reductions_keep_the_generic_nest() -> None:
    """A reduction over a leading axis is not a row sum (it keeps the linalg nest)."""
    text = _graph((4, 6, 5), "sum", [0], False, "f32")
    x = np.random.default_rng(0).standard_normal((4, 6, 5)).astype(np.float32)
    (got,) = rlx.compile(text).run(x)
    np.testing.assert_allclose(got, x.sum(axis=0), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    ("shape", "axes", "rows"), [((1, 60, 14, 14, 8), [2, 3], True), ((2, 9, 17), [1], False)]
)
def test_blocked_pools_are_rows(shape: tuple[int, ...], axes: list[int], rows: bool) -> None:
    """The blocked pool has no reduction nest left in its kernel (it accumulated through
    the output buffer: ~50 us of EfficientNet-B0's 14x14 squeeze-excite means, ~8 us as
    rows); 17 kept lanes keep the nest."""
    text = _graph(shape, "mean", axes, True, "f32")
    linalg = rlx.compile(text).ir("linalg")
    assert ("reduction" not in linalg) == rows
