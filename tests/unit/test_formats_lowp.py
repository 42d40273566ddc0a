"""Low-precision codecs, scale layouts and the scaled-matmul reference."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from rlx.formats import lowp

ML = {
    "f8e4m3": ml_dtypes.float8_e4m3fn,
    "f8e5m2": ml_dtypes.float8_e5m2,
    "f8e4m3fnuz": ml_dtypes.float8_e4m3fnuz,
    "f8e5m2fnuz": ml_dtypes.float8_e5m2fnuz,
    "f6e2m3": ml_dtypes.float6_e2m3fn,
    "f6e3m2": ml_dtypes.float6_e3m2fn,
    "f4e2m1": ml_dtypes.float4_e2m1fn,
}
MAXES = {
    "f8e4m3": 448.0,
    "f8e5m2": 57344.0,
    "f8e4m3fnuz": 240.0,
    "f8e5m2fnuz": 57344.0,
    "f6e2m3": 7.5,
    "f6e3m2": 28.0,
    "f4e2m1": 6.0,
}
CUSTOM = [f"f{1 + e + m}e{e}m{m}" for e in range(1, 8) for m in range(0, 8 - e)]


def _finite_codes(fmt: lowp.LowpFormat) -> np.ndarray:
    return np.flatnonzero(np.isfinite(lowp.decode_table(fmt))).astype(np.uint8)


def _brute_encode(fmt: lowp.LowpFormat, x: np.ndarray) -> np.ndarray:
    """Exhaustive search as the spec states it: nearest finite code, tie -> bit 0 == 0."""
    tab = lowp.decode_table(fmt)
    codes = np.flatnonzero(np.isfinite(tab))
    mf = lowp.max_finite(fmt)
    xs = np.clip(x.astype(np.float64), -mf, mf)
    err = np.abs(xs[:, None] - tab[codes][None, :])
    best = err.min(axis=1, keepdims=True)
    cand = err == best
    even = cand & (codes[None, :] % 2 == 0)
    pick = codes[np.where(even.any(axis=1), np.argmax(even, axis=1), np.argmax(cand, axis=1))]
    # +0 and -0 are both "even"; the documented rule takes the sign of x when -0 exists.
    neg_zero = 1 << (fmt.bits - 1)
    if np.isfinite(tab[neg_zero]):
        pick = np.where((pick == 0) & np.signbit(x), neg_zero, pick)
    return pick.astype(np.uint8)


# ------------------------------------------------------------------------ parsing


def test_named_formats() -> None:
    for name, mx in MAXES.items():
        f = lowp.parse_format(name)
        assert f is lowp.NAMED_FORMATS[name]
        assert str(f) == name and lowp.parse_format(str(f)) == f
        assert lowp.max_finite(f) == mx
    assert lowp.parse_format("f8e4m3").kind == "ocp_e4m3"
    assert lowp.custom(4, 3).bias == 7 and lowp.max_finite(lowp.custom(4, 3)) == 480.0
    assert lowp.parse_format("f8e4m3") != lowp.custom(4, 3)
    assert lowp.parse_format("F8E4M3") == lowp.parse_format("f8e4m3")


def test_custom_formats_parse_and_round_trip_name() -> None:
    assert len(CUSTOM) == 28
    for name in CUSTOM:
        f = lowp.parse_format(name)
        assert str(f) == name and lowp.parse_format(str(f)) == f
        if name not in lowp.NAMED_FORMATS:
            assert f.kind == "finite" and f.bias == 2 ** (f.exp_bits - 1) - 1


@pytest.mark.parametrize(
    "bad", ["", "f8e4m4", "f9e4m4", "f8e0m7", "f1e0m0", "bf16", "fp8", "f8e4m3x", "f8e4", "e4m3"]
)
def test_bad_format_names(bad: str) -> None:
    with pytest.raises(ValueError, match=r"f8e4m3.*fNeXmY"):
        lowp.parse_format(bad)


# ------------------------------------------------------------------ codec vs ml_dtypes


@pytest.mark.parametrize("name", list(ML))
def test_decode_table_matches_ml_dtypes(name: str) -> None:
    f = lowp.parse_format(name)
    codes = np.arange(1 << f.bits, dtype=np.uint8)
    ref = codes.view(ML[name]).astype(np.float64)
    np.testing.assert_array_equal(lowp.decode_table(f), ref)  # NaN == NaN here
    np.testing.assert_array_equal(np.signbit(lowp.decode_table(f)), np.signbit(ref))
    assert np.isnan(ref).sum() == {"ocp_e4m3": 2, "ieee": 6, "fnuz": 1, "finite": 0}[f.kind]
    dec = lowp.decode(f, codes)
    assert dec.dtype == np.float32
    np.testing.assert_array_equal(dec, ref.astype(np.float32))


@pytest.mark.parametrize("name", list(ML))
def test_encode_matches_ml_dtypes(name: str) -> None:
    f = lowp.parse_format(name)
    mx = lowp.max_finite(f)
    tab = lowp.decode_table(f)
    grid = np.unique(np.abs(tab[np.isfinite(tab)]))
    mids = (grid[:-1] + grid[1:]) / 2  # exact ties
    rng = np.random.default_rng(0)
    mags = np.exp(rng.uniform(np.log(grid[1] / 4), np.log(mx), 20000))
    x = np.concatenate([grid, mids, mags, rng.uniform(0, mx, 5000), [0.0]])
    x = np.concatenate([x, -x]).astype(np.float32)
    assert np.all(np.abs(x) <= mx)
    ref = x.astype(ML[name]).view(np.uint8)
    np.testing.assert_array_equal(lowp.encode(f, x), ref)


@pytest.mark.parametrize("name", list(ML) + ["f4e3m0", "f5e2m2", "f8e7m0", "f2e1m0"])
def test_encode_equals_exhaustive_search(name: str) -> None:
    f = lowp.parse_format(name)
    mx = lowp.max_finite(f)
    tab = lowp.decode_table(f)
    grid = np.unique(np.abs(tab[np.isfinite(tab)]))
    rng = np.random.default_rng(1)
    x = np.concatenate(
        [
            (grid[:-1] + grid[1:]) / 2,
            rng.uniform(-mx, mx, 3000),
            rng.standard_normal(3000),
            [mx * 1.01, mx * 1e3, np.inf, 1e-30],
        ]
    )
    x = np.concatenate([x, -x])
    np.testing.assert_array_equal(lowp.encode(f, x), _brute_encode(f, x))


@pytest.mark.parametrize("name", CUSTOM + ["f8e4m3fnuz", "f8e5m2fnuz"])
def test_every_code_round_trips(name: str) -> None:
    f = lowp.parse_format(name)
    codes = _finite_codes(f)
    vals = lowp.decode_table(f)[codes]
    np.testing.assert_array_equal(lowp.encode(f, vals), codes)
    np.testing.assert_array_equal(lowp.encode(f, lowp.decode(f, codes)), codes)


def test_f4e3m0_table_and_rounding() -> None:
    f = lowp.parse_format("f4e3m0")
    pos = [0.0, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0]
    np.testing.assert_array_equal(lowp.decode_table(f), pos + [-v for v in pos])
    assert lowp.max_finite(f) == 16.0
    dq = lowp.decode(
        f, lowp.encode(f, np.array([1.4, 1.5, 0.375, 0.125, 0.1251, 3.0, 3.01, 12.0, 100.0]))
    )
    np.testing.assert_array_equal(dq, [1.0, 2.0, 0.5, 0.0, 0.25, 2.0, 4.0, 8.0, 16.0])


@pytest.mark.parametrize("name", list(ML) + ["f4e3m0"])
def test_specials_and_saturation(name: str) -> None:
    f = lowp.parse_format(name)
    mx = lowp.max_finite(f)
    x = np.array([np.inf, -np.inf, 1e30, -1e30, np.nan, -np.nan, 0.0, -0.0])
    dq = lowp.decode(f, lowp.encode(f, x)).astype(np.float64)
    np.testing.assert_array_equal(dq[:4], [mx, -mx, mx, -mx])
    assert lowp.encode(f, x)[4] == 0 and lowp.encode(f, x)[5] == 0
    assert np.signbit(dq[7]) == (f.kind != "fnuz")
    assert not np.signbit(dq[6])


def test_decode_rejects_bad_codes() -> None:
    with pytest.raises(ValueError):
        lowp.decode("f4e2m1", np.array([16], np.uint8))
    with pytest.raises(TypeError):
        lowp.decode("f4e2m1", np.array([1.0]))


# ------------------------------------------------------------------------ layouts


def test_parse_layout() -> None:
    assert lowp.parse_layout("per_tensor") == lowp.ScaleLayout("per_tensor", 0)
    for s in ("mx", "mxfp8", "block", "mx/32"):
        assert lowp.parse_layout(s) == lowp.ScaleLayout("mx", 32)
    assert lowp.parse_layout("mx/64").block == 64
    assert lowp.parse_layout("nvfp4") == lowp.ScaleLayout("nvfp4", 16)
    assert lowp.parse_layout("nvfp4/128").block == 128
    for s in ("per_tensor", "mx", "mx/7", "nvfp4", "nvfp4/32"):
        assert str(lowp.parse_layout(s)) == s
        assert lowp.parse_layout(str(lowp.parse_layout(s))) == lowp.parse_layout(s)


@pytest.mark.parametrize("bad", ["", "per-tensor", "mx/0", "mx/", "nvfp4/x", "block/32", "mx32"])
def test_bad_layouts(bad: str) -> None:
    with pytest.raises(ValueError, match=r"per_tensor.*mx/<block>.*nvfp4/<group>"):
        lowp.parse_layout(bad)


def test_per_tensor_scale() -> None:
    x = np.array([[1.0, -896.0], [3.0, 4.0]], np.float32)
    s = lowp.quant_scale(x, "f8e4m3", "per_tensor")
    assert s.dtype == np.float32 and s.shape == (1,) and s[0] == 2.0
    z = lowp.quant_scale(np.zeros((2, 3), np.float32), "f8e4m3", "per_tensor")
    assert z[0] == 1.0
    np.testing.assert_array_equal(lowp.decode_scale(s, "per_tensor", 2, 2), np.full((2, 2), 2.0))


def test_mx_scale() -> None:
    rng = np.random.default_rng(0)
    k = 40  # two blocks, the last one partial
    x = rng.standard_normal((5, k)).astype(np.float32) * 10
    x[1, :32] = 0.0  # all-zero block
    x[2, :32] = 0.0
    x[2, 0] = 448.0 * 4  # amax/max exactly a power of two
    x[3, :32] = 0.0
    x[3, 0] = np.nextafter(np.float32(448.0 * 4), np.float32(np.inf))  # just above
    s = lowp.quant_scale(x, "f8e4m3", "mx")
    assert s.dtype == np.uint8 and s.shape == (5, 2)
    assert s[1, 0] == 127 and s[2, 0] == 129 and s[3, 0] == 130
    full = lowp.decode_scale(s, "mx", 5, k)
    assert full.shape == (5, k) and full.dtype == np.float32
    vals = np.ldexp(1.0, s.astype(np.int64) - 127)
    amax = np.zeros((5, 2))
    amax[:, 0] = np.abs(x[:, :32]).max(axis=1)
    amax[:, 1] = np.abs(x[:, 32:]).max(axis=1)
    nz = amax > 0
    assert np.all(amax <= vals * 448.0)  # never saturates
    assert np.all(amax[nz] > vals[nz] / 2 * 448.0)  # smallest such power of two
    # clamping of the exponent range
    ext = np.array([[1e-38] * 32, [np.inf] * 32, [3.4e38] * 32], np.float32)
    np.testing.assert_array_equal(lowp.quant_scale(ext, "f2e1m0", "mx").ravel(), [0, 254, 254])
    nan = np.zeros((1, 32), np.float32)
    nan[0, 1] = np.nan
    assert lowp.quant_scale(nan, "f8e4m3", "mx")[0, 0] == 255
    assert np.isnan(lowp.decode_scale(np.array([[255]], np.uint8), "mx", 1, 1)[0, 0])


def test_nvfp4_scale() -> None:
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, 40)).astype(np.float32)
    x[0, :16] = 0.0
    s = lowp.quant_scale(x, "f4e2m1", "nvfp4")
    assert s.dtype == np.uint8 and s.shape == (3, 3)
    e4m3 = lowp.parse_format("f8e4m3")
    assert s[0, 0] == lowp.encode(e4m3, np.float32(1.0))
    amax = np.abs(x[1, 16:32]).max()
    assert s[1, 1] == lowp.encode(e4m3, np.float32(amax) / np.float32(6.0))
    full = lowp.decode_scale(s, "nvfp4", 3, 40)
    np.testing.assert_array_equal(full[:, :16], np.repeat(lowp.decode(e4m3, s[:, :1]), 16, 1))


def test_quantize_codes_and_zero_scale() -> None:
    rng = np.random.default_rng(2)
    x = rng.standard_normal((4, 64)).astype(np.float32)
    for fmt, lay in [("f8e4m3", "per_tensor"), ("f8e5m2", "mx"), ("f4e2m1", "nvfp4")]:
        s = lowp.quant_scale(x, fmt, lay)
        codes = lowp.quantize(x, s, fmt, lay)
        assert codes.dtype == np.uint8 and codes.shape == x.shape
        want = lowp.encode(fmt, x / lowp.decode_scale(s, lay, 4, 64))
        np.testing.assert_array_equal(codes, want)
    tiny = np.full((1, 16), 1e-6, np.float32)  # amax/6 encodes to e4m3 zero -> s == 0
    s = lowp.quant_scale(tiny, "f4e2m1", "nvfp4")
    assert s[0, 0] == 0
    np.testing.assert_array_equal(lowp.quantize(tiny, s, "f4e2m1", "nvfp4"), 0)


# ------------------------------------------------------------------ scaled matmul


def _qmm(
    a: np.ndarray, b: np.ndarray, fa: str, fb: str, lay: str, bias: np.ndarray | None = None
) -> np.ndarray:
    sa, sb = lowp.quant_scale(a, fa, lay), lowp.quant_scale(b, fb, lay)
    qa, qb = lowp.quantize(a, sa, fa, lay), lowp.quantize(b, sb, fb, lay)
    out = lowp.scaled_matmul(qa, qb, sa, sb, fa, fb, lay, bias=bias)
    # independent f64 reference from dequantised operands
    m, k = a.shape
    n = b.shape[0]
    da = lowp.decode(fa, qa).astype(np.float64) * lowp.decode_scale(sa, lay, m, k)
    db = lowp.decode(fb, qb).astype(np.float64) * lowp.decode_scale(sb, lay, n, k)
    ref = da @ db.T + (0.0 if bias is None else np.asarray(bias, np.float64))
    assert out.dtype == np.float32 and out.shape == (m, n)
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5 * np.abs(ref).max())
    return out


def _cos(x: np.ndarray, y: np.ndarray) -> float:
    x, y = x.ravel().astype(np.float64), y.ravel().astype(np.float64)
    return float(x @ y / np.linalg.norm(x) / np.linalg.norm(y))


@pytest.mark.parametrize(
    "fa,fb,lay",
    [
        ("f8e4m3", "f8e4m3", "per_tensor"),
        ("f8e4m3", "f8e5m2", "mx"),
        ("f4e2m1", "f4e2m1", "nvfp4"),
        ("f6e3m2", "f4e3m0", "mx/48"),
        ("f8e4m3fnuz", "f8e5m2fnuz", "nvfp4/64"),
    ],
)
def test_scaled_matmul_matches_dequantised_reference(fa: str, fb: str, lay: str) -> None:
    rng = np.random.default_rng(3)
    a = rng.standard_normal((7, 100)).astype(np.float32)
    b = rng.standard_normal((5, 100)).astype(np.float32)
    _qmm(a, b, fa, fb, lay, bias=rng.standard_normal(5).astype(np.float32))


def test_cosine_f8e4m3_per_tensor() -> None:
    rng = np.random.default_rng(4)
    a = rng.standard_normal((256, 256)).astype(np.float32)
    b = rng.standard_normal((256, 256)).astype(np.float32)
    assert _cos(_qmm(a, b, "f8e4m3", "f8e4m3", "per_tensor"), a @ b.T) >= 0.999


def test_cosine_f4e3m0_mx() -> None:
    rng = np.random.default_rng(5)
    # Non-negative data (activations after ReLU-like ops, magnitudes): >= 0.99.
    a = rng.uniform(0, 1, (256, 256)).astype(np.float32)
    b = rng.uniform(0, 1, (256, 256)).astype(np.float32)
    assert _cos(_qmm(a, b, "f4e3m0", "f4e3m0", "mx"), a @ b.T) >= 0.99
    # Zero-mean Gaussian: the power-of-two grid alone gives ~2% per-element error
    # (element cosine ~0.981), so the product's cosine is bounded near 0.96.
    a = rng.standard_normal((256, 256)).astype(np.float32)
    b = rng.standard_normal((256, 256)).astype(np.float32)
    assert _cos(_qmm(a, b, "f4e3m0", "f4e3m0", "mx"), a @ b.T) >= 0.95


def test_scaled_matmul_shape_errors() -> None:
    a = np.zeros((2, 32), np.uint8)
    s = np.full((2, 1), 127, np.uint8)
    with pytest.raises(ValueError, match="K mismatch"):
        lowp.scaled_matmul(a, np.zeros((2, 16), np.uint8), s, s, "f8e4m3", "f8e4m3", "mx")
    with pytest.raises(ValueError, match="shape"):
        lowp.scaled_matmul(a, a, s[:1], s, "f8e4m3", "f8e4m3", "mx")
