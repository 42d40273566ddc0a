"""Reference interpreter: elementwise unary/binary ops, compare, where, cast."""

from __future__ import annotations

import math
from collections.abc import Callable

import ml_dtypes
import numpy as np
import pytest
from reference_helpers import run1, run_many

from rlx.interpreter import (
    InterpreterError,
)

BF16 = np.dtype(ml_dtypes.bfloat16)
FLOATS = [np.dtype(np.float64), np.dtype(np.float32), np.dtype(np.float16), BF16]


def eps(dt: np.dtype) -> float:
    return float(ml_dtypes.finfo(dt).eps)


def assert_close(got: np.ndarray, want: np.ndarray, dt: np.dtype, ulps: float = 4) -> None:
    assert got.dtype == dt, (got.dtype, dt)
    tol = ulps * eps(dt)
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=tol, atol=tol)


def erf_series(x: np.ndarray) -> np.ndarray:
    """erf = 2/√π·exp(-x²)·Σ 2ⁿx^(2n+1)/(1·3·…·(2n+1)): positive terms, no cancellation."""
    x = np.asarray(x, dtype=np.float64)
    term = x.copy()
    total = x.copy()
    for n in range(1, 200):
        term = term * 2.0 * x * x / (2 * n + 1)
        total += term
    return 2.0 / math.sqrt(math.pi) * np.exp(-x * x) * total


UNARY: dict[str, tuple[Callable[[np.ndarray], np.ndarray], str]] = {
    "neg": (lambda x: -x, "any"),
    "abs": (np.abs, "any"),
    "exp": (np.exp, "any"),
    "log": (np.log, "pos"),
    "sqrt": (np.sqrt, "pos"),
    "rsqrt": (lambda x: 1.0 / np.sqrt(x), "pos"),
    "sin": (np.sin, "any"),
    "cos": (np.cos, "any"),
    "tanh": (np.tanh, "any"),
    "sigmoid": (lambda x: 1.0 / (1.0 + np.exp(-x)), "any"),
    "relu": (lambda x: np.where(x > 0, x, 0.0), "any"),
    "gelu": (lambda x: 0.5 * x * (1.0 + erf_series(x / math.sqrt(2.0))), "any"),
    "gelu_tanh": (
        lambda x: 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3))),
        "any",
    ),
    "silu": (lambda x: x / (1.0 + np.exp(-x)), "any"),
    "erf": (erf_series, "any"),
    "floor": (np.floor, "any"),
    "ceil": (np.ceil, "any"),
    "round": (np.round, "half"),
    # positive x: the gate x/6 + 1/2 has no cancellation (near x = -3 it does)
    "hard_swish": (lambda x: x * np.clip(x / 6.0 + 0.5, 0.0, 1.0), "pos"),
}


def _inputs(domain: str, dt: np.dtype, shape=(3, 5)) -> np.ndarray:
    rng = np.random.default_rng(abs(hash((domain, str(dt)))) % 2**32)
    if domain == "pos":
        x = rng.uniform(0.05, 4.0, shape)
    elif domain == "half":
        x = rng.integers(-6, 6, shape) + rng.choice([0.5, 0.25, 0.75], shape)
    else:
        x = rng.uniform(-3.0, 3.0, shape)
    return x.astype(dt)


@pytest.mark.parametrize("dt", FLOATS, ids=str)
def test_unary_float(dt: np.dtype) -> None:
    domains = ["any", "pos", "half"]
    xs = [_inputs(d, dt) for d in domains]
    calls = [(f"rlx.{k}", [domains.index(d)], xs[0], "") for k, (_, d) in UNARY.items()]
    for (kind, (fn, domain)), got in zip(UNARY.items(), run_many(xs, calls), strict=True):
        want = fn(xs[domains.index(domain)].astype(np.float64))
        # f16/bf16 compute in f32 and round once: within ~1 ulp of the exact value.
        try:
            assert_close(got, want, dt, ulps=1 if dt in (np.float16, BF16) else 8)
        except AssertionError as e:
            raise AssertionError(f"rlx.{kind}: {e}") from None


