"""Reference interpreter: constant/param, data movement, reductions, softmax, cumsum,
matmul and the norms, against independent NumPy computations."""

from __future__ import annotations

import itertools

import ml_dtypes
import numpy as np
import pytest
from reference_helpers import ints, run1, run_many

from rlx.interpreter import (
    InterpreterError,
    dense_attr,
    run,
    single_op_module,
)

BF16 = np.dtype(ml_dtypes.bfloat16)
RNG = np.random.default_rng(11)


def tol(dt) -> float:
    return 4 * float(ml_dtypes.finfo(dt).eps)


# ------------------------------------------------------------------------ leaves


@pytest.mark.parametrize("dt", [np.float32, BF16, np.int8, np.bool_, np.uint8], ids=str)
def test_constant(dt) -> None:
    v = (RNG.standard_normal((2, 3)) * 10).astype(dt)
    got = run1("rlx.constant", [], v, f"{{value = {dense_attr(v)}}}")
    assert got.dtype == v.dtype
    np.testing.assert_array_equal(got, v)


def test_param_binds_and_checks() -> None:
    text = single_op_module("rlx.param", [], [((2, 2), np.float16)], '{name = "w.0"}')
    w = np.array([[1.0, 2.0], [3.0, 4.5]])
    (got,) = run(text, params={"w.0": w})
    assert got.dtype == np.float16
    np.testing.assert_array_equal(got, w)
    with pytest.raises(ValueError, match="param 'w.0'"):
        run(text, params={"w.0": np.zeros(3)})


# ----------------------------------------------------------------- data movement


@pytest.mark.parametrize("dt", [np.float32, np.int32, np.bool_, BF16], ids=str)
def test_reshape_transpose_broadcast(dt) -> None:
    x = (RNG.standard_normal((2, 3, 4)) > 0).astype(dt) if dt == np.bool_ else (
        RNG.standard_normal((2, 3, 4)) * 5).astype(dt)  # fmt: skip
    np.testing.assert_array_equal(run1("rlx.reshape", [x], ((4, 6), dt)), x.reshape(4, 6))
    np.testing.assert_array_equal(run1("rlx.reshape", [x], ((24,), dt)), x.ravel())
    perm = (2, 0, 1)
    got = run1("rlx.transpose", [x], ((4, 2, 3), dt), f"{{permutation = {ints(*perm)}}}")
    want = np.empty((4, 2, 3), dtype=dt)
    for i, j, k in itertools.product(range(4), range(2), range(3)):
        want[i, j, k] = x[j, k, i]
    np.testing.assert_array_equal(got, want)
    y = x[:, :1, :]
    got = run1("rlx.broadcast_to", [y], ((5, 2, 3, 4), dt))
    for n in range(5):
        for j in range(3):
            np.testing.assert_array_equal(got[n, :, j, :], y[:, 0, :])


def test_reshape_and_broadcast_errors() -> None:
    x = np.zeros((2, 3), np.float32)
    with pytest.raises(InterpreterError, match="reshape"):
        run1("rlx.reshape", [x], ((4, 2), np.float32))
    with pytest.raises(InterpreterError, match="broadcast"):
        run1("rlx.broadcast_to", [x], ((3, 3), np.float32))
    with pytest.raises(InterpreterError, match="permutation"):
        run1("rlx.transpose", [x], ((3, 2), np.float32), f"{{permutation = {ints(0, 0)}}}")


def test_empty_and_size_one_dims() -> None:
    x = np.zeros((0, 3), np.float32)
    assert run1("rlx.reshape", [x], ((3, 0), np.float32)).shape == (3, 0)
    got = run1("rlx.transpose", [x], ((3, 0), np.float32), f"{{permutation = {ints(1, 0)}}}")
    assert got.shape == (3, 0)
    one = np.array([[7.0]], np.float32)
    np.testing.assert_array_equal(run1("rlx.reshape", [one], ((), np.float32)), 7.0)


