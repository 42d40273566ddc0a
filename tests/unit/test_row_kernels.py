"""Softmax / layer_norm / rms_norm row kernels against the reference interpreter: odd row
lengths (1, primes, not multiples of any vector width), special rows (-inf masks, all
-inf, NaN, +inf, very negative scores, constant rows), f32/f16/bf16; once through the
O1 test JIT (one module for many cases) and once through `rlx.compile` (O3, vectorized,
row-chunked on the pool), which is where the vector code paths (the vectorized row max,
`fast_exp.exp_nonpositive`) actually run."""

from __future__ import annotations

import numpy as np
import pytest
from test_rlx_to_linalg_harness import check, multi_op, rand, t

import rlx
from rlx.interpreter import parse_module
from rlx.interpreter import run as reference_run
from rlx.lowering.rlx_to_linalg.fast_exp import LO

LENGTHS = (1, 2, 7, 13, 17, 31, 97, 1031)


def _special_rows(n: int) -> np.ndarray:
    """Rows of length n (n >= 2) covering the edge cases of softmax."""
    r = np.random.default_rng(n).standard_normal((8, n)).astype(np.float32) * 4
    r[0, : n // 2] = -np.inf  # a masked prefix: exactly 0 there
    r[1, :] = -np.inf  # all masked: NaN (as NumPy and the reference)
    r[2, n // 2] = np.nan  # one NaN: the whole row is NaN
    r[3, -1] = np.inf  # +inf: inf - inf is NaN
    r[4, :] = -3e4  # constant: uniform 1/n
    r[5, 1:] = r[5, 0] - 200.0  # far below the max: exactly 0 (below fast_exp.LO)
    r[6, :] = np.linspace(LO - 1, 0, n)  # across the fast exp's cut-off
    r[7, :] = 80.0  # large and equal
    return r


@pytest.mark.parametrize("n", [*range(1, 18), 23, 31, 33, 40])
def test_softmax_max_at_every_position(n: int) -> None:
    """Row i has its maximum at position i: a vectorized max that drops the row's tail (as
    llvmlite 0.50's vectorizer did with `maxnumf` for lengths like 10 or 15, and which
    aborted on an LLVM assertion at 31) gives a positive exp argument and a wrong row."""
    for rows in (1, n):  # one row (the reduction is the only loop) and n rows
        src = f"""func.func @main(%x: tensor<{rows}x{n}xf32>) -> tensor<{rows}x{n}xf32> {{
  %y = rlx.softmax %x {{axis = -1 : i64}} : (tensor<{rows}x{n}xf32>) -> tensor<{rows}x{n}xf32>
  func.return %y : tensor<{rows}x{n}xf32>
}}"""
        g = rlx.compile(src)
        rng = np.random.default_rng(n)
        for first in range(0, n, rows):
            x = rng.standard_normal((rows, n)).astype(np.float32)
            x[np.arange(rows), (first + np.arange(rows)) % n] = 30.0
            (want,) = reference_run(src, [x])
            np.testing.assert_allclose(g.run(x)[0], want, rtol=1e-5, atol=1e-7)


def test_softmax_odd_lengths_f32() -> None:
    cases = [("rlx.softmax", [t((3, n))], t((3, n)), "{axis = -1}") for n in LENGTHS]
    xs = [rand((3, n), seed=n) * 5 for n in LENGTHS]
    check(multi_op(cases), xs, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("e", ["f32", "f16", "bf16"])
def test_softmax_special_rows(e: str) -> None:
    lengths = (2, 17, 97)
    cases = [("rlx.softmax", [t((8, n), e)], t((8, n), e), "{axis = -1}") for n in lengths]
    xs = [_special_rows(n).astype(rand((1,), e).dtype) for n in lengths]
    got = check(multi_op(cases), xs, atol=1e-7 if e == "f32" else None)
    for g, n in zip(got, lengths, strict=True):
        assert (g[0, : n // 2] == 0).all()  # masked entries are exactly 0


def _compiled_vs_reference(build: object, x: np.ndarray, rtol: float, atol: float) -> None:
    g = rlx.Graph("main")
    build(g)  # type: ignore[operator]
    (expected,) = reference_run(g.module, {"x": x})
    (got,) = rlx.compile(g).run(x=x)
    np.testing.assert_allclose(
        got.astype(np.float64), expected.astype(np.float64), rtol=rtol, atol=atol
    )


@pytest.mark.parametrize("n", [1, 13, 97, 1031])
def test_softmax_compiled_vectorized(n: int) -> None:
    rows = 8 if n == 1 else 600  # > one 64 KiB chunk at n = 97 and 1031: split on the pool
    x = np.random.default_rng(n).standard_normal((rows, n)).astype(np.float32) * 6
    if n > 1:
        x[:8] = _special_rows(n)
    _compiled_vs_reference(
        lambda g: g.output(g.softmax(g.input("x", x.shape), axis=-1)), x, 2e-6, 1e-8
    )


@pytest.mark.parametrize("kind", ["layer_norm", "rms_norm"])
@pytest.mark.parametrize("n", [1, 13, 97, 1031])
def test_norms_compiled_vectorized(kind: str, n: int) -> None:
    rng = np.random.default_rng(n)
    x = (rng.standard_normal((300, n)) * 3 + 1).astype(np.float32)
    x[0] = 7.0  # constant row: layer_norm gives beta exactly
    x[1, 0] = np.nan
    x[2] *= 1e18  # large: f32 sums of squares would overflow
    gamma = rng.standard_normal(n).astype(np.float32)
    beta = rng.standard_normal(n).astype(np.float32)

    def build(g: rlx.Graph) -> None:
        xi = g.input("x", x.shape)
        if kind == "layer_norm":
            g.output(g.layer_norm(xi, g.constant(gamma), g.constant(beta), epsilon=1e-5))
        else:
            g.output(g.rms_norm(xi, g.constant(gamma), epsilon=1e-6))

    _compiled_vs_reference(build, x, 2e-5, 2e-5)


@pytest.mark.parametrize("e", ["f16", "bf16"])
def test_norms_narrow_odd_lengths(e: str) -> None:
    cases, xs = [], []
    for n in (1, 17, 97):
        for op, nparams in (("rlx.layer_norm", 2), ("rlx.rms_norm", 1)):
            ins = [t((5, n), e)] + [t((n,), e)] * nparams
            cases.append((op, ins, t((5, n), e), "{epsilon = 1.0e-05 : f64}"))
            xs += [rand((5, n), e, seed=n) * 3] + [rand((n,), e, seed=n + j) for j in (1, 2)][
                :nparams
            ]
    check(multi_op(cases), xs)


def test_residual_layer_norm_runs_on_the_pool() -> None:
    """MiniLM's residual layer norm (128x384, fused with the add) is split for two threads
    (`parallel.NORM_PARALLEL_ELEMENTS`: it was one thread's share) and, run on two pool
    threads, matches the reference."""
    from rlx.lowering.rlx_to_linalg import parallel as chunking
    from rlx.runtime import parallel as pool

    rng = np.random.default_rng(7)
    x, r = (rng.standard_normal((128, 384)).astype(np.float32) for _ in range(2))
    gamma, beta = (rng.standard_normal(384).astype(np.float32) for _ in range(2))
    g = rlx.Graph("main")
    h = g.add(g.input("x", x.shape), g.input("r", r.shape))
    g.output(g.layer_norm(h, g.constant(gamma), g.constant(beta), epsilon=1e-12))
    (want,) = reference_run(g.module, {"x": x, "r": r})
    c = rlx.compile(g)
    assert "rlx.fused_residual_layer_norm" in c.ir("rlx")
    fused = parse_module(c.ir("rlx"))
    op = next(o for o in fused.walk() if o.name == "rlx.fused_residual_layer_norm")
    plan = chunking.plan(op)
    assert plan is not None and plan.tasks == 4 and plan.max_threads >= 2
    before = pool.get_num_threads()
    pool.set_num_threads(2)
    try:
        (got,) = c.run(x=x, r=r)
    finally:
        pool.set_num_threads(before)
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-6)
