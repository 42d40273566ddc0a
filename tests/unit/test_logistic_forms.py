"""sigmoid, silu and gelu_tanh (the logistic formula from exp(-|x|), its exp expanded in
the cheap form for x <= 0 with gradual underflow, the innermost loop interleave-hinted)
against the reference interpreter (plain NumPy: 1 / (1 + exp(-x)), x / (1 + exp(-2u)))
run in f64 and rounded to the type (in f32 its exp(95) overflows, so it gives 0 where
sigmoid(-95) is the subnormal 5.5e-42):
plain and fused into an elementwise region, in f32, f16 and bf16, on lengths that are not
multiples of the vector width times the interleave count, over the specials (+-inf, NaN,
+-0), the subnormal-exp range (silu(-95), gelu_tanh(-10): normal results of a subnormal
exp) and a sweep."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import rlx
from rlx.interpreter import parse_module, run

SPECIAL = [-np.inf, np.inf, np.nan, 0.0, -0.0, -1e30, 1e30, -110.0, -103.5, -95.0, -88.5,
           -87.2, -10.0, -9.0, -5.0, -1.0, 1e-30, -1e-30, 1.0, 5.0, 20.0, 90.0]  # fmt: skip

TYPES = {"f32": np.float32, "f16": np.float16, "bf16": ml_dtypes.bfloat16}


def _module(op: str, t: str, n: int) -> str:
    ty = f"tensor<{n}x{t}>"
    return f"""
func.func @main(%x: {ty}, %y: {ty}) -> ({ty}, {ty}) {{
  %0 = rlx.{op} %x : ({ty}) -> {ty}
  %1 = rlx.{op} %y : ({ty}) -> {ty}
  %2 = rlx.mul %1, %y : ({ty}, {ty}) -> {ty}
  func.return %0, %2 : {ty}, {ty}
}}
"""


def _inputs(n: int, dt: type) -> np.ndarray:
    sweep = np.linspace(-30.0, 30.0, max(n - len(SPECIAL), 0))
    with np.errstate(over="ignore"):  # 1e30 is inf in f16
        return np.concatenate([SPECIAL, sweep])[:n].astype(dt)


@pytest.mark.parametrize("t", list(TYPES))
@pytest.mark.parametrize("op", ["sigmoid", "silu", "gelu_tanh"])
@pytest.mark.parametrize("n", [1, 17, 1000])
def test_logistic_ops_match_the_reference(op: str, t: str, n: int) -> None:
    text = _module(op, t, n)
    x = _inputs(n, TYPES[t])
    got = rlx.compile(text).run(x, x)
    x64 = x.astype(np.float64)
    with np.errstate(over="ignore"):  # f16: the reference's 1e30-size values are inf
        want = [w.astype(TYPES[t]) for w in run(parse_module(_module(op, "f64", n)), [x64, x64])]
    # Relative: f32 a few ulp (one division, an exp < 1 ulp). f16 / bf16: the op alone is
    # computed in f32 and rounded once, plus the reference's rounding (3 half-ulps with
    # the slack); the fused region rounds each of its ~6 ops to the type (8). gelu_tanh:
    # exp(2u) turns a relative error d of 2u into e^(|2u| d) - 1, and 2u takes five
    # roundings (computed in the type where the chain is f16 / bf16).
    half = {"f32": 2.0**-24, "f16": 2.0**-11, "bf16": 2.0**-8}[t]
    with np.errstate(over="ignore", invalid="ignore"):
        two_u = np.minimum(np.abs(2 * np.sqrt(2 / np.pi) * (x64 + 0.044715 * x64**3)), 100)
    amp = np.expm1(5 * half * two_u) if op == "gelu_tanh" else np.zeros(n)
    # Absolute: a few of the type's smallest subnormals, times x^2 where silu / gelu
    # multiply one by x (twice)
    tiny = {"f32": 2.0**-149, "f16": 2.0**-24, "bf16": 2.0**-133}[t]
    for fused, (a, w) in enumerate(zip(got, want, strict=True)):
        base = 4e-7 if t == "f32" else (8 if fused else 3) * half
        rtol = base + amp
        a64, w64 = a.astype(np.float64), w.astype(np.float64)
        assert np.array_equal(np.isnan(a64), np.isnan(w64))
        ok = ~np.isnan(w64)
        # |x| capped where the results are 0 or exact anyway (|x| > 110: a factor 0 or 1)
        scale = 4 * tiny * (1 + np.minimum(np.abs(x64[ok]), 110) ** 2)
        with np.errstate(invalid="ignore"):  # inf - inf where both are inf
            err = np.abs(a64[ok] - w64[ok])
        close = (a64[ok] == w64[ok]) | (err <= scale + rtol[ok] * np.abs(w64[ok]))
        assert close.all(), (x64[ok][~close], a64[ok][~close], w64[ok][~close])
        zero = ok & (w64 == 0) & (a64 == 0)
        assert np.array_equal(np.signbit(a64[zero]), np.signbit(w64[zero]))


def test_normal_results_of_a_subnormal_exp_are_kept() -> None:
    """silu(-95) = -95 e^-95 (a subnormal f32) and gelu_tanh(-10) (a normal one) are not
    flushed to 0 although their exponential is subnormal (gradual underflow kept)."""
    x = np.array([-95.0, -10.0], np.float32)
    silu, _ = rlx.compile(_module("silu", "f32", 2)).run(x, x)
    gelu, _ = rlx.compile(_module("gelu_tanh", "f32", 2)).run(x, x)
    want_silu = -95.0 * np.exp(-95.0)  # 5.2e-40 · 95: subnormal f32, gradual
    np.testing.assert_allclose(silu[0], want_silu, rtol=1e-3)
    np.testing.assert_allclose(gelu[1], -1.2040921619861055e-37, rtol=1e-5)
