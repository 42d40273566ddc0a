"""fp8 (and fp6 / fp4) end to end: every such element type compiles; decoding is exact
for every code and encoding rounds exactly as ml_dtypes' `astype` (ties, NaN, inf,
saturation or overflow, -0, subnormals), from f32, f64 (no double rounding), f16, bf16
and integers; op families compile and agree with the reference interpreter."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import rlx
from rlx.interpreter import parse_module, run
from rlx.lowering.small_floats import NUMPY_NAMES, encode_model, spec

TYPES = {
    "f8E4M3FN": "float8_e4m3fn", "f8E5M2": "float8_e5m2", "f8E4M3FNUZ": "float8_e4m3fnuz",
    "f8E5M2FNUZ": "float8_e5m2fnuz", "f8E4M3": "float8_e4m3", "f8E3M4": "float8_e3m4",
    "f8E4M3B11FNUZ": "float8_e4m3b11fnuz", "f8E8M0FNU": "float8_e8m0fnu",
    "f6E2M3FN": "float6_e2m3fn", "f6E3M2FN": "float6_e3m2fn", "f4E2M1FN": "float4_e2m1fn",
}  # fmt: skip
N = 4096


def _dt(name: str) -> np.dtype:
    return np.dtype(getattr(ml_dtypes, name))


def test_every_small_float_type_is_covered() -> None:
    assert sorted(NUMPY_NAMES.values()) == sorted(TYPES.values())


def _probe_values(name: str, rng: np.random.Generator) -> np.ndarray:
    """Grid values, midpoints (ties), their f32 neighbours, specials and random f32s."""
    s = spec(name)
    g, m = s.grid.astype(np.float32), s.mids
    up, down = np.float32(np.inf), np.float32(0)
    parts = [g, m, np.nextafter(m, up), np.nextafter(m, down), np.nextafter(g, up)]
    special = [0, np.inf, np.nan, 1e30, 3.4e38, 1e-30, 1e-45, 2.0**-127, 2.0**-140, 65504]
    parts.append(np.array(special, np.float32))
    x = np.concatenate([p.astype(np.float32) for p in parts])
    n = N // 2 - len(x)
    scale = np.float32(10) ** rng.integers(-6, 6, n).astype(np.float32)
    x = np.concatenate([x, rng.standard_normal(n).astype(np.float32) * scale])
    return np.concatenate([x, -x])


@pytest.mark.parametrize("name", list(TYPES.values()))
def test_encode_model_matches_ml_dtypes(name: str) -> None:
    x = _probe_values(name, np.random.default_rng(1))
    x = np.concatenate([x, np.random.default_rng(2).integers(0, 2**32, 4096, dtype=np.uint64)
                        .astype(np.uint32).view(np.float32)])  # fmt: skip
    np.testing.assert_array_equal(encode_model(spec(name), x), x.astype(_dt(name)).view(np.uint8))


def _casts_module(src_types: list[str], dst_types: list[str], shape: int) -> str:
    args = ", ".join(f"%a{i}: tensor<{shape}x{t}>" for i, t in enumerate(src_types))
    res = ", ".join(f"tensor<{shape}x{t}>" for t in dst_types)
    lines = [f"func.func @main({args}) -> ({res}) {{"]
    for i, (s, d) in enumerate(zip(src_types, dst_types, strict=True)):
        lines.append(f"  %r{i} = rlx.cast %a{i} : (tensor<{shape}x{s}>) -> tensor<{shape}x{d}>")
    rets = ", ".join(f"%r{i}" for i in range(len(dst_types)))
    lines += [f"  func.return {rets} : {res}", "}"]
    return "\n".join(lines)


def test_decode_every_code_exactly() -> None:
    names = list(TYPES)
    g = rlx.compile(_casts_module(names, ["f32"] * len(names), 256))
    ins = []
    for n in names:
        bits = spec(TYPES[n]).bits
        ins.append((np.arange(256) % (1 << bits)).astype(np.uint8).view(_dt(TYPES[n])))
    for n, x, y in zip(names, ins, g.run(*ins), strict=True):
        want = x.astype(np.float32)
        np.testing.assert_array_equal(y, want, err_msg=n)  # NaN == NaN here
        assert np.array_equal(np.signbit(y), np.signbit(want)), n


@pytest.fixture(scope="module")
def encoders() -> rlx.CompiledGraph:
    names = list(TYPES)
    srcs = ["f32"] * len(names) + ["f64", "f64", "f16", "bf16", "i32", "i32"]
    dsts = [*names, "f8E4M3FN", "f8E5M2", "f8E4M3FN", "f8E5M2", "f8E4M3FN", "f4E2M1FN"]
    return rlx.compile(_casts_module(srcs, dsts, N))


def test_encode_from_f32_matches_ml_dtypes(encoders: rlx.CompiledGraph) -> None:
    rng = np.random.default_rng(3)
    names = list(TYPES)
    xs = [_probe_values(TYPES[n], rng) for n in names]
    other = [np.zeros(N), np.zeros(N), np.zeros(N, np.float16),
             np.zeros(N, ml_dtypes.bfloat16), np.zeros(N, np.int32), np.zeros(N, np.int32)]  # fmt: skip
    outs = encoders.run(*xs, *other)[: len(names)]
    for n, x, y in zip(names, xs, outs, strict=True):
        np.testing.assert_array_equal(y.view(np.uint8), x.astype(_dt(TYPES[n])).view(np.uint8), n)


def test_encode_from_f64_f16_bf16_int_rounds_once(encoders: rlx.CompiledGraph) -> None:
    rng = np.random.default_rng(4)
    f32 = [np.zeros(N, np.float32)] * len(TYPES)
    e4, e5 = spec("float8_e4m3fn"), spec("float8_e5m2")

    def f64_probes(s: object) -> np.ndarray:
        m = s.mids[np.isfinite(s.mids)].astype(np.float64)  # type: ignore[attr-defined]
        # just off a tie by less than an f32 ulp: rounding to f32 first would make a tie
        x = np.concatenate([m * (1 + 2.0**-40), m * (1 - 2.0**-40), m, [np.inf, np.nan, 1e300]])
        x = np.concatenate([x, rng.standard_normal(N // 2 - len(x)) * 50])
        return np.concatenate([x, -x])

    a64, b64 = f64_probes(e4), f64_probes(e5)
    h = (rng.standard_normal(N) * 100).astype(np.float16)
    bf = (rng.standard_normal(N) * 1000).astype(ml_dtypes.bfloat16)
    ints = rng.integers(-70000, 70000, N).astype(np.int32)
    small = rng.integers(-8, 9, N).astype(np.int32)
    outs = encoders.run(*f32, a64, b64, h, bf, ints, small)[len(TYPES) :]
    with np.errstate(over="ignore"):
        wants = [a64.astype(ml_dtypes.float8_e4m3fn), b64.astype(ml_dtypes.float8_e5m2),
                 h.astype(ml_dtypes.float8_e4m3fn), bf.astype(ml_dtypes.float8_e5m2),
                 ints.astype(ml_dtypes.float8_e4m3fn), small.astype(ml_dtypes.float4_e2m1fn)]  # fmt: skip
    for i, (y, w) in enumerate(zip(outs, wants, strict=True)):
        np.testing.assert_array_equal(y.view(np.uint8), w.view(np.uint8), f"case {i}")


FAMILIES = """
func.func @main(%x: tensor<4x8xT>, %y: tensor<4x8xT>, %w: tensor<8x8xT>, %g: tensor<8xT>, %i: tensor<3xi32>) -> (tensor<4x8xT>, tensor<4x8xT>, tensor<4x8xT>, tensor<4x8xi1>, tensor<4x8xT>, tensor<4xT>, tensor<4x8xT>, tensor<4x8xT>, tensor<4x8xT>, tensor<8x4xT>, tensor<3x8xT>, tensor<8x8xT>, tensor<4x8xT>, tensor<4x8xT>) {
  %0 = rlx.gelu_tanh %x : (tensor<4x8xT>) -> tensor<4x8xT>
  %1 = rlx.mul %x, %y : (tensor<4x8xT>, tensor<4x8xT>) -> tensor<4x8xT>
  %2 = rlx.max %x, %g : (tensor<4x8xT>, tensor<8xT>) -> tensor<4x8xT>
  %3 = rlx.compare %x, %y {predicate = "lt"} : (tensor<4x8xT>, tensor<4x8xT>) -> tensor<4x8xi1>
  %4 = rlx.where %3, %x, %y : (tensor<4x8xi1>, tensor<4x8xT>, tensor<4x8xT>) -> tensor<4x8xT>
  %5 = rlx.reduce %x {kind = "sum", axes = array<i64: 1>} : (tensor<4x8xT>) -> tensor<4xT>
  %6 = rlx.softmax %x {axis = -1 : i64} : (tensor<4x8xT>) -> tensor<4x8xT>
  %7 = rlx.layer_norm %x, %g, %g {epsilon = 1.0e-05 : f64} : (tensor<4x8xT>, tensor<8xT>, tensor<8xT>) -> tensor<4x8xT>
  %8 = rlx.matmul %x, %w : (tensor<4x8xT>, tensor<8x8xT>) -> tensor<4x8xT>
  %9 = rlx.transpose %x {permutation = array<i64: 1, 0>} : (tensor<4x8xT>) -> tensor<8x4xT>
  %10 = rlx.gather %x, %i : (tensor<4x8xT>, tensor<3xi32>) -> tensor<3x8xT>
  %11 = rlx.concat %x, %y {axis = 0 : i64} : (tensor<4x8xT>, tensor<4x8xT>) -> tensor<8x8xT>
  %c = rlx.constant dense<1.5> : tensor<4x8xT>
  %12 = rlx.add %x, %c : (tensor<4x8xT>, tensor<4x8xT>) -> tensor<4x8xT>
  %13 = rlx.rms_norm %x, %g {epsilon = 1.0e-05 : f64} : (tensor<4x8xT>, tensor<8xT>) -> tensor<4x8xT>
  func.return %0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13 : tensor<4x8xT>, tensor<4x8xT>, tensor<4x8xT>, tensor<4x8xi1>, tensor<4x8xT>, tensor<4xT>, tensor<4x8xT>, tensor<4x8xT>, tensor<4x8xT>, tensor<8x4xT>, tensor<3x8xT>, tensor<8x8xT>, tensor<4x8xT>, tensor<4x8xT>
}
"""


@pytest.mark.parametrize("t", ["f8E4M3FN", "f8E5M2FNUZ", "f8E8M0FNU", "f6E3M2FN", "f4E2M1FN"])
def test_op_families_agree_with_reference(t: str) -> None:
    src = FAMILIES.replace("T>", f"{t}>")
    dt = _dt(TYPES[t])
    rng = np.random.default_rng(5)
    shapes = [(4, 8), (4, 8), (8, 8), (8,)]
    ins: list[np.ndarray] = [(rng.standard_normal(s) * 0.7).astype(dt) for s in shapes]
    ins.append(np.array([0, 3, -1], np.int32))
    got = rlx.compile(src).run(*ins)
    want = run(parse_module(src), ins)
    exact = 0
    total = 0
    for k, (a, w) in enumerate(zip(got, want, strict=True)):
        assert a.dtype == w.dtype and a.shape == w.shape, k
        a64, w64 = a.astype(np.float64), w.astype(np.float64)
        # at most one step of the format apart (f32 vs f64 accumulation, exp polynomial)
        np.testing.assert_allclose(a64, w64, rtol=0.26, atol=0.26, err_msg=f"result {k}")
        exact += int(np.sum((a64 == w64) | (np.isnan(a64) & np.isnan(w64))))
        total += a.size
    assert exact >= 0.9 * total


CONSTS_AND_CASTS = """
func.func @main(%x: tensor<4xf8E4M3FN>) -> (tensor<4xf8E4M3FN>, tensor<4xi32>, tensor<4xf8E5M2>, tensor<4xf16>) {
  %c = rlx.constant dense<[1.5, -2.0, 448.0, 0.25]> : tensor<4xf8E4M3FN>
  %0 = rlx.mul %x, %c : (tensor<4xf8E4M3FN>, tensor<4xf8E4M3FN>) -> tensor<4xf8E4M3FN>
  %1 = rlx.cast %x : (tensor<4xf8E4M3FN>) -> tensor<4xi32>
  %2 = rlx.cast %x : (tensor<4xf8E4M3FN>) -> tensor<4xf8E5M2>
  %3 = rlx.cast %x : (tensor<4xf8E4M3FN>) -> tensor<4xf16>
  func.return %0, %1, %2, %3 : tensor<4xf8E4M3FN>, tensor<4xi32>, tensor<4xf8E5M2>, tensor<4xf16>
}
"""


def test_dense_constants_and_casts_out_of_fp8() -> None:
    """A non-splat fp8 constant is a global of byte codes; fp8 -> int / fp8 / f16 casts."""
    x = np.array([3.5, -7, 0.1, 448], ml_dtypes.float8_e4m3fn)
    got = rlx.compile(CONSTS_AND_CASTS).run(x)
    want = run(parse_module(CONSTS_AND_CASTS), [x])
    for a, w in zip(got, want, strict=True):
        assert a.dtype == w.dtype
        np.testing.assert_array_equal(a.view(np.uint8), w.view(np.uint8))
    np.testing.assert_array_equal(got[1], [3, -7, 0, 448])


def test_reference_max_of_a_float_without_infinities_is_not_nan() -> None:
    """reduce max/min of f8E4M3FN compare in f32: the -inf identity does not exist in e4m3
    (NumPy would round it to NaN and poison every row); found by the graph fuzzer."""
    from rlx.interpreter import multi_op_module, parse_module, run

    x = np.array([[0.5, 1.5, -2.0], [3.0, -1.0, 0.25]], dtype=ml_dtypes.float8_e4m3fn)
    text = multi_op_module(
        [x],
        [
            ("rlx.reduce", [0], np.zeros((2,), ml_dtypes.float8_e4m3fn),
             '{kind = "max", axes = array<i64: 1>}'),
            ("rlx.reduce", [0], np.zeros((2,), ml_dtypes.float8_e4m3fn),
             '{kind = "min", axes = array<i64: 1>}'),
        ],
    )  # fmt: skip
    hi, lo = run(parse_module(text), [x])
    np.testing.assert_array_equal(hi.astype(np.float32), [1.5, 3.0])
    np.testing.assert_array_equal(lo.astype(np.float32), [-2.0, -1.0])
