"""Reference interpreter: (fake) quantization, scaled low-precision ops, GGML
dequant-matmul and the RNG ops."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from reference_helpers import run1

from rlx.interpreter import InterpreterError

RNG = np.random.default_rng(5)


def round_half_even(v: float) -> int:
    """Independent half-to-even rounding via Python's round()."""
    return int(round(v))


# ---------------------------------------------------------------- affine quantization


def test_quantize_per_tensor() -> None:
    x = np.array([-1.0, -0.25, 0.0, 0.1, 0.25, 0.75, 1.25, 100.0, -100.0, np.nan], np.float32)
    scale, zp = 0.5, 3
    got = run1("rlx.quantize", [x], (x.shape, np.int8),
               f"{{scale = {scale} : f64, zero_point = {zp} : i64}}")  # fmt: skip
    want = [
        zp if np.isnan(v) else max(-128, min(127, round_half_even(float(v) / scale) + zp))
        for v in x
    ]
    assert got.dtype == np.int8
    np.testing.assert_array_equal(got, want)


def test_quantize_dequantize_per_channel() -> None:
    x = RNG.standard_normal((2, 3, 4)).astype(np.float32) * 20
    scales = (0.1, 0.2, 0.4)
    zps = (-1, 0, 5)
    attrs = (
        "{scale = array<f64: 0.1, 0.2, 0.4>, zero_point = array<i64: -1, 0, 5>, axis = -2 : i64}"
    )
    q = run1("rlx.quantize", [x], (x.shape, np.int8), attrs)
    for i, j, k in np.ndindex(*x.shape):
        v = round_half_even(float(x[i, j, k]) / scales[j]) + zps[j]
        assert q[i, j, k] == max(-128, min(127, v))
    d = run1("rlx.dequantize", [q], (x.shape, np.float32), attrs)
    for i, j, k in np.ndindex(*x.shape):
        assert d[i, j, k] == np.float32((int(q[i, j, k]) - zps[j]) * scales[j])
    with pytest.raises(InterpreterError, match="axis"):
        run1("rlx.quantize", [x], (x.shape, np.int8), "{scale = array<f64: 0.1, 0.2, 0.4>}")


@pytest.mark.parametrize("dt", [np.float32, np.float16, np.dtype(ml_dtypes.bfloat16)], ids=str)
def test_dequantize_to_float_types(dt) -> None:
    q = np.array([-128, -1, 0, 1, 127], np.int8)
    got = run1("rlx.dequantize", [q], (q.shape, dt), "{scale = 0.25 : f64, zero_point = 1 : i64}")
    assert got.dtype == dt
    np.testing.assert_array_equal(got.astype(np.float64), [-32.25, -0.5, -0.25, 0.0, 31.5])


@pytest.mark.parametrize("bits", [8, 4, 2])
@pytest.mark.parametrize("dt", [np.float32, np.float64, np.float16], ids=str)
def test_fake_quantize(bits: int, dt) -> None:
    x = (RNG.standard_normal(50) * 3).astype(dt)
    s, zp = 0.3, 1
    attrs = f"{{scale = {s} : f64, zero_point = {zp} : i64" + (
        "}" if bits == 8 else f", bits = {bits} : i64}}"
    )
    got = run1("rlx.fake_quantize", [x], None, attrs)
    lo, hi = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
    want = [(max(lo, min(hi, round_half_even(float(v) / s) + zp)) - zp) * s for v in x]
    assert got.dtype == dt
    np.testing.assert_array_equal(got, np.array(want).astype(dt))


def test_fake_quantize_per_channel() -> None:
    x = RNG.standard_normal((3, 2)).astype(np.float32)
    attrs = "{scale = array<f64: 0.5, 0.125>, zero_point = array<i64: 0, 2>, axis = 1 : i64}"
    got = run1("rlx.fake_quantize", [x], None, attrs)
    for i, j in np.ndindex(3, 2):
        s, z = (0.5, 0.125)[j], (0, 2)[j]
        assert got[i, j] == np.float32(
            (max(-128, min(127, round_half_even(x[i, j] / s) + z)) - z) * s
        )


# ------------------------------------------------------------- scaled low precision


