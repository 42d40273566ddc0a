"""Reference interpreter: attention, rope, conv2d and pool2d against explicit loops."""

from __future__ import annotations

import itertools
import math

import ml_dtypes
import numpy as np
import pytest
from reference_helpers import ints, run1, run_many

from rlx.interpreter import (
    InterpreterError,
)

BF16 = np.dtype(ml_dtypes.bfloat16)
RNG = np.random.default_rng(7)


def tol(dt) -> float:
    return 4 * float(ml_dtypes.finfo(dt).eps)


# ------------------------------------------------------------------------ attention


def attention_loops(q, k, v, bias=None, scale=None, mask="none", window=None, softcap=None):
    q, k, v = (t.astype(np.float64) for t in (q, k, v))
    b_, h_, sq, d = q.shape
    sk, dv = k.shape[2], v.shape[3]
    scale = 1.0 / math.sqrt(d) if scale is None else scale
    bias = None if bias is None else np.broadcast_to(bias.astype(np.float64), (b_, h_, sq, sk))
    out = np.zeros((b_, h_, sq, dv))
    off = sk - sq
    for b, h, i in itertools.product(range(b_), range(h_), range(sq)):
        scores, keep = [], []
        for j in range(sk):
            s = sum(q[b, h, i, p] * k[b, h, j, p] for p in range(d)) * scale
            if bias is not None:
                s += bias[b, h, i, j]
            if softcap is not None:
                s = softcap * math.tanh(s / softcap)
            masked = (mask in ("causal", "sliding_window") and j > i + off) or (
                mask == "sliding_window" and j < i + off - window
            )
            if not masked and s != -math.inf:
                scores.append(s)
                keep.append(j)
        if not keep:
            continue
        m = max(scores)
        w = [math.exp(s - m) for s in scores]
        z = sum(w)
        for wj, j in zip(w, keep, strict=True):
            out[b, h, i] += wj / z * v[b, h, j]
    return out


def _qkv(b, h, sq, sk, d, dv, dt):
    return (
        RNG.standard_normal((b, h, sq, d)).astype(dt),
        RNG.standard_normal((b, h, sk, d)).astype(dt),
        RNG.standard_normal((b, h, sk, dv)).astype(dt),
    )


MASKS = [
    ("none", ""),
    ("causal", '{mask_kind = "causal"}'),
    ("sliding_window", '{mask_kind = "sliding_window", window = 1 : i64}'),
]


@pytest.mark.parametrize(("sq", "sk"), [(3, 3), (2, 5), (1, 4)])
@pytest.mark.parametrize("dt", [np.float32, np.float64, np.float16, BF16], ids=str)
def test_attention_masks(sq: int, sk: int, dt) -> None:
    q, k, v = _qkv(2, 2, sq, sk, 4, 3, dt)
    calls = [("rlx.attention", [0, 1, 2], ((2, 2, sq, 3), dt), attrs) for _, attrs in MASKS]
    outs = run_many([q, k, v], calls)
    for (mask, _), got in zip(MASKS, outs, strict=True):
        window = 1 if mask == "sliding_window" else None
        want = attention_loops(q, k, v, mask=mask, window=window)
        np.testing.assert_allclose(
            got.astype(np.float64), want, rtol=tol(dt), atol=tol(dt), err_msg=mask
        )


def test_attention_scale_softcap_bias() -> None:
    q, k, v = _qkv(1, 2, 3, 4, 5, 2, np.float32)
    bias = RNG.standard_normal((1, 1, 3, 4)).astype(np.float32)
    bias[0, 0, 1, 2] = -np.inf
    attrs = '{mask_kind = "bias", scale = 0.5 : f64, softcap = 2.0 : f64}'
    got = run1("rlx.attention", [q, k, v, bias], ((1, 2, 3, 2), np.float32), attrs)
    want = attention_loops(q, k, v, bias=bias, scale=0.5, softcap=2.0)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_attention_fully_masked_rows_are_zero() -> None:
    # Sq > Sk with causal: offset < 0, so the first query row sees no key.
    q, k, v = _qkv(1, 1, 3, 2, 4, 2, np.float32)
    got = run1("rlx.attention", [q, k, v], ((1, 1, 3, 2), np.float32), '{mask_kind = "causal"}')
    np.testing.assert_array_equal(got[0, 0, 0], [0.0, 0.0])
    np.testing.assert_allclose(got, attention_loops(q, k, v, mask="causal"), rtol=1e-6, atol=1e-7)
    bias = np.full((1, 1, 3, 2), -np.inf, np.float32)
    got = run1("rlx.attention", [q, k, v, bias], ((1, 1, 3, 2), np.float32), '{mask_kind = "bias"}')
    np.testing.assert_array_equal(got, np.zeros((1, 1, 3, 2)))