def test_slice() -> None:
    x = np.arange(5 * 6 * 2).reshape(5, 6, 2).astype(np.int32)
    got = run1(
        "rlx.slice",
        [x],
        ((2, 2, 1), np.int32),
        f"{{starts = {ints(1, 0, 1)}, limits = {ints(5, 6, 2)}, strides = {ints(2, 3, 1)}}}",
    )
    want = np.array([[[x[i, j, 1]] for j in (0, 3)] for i in (1, 3)])
    np.testing.assert_array_equal(got, want)
    got = run1("rlx.slice", [x], ((0, 6, 2), np.int32),
               f"{{starts = {ints(2, 0, 0)}, limits = {ints(2, 6, 2)}}}")  # fmt: skip
    assert got.shape == (0, 6, 2)
    with pytest.raises(InterpreterError, match="bad slice"):
        run1("rlx.slice", [x], ((1, 6, 2), np.int32),
             f"{{starts = {ints(5, 0, 0)}, limits = {ints(6, 6, 2)}}}")  # fmt: skip


@pytest.mark.parametrize("axis", [0, 1, -1, -2])
def test_concat(axis: int) -> None:
    a = np.arange(6, dtype=np.float16).reshape(2, 3)
    b = (np.arange(6, dtype=np.float16) + 10).reshape(2, 3)
    c = np.zeros((2, 3), np.float16)
    ax = axis % 2
    out_shape = (6, 3) if ax == 0 else (2, 9)
    got = run1("rlx.concat", [a, b, c], (out_shape, np.float16), f"{{axis = {axis} : i64}}")
    want = np.array([list(a[i]) + list(b[i]) + list(c[i]) for i in range(2)], np.float16)
    if ax == 0:
        want = np.array(list(a) + list(b) + list(c), np.float16)
    np.testing.assert_array_equal(got, want)


def test_concat_with_empty_operand() -> None:
    a = np.ones((2, 0), np.int8)
    b = np.ones((2, 2), np.int8)
    got = run1("rlx.concat", [a, b], ((2, 2), np.int8), "{axis = 1 : i64}")
    np.testing.assert_array_equal(got, b)


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_gather(axis: int) -> None:
    x = RNG.standard_normal((4, 5)).astype(np.float32)
    n = x.shape[axis]
    idx = np.array([[0, n - 1], [-1, 1], [-n, 2]], dtype=np.int32)
    out_shape = (3, 2, 5) if axis % 2 == 0 else (4, 3, 2)
    got = run1("rlx.gather", [x, idx], (out_shape, np.float32), f"{{axis = {axis} : i64}}")
    for p, q in itertools.product(range(3), range(2)):
        i = int(idx[p, q]) % n
        if axis % 2 == 0:
            np.testing.assert_array_equal(got[p, q], x[i])
        else:
            np.testing.assert_array_equal(got[:, p, q], x[:, i])


def test_gather_default_axis_and_errors() -> None:
    x = np.arange(6, dtype=np.int64).reshape(3, 2)
    idx = np.array([2, 0], np.int64)
    np.testing.assert_array_equal(
        run1("rlx.gather", [x, idx], ((2, 2), np.int64)), [[4, 5], [0, 1]]
    )
    with pytest.raises(InterpreterError, match="out of range"):
        run1("rlx.gather", [x, np.array([3], np.int64)], ((1, 2), np.int64))
    with pytest.raises(InterpreterError, match="out of range"):
        run1("rlx.gather", [x, np.array([-4], np.int64)], ((1, 2), np.int64))


# -------------------------------------------------------------------- reductions


def _reduce_ref(x: np.ndarray, kind: str, axes: tuple[int, ...], keep: bool) -> np.ndarray:
    """Loop-based reference over the kept index space."""
    axes = tuple(a % x.ndim for a in axes)
    kept = [d for i, d in enumerate(x.shape) if i not in axes]
    out = np.empty(kept, dtype=np.float64)
    for idx in itertools.product(*[range(d) for d in kept]):
        it = iter(idx)
        sl = tuple(slice(None) if i in axes else next(it) for i in range(x.ndim))
        vals = [float(v) for v in x[sl].astype(np.float64).ravel()]
        if kind == "sum":
            r = sum(vals)
        elif kind == "mean":
            r = sum(vals) / len(vals)
        elif kind == "prod":
            r = float(np.prod(vals))
        elif kind == "max":
            r = max(vals)
        else:
            r = min(vals)
        out[idx] = r
    if keep:
        out = out.reshape([1 if i in axes else d for i, d in enumerate(x.shape)])
    return out


