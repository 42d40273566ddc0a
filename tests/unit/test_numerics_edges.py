"""Numerics at the edges agree with the reference interpreter: the norms of |x| ~ 1e30 (f32
and bf16) and of near-constant rows, gelu_tanh at +-inf and large negative inputs (plain
and fused), bool inputs holding bytes other than 0/1, and compile time that does not
depend on a dimension's value."""

from __future__ import annotations

import time

import ml_dtypes
import numpy as np
import pytest

import rlx
from rlx.interpreter import parse_module, run
from rlx.lowering.rlx_to_linalg import parallel

NORMS = """
func.func @main(%x: tensor<4x8xT>, %r: tensor<4x8xT>, %g: tensor<8xT>, %b: tensor<8xT>) -> (tensor<4x8xT>, tensor<4x8xT>, tensor<4x8xT>, tensor<4x8xT>) {
  %0 = rlx.layer_norm %x, %g, %b {epsilon = 1.0e-05 : f64} : (tensor<4x8xT>, tensor<8xT>, tensor<8xT>) -> tensor<4x8xT>
  %1 = rlx.rms_norm %x, %g {epsilon = 1.0e-05 : f64} : (tensor<4x8xT>, tensor<8xT>) -> tensor<4x8xT>
  %2 = rlx.fused_residual_layer_norm %x, %r, %g, %b {epsilon = 1.0e-05 : f64} : (tensor<4x8xT>, tensor<4x8xT>, tensor<8xT>, tensor<8xT>) -> tensor<4x8xT>
  %3 = rlx.fused_residual_rms_norm %x, %r, %g {epsilon = 1.0e-05 : f64} : (tensor<4x8xT>, tensor<4x8xT>, tensor<8xT>) -> tensor<4x8xT>
  func.return %0, %1, %2, %3 : tensor<4x8xT>, tensor<4x8xT>, tensor<4x8xT>, tensor<4x8xT>
}
"""


@pytest.mark.parametrize("t", ["f32", "bf16"])
def test_norms_of_huge_and_near_constant_rows(t: str) -> None:
    dt = np.dtype(np.float32) if t == "f32" else np.dtype(ml_dtypes.bfloat16)
    src = NORMS.replace("xT>", f"x{t}>")
    rng = np.random.default_rng(0)
    x = np.stack(
        [
            np.array([1e30, -1e30] * 4),
            np.array([3e29] * 7 + [-3e29]),
            1.0 + np.arange(8) * 1e-6,  # near-constant: var << eps
            np.full(8, 0.7) + rng.standard_normal(8) * 1e-7,
        ]
    ).astype(dt)
    r = (rng.standard_normal((4, 8)) * 1e-6).astype(dt)
    gamma = (1 + rng.standard_normal(8) * 0.1).astype(dt)
    beta = (rng.standard_normal(8) * 0.1).astype(dt)
    got = rlx.compile(src).run(x, r, gamma, beta)
    want = run(parse_module(src), [x, r, gamma, beta])
    for k, (a, w) in enumerate(zip(got, want, strict=True)):
        np.testing.assert_allclose(
            a.astype(np.float64), w.astype(np.float64), rtol=1e-6, atol=1e-7, err_msg=f"{k}"
        )
    # rows of +-1e30: +-1 (times gamma, plus beta), not 0
    w0 = want[1].astype(np.float64)[0]
    np.testing.assert_allclose(w0, np.sign(x[0].astype(np.float64)) * gamma, rtol=1e-2)


GELU = """
func.func @main(%x: tensor<12xf32>, %y: tensor<12xf32>) -> (tensor<12xf32>, tensor<12xf32>) {
  %0 = rlx.gelu_tanh %x : (tensor<12xf32>) -> tensor<12xf32>
  %1 = rlx.gelu_tanh %y : (tensor<12xf32>) -> tensor<12xf32>
  %2 = rlx.mul %1, %y : (tensor<12xf32>, tensor<12xf32>) -> tensor<12xf32>
  func.return %0, %2 : tensor<12xf32>, tensor<12xf32>
}
"""
X = np.array([-np.inf, np.inf, np.nan, -100, -10, -5, -1, 0, 1, 5, 100, -0.0], np.float32)