def test_attention_errors() -> None:
    q, k, v = _qkv(1, 1, 2, 2, 4, 4, np.float32)
    with pytest.raises(InterpreterError, match="window"):
        run1("rlx.attention", [q, k, v], None, '{mask_kind = "sliding_window"}')
    with pytest.raises(InterpreterError, match="bias"):
        run1("rlx.attention", [q, k, v], None, '{mask_kind = "bias"}')


# ----------------------------------------------------------------------------- rope


def rope_loops(x, cos, sin, n_rot):
    x = x.astype(np.float64)
    half = n_rot // 2
    c = np.broadcast_to(cos.astype(np.float64), x.shape[:-1] + (half,))
    s = np.broadcast_to(sin.astype(np.float64), x.shape[:-1] + (half,))
    out = x.copy()
    for idx in itertools.product(*[range(d) for d in x.shape[:-1]]):
        for i in range(half):
            x1, x2 = x[idx + (i,)], x[idx + (i + half,)]
            out[idx + (i,)] = x1 * c[idx + (i,)] - x2 * s[idx + (i,)]
            out[idx + (i + half,)] = x2 * c[idx + (i,)] + x1 * s[idx + (i,)]
    return out


@pytest.mark.parametrize("n_rot", [None, 4, 2])
@pytest.mark.parametrize("dt", [np.float32, np.float64, np.float16, BF16], ids=str)
def test_rope(n_rot, dt) -> None:
    x = RNG.standard_normal((2, 3, 5, 6)).astype(dt)
    nr = 6 if n_rot is None else n_rot
    theta = RNG.uniform(0, 6, (5, nr // 2))
    cos, sin = np.cos(theta).astype(dt), np.sin(theta).astype(dt)
    attrs = "" if n_rot is None else f"{{n_rot = {n_rot} : i64}}"
    got = run1("rlx.rope", [x, cos, sin], None, attrs)
    np.testing.assert_allclose(
        got.astype(np.float64), rope_loops(x, cos, sin, nr), rtol=tol(dt), atol=tol(dt)
    )


def test_rope_per_batch_tables() -> None:
    x = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    cos = RNG.standard_normal((2, 3, 2)).astype(np.float32)
    sin = RNG.standard_normal((2, 1, 2)).astype(np.float32)
    got = run1("rlx.rope", [x, cos, sin])
    np.testing.assert_allclose(got, rope_loops(x, cos, sin, 4), rtol=1e-6, atol=1e-6)
    with pytest.raises(InterpreterError, match="n_rot"):
        run1("rlx.rope", [x, cos, sin], None, "{n_rot = 3 : i64}")


# ----------------------------------------------------------------------------- conv


def conv_loops(x, w, bias, strides, pads, dil, groups):
    x, w = x.astype(np.float64), w.astype(np.float64)
    n, c, hh, ww = x.shape
    f, cg, kh, kw = w.shape
    t, lft, btm, r = pads
    ho = (hh + t + btm - dil[0] * (kh - 1) - 1) // strides[0] + 1
    wo = (ww + lft + r - dil[1] * (kw - 1) - 1) // strides[1] + 1
    out = np.zeros((n, f, ho, wo))
    fg = f // groups
    for b, o, i, j in itertools.product(range(n), range(f), range(ho), range(wo)):
        g = o // fg
        acc = 0.0
        for ci, a, e in itertools.product(range(cg), range(kh), range(kw)):
            y = i * strides[0] + a * dil[0] - t
            z = j * strides[1] + e * dil[1] - lft
            if 0 <= y < hh and 0 <= z < ww:
                acc += x[b, g * cg + ci, y, z] * w[o, ci, a, e]
        out[b, o, i, j] = acc + (0.0 if bias is None else float(bias[o]))
    return out


@pytest.mark.parametrize(
    ("strides", "pads", "dil", "groups", "with_bias"),
    [
        ((1, 1), (0, 0, 0, 0), (1, 1), 1, False),
        ((2, 1), (1, 2, 0, 1), (1, 1), 1, True),
        ((1, 2), (1, 1, 1, 1), (2, 1), 2, True),
        ((1, 1), (0, 0, 0, 0), (1, 1), 4, False),  # depthwise
    ],
)
@pytest.mark.parametrize("dt", [np.float32, np.float64, np.float16], ids=str)
def test_conv2d(strides, pads, dil, groups, with_bias, dt) -> None:
    x = RNG.standard_normal((2, 4, 6, 7)).astype(dt)
    w = RNG.standard_normal((4, 4 // groups, 3, 2)).astype(dt)
    bias = RNG.standard_normal(4).astype(dt)
    want = conv_loops(x, w, bias if with_bias else None, strides, pads, dil, groups)
    attrs = (
        f"{{strides = {ints(*strides)}, padding = {ints(*pads)}, dilations = {ints(*dil)},"
        f" groups = {groups} : i64}}"
    )
    ops = [x, w, bias] if with_bias else [x, w]
    got = run1("rlx.conv2d", ops, (want.shape, dt), attrs)
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=tol(dt), atol=max(tol(dt), 1e-12))


def test_conv2d_defaults_and_int() -> None:
    x = np.arange(2 * 3 * 3, dtype=np.int32).reshape(1, 2, 3, 3)
    w = np.ones((1, 2, 2, 2), np.int32)
    got = run1("rlx.conv2d", [x, w], ((1, 1, 2, 2), np.int32))
    np.testing.assert_array_equal(got, conv_loops(x, w, None, (1, 1), (0,) * 4, (1, 1), 1))


@pytest.mark.parametrize("dt", [np.float32, np.float16], ids=str)
def test_conv2d_clip_and_fused_conv2d_residual(dt) -> None:
    """activation clip (relu6) and rlx.fused_conv2d_residual: conv + bias + residual, then
    the activation, against the loops."""
    x = RNG.standard_normal((2, 4, 6, 7)).astype(dt)
    w = RNG.standard_normal((6, 2, 3, 3)).astype(dt)
    bias = RNG.standard_normal(6).astype(dt)
    base = conv_loops(x, w, bias, (1, 2), (1, 1, 1, 1), (1, 1), 2)
    res = RNG.standard_normal(base.shape).astype(dt)
    geo = f"strides = {ints(1, 2)}, padding = {ints(1, 1, 1, 1)}, groups = 2 : i64"
    clip = f'{{{geo}, activation = "clip", clip = array<f64: -0.5, 0.75>}}'
    got = run1("rlx.conv2d", [x, w, bias], (base.shape, dt), clip)
    want = np.minimum(np.maximum(base, -0.5), 0.75)
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=tol(dt), atol=tol(dt))
    relu = f'{{{geo}, activation = "relu"}}'
    got = run1("rlx.fused_conv2d_residual", [x, w, res, bias], (base.shape, dt), relu)
    want = np.maximum(base + res.astype(np.float64), 0.0)
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=tol(dt), atol=tol(dt))


# ----------------------------------------------------------------------------- pool


def pool_loops(x, kind, kernel, strides, pads):
    x = x.astype(np.float64)
    n, c, hh, ww = x.shape
    t, lft, btm, r = pads
    ho = (hh + t + btm - kernel[0]) // strides[0] + 1
    wo = (ww + lft + r - kernel[1]) // strides[1] + 1
    out = np.zeros((n, c, ho, wo))
    for b, ch, i, j in itertools.product(range(n), range(c), range(ho), range(wo)):
        vals = []
        for a, e in itertools.product(range(kernel[0]), range(kernel[1])):
            y, z = i * strides[0] + a - t, j * strides[1] + e - lft
            if 0 <= y < hh and 0 <= z < ww:
                vals.append(x[b, ch, y, z])
        out[b, ch, i, j] = max(vals) if kind == "max" else sum(vals) / len(vals)
    return out


@pytest.mark.parametrize("kind", ["max", "avg"])
@pytest.mark.parametrize(
    ("kernel", "strides", "pads"),
    [((2, 2), None, (0, 0, 0, 0)), ((3, 2), (1, 2), (1, 1, 1, 0)), ((2, 3), (2, 1), (0, 2, 1, 1))],
)
@pytest.mark.parametrize("dt", [np.float32, np.float64, BF16], ids=str)
def test_pool2d(kind, kernel, strides, pads, dt) -> None:
    x = RNG.standard_normal((2, 3, 5, 6)).astype(dt)
    want = pool_loops(x, kind, kernel, strides or kernel, pads)
    attrs = f'{{kind = "{kind}", kernel = {ints(*kernel)}, padding = {ints(*pads)}'
    attrs += f", strides = {ints(*strides)}}}" if strides else "}"
    got = run1("rlx.pool2d", [x], (want.shape, dt), attrs)
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=tol(dt), atol=max(tol(dt), 1e-12))


def test_max_pool_int_and_negative_values() -> None:
    x = -np.arange(16, dtype=np.int8).reshape(1, 1, 4, 4) - 1
    attrs = f'{{kind = "max", kernel = {ints(2, 2)}, padding = {ints(1, 1, 1, 1)}}}'
    got = run1("rlx.pool2d", [x], ((1, 1, 3, 3), np.int8), attrs)
    np.testing.assert_array_equal(got, pool_loops(x, "max", (2, 2), (2, 2), (1, 1, 1, 1)))