def test_round_is_half_to_even() -> None:
    x = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 2.4999], np.float32)
    np.testing.assert_array_equal(run1("rlx.round", [x]), [0, 2, 2, -0.0, -2, -2, 2])


def test_unary_special_values() -> None:
    x = np.array([np.nan, np.inf, -np.inf, -100.0, 100.0, 0.0], np.float32)
    sig = run1("rlx.sigmoid", [x])
    # sigmoid(-100) = e^-100 / (1 + e^-100): the f32 subnormal nearest 3.72e-44, not 0
    tail = np.float32(1.0 / (1.0 + np.exp(100.0)))
    assert tail > 0
    np.testing.assert_array_equal(sig[1:], np.array([1, 0, tail, 1, 0.5], np.float32))
    assert np.isnan(sig[0])
    assert np.isnan(run1("rlx.relu", [x])[0])
    np.testing.assert_array_equal(run1("rlx.silu", [x])[3:], [np.float32(-100 * tail), 100.0, 0.0])
    np.testing.assert_array_equal(
        run1("rlx.log", [np.array([0.0, -1.0], np.float32)])[:1], [-np.inf]
    )


@pytest.mark.parametrize("dt", [np.int8, np.int32, np.int64])
def test_unary_integer(dt) -> None:
    info = np.iinfo(dt)
    x = np.array([info.min, -7, -1, 0, 1, 9, info.max], dtype=dt)
    np.testing.assert_array_equal(run1("rlx.neg", [x]), [info.min, 7, 1, 0, -1, -9, -info.max])
    np.testing.assert_array_equal(run1("rlx.abs", [x]), [info.min, 7, 1, 0, 1, 9, info.max])
    np.testing.assert_array_equal(run1("rlx.relu", [x]), [0, 0, 0, 0, 1, 9, info.max])
    with pytest.raises(InterpreterError, match="rlx.exp"):
        run1("rlx.exp", [x])


def test_unary_empty_and_scalar() -> None:
    assert run1("rlx.exp", [np.zeros((0, 4), np.float32)]).shape == (0, 4)
    out = run1("rlx.exp", [np.array(1.0, np.float64)])
    assert out.shape == () and out == math.e


BINARY: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b,
    "max": lambda a, b: np.where(a > b, a, b),
    "min": lambda a, b: np.where(a < b, a, b),
    "pow": lambda a, b: np.exp(b * np.log(a)),
}


@pytest.mark.parametrize("dt", FLOATS, ids=str)
@pytest.mark.parametrize(("sa", "sb"), [((2, 3), (2, 3)), ((2, 1, 3), (4, 1)), ((), (3,))])
def test_binary_float_broadcasting(dt: np.dtype, sa, sb) -> None:
    rng = np.random.default_rng(3)
    a = rng.uniform(0.5, 3.0, sa).astype(dt)
    b = rng.uniform(0.5, 3.0, sb).astype(dt)
    if sb:  # some equal elements for max/min
        b = np.where(rng.random(sb) < 0.3, a.reshape(-1)[0], b).astype(dt)
    out_shape = np.broadcast_shapes(sa, sb)
    calls = [(f"rlx.{k}", [0, 1], (out_shape, dt), "") for k in BINARY]
    for kind, got in zip(BINARY, run_many([a, b], calls), strict=True):
        want = BINARY[kind](a.astype(np.float64), b.astype(np.float64))
        assert got.shape == out_shape
        try:
            assert_close(got, want, dt, ulps=1 if dt in (np.float16, BF16) else 4)
        except AssertionError as e:
            raise AssertionError(f"rlx.{kind}: {e}") from None


def test_max_min_propagate_nan() -> None:
    a = np.array([np.nan, 1.0, 2.0], np.float32)
    b = np.array([0.0, np.nan, 1.0], np.float32)
    for kind in ("max", "min"):
        got = run1(f"rlx.{kind}", [a, b])
        assert np.isnan(got[0]) and np.isnan(got[1]) and got[2] == (2 if kind == "max" else 1)