@pytest.mark.parametrize(
    ("axes", "keep"), [((1,), False), ((0, -1), True), ((-2,), True), (None, False)]
)
@pytest.mark.parametrize("dt", [np.float32, np.float64, np.float16, BF16], ids=str)
def test_reduce_float(axes, keep: bool, dt) -> None:
    x = RNG.uniform(0.5, 1.5, (3, 4, 5)).astype(dt)
    ax = tuple(range(3)) if axes is None else axes
    kinds = ["sum", "mean", "max", "min", "prod"]
    wants = [_reduce_ref(x, kind, ax, keep) for kind in kinds]
    calls = []
    for kind, want in zip(kinds, wants, strict=True):
        attrs = f'{{kind = "{kind}"' + ("" if axes is None else f", axes = {ints(*axes)}")
        attrs += ", keepdims = true}" if keep else "}"
        calls.append(("rlx.reduce", [0], (want.shape, dt), attrs))
    for kind, want, got in zip(kinds, wants, run_many([x], calls), strict=True):
        assert got.dtype == dt
        # Accumulated in f64 and rounded once: within half an ulp (plus f64 noise).
        np.testing.assert_allclose(
            got.astype(np.float64), want, rtol=tol(dt) / 4 + 1e-12, err_msg=kind
        )


@pytest.mark.parametrize("dt", [np.int8, np.int32, np.int64], ids=str)
def test_reduce_int(dt) -> None:
    x = np.array([[100, 100, -7], [-5, -2, 3]], dtype=dt)
    attrs = '{{kind = "{}", axes = array<i64: 1>}}'
    s = run1("rlx.reduce", [x], ((2,), dt), attrs.format("sum"))
    np.testing.assert_array_equal(s, np.array([193, -4]).astype(dt))  # 193 wraps in i8
    m = run1("rlx.reduce", [x], ((2,), dt), attrs.format("mean"))
    np.testing.assert_array_equal(m, [64, -1])  # 193/3 = 64.33 -> 64, -4/3 -> -1 (toward 0)
    np.testing.assert_array_equal(
        run1("rlx.reduce", [x], ((2,), dt), attrs.format("max")), [100, 3]
    )
    np.testing.assert_array_equal(
        run1("rlx.reduce", [x], ((2,), dt), attrs.format("min")), [-7, -5]
    )
    p = run1("rlx.reduce", [x], ((2,), dt), attrs.format("prod"))
    np.testing.assert_array_equal(p, np.array([-70000, 30]).astype(dt))


def test_reduce_bool_and_empty() -> None:
    b = np.array([[True, False], [True, True]])
    np.testing.assert_array_equal(
        run1("rlx.reduce", [b], ((2,), np.bool_), '{kind = "max", axes = array<i64: 1>}'), [1, 1]
    )
    np.testing.assert_array_equal(
        run1("rlx.reduce", [b], ((2,), np.bool_), '{kind = "min", axes = array<i64: 1>}'), [0, 1]
    )
    e = np.zeros((2, 0), np.float32)
    for kind, want in (("sum", 0.0), ("prod", 1.0), ("max", -np.inf), ("min", np.inf)):
        got = run1("rlx.reduce", [e], ((2,), np.float32), f'{{kind = "{kind}", axes = {ints(1)}}}')
        np.testing.assert_array_equal(got, [want, want])
    assert np.all(np.isnan(run1("rlx.reduce", [e], ((2,), np.float32),
                                f'{{kind = "mean", axes = {ints(1)}}}')))  # fmt: skip
    with pytest.raises(InterpreterError, match="duplicate"):
        run1("rlx.reduce", [b], ((2,), np.bool_), f'{{kind = "max", axes = {ints(1, -1)}}}')


