"""Fuzzing: random rlx graphs (`graphgen.fuzz_graph`) compiled and run vs the reference.

Every op family the generator knows (elementwise, compare/where, reductions, cumsum,
softmax, norms with residuals, matmul epilogues, SwiGLU, attention, shape ops, casts),
every dtype of `FUZZ_*_DTYPES` (fp8: `graphgen.FP8_DTYPES`), and shapes that reach BLAS
and the row-parallel pool. CI runs a fixed, derandomized set of 2 x `RLX_FUZZ_EXAMPLES`
(default 10) examples plus the `@example`s; a longer run: `RLX_FUZZ_EXAMPLES=250
RLX_FUZZ_RANDOM=1 pytest tests/unit/test_fuzz_*.py` (docs/fuzzing.md).
"""

from __future__ import annotations

import os

import ml_dtypes
import numpy as np
import pytest
from graphgen import (
    FP8_DTYPES,
    FUZZ_FLOAT_DTYPES,
    FUZZ_INT_DTYPES,
    FUZZ_SHAPES,
    FUZZ_TOLERANCE,
    fuzz_graph,
)
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

import rlx
from rlx.runtime import cache

EXAMPLES = int(os.environ.get("RLX_FUZZ_EXAMPLES", "10")) * 2
RANDOM = os.environ.get("RLX_FUZZ_RANDOM", "") not in ("", "0")
FUZZ_SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=not RANDOM,
    database=None,
    suppress_health_check=list(HealthCheck),
)
DTYPES = FUZZ_FLOAT_DTYPES + FUZZ_INT_DTYPES + FP8_DTYPES


@pytest.fixture(autouse=True)
def no_disk_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RLX_CACHE", "0")
    cache.CACHE.clear_memory()


def assert_matches(got: list[np.ndarray], want: list[np.ndarray], dtype: str) -> None:
    assert len(got) == len(want)
    for a, b in zip(got, want, strict=True):
        a, b = np.asarray(a), np.asarray(b)
        assert a.shape == b.shape and a.dtype == b.dtype, (a.shape, a.dtype, b.shape, b.dtype)
        if a.dtype.kind in "iub":
            np.testing.assert_array_equal(a, b)
            continue
        a64, b64 = a.astype(np.float64), b.astype(np.float64)
        if dtype in FP8_DTYPES:
            # e4m3fn has no infinity: a value past max_finite rounds to NaN. An f32 ulp of
            # difference in an intermediate decides that boundary, so NaN against
            # ±max_finite (the other side just under it) is the same overflow.
            mx = float(ml_dtypes.finfo(a.dtype).max)
            edge = (np.isnan(a64) & (np.abs(b64) == mx)) | (np.isnan(b64) & (np.abs(a64) == mx))
            a64, b64 = np.where(edge, np.nan, a64), np.where(edge, np.nan, b64)
        np.testing.assert_array_equal(np.isnan(a64), np.isnan(b64))
        finite = np.isfinite(b64)
        scale = max(1.0, float(np.max(np.abs(b64[finite]), initial=0.0)))
        tol = FUZZ_TOLERANCE.get(dtype, FUZZ_TOLERANCE["f32"]) * scale
        np.testing.assert_allclose(a64[finite], b64[finite], rtol=0, atol=tol)
        np.testing.assert_array_equal(a64[~finite], b64[~finite])


@FUZZ_SETTINGS
@given(
    seed=st.integers(0, 2**32 - 1),
    dtype=st.sampled_from(DTYPES),
    shape=st.sampled_from(FUZZ_SHAPES),
    n_ops=st.integers(1, 6),
)
@example(seed=1, dtype="f32", shape=(64, 64), n_ops=6)  # BLAS-sized matmuls
@example(seed=2, dtype="f32", shape=(64, 512), n_ops=6)  # row-parallel chunks
@example(seed=3, dtype="bf16", shape=(4, 16, 512), n_ops=5)  # attention, low precision
@example(seed=4, dtype="i32", shape=(64, 512), n_ops=6)
@example(seed=24, dtype="f8E4M3FN", shape=(3, 5), n_ops=2)
@example(seed=5, dtype="f8E5M2", shape=(64, 64), n_ops=2)
def test_compiled_matches_reference(seed: int, dtype: str, shape: tuple[int, ...], n_ops: int):
    # fp8 rounds after every op: a last-bit f32 difference moves a value by one fp8 step
    # (1/8 of it), and longer chains or long sums (which also overflow e4m3's 448 to NaN at
    # a point an f32 ulp decides) compound or cancel such steps beyond any fixed tolerance.
    # fp8 graphs stay two ops deep over short rows (fp8 never takes the BLAS path anyway).
    assume(dtype not in FP8_DTYPES or (shape[-1] <= 64 and n_ops <= 2))
    rg = fuzz_graph(seed, dtype, shape, n_ops)
    want = rg.run()
    g = rlx.compile(rg.module)
    g.set_params(rg.params)
    assert_matches(g.run(**rg.inputs), want, dtype)