@pytest.mark.parametrize("dt", [np.int8, np.int32, np.int64])
def test_binary_integer(dt) -> None:
    a = np.array([[7, -7, 7, -7, 0, 100]], dtype=dt)
    b = np.array([[2], [-2]], dtype=dt)
    shape = (2, 6)
    A = a.astype(np.int64)
    B = b.astype(np.int64)

    def wrap(v):
        return v.astype(dt)

    np.testing.assert_array_equal(run1("rlx.add", [a, b], (shape, dt)), wrap(A + B))
    np.testing.assert_array_equal(run1("rlx.sub", [a, b], (shape, dt)), wrap(A - B))
    np.testing.assert_array_equal(run1("rlx.mul", [a, b], (shape, dt)), wrap(A * B))
    # Truncating division, computed independently with Python ints.
    trunc = np.array([[int(x / y) for x in A[0]] for y in B[:, 0]])
    np.testing.assert_array_equal(run1("rlx.div", [a, b], (shape, dt)), trunc)
    np.testing.assert_array_equal(run1("rlx.max", [a, b], (shape, dt)), np.maximum(A, B))
    np.testing.assert_array_equal(run1("rlx.min", [a, b], (shape, dt)), np.minimum(A, B))
    e = np.array([0, 1, 2, 3], dtype=dt)
    base = np.array([3, -2, 5, 2], dtype=dt)
    np.testing.assert_array_equal(run1("rlx.pow", [base, e]), [1, -2, 25, 8])


def test_integer_overflow_wraps_and_errors() -> None:
    a = np.array([127, -128], np.int8)
    np.testing.assert_array_equal(run1("rlx.add", [a, np.ones(2, np.int8)]), [-128, -127])
    with pytest.raises(InterpreterError, match="division by zero"):
        run1("rlx.div", [a, np.array([1, 0], np.int8)])
    with pytest.raises(InterpreterError, match="negative exponent"):
        run1("rlx.pow", [a, np.array([1, -1], np.int8)])
    with pytest.raises(InterpreterError, match="element types differ"):
        run1("rlx.add", [a, np.ones(2, np.int32)])
    with pytest.raises(InterpreterError):
        run1("rlx.add", [np.ones(2, bool), np.ones(2, bool)])


@pytest.mark.parametrize("dt", [np.float32, BF16, np.int32, np.int8, np.bool_], ids=str)
def test_compare(dt) -> None:
    a = np.array([[0, 1, 2], [2, 1, 0]]).astype(dt)
    b = np.array([1, 1, 0]).astype(dt)
    ops = {
        "eq": lambda x, y: x == y, "ne": lambda x, y: x != y, "lt": lambda x, y: x < y,
        "le": lambda x, y: x <= y, "gt": lambda x, y: x > y, "ge": lambda x, y: x >= y,
    }  # fmt: skip
    calls = [("rlx.compare", [0, 1], ((2, 3), np.bool_), f'{{predicate = "{p}"}}') for p in ops]
    for (pred, fn), got in zip(ops.items(), run_many([a, b], calls), strict=True):
        assert got.dtype == np.bool_
        np.testing.assert_array_equal(got, fn(a.astype(np.int64), b.astype(np.int64)), pred)


def test_compare_nan() -> None:
    a = np.array([np.nan, 1.0], np.float32)
    got = {
        p: run1("rlx.compare", [a, a], ((2,), np.bool_), f'{{predicate = "{p}"}}')
        for p in ("eq", "ne", "lt", "ge")
    }
    np.testing.assert_array_equal(got["eq"], [False, True])
    np.testing.assert_array_equal(got["ne"], [True, False])
    np.testing.assert_array_equal(got["lt"], [False, False])
    np.testing.assert_array_equal(got["ge"], [False, True])


