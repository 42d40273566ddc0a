"""Reference interpreter: rlx.scan, rlx.if and the fused ops (rlx.elementwise_region and the
scalar arith / math table: `test_reference_elementwise_region.py`)."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest
from reference_helpers import run_both

from rlx.interpreter import (
    InterpreterError,
    eval_op,
    mlir_type,
    parse_module,
    run,
    single_op_module,
)

BF16 = np.dtype(ml_dtypes.bfloat16)
RNG = np.random.default_rng(3)


# ----------------------------------------------------------------------------- scan

SCAN = """
func.func @main(%h0: tensor<2xf32>, %n0: tensor<i32>, %xs: tensor<4x2xf32>, %ws: tensor<4xi32>)
    -> (tensor<2xf32>, tensor<i32>, tensor<4x2xf32>, tensor<4xi32>) {
  %r:4 = "rlx.scan"(%h0, %n0, %xs, %ws) <{operandSegmentSizes = array<i32: 2, 2>}> ({
  ^bb0(%h: tensor<2xf32>, %n: tensor<i32>, %x: tensor<2xf32>, %w: tensor<i32>):
    %hx = "rlx.add"(%h, %x) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    %h2 = "rlx.tanh"(%hx) : (tensor<2xf32>) -> tensor<2xf32>
    %n2 = "rlx.add"(%n, %w) : (tensor<i32>, tensor<i32>) -> tensor<i32>
    %y = "rlx.mul"(%h2, %h2) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    "rlx.yield"(%h2, %n2, %y, %n2) : (tensor<2xf32>, tensor<i32>, tensor<2xf32>, tensor<i32>) -> ()
  }) {length = 4 : i64} : (tensor<2xf32>, tensor<i32>, tensor<4x2xf32>, tensor<4xi32>)
      -> (tensor<2xf32>, tensor<i32>, tensor<4x2xf32>, tensor<4xi32>)
  func.return %r#0, %r#1, %r#2, %r#3 : tensor<2xf32>, tensor<i32>, tensor<4x2xf32>, tensor<4xi32>
}
"""


def test_scan_carries_and_stacked_outputs() -> None:
    h0 = RNG.standard_normal(2).astype(np.float32)
    n0 = np.array(5, np.int32)
    xs = RNG.standard_normal((4, 2)).astype(np.float32)
    ws = np.array([1, 2, 3, 4], np.int32)
    h, n, ys, ns = run_both(SCAN, [h0, n0, xs, ws])
    # Independent python loop (jax.lax.scan semantics).
    hh, nn, want_ys, want_ns = h0.copy(), int(n0), [], []
    for t in range(4):
        hh = np.tanh(hh + xs[t])
        nn += int(ws[t])
        want_ys.append(hh * hh)
        want_ns.append(nn)
    np.testing.assert_allclose(h, hh, rtol=1e-6)
    assert int(n) == nn and n.dtype == np.int32 and n.shape == ()
    np.testing.assert_allclose(ys, np.stack(want_ys), rtol=1e-6)
    np.testing.assert_array_equal(ns, want_ns)


def test_scan_length_zero() -> None:
    text = (
        SCAN.replace("4x2xf32", "0x2xf32")
        .replace("4xi32", "0xi32")
        .replace("length = 4", "length = 0")
    )
    h0 = np.ones(2, np.float32)
    h, n, ys, ns = run_both(
        text, [h0, np.array(3, np.int32), np.zeros((0, 2), np.float32), np.zeros(0, np.int32)]
    )
    np.testing.assert_array_equal(h, h0)
    assert int(n) == 3 and ys.shape == (0, 2) and ns.shape == (0,)


def test_scan_body_may_use_outer_values_and_errors() -> None:
    text = """
    func.func @main(%c0: tensor<3xf32>, %w: tensor<3xf32>) -> tensor<3xf32> {
      %r = "rlx.scan"(%c0) <{operandSegmentSizes = array<i32: 1, 0>}> ({
      ^bb0(%c: tensor<3xf32>):
        %m = "rlx.mul"(%c, %w) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
        "rlx.yield"(%m) : (tensor<3xf32>) -> ()
      }) {length = 3 : i64} : (tensor<3xf32>) -> tensor<3xf32>
      func.return %r : tensor<3xf32>
    }"""
    c0 = np.array([1.0, 2.0, 3.0], np.float32)
    w = np.array([2.0, 0.5, -1.0], np.float32)
    (r,) = run(parse_module(text, with_rlx=False), [c0, w])
    np.testing.assert_array_equal(r, c0 * w**3)
    # eval_op alone has no outer scope: the use of %w is reported.
    scan = parse_module(text, with_rlx=False).body.block.ops.first.body.block.ops.first
    with pytest.raises(InterpreterError, match="not defined"):
        eval_op(scan, [c0])
    bad = SCAN.replace("length = 4", "length = 3")
    with pytest.raises(InterpreterError, match="axis 0 must be 3"):
        run(parse_module(bad, with_rlx=False), [np.zeros(2, np.float32), np.array(0, np.int32),
            np.zeros((4, 2), np.float32), np.zeros(4, np.int32)])  # fmt: skip


# ----------------------------------------------------------------------------- if

IF = """
func.func @main(%c: tensor<1xi1>, %x: tensor<3xf32>, %i: tensor<2xi32>) -> (tensor<2xf32>, tensor<i32>) {
  %r:2 = "rlx.if"(%c) ({
    %g = "rlx.gather"(%x, %i) {axis = 0 : i64} : (tensor<3xf32>, tensor<2xi32>) -> tensor<2xf32>
    %k = "rlx.constant"() {value = dense<1> : tensor<i32>} : () -> tensor<i32>
    "rlx.yield"(%g, %k) : (tensor<2xf32>, tensor<i32>) -> ()
  }, {
    %s = "rlx.slice"(%x) {starts = array<i64: 1>, limits = array<i64: 3>} : (tensor<3xf32>) -> tensor<2xf32>
    %k = "rlx.constant"() {value = dense<2> : tensor<i32>} : () -> tensor<i32>
    "rlx.yield"(%s, %k) : (tensor<2xf32>, tensor<i32>) -> ()
  }) : (tensor<1xi1>) -> (tensor<2xf32>, tensor<i32>)
  func.return %r#0, %r#1 : tensor<2xf32>, tensor<i32>
}
"""


def test_if_runs_only_the_taken_region() -> None:
    x = np.array([1.0, 2.0, 3.0], np.float32)
    g, k = run_both(IF, [np.array([True]), x, np.array([2, 0], np.int32)])
    np.testing.assert_array_equal(g, [3.0, 1.0])
    assert int(k) == 1
    # the then region's gather would raise on these indices; it does not run
    s, k = run_both(IF, [np.array([False]), x, np.array([7, -9], np.int32)])
    np.testing.assert_array_equal(s, [2.0, 3.0])
    assert int(k) == 2
    with pytest.raises(IndexError):
        run(IF, [np.array([True]), x, np.array([7, 0], np.int32)])


# ----------------------------------------------------------------------------- fused


def _gelu(x):
    return np.array([0.5 * v * (1 + math.erf(v / math.sqrt(2))) for v in x.ravel()]).reshape(
        x.shape
    )


ACTS = {
    "none": lambda x: x,
    "relu": lambda x: np.where(x > 0, x, 0.0),
    "gelu": _gelu,
    "gelu_tanh": lambda x: 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3))),
    "silu": lambda x: x / (1 + np.exp(-x)),
}


@pytest.mark.parametrize("act", list(ACTS))
@pytest.mark.parametrize("dt", [np.float32, np.float16, BF16], ids=str)
def test_fused_matmul_bias_act(act: str, dt) -> None:
    x = RNG.standard_normal((2, 3, 4)).astype(dt)
    w = RNG.standard_normal((4, 5)).astype(dt)
    bias = RNG.standard_normal(5).astype(dt)
    attrs = "" if act == "none" else f'{{activation = "{act}"}}'
    text = single_op_module("rlx.fused_matmul_bias_act", [x, w, bias], [((2, 3, 5), dt)], attrs)
    (got,) = run_both(text, [x, w, bias])
    pre = np.einsum("bsk,kn->bsn", x.astype(np.float64), w.astype(np.float64)) + bias.astype(
        np.float64
    )
    want = ACTS[act](pre)
    eps = float(ml_dtypes.finfo(dt).eps)
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=eps, atol=eps)


def test_fused_swiglu_three_operands_and_packed() -> None:
    x = RNG.standard_normal((3, 4)).astype(np.float32)
    wg = RNG.standard_normal((4, 6)).astype(np.float32)
    wu = RNG.standard_normal((4, 6)).astype(np.float32)
    (got,) = run_both(single_op_module("rlx.fused_swiglu", [x, wg, wu], [((3, 6), np.float32)]),
                      [x, wg, wu])  # fmt: skip
    g = x.astype(np.float64) @ wg
    u = x.astype(np.float64) @ wu
    np.testing.assert_allclose(got, g / (1 + np.exp(-g)) * u, rtol=1e-6, atol=1e-6)
    p = RNG.standard_normal((2, 5, 8)).astype(np.float32)
    first, second = p[..., :4].astype(np.float64), p[..., 4:].astype(np.float64)
    for attrs, gate, up in (("", second, first), ("{gate_first = true}", first, second),
                            ("{gate_first = false}", second, first)):  # fmt: skip
        text = single_op_module("rlx.fused_swiglu", [p], [((2, 5, 4), np.float32)], attrs)
        (got,) = run_both(text, [p])
        np.testing.assert_allclose(got, gate / (1 + np.exp(-gate)) * up, rtol=1e-6, atol=1e-7)


def test_fused_residual_norms() -> None:
    x = RNG.standard_normal((2, 3, 8)).astype(np.float32)
    r = RNG.standard_normal((2, 3, 8)).astype(np.float32)
    g = RNG.standard_normal(8).astype(np.float32)
    b = RNG.standard_normal(8).astype(np.float32)
    s = x.astype(np.float64) + r
    mu = s.mean(-1, keepdims=True)
    var = ((s - mu) ** 2).mean(-1, keepdims=True)
    text = single_op_module("rlx.fused_residual_layer_norm", [x, r, g, b], [x],
                            "{epsilon = 1.0e-03 : f64}")  # fmt: skip
    (got,) = run_both(text, [x, r, g, b])
    np.testing.assert_allclose(got, (s - mu) / np.sqrt(var + 1e-3) * g + b, rtol=1e-6, atol=1e-6)
    ms = (s**2).mean(-1, keepdims=True)
    (got,) = run_both(single_op_module("rlx.fused_residual_rms_norm", [x, r, g], [x]), [x, r, g])
    np.testing.assert_allclose(got, s / np.sqrt(ms + 1e-5) * g, rtol=1e-6, atol=1e-6)
    (got,) = run_both(single_op_module("rlx.fused_residual_rms_norm", [x, r, g, b], [x]),
                      [x, r, g, b])  # fmt: skip
    np.testing.assert_allclose(got, s / np.sqrt(ms + 1e-5) * g + b, rtol=1e-6, atol=1e-6)


def test_mlir_type_helper() -> None:
    assert mlir_type(np.zeros((2, 0), BF16)) == "tensor<2x0xbf16>"
    assert mlir_type(((), np.bool_)) == "tensor<i1>"