def test_scaled_quant_scale_quantize_and_matmul() -> None:
    a = RNG.standard_normal((3, 64)).astype(np.float32)
    b = RNG.standard_normal((4, 64)).astype(np.float32)
    fmt = 'format = "f8e4m3", scale_layout = "per_tensor"'
    sa = run1("rlx.scaled_quant_scale", [a], ((1,), np.float32), f"{{{fmt}}}")
    assert sa[0] == np.float32(np.float32(np.abs(a).max()) / np.float32(448.0))
    codes = run1("rlx.scaled_quantize", [a, sa], (a.shape, np.uint8), f"{{{fmt}}}")
    # Independent codec: ml_dtypes' float8_e4m3fn (OCP e4m3) bit patterns.
    want = (a / sa[0]).astype(ml_dtypes.float8_e4m3fn).view(np.uint8)
    np.testing.assert_array_equal(codes, want)
    sb = run1("rlx.scaled_quant_scale", [b], ((1,), np.float32), f"{{{fmt}}}")
    cb = run1("rlx.scaled_quantize", [b, sb], (b.shape, np.uint8), f"{{{fmt}}}")
    bias = RNG.standard_normal(4).astype(np.float32)
    mm = 'lhs_format = "f8e4m3", rhs_format = "f8e4m3", scale_layout = "per_tensor"'
    got = run1("rlx.scaled_matmul", [codes, cb, sa, sb, bias], ((3, 4), np.float32), f"{{{mm}}}")
    da = codes.view(ml_dtypes.float8_e4m3fn).astype(np.float64) * float(sa[0])
    db = cb.view(ml_dtypes.float8_e4m3fn).astype(np.float64) * float(sb[0])
    np.testing.assert_allclose(got, da @ db.T + bias, rtol=1e-5, atol=1e-5)
    # And the quantized product approximates the float one.
    np.testing.assert_allclose(got, a @ b.T + bias, atol=1.0)


def test_scaled_quant_scale_mx_layout() -> None:
    x = RNG.standard_normal((2, 40)).astype(np.float32) * 10
    got = run1("rlx.scaled_quant_scale", [x], ((2, 2), np.uint8),
               '{format = "f8e4m3", scale_layout = "mx"}')  # fmt: skip
    for r in range(2):
        for blk, sl in enumerate((slice(0, 32), slice(32, 40))):
            amax = float(np.abs(x[r, sl]).max())
            e = int(np.ceil(np.log2(amax / 448.0)))
            assert got[r, blk] == e + 127


# --------------------------------------------------------------------- GGML weights


@pytest.mark.parametrize("scheme", ["q8_0", "tq2_0"])
def test_dequant_matmul(scheme: str) -> None:
    import gguf.quants as gguf_quants
    from gguf import GGMLQuantizationType

    from rlx.formats import ggml

    n, k = 3, 256
    w = RNG.standard_normal((n, k)).astype(np.float32)
    if scheme == "tq2_0":
        w = np.sign(w) * 0.5
    packed = ggml.quantize(w, scheme)
    qtype = GGMLQuantizationType.Q8_0 if scheme == "q8_0" else GGMLQuantizationType.TQ2_0
    wd = gguf_quants.dequantize(packed.reshape(n, -1), qtype).astype(np.float64)
    x = RNG.standard_normal((2, 5, k)).astype(np.float32)
    attrs = f'{{scheme = "{scheme}", n = {n} : i64, k = {k} : i64}}'
    got = run1("rlx.dequant_matmul", [x, packed], ((2, 5, n), np.float32), attrs)
    np.testing.assert_allclose(got, x.astype(np.float64) @ wd.T, rtol=1e-5, atol=1e-4)


# ----------------------------------------------------------------------------- RNG


def test_rng_zero_backend() -> None:
    for name in ("rlx.rng_uniform", "rlx.rng_normal"):
        got = run1(name, [], ((3, 2), np.float32), rng_backend="zero")
        np.testing.assert_array_equal(got, np.zeros((3, 2)))


def test_rng_philox() -> None:
    from rlx.formats import philox

    u = run1("rlx.rng_uniform", [], ((1000,), np.float32),
             "{low = -2.0 : f64, high = 3.0 : f64, seed_offset = 4 : i64}", rng_seed=9)  # fmt: skip
    assert u.dtype == np.float32 and np.all((u >= -2) & (u < 3))
    assert abs(float(u.mean()) - 0.5) < 0.3
    np.testing.assert_array_equal(u, philox.uniform(9, 4, (1000,), -2.0, 3.0, np.float32))
    u2 = run1("rlx.rng_uniform", [], ((1000,), np.float32),
              "{low = -2.0 : f64, high = 3.0 : f64, seed_offset = 5 : i64}", rng_seed=9)  # fmt: skip
    assert not np.array_equal(u, u2)
    n = run1("rlx.rng_normal", [], ((50, 40), np.float64), "{mean = 1.0 : f64, std = 2.0 : f64}")
    assert n.dtype == np.float64
    assert abs(float(n.mean()) - 1.0) < 0.3 and abs(float(n.std()) - 2.0) < 0.3
    np.testing.assert_array_equal(n, philox.normal(42, 0, (50, 40), 1.0, 2.0, np.float64))
    d = run1("rlx.rng_uniform", [], ((4,), np.float32))
    np.testing.assert_array_equal(d, philox.uniform(42, 0, (4,), 0.0, 1.0, np.float32))