@pytest.mark.parametrize("dt", [np.float32, np.float16, np.int32, np.bool_], ids=str)
def test_where_broadcasts_all_three(dt) -> None:
    cond = np.array([[True], [False]])
    a = np.arange(3).astype(dt)
    b = np.array(1).astype(dt)
    got = run1("rlx.where", [cond, a, b], ((2, 3), dt))
    want = [[a[i] if cond[j, 0] else b for i in range(3)] for j in range(2)]
    np.testing.assert_array_equal(got, np.array(want, dtype=dt))
    with pytest.raises(InterpreterError, match="i1"):
        run1("rlx.where", [a.astype(np.int32), a, a])


CAST_SRC = np.array([-2.5, -1.5, -0.7, 0.0, 0.4, 1.5, 2.5, 3.7, 250.0])


@pytest.mark.parametrize("dst", [np.int32, np.int8, np.uint8, np.int64], ids=str)
def test_cast_float_to_int_truncates(dst) -> None:
    for src in (np.float32, np.float64, np.float16):
        x = CAST_SRC.astype(src)
        info = np.iinfo(dst)
        want = [max(info.min, min(info.max, math.trunc(float(v)))) for v in x]
        np.testing.assert_array_equal(run1("rlx.cast", [x], (x.shape, dst)), want)


def test_cast_bool_and_int_and_float() -> None:
    x = np.array([0.0, -0.0, 0.5, np.nan, -3.0], np.float32)
    np.testing.assert_array_equal(
        run1("rlx.cast", [x], (x.shape, np.bool_)), [False, False, True, True, True]
    )
    b = np.array([True, False])
    for dst in (np.float32, BF16, np.int8, np.int32, np.uint8):
        got = run1("rlx.cast", [b], ((2,), dst))
        assert got.dtype == dst
        np.testing.assert_array_equal(got.astype(np.float64), [1.0, 0.0])
    i = np.array([300, -1, 2**24 + 1], np.int64)
    np.testing.assert_array_equal(run1("rlx.cast", [i], ((3,), np.int8)), [44, -1, 1])
    np.testing.assert_array_equal(run1("rlx.cast", [i], ((3,), np.uint8)), [44, 255, 1])
    np.testing.assert_array_equal(run1("rlx.cast", [i], ((3,), np.float32)), [300.0, -1.0, 2.0**24])


@pytest.mark.parametrize(
    "dst",
    [np.float16, BF16, np.dtype(ml_dtypes.float8_e4m3fn), np.dtype(ml_dtypes.float8_e5m2),
     np.dtype(ml_dtypes.float8_e4m3fnuz), np.dtype(ml_dtypes.float8_e5m2fnuz)],
    ids=str,
)  # fmt: skip
def test_cast_float_to_float_rounds_to_nearest_even(dst) -> None:
    rng = np.random.default_rng(5)
    x = (rng.standard_normal(200) * 4).astype(np.float32)
    got = run1("rlx.cast", [x], (x.shape, dst)).astype(np.float64)
    # Independent check: the result is the nearest representable value, ties to even.
    bits_dt = np.uint8 if np.dtype(dst).itemsize == 1 else np.uint16
    codes = np.arange(256 if bits_dt == np.uint8 else 65536).astype(bits_dt)
    with np.errstate(invalid="ignore"):
        grid = np.unique(codes.view(dst).astype(np.float64))
    grid = grid[np.isfinite(grid)]
    for v, g in zip(x.astype(np.float64), got, strict=True):
        if abs(v) > grid.max():
            continue
        d = np.abs(grid - v)
        best = grid[d == d.min()]
        assert g in best
        if len(best) == 2:  # tie: the even one (its last mantissa bit is 0)
            bits = np.array([g]).astype(dst).view(bits_dt)
            assert int(bits[0]) % 2 == 0
    back = run1("rlx.cast", [got.astype(dst)], (x.shape, np.float32))
    np.testing.assert_array_equal(back, got.astype(np.float32))