def test_reduce_max_propagates_nan() -> None:
    x = np.array([[1.0, np.nan], [1.0, 2.0]], np.float32)
    got = run1("rlx.reduce", [x], ((2,), np.float32), f'{{kind = "max", axes = {ints(1)}}}')
    assert np.isnan(got[0]) and got[1] == 2.0


@pytest.mark.parametrize("axis", [-1, 0, 1])
@pytest.mark.parametrize("dt", [np.float32, np.float64, np.float16, BF16], ids=str)
def test_softmax(axis: int, dt) -> None:
    x = (RNG.standard_normal((3, 4)) * 3).astype(dt)
    x[0, 0] = 80  # large values must not overflow
    xs = x.astype(np.float64)
    e = np.exp(xs - xs.max())  # any shift works mathematically; compute the naive way
    want = e / e.sum(axis=axis, keepdims=True)
    got = run1("rlx.softmax", [x], None, f"{{axis = {axis} : i64}}")
    np.testing.assert_allclose(
        got.astype(np.float64), want, rtol=max(tol(dt), 1e-13), atol=float(ml_dtypes.finfo(dt).tiny)
    )


def test_softmax_default_axis_and_inf() -> None:
    x = np.array([[0.0, -np.inf, 0.0], [1.0, 2.0, 3.0]], np.float32)
    got = run1("rlx.softmax", [x])
    np.testing.assert_array_equal(got[0], [0.5, 0.0, 0.5])
    np.testing.assert_allclose(got[1], np.exp([1, 2, 3]) / np.exp([1, 2, 3]).sum(), rtol=1e-6)
    assert run1("rlx.softmax", [np.zeros((2, 0), np.float32)]).shape == (2, 0)


@pytest.mark.parametrize("exclusive", [False, True])
@pytest.mark.parametrize("axis", [0, -1])
@pytest.mark.parametrize("dt", [np.float32, np.int32, np.int8, BF16], ids=str)
def test_cumsum(exclusive: bool, axis: int, dt) -> None:
    x = np.arange(1, 13).reshape(3, 4).astype(dt)
    ax = axis % 2
    want = np.zeros((3, 4), dtype=np.float64)
    for i, j in itertools.product(range(3), range(4)):
        pos = (i, j)[ax]
        stop = pos if exclusive else pos + 1
        want[i, j] = sum(float(x[(k, j) if ax == 0 else (i, k)]) for k in range(stop))
    attrs = f"{{axis = {axis} : i64" + (", exclusive = true}" if exclusive else "}")
    got = run1("rlx.cumsum", [x], None, attrs)
    np.testing.assert_array_equal(got, want.astype(dt))


def test_cumsum_empty_axis() -> None:
    x = np.zeros((2, 0), np.float32)
    assert run1("rlx.cumsum", [x], None, "{exclusive = true}").shape == (2, 0)


# -------------------------------------------------------------------------- matmul


def _matmul_ref(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    a = np.broadcast_to(a, batch + a.shape[-2:]).astype(np.float64)
    b = np.broadcast_to(b, batch + b.shape[-2:]).astype(np.float64)
    m, k, n = a.shape[-2], a.shape[-1], b.shape[-1]
    out = np.zeros(batch + (m, n))
    for idx in itertools.product(*[range(d) for d in batch]):
        for i, j in itertools.product(range(m), range(n)):
            out[idx + (i, j)] = sum(a[idx + (i, p)] * b[idx + (p, j)] for p in range(k))
    return out


@pytest.mark.parametrize(
    ("sa", "sb"),
    [((3, 4), (4, 2)), ((2, 3, 4), (4, 5)), ((2, 1, 3, 4), (3, 4, 2)), ((1, 4), (4, 1)),
     ((0, 4), (4, 3)), ((2, 0), (0, 3))],
)  # fmt: skip
@pytest.mark.parametrize("dt", [np.float32, np.float64, np.float16, BF16], ids=str)
def test_matmul(sa, sb, dt) -> None:
    a = RNG.standard_normal(sa).astype(dt)
    b = RNG.standard_normal(sb).astype(dt)
    want = _matmul_ref(a, b)
    got = run1("rlx.matmul", [a, b], (want.shape, dt))
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=tol(dt), atol=max(tol(dt), 1e-12))