def test_gelu_tanh_at_the_edges_plain_and_fused() -> None:
    g = rlx.compile(GELU)
    assert "rlx.elementwise_region" in g.ir("rlx")  # the second one is fused with the mul
    got = g.run(X, X)
    want = run(parse_module(GELU), [X, X])
    for a, w in zip(got, want, strict=True):
        np.testing.assert_allclose(a, w, rtol=2e-6, atol=0)
        fin = np.isfinite(w) & (w == 0)
        assert np.array_equal(np.signbit(a[fin]), np.signbit(w[fin]))
    y = got[0]
    assert y[0] == 0 and np.signbit(y[0])  # -inf -> -0.0, the limit
    assert y[1] == np.inf and np.isnan(y[2])
    assert y[3] == 0 and np.signbit(y[3])  # -100 -> -0.0 (no 1 + tanh cancellation)
    np.testing.assert_allclose(y[8], 0.8411920, rtol=1e-6)


BOOL = """
func.func @main(%m: tensor<6xi1>, %a: tensor<6xf32>) -> (tensor<6xf32>, tensor<6xi32>, tensor<6xi1>) {
  %z = rlx.constant dense<0.0> : tensor<6xf32>
  %0 = rlx.where %m, %a, %z : (tensor<6xi1>, tensor<6xf32>, tensor<6xf32>) -> tensor<6xf32>
  %1 = rlx.cast %m : (tensor<6xi1>) -> tensor<6xi32>
  %2 = rlx.elementwise_region %m : (tensor<6xi1>) -> tensor<6xi1> {
  ^bb0(%b: i1):
    %t = arith.constant true
    %n = arith.xori %b, %t : i1
    rlx.yield %n : i1
  }
  func.return %0, %1, %2 : tensor<6xf32>, tensor<6xi32>, tensor<6xi1>
}
"""


def test_non_canonical_bool_bytes_are_true_like_numpy() -> None:
    m = np.array([2, 0, 1, 255, 128, 3], np.uint8).view(np.bool_)
    a = np.arange(1, 7, dtype=np.float32)
    got = rlx.compile(BOOL).run(m, a)
    want = run(parse_module(BOOL), [m, a])
    truth = m.view(np.uint8) != 0
    np.testing.assert_array_equal(got[0], np.where(truth, a, 0))
    np.testing.assert_array_equal(got[1], truth.astype(np.int32))
    np.testing.assert_array_equal(got[2], ~truth)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)


def test_chunking_is_bounded_by_the_chunk_size_not_the_dim() -> None:
    t0 = time.perf_counter()
    assert parallel._largest_divisor_at_most(2**62, 1 << 14) == 1 << 14  # noqa: SLF001
    assert parallel._largest_divisor_at_most(2**61 - 1, 1 << 14) == 1  # noqa: SLF001 (prime)
    assert parallel._largest_divisor_at_most(12, 5) == 4  # noqa: SLF001
    assert time.perf_counter() - t0 < 30.0  # 16K steps at most: a bound for hangs only


ONE_GELU = """
func.func @main(%x: tensor<12xf32>) -> tensor<12xf32> {
  %0 = rlx.gelu_tanh %x : (tensor<12xf32>) -> tensor<12xf32>
  func.return %0 : tensor<12xf32>
}
"""


def test_gelu_tanh_decomposed_and_folded_agree() -> None:
    """The same formula on the legalize (decomposition) and constant-folding paths."""
    from rlx.runtime.options import CompileOptions

    want = run(parse_module(ONE_GELU), [X])[0]
    ops = ("exp", "abs", "neg", "mul", "add", "div", "compare", "where", "constant")
    g = rlx.compile(ONE_GELU, CompileOptions(supported_ops=ops))
    assert "rlx.gelu_tanh" not in g.ir("rlx")
    got = g.run(X)[0]
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=0)
    assert np.array_equal(np.signbit(got), np.signbit(want))
    from rlx.builder import Graph

    gb = Graph("main")
    y = gb.op("gelu_tanh", gb.constant(X))
    assert not isinstance(y, tuple)
    gb.output(y)
    folded = rlx.compile(gb)
    assert "rlx.gelu_tanh" not in folded.ir("rlx")
    np.testing.assert_array_equal(folded.run()[0], want)
    assert np.array_equal(np.signbit(folded.run()[0]), np.signbit(want))
