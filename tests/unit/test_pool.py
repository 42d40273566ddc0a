"""pool2d and the global pools, compiled vs the reference interpreter: max / avg over
strides, asymmetric padding (what ceil mode imports to), odd sizes, batch > 1, f32 / f16 /
bf16; large pools and global average pools are chunked into `rlx_rt.parallel_call` and
give the same values on 1 and 2 threads."""

from __future__ import annotations

from collections.abc import Iterator

import ml_dtypes
import numpy as np
import pytest
from xdsl.context import Context

import rlx
from rlx.interpreter import run
from rlx.lowering.convert_rlx_to_linalg import ConvertRlxToLinalgPass
from rlx.runtime import parallel

NP = {"f32": np.float32, "f16": np.float16, "bf16": ml_dtypes.bfloat16}
TOL = {"f32": 1e-6, "f16": 1e-3, "bf16": 8e-3}
"""avg: f32 sums in another order than the reference's f64 sum (f16/bf16: one rounding)."""

CASES = {
    # (n, c, h, w), kind, kernel, strides, padding [t, l, b, r]
    "max-3x3-s2": ((2, 3, 11, 9), "max", (3, 3), (2, 2), (1, 1, 1, 1)),
    "max-ceil": ((1, 2, 8, 7), "max", (3, 2), (2, 3), (0, 0, 1, 2)),
    "avg-2x2": ((3, 2, 7, 5), "avg", (2, 2), None, (0, 0, 0, 0)),
    "avg-pad-odd": ((2, 3, 9, 13), "avg", (3, 5), (1, 2), (1, 2, 2, 1)),
    "avg-kernel-gt-input": ((1, 1, 3, 2), "avg", (4, 3), (1, 1), (1, 1, 1, 1)),
}


@pytest.fixture(autouse=True)
def _restore_threads() -> Iterator[None]:
    before = parallel.get_num_threads()
    yield
    parallel.set_num_threads(before)


def _pool_graph(case: str, dtype: str) -> rlx.Graph:
    shp, kind, k, st, pad = CASES[case]
    g = rlx.Graph()
    x = g.input("x", shp, dtype)
    g.output(
        g.op("pool2d", x, kind=kind, kernel=list(k), strides=st and list(st), padding=list(pad))
    )
    return g


def _err(got: np.ndarray, want: np.ndarray) -> float:
    got, want = got.astype(np.float64), want.astype(np.float64)
    return float(np.abs(got - want).max() / max(1.0, np.abs(want).max()))


@pytest.mark.parametrize("dtype", sorted(NP))
@pytest.mark.parametrize("case", sorted(CASES))
def test_pool2d_matches_reference(case: str, dtype: str) -> None:
    g = _pool_graph(case, dtype)
    x = np.random.default_rng(len(case)).standard_normal(CASES[case][0]).astype(NP[dtype])
    want = run(g.module, {"x": x})[0]
    got = rlx.compile(g).run(x=x)[0]
    assert got.shape == want.shape and got.dtype == want.dtype
    if CASES[case][1] == "max":
        np.testing.assert_array_equal(got, want)
    else:
        assert _err(got, want) < TOL[dtype]


def _chunked(g: rlx.Graph) -> bool:
    module = g.module.clone()
    ConvertRlxToLinalgPass().apply(Context(), module)
    return "rlx_rt.parallel_call" in str(module)


@pytest.mark.parametrize("shape", [(1, 64, 47, 45), (2, 32, 45, 47)])
def test_large_pools_run_in_parallel(shape: tuple[int, ...]) -> None:
    rng = np.random.default_rng(3)
    x = rng.standard_normal(shape).astype(np.float32)
    g = rlx.Graph()
    xi = g.input("x", shape)
    mp = g.op("pool2d", xi, kind="max", kernel=[3, 3], strides=[2, 2], padding=[1, 1, 1, 1])
    gap = g.op("reduce", xi, kind="mean", axes=[2, 3], keepdims=True)
    gmp = g.op("reduce", xi, kind="max", axes=[-2, -1], keepdims=True)
    g.output(mp, gap, gmp)
    for o in ("mp", "gap", "gmp"):
        one = rlx.Graph()
        v = one.input("x", shape)
        one.output(
            one.op("pool2d", v, kind="max", kernel=[3, 3], strides=[2, 2], padding=[1, 1, 1, 1])
            if o == "mp"
            else one.op(
                "reduce", v, kind="mean" if o == "gap" else "max", axes=[2, 3], keepdims=True
            )
        )
        assert _chunked(one), o
    want = run(g.module, {"x": x})
    c = rlx.compile(g)
    for threads in (1, 2):
        parallel.set_num_threads(threads)
        got = c.run(x=x)
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_allclose(got[1], want[1], rtol=1e-5, atol=1e-6)
        np.testing.assert_array_equal(got[2], want[2])


def test_small_and_flattening_reductions_are_not_chunked() -> None:
    for shape, keep in (((1, 8, 7, 7), True), ((1, 64, 47, 45), False)):
        g = rlx.Graph()
        v = g.input("x", shape)
        g.output(g.op("reduce", v, kind="mean", axes=[2, 3], keepdims=keep))
        assert not _chunked(g)