def test_matmul_int_and_errors() -> None:
    a = np.array([[100, 2], [3, 4]], np.int8)
    b = np.array([[2, 0], [1, 1]], np.int8)
    got = run1("rlx.matmul", [a, b], ((2, 2), np.int8))
    np.testing.assert_array_equal(got, np.array([[202, 2], [10, 4]]).astype(np.int8))
    with pytest.raises(InterpreterError, match="rank >= 2"):
        run1(
            "rlx.matmul", [np.ones(2, np.float32), np.ones((2, 2), np.float32)], ((2,), np.float32)
        )


# --------------------------------------------------------------------------- norms


def _ln_ref(x, g, b, eps):
    x = x.astype(np.float64)
    out = np.empty_like(x)
    for idx in itertools.product(*[range(d) for d in x.shape[:-1]]):
        row = x[idx]
        mu = sum(row) / len(row)
        var = sum((v - mu) ** 2 for v in row) / len(row)
        out[idx] = [
            (v - mu) / np.sqrt(var + eps) * gi + bi for v, gi, bi in zip(row, g, b, strict=True)
        ]
    return out


def _rms_ref(x, g, b, eps):
    x = x.astype(np.float64)
    out = np.empty_like(x)
    for idx in itertools.product(*[range(d) for d in x.shape[:-1]]):
        row = x[idx]
        ms = sum(v * v for v in row) / len(row)
        out[idx] = [v / np.sqrt(ms + eps) * gi + (0 if b is None else b[i])
                    for i, (v, gi) in enumerate(zip(row, g, strict=True))]  # fmt: skip
    return out


@pytest.mark.parametrize("dt", [np.float32, np.float64, np.float16, BF16], ids=str)
def test_layer_norm(dt) -> None:
    x = (RNG.standard_normal((2, 3, 8)) * 2 + 1).astype(dt)
    g = RNG.standard_normal(8).astype(dt)
    b = RNG.standard_normal(8).astype(dt)
    got = run1("rlx.layer_norm", [x, g, b], None, "{epsilon = 1.0e-03 : f64}")
    want = _ln_ref(x, g.astype(np.float64), b.astype(np.float64), 1e-3)
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=tol(dt), atol=max(tol(dt), 1e-12))
    got = run1("rlx.layer_norm", [x, g, b])
    want = _ln_ref(x, g.astype(np.float64), b.astype(np.float64), 1e-5)
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=tol(dt), atol=max(tol(dt), 1e-12))


@pytest.mark.parametrize("with_beta", [False, True])
@pytest.mark.parametrize("dt", [np.float32, np.float64, np.float16, BF16], ids=str)
def test_rms_norm(dt, with_beta: bool) -> None:
    x = (RNG.standard_normal((4, 6))).astype(dt)
    g = RNG.standard_normal(6).astype(dt)
    b = RNG.standard_normal(6).astype(dt)
    ops = [x, g, b] if with_beta else [x, g]
    got = run1("rlx.rms_norm", ops, None, "{epsilon = 1.0e-06 : f64}")
    want = _rms_ref(x, g.astype(np.float64), b.astype(np.float64) if with_beta else None, 1e-6)
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=tol(dt), atol=max(tol(dt), 1e-12))


def test_reshape_with_a_dynamic_result_dim() -> None:
    text = """
    func.func @main(%x: tensor<?x2xf32>) -> tensor<?xf32> {
      %y = "rlx.reshape"(%x) : (tensor<?x2xf32>) -> tensor<?xf32>
      func.return %y : tensor<?xf32>
    }"""
    x = np.arange(6, dtype=np.float32).reshape(3, 2)
    (y,) = run(text, [x])
    np.testing.assert_array_equal(y, np.arange(6))
