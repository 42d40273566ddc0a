"""Reference interpreter: the blocked channel layout NCHWc (rlx.to_nchwc, rlx.from_nchwc,
layout = "nchwc" convs and pools) against explicit index loops of the layout definition
(docs/dialect.md, "Blocked channel layout")."""

from __future__ import annotations

import itertools

import ml_dtypes
import numpy as np
import pytest
from reference_helpers import ints, run1
from test_reference_nn import conv_loops, pool_loops, tol

from rlx.interpreter import InterpreterError
from rlx.interpreter.ops.layout import block_weight, from_blocked, to_blocked, unblock_weight

BF16 = np.dtype(ml_dtypes.bfloat16)
RNG = np.random.default_rng(11)


def block_loops(x: np.ndarray, b: int) -> np.ndarray:
    """out[n, cb, h, w, j] = x[n, cb*b + j, h, w], one element at a time."""
    n, c, hh, ww = x.shape
    out = np.zeros((n, c // b, hh, ww, b), x.dtype)
    for i, cb, y, z, j in itertools.product(
        range(n), range(c // b), range(hh), range(ww), range(b)
    ):
        out[i, cb, y, z, j] = x[i, cb * b + j, y, z]
    return out


def weight_loops(w: np.ndarray, b: int, depthwise: bool) -> np.ndarray:
    """w6[fb, cb, kh, kw, i, o] = w[fb*b + o, cb*bi + i, kh, kw] (bi = 1 for depthwise)."""
    f, cg, kh, kw = w.shape
    bi = 1 if depthwise else b
    out = np.zeros((f // b, cg // bi, kh, kw, bi, b), w.dtype)
    for fb, cb, y, z, i, o in itertools.product(
        range(f // b), range(cg // bi), range(kh), range(kw), range(bi), range(b)
    ):
        out[fb, cb, y, z, i, o] = w[fb * b + o, cb * bi + i, y, z]
    return out


@pytest.mark.parametrize("dt", [np.float32, BF16, np.int32], ids=str)
@pytest.mark.parametrize("b", [4, 8])
def test_to_and_from_nchwc(dt, b) -> None:
    x = (RNG.standard_normal((2, 16, 3, 5)) * 10).astype(dt)
    want = block_loops(x, b)
    got = run1("rlx.to_nchwc", [x], (want.shape, dt), f"{{block = {b} : i64}}")
    np.testing.assert_array_equal(got, want)
    back = run1("rlx.from_nchwc", [got], (x.shape, dt))
    np.testing.assert_array_equal(back, x)


def test_numpy_helpers_match_the_loops() -> None:
    x = RNG.standard_normal((1, 16, 2, 3)).astype(np.float32)
    np.testing.assert_array_equal(to_blocked(x, 8), block_loops(x, 8))
    np.testing.assert_array_equal(from_blocked(block_loops(x, 8)), x)
    for w, dw in (
        (RNG.standard_normal((16, 8, 3, 2)), False),
        (RNG.standard_normal((16, 1, 3, 3)), True),
    ):
        np.testing.assert_array_equal(block_weight(w, 8, dw), weight_loops(w, 8, dw))
        np.testing.assert_array_equal(unblock_weight(weight_loops(w, 8, dw)), w)


@pytest.mark.parametrize(
    ("strides", "pads", "dil", "depthwise"),
    [
        ((1, 1), (1, 1, 1, 1), (1, 1), False),
        ((2, 1), (0, 2, 1, 0), (1, 2), False),
        ((1, 2), (1, 1, 1, 1), (2, 1), True),
    ],
)
@pytest.mark.parametrize("dt", [np.float32, np.float16], ids=str)
def test_nchwc_conv2d(strides, pads, dil, depthwise, dt) -> None:
    b, c = 4, 8
    f = c
    groups = c if depthwise else 1
    x = RNG.standard_normal((2, c, 5, 6)).astype(dt)
    w = RNG.standard_normal((f, c // groups, 3, 2)).astype(dt)
    bias = RNG.standard_normal(f).astype(dt)
    want = block_loops(conv_loops(x, w, bias, strides, pads, dil, groups), b)
    attrs = (
        f"{{strides = {ints(*strides)}, padding = {ints(*pads)}, dilations = {ints(*dil)},"
        f' groups = {groups} : i64, layout = "nchwc"}}'
    )
    ops = [block_loops(x, b), weight_loops(w, b, depthwise), bias]
    got = run1("rlx.conv2d", ops, (want.shape, dt), attrs)
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=tol(dt), atol=tol(dt))


def test_nchwc_fused_conv2d_residual() -> None:
    b = 4
    x = RNG.standard_normal((1, 8, 4, 4)).astype(np.float32)
    w = RNG.standard_normal((8, 8, 3, 3)).astype(np.float32)
    base = conv_loops(x, w, None, (1, 1), (1, 1, 1, 1), (1, 1), 1)
    res = RNG.standard_normal(base.shape).astype(np.float32)
    want = block_loops(np.maximum(base + res, 0.0), b)
    attrs = f'{{padding = {ints(1, 1, 1, 1)}, activation = "relu", layout = "nchwc"}}'
    ops = [block_loops(x, b), weight_loops(w, b, False), block_loops(res, b)]
    got = run1("rlx.fused_conv2d_residual", ops, (want.shape, np.float32), attrs)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(("c", "xb"), [(3, 1), (1, 1), (8, 2)])
@pytest.mark.parametrize("residual", [False, True])
def test_nchwc_conv2d_other_input_block(c, xb, residual) -> None:
    """x blocked by xb (1: the stem form, [N, C, H, W, 1]), w [F/B, C/xb, KH, KW, xb, B],
    result blocked by B = 8: the index loops of the layout definition."""
    b, f = 8, 16
    x = RNG.standard_normal((2, c, 7, 5)).astype(np.float32)
    w = RNG.standard_normal((f, c, 3, 3)).astype(np.float32)
    base = conv_loops(x, w, None, (2, 1), (1, 0, 1, 2), (1, 1), 1)
    res = RNG.standard_normal(base.shape).astype(np.float32)
    want = block_loops(base + res if residual else base, b)
    w6 = np.zeros((f // b, c // xb, 3, 3, xb, b), np.float32)
    for fb, cb, y, z, i, o in itertools.product(*map(range, w6.shape)):
        w6[fb, cb, y, z, i, o] = w[fb * b + o, cb * xb + i, y, z]
    attrs = f'{{strides = {ints(2, 1)}, padding = {ints(1, 0, 1, 2)}, layout = "nchwc"}}'
    ops = [block_loops(x, xb), w6, *([block_loops(res, b)] if residual else [])]
    op = "rlx.fused_conv2d_residual" if residual else "rlx.conv2d"
    got = run1(op, ops, (want.shape, np.float32), attrs)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kind", ["max", "avg"])
@pytest.mark.parametrize("dt", [np.float32, BF16], ids=str)
def test_nchwc_pool2d(kind, dt) -> None:
    x = RNG.standard_normal((2, 8, 5, 6)).astype(dt)
    want = block_loops(pool_loops(x, kind, (3, 2), (2, 1), (1, 1, 1, 0)), 8)
    attrs = (
        f'{{kind = "{kind}", kernel = {ints(3, 2)}, strides = {ints(2, 1)},'
        f' padding = {ints(1, 1, 1, 0)}, layout = "nchwc"}}'
    )
    got = run1("rlx.pool2d", [block_loops(x, 8)], (want.shape, dt), attrs)
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=tol(dt), atol=tol(dt))


def test_bad_operands_raise() -> None:
    x = np.zeros((1, 8, 2, 2), np.float32)
    with pytest.raises(InterpreterError, match="rank-5"):
        run1("rlx.from_nchwc", [x], ((1, 8, 2, 2), np.float32))
    with pytest.raises(InterpreterError, match="cannot block"):
        run1("rlx.to_nchwc", [x], ((1, 1, 2, 2, 8), np.float32), "{block = 3 : i64}")
