"""Accuracy of the f32 ``erf`` expansion of ``convert-math-to-llvm`` (``@__rlx_erf_f32``) and of
``rlx.gelu`` built on it, through ``rlx.compile``: ulp errors against f64 references on a dense
sweep of f32 inputs (strided bit patterns, the region joins, random bit patterns, specials).

The bound was measured over all 2^31 non-negative f32 bit patterns (negative inputs mirror them
exactly: erf is computed on |x| and copysign'd): max 1.292 ulp (at 0.97136098) on hosts with
FMA; without FMA the ``llvm.fmuladd`` steps round twice and the bound is looser (~2.25 ulp).
"""

from __future__ import annotations

import math

import llvmlite.binding as llvm_binding
import numpy as np
import scipy.special

import rlx

_HAS_FMA = bool(llvm_binding.get_host_cpu_features().get("fma", False))
ERF_MAX_ULP = 1.3 if _HAS_FMA else 2.5

_F32_MAX = float(np.finfo(np.float32).max)
_SPECIAL = [
    0.0,
    1e-45,  # smallest subnormal
    1.1754942e-38,  # largest subnormal
    1.1754944e-38,  # smallest normal
    1e-30,
    1e-8,
    3e-4,
    0.5,
    0.9713609814643860,  # the worst case of the exhaustive sweep
    0.99999994,
    1.0,
    2.25,
    3.9192057,
    3.919205904006958,  # smallest x with f32(erf(x)) == 1
    4.0,
    9.0,
    1e30,
    _F32_MAX,
    math.inf,
]


def _bits_range(lo: float, hi: float, stride: int) -> np.ndarray:
    """Every ``stride``-th f32 in ``[lo, hi)`` (``0 <= lo < hi``), by bit pattern."""
    b0, b1 = np.array([lo, hi], np.float32).view(np.uint32)
    return np.arange(b0, b1, stride, dtype=np.uint32).view(np.float32)


def _inputs() -> tuple[np.ndarray, int]:
    """The inputs: positives, their negations, random bit patterns, NaNs; and #positives."""
    rng = np.random.default_rng(0)
    pos = np.concatenate(
        [
            _bits_range(0.0, 6.0, 997),  # all binades down to the subnormals
            _bits_range(0.5, 1.5, 17),  # around the join of the two polynomials at 1
            _bits_range(3.8, 4.0, 7),  # where erf rounds to 1
            np.array(_SPECIAL, np.float32),
        ]
    )
    rand = rng.integers(0, 2**32, 1 << 20, dtype=np.uint64).astype(np.uint32).view(np.float32)
    nan = np.array([math.nan, -math.nan], np.float32)
    return np.concatenate([pos, -pos, rand, nan]), pos.size


def _compile(kind: str, n: int) -> rlx.CompiledGraph:
    g = rlx.Graph()
    x = g.input("x", (n,))
    g.output(g.gelu(x) if kind == "gelu" else g.erf(x))
    return rlx.compile(g)


def _ulp_errors(got: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """|got - ref| in units of the f32 ulp at ``ref`` (the smaller one just below a power of 2)."""
    r32 = np.abs(ref).astype(np.float32)
    below = r32.astype(np.float64) > np.abs(ref)
    r32 = np.where(below, np.nextafter(r32, np.float32(0)), r32)
    return np.abs(got.astype(np.float64) - ref) / np.spacing(r32).astype(np.float64)


def test_erf_f32_ulp_bound_and_specials() -> None:
    x, m = _inputs()
    (got,) = _compile("erf", x.size).run(x)
    nan = np.isnan(x)
    assert np.isnan(got[nan]).all()
    fin = ~nan
    xf, gf = x[fin], got[fin]
    err = _ulp_errors(gf, scipy.special.erf(xf.astype(np.float64)))
    worst = int(np.argmax(err))
    assert err[worst] <= ERF_MAX_ULP, f"erf({xf[worst]!r}): {err[worst]:.3f} ulp"
    np.testing.assert_array_equal(np.signbit(gf), np.signbit(xf))  # odd, erf(-0) = -0
    assert np.abs(gf).max() <= 1.0
    np.testing.assert_array_equal(got[m : 2 * m], -got[:m])  # exactly odd
    inf = np.isinf(xf)
    np.testing.assert_array_equal(gf[inf], np.sign(xf[inf]))


def test_gelu_f32_accuracy() -> None:
    """GELU = 0.5 x (1 + erf(x / sqrt 2)): few ulps where 1 + erf does not cancel (x >= -1),
    and an absolute error of a few |x| * 2^-24 everywhere."""
    pos = np.concatenate([_bits_range(2.0**-20, 8.0, 389), np.array([0.0, 1e-40, 9.0, 1e4])])
    x = np.concatenate([pos, -pos]).astype(np.float32)
    (got,) = _compile("gelu", x.size).run(x)
    xd = x.astype(np.float64)
    ref = 0.5 * xd * (1.0 + scipy.special.erf(xd / math.sqrt(2.0)))
    tol = 4.0 * np.abs(xd) * 2.0**-24 + 1e-45
    bad = np.abs(got - ref) > tol
    assert not bad.any(), f"gelu({x[bad][0]!r}) = {got[bad][0]!r}, want {ref[bad][0]!r}"
    mild = x >= -1.0
    err = _ulp_errors(got[mild], ref[mild])
    assert err.max() <= 3.0, f"gelu({x[mild][np.argmax(err)]!r}): {err.max():.3f} ulp"
    special = np.array([math.inf, math.nan, 0.0, -0.0], np.float32)
    (got,) = _compile("gelu", special.size).run(special)
    assert got[0] == math.inf and np.isnan(got[1])
    assert got[2] == 0.0 and got[3] == 0.0


def test_exp_f32_underflow_and_overflow_edges() -> None:
    """exp(-inf) and anything below the range reduction's clamp are exactly 0 (a masked
    softmax score must give probability 0), the largest finite input stays finite."""
    g = rlx.Graph("main")
    g.output(g.exp(g.input("x", (8,))))
    x = np.array([-np.inf, -200, -103.98, -103.97, -87.3, 0, 88.7, np.inf], np.float32)
    (y,) = rlx.compile(g).run(x=x)
    assert y[0] == 0 and y[1] == 0 and y[2] == 0
    assert np.isinf(y[-1]) and np.isfinite(y[-2])
    np.testing.assert_allclose(y[3:7], np.exp(x[3:7]), rtol=2e-7, atol=0)
