"""convert-rlx-to-linalg end to end for attention, rope, conv2d, pool2d, quantization,
GGML / scaled matmuls, RNG and scan (JIT vs the reference interpreter)."""

from __future__ import annotations

import numpy as np
from test_rlx_to_linalg_harness import check, multi_op, rand, t

from rlx.formats import ggml


def test_attention() -> None:
    q, k, v = (2, 3, 5, 8), (2, 3, 7, 8), (2, 3, 7, 6)
    o = (2, 3, 5, 6)
    cases = [
        ("rlx.attention", [t(q), t(k), t(v)], t(o), ""),
        ("rlx.attention", [t(q), t(k), t(v)], t(o), '{mask_kind = "causal", scale = 0.5 : f64}'),
        (
            "rlx.attention",
            [t(q), t(k), t(v)],
            t(o),
            '{mask_kind = "sliding_window", window = 2, softcap = 3.0 : f64}',
        ),
        ("rlx.attention", [t(q), t(k), t(v), t((1, 3, 1, 7))], t(o), '{mask_kind = "bias"}'),
        (
            "rlx.attention",
            [t((1, 2, 7, 4)), t((1, 2, 3, 4)), t((1, 2, 3, 4))],
            t((1, 2, 7, 4)),
            '{mask_kind = "causal"}',
        ),
        (
            "rlx.attention",
            [t(q, "f16"), t(k, "f16"), t(v, "f16")],
            t(o, "f16"),
            '{mask_kind = "causal"}',
        ),
    ]
    xs = [rand(q, seed=1), rand(k, seed=2), rand(v, seed=3)] * 3
    bias = rand((1, 3, 1, 7), seed=4)
    bias[0, 0, 0, 2] = -np.inf
    xs += [rand(q, seed=5), rand(k, seed=6), rand(v, seed=7), bias]
    xs += [rand((1, 2, 7, 4), seed=8), rand((1, 2, 3, 4), seed=9), rand((1, 2, 3, 4), seed=10)]
    xs += [rand(q, "f16", 11), rand(k, "f16", 12), rand(v, "f16", 13)]
    check(multi_op(cases), xs, rtol=[1e-4] * 5 + [None], atol=[1e-5] * 5 + [None])


def test_rope() -> None:
    cases = [
        ("rlx.rope", [t((2, 5, 8)), t((5, 4)), t((5, 4))], t((2, 5, 8)), ""),
        ("rlx.rope", [t((1, 2, 5, 10)), t((5, 1)), t((1, 5, 1))], t((1, 2, 5, 10)), "{n_rot = 6}"),
        ("rlx.rope", [t((3, 4), "f16"), t((3, 2), "f16"), t((3, 2), "f16")], t((3, 4), "f16"), ""),
    ]
    xs = [rand((2, 5, 8), seed=1), rand((5, 4), seed=2), rand((5, 4), seed=3)]
    xs += [rand((1, 2, 5, 10), seed=4), rand((5, 1), seed=5), rand((1, 5, 1), seed=6)]
    xs += [rand((3, 4), "f16", 7), rand((3, 2), "f16", 8), rand((3, 2), "f16", 9)]
    check(multi_op(cases), xs, rtol=[1e-5, 1e-5, None], atol=[1e-6, 1e-6, None])


def test_conv_pool() -> None:
    x = (2, 4, 9, 7)
    cases = [
        ("rlx.conv2d", [t(x), t((6, 4, 3, 3)), t((6,))], t((2, 6, 7, 5)), ""),
        ("rlx.conv2d", [t(x), t((6, 2, 3, 2))], t((2, 6, 5, 3)),
         "{strides = array<i64: 2, 2>, padding = array<i64: 1, 0, 2, 1>, dilations = array<i64: 1, 2>, groups = 2}"),
        ("rlx.conv2d", [t(x, "f16"), t((3, 4, 1, 1), "f16")], t((2, 3, 9, 7), "f16"), ""),
        ("rlx.pool2d", [t(x)], t((2, 4, 4, 3)), '{kind = "max", kernel = array<i64: 2, 2>}'),
        ("rlx.pool2d", [t(x)], t((2, 4, 5, 4)),
         '{kind = "avg", kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>}'),
        ("rlx.pool2d", [t(x, "i32")], t((2, 4, 9, 7), "i32"),
         '{kind = "max", kernel = array<i64: 3, 3>, strides = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>}'),
    ]  # fmt: skip
    xs = [
        rand(x, seed=1),
        rand((6, 4, 3, 3), seed=2),
        rand((6,), seed=3),
        rand(x, seed=4),
        rand((6, 2, 3, 2), seed=5),
    ]
    xs += [
        rand(x, "f16", 6),
        rand((3, 4, 1, 1), "f16", 7),
        rand(x, seed=8),
        rand(x, seed=9),
        rand(x, "i32", 10),
    ]
    check(
        multi_op(cases),
        xs,
        rtol=[1e-5, 1e-5, None, 0, 1e-5, 0],
        atol=[1e-5, 1e-5, None, 0, 1e-6, 0],
    )


def test_affine_quant() -> None:
    x = (3, 4)
    pc = "{scale = array<f64: 0.1, 0.2, 0.05>, zero_point = array<i64: 1, -2, 0>, axis = 0}"
    cases = [
        ("rlx.quantize", [t(x)], t(x, "i8"), "{scale = 0.05 : f64, zero_point = 3}"),
        ("rlx.quantize", [t(x)], t(x, "i8"), pc),
        ("rlx.dequantize", [t(x, "i8")], t(x), "{scale = 0.05 : f64, zero_point = 3}"),
        ("rlx.dequantize", [t(x, "i8")], t(x, "f16"), pc),
        ("rlx.fake_quantize", [t(x)], t(x), "{scale = 0.1 : f64, bits = 4}"),
        (
            "rlx.fake_quantize",
            [t(x)],
            t(x),
            "{scale = array<f64: 0.5, 0.25, 0.125, 1.0>, axis = -1}",
        ),
    ]
    q = rand(x, seed=1) * 5
    q[0, :3] = [np.nan, 100.0, 0.025]
    xs = [
        q,
        rand(x, seed=2),
        rand(x, "i8", 3),
        rand(x, "i8", 4),
        rand(x, seed=5),
        rand(x, seed=6) * 3,
    ]
    check(multi_op(cases), xs, rtol=1e-6, atol=1e-7)


def test_dequant_matmul() -> None:
    rng = np.random.default_rng(0)
    w8 = rng.standard_normal((5, 64)).astype(np.float32)
    wt = rng.integers(-1, 2, size=(3, 256)).astype(np.float32) * 0.5
    p8, pt = ggml.quantize(w8, "q8_0"), ggml.quantize(wt, "tq2_0")
    cases = [
        (
            "rlx.dequant_matmul",
            [t((2, 3, 64)), t(p8.shape, "ui8")],
            t((2, 3, 5)),
            '{scheme = "q8_0", n = 5, k = 64}',
        ),
        (
            "rlx.dequant_matmul",
            [t((4, 256)), t(pt.shape, "ui8")],
            t((4, 3)),
            '{scheme = "tq2_0", n = 3, k = 256}',
        ),
    ]
    check(
        multi_op(cases),
        [rand((2, 3, 64), seed=1), p8, rand((4, 256), seed=2), pt],
        rtol=1e-5,
        atol=1e-5,
        scale_atol=True,
    )


SCALED = """
func.func @main(%x: tensor<3x20xf32>, %y: tensor<4x20xf32>, %bias: tensor<4xf32>, %z: tensor<3x20xf32>) -> (tensor<1xf32>, tensor<3x20xui8>, tensor<3x3xui8>, tensor<3x20xui8>, tensor<3x2xui8>, tensor<3x20xui8>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x20xui8>) {
  %s0 = rlx.scaled_quant_scale %x {format = "f8e4m3", scale_layout = "per_tensor"} : (tensor<3x20xf32>) -> tensor<1xf32>
  %c0 = rlx.scaled_quantize %x, %s0 {format = "f8e4m3", scale_layout = "per_tensor"} : (tensor<3x20xf32>, tensor<1xf32>) -> tensor<3x20xui8>
  %s1 = rlx.scaled_quant_scale %x {format = "f4e2m1", scale_layout = "mx/8"} : (tensor<3x20xf32>) -> tensor<3x3xui8>
  %c1 = rlx.scaled_quantize %x, %s1 {format = "f4e2m1", scale_layout = "mx/8"} : (tensor<3x20xf32>, tensor<3x3xui8>) -> tensor<3x20xui8>
  %s2 = rlx.scaled_quant_scale %z {format = "f8e5m2fnuz", scale_layout = "nvfp4"} : (tensor<3x20xf32>) -> tensor<3x2xui8>
  %c2 = rlx.scaled_quantize %z, %s2 {format = "f8e5m2fnuz", scale_layout = "nvfp4"} : (tensor<3x20xf32>, tensor<3x2xui8>) -> tensor<3x20xui8>
  %t0 = rlx.scaled_quant_scale %y {format = "f8e4m3", scale_layout = "per_tensor"} : (tensor<4x20xf32>) -> tensor<1xf32>
  %d0 = rlx.scaled_quantize %y, %t0 {format = "f8e4m3", scale_layout = "per_tensor"} : (tensor<4x20xf32>, tensor<1xf32>) -> tensor<4x20xui8>
  %m0 = rlx.scaled_matmul %c0, %d0, %s0, %t0, %bias {lhs_format = "f8e4m3", rhs_format = "f8e4m3", scale_layout = "per_tensor"} : (tensor<3x20xui8>, tensor<4x20xui8>, tensor<1xf32>, tensor<1xf32>, tensor<4xf32>) -> tensor<3x4xf32>
  %t1 = rlx.scaled_quant_scale %y {format = "f6e3m2", scale_layout = "mx/8"} : (tensor<4x20xf32>) -> tensor<4x3xui8>
  %d1 = rlx.scaled_quantize %y, %t1 {format = "f6e3m2", scale_layout = "mx/8"} : (tensor<4x20xf32>, tensor<4x3xui8>) -> tensor<4x20xui8>
  %m1 = rlx.scaled_matmul %c1, %d1, %s1, %t1 {lhs_format = "f4e2m1", rhs_format = "f6e3m2", scale_layout = "mx/8"} : (tensor<3x20xui8>, tensor<4x20xui8>, tensor<3x3xui8>, tensor<4x3xui8>) -> tensor<3x4xf32>
  %s3 = rlx.scaled_quant_scale %z {format = "f5e2m2", scale_layout = "mx"} : (tensor<3x20xf32>) -> tensor<3x1xui8>
  %c3 = rlx.scaled_quantize %z, %s3 {format = "f5e2m2", scale_layout = "mx"} : (tensor<3x20xf32>, tensor<3x1xui8>) -> tensor<3x20xui8>
  func.return %s0, %c0, %s1, %c1, %s2, %c2, %m0, %m1, %c3 : tensor<1xf32>, tensor<3x20xui8>, tensor<3x3xui8>, tensor<3x20xui8>, tensor<3x2xui8>, tensor<3x20xui8>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x20xui8>
}
"""


def test_scaled_lowp() -> None:
    x = rand((3, 20), seed=1) * 10
    x[1, 8:16] = 0.0  # an all-zero mx block
    x[2, :6] = [0.5, 1.5, 2.5, -3.5, 448.0, 1e-9]  # ties and extremes
    z = rand((3, 20), seed=4) * 1e3
    z[0, :4] = [0.0, -0.0, np.nan, -np.inf]
    z[1, 16:] = 0.0
    z[2, :5] = [1e-30, -1e-30, 3e38, 57344.0, 0.5]
    check(SCALED, [x, rand((4, 20), seed=2) * 3, rand((4,), seed=3), z], rtol=0, atol=0)


RNG = """
func.func @main() -> (tensor<3x5xf32>, tensor<7xf32>, tensor<2x3xf64>, tensor<5xf16>, tensor<f32>, tensor<4xf64>) {
  %u = rlx.rng_uniform {low = -2.0 : f64, high = 3.0 : f64, seed_offset = 3} : tensor<3x5xf32>
  %n = rlx.rng_normal {mean = 1.0 : f64, std = 0.5 : f64, seed_offset = 1} : tensor<7xf32>
  %n64 = rlx.rng_normal : tensor<2x3xf64>
  %u16 = rlx.rng_uniform {seed_offset = 9} : tensor<5xf16>
  %s = rlx.rng_uniform : tensor<f32>
  %u64 = rlx.rng_uniform {high = 10.0 : f64} : tensor<4xf64>
  func.return %u, %n, %n64, %u16, %s, %u64 : tensor<3x5xf32>, tensor<7xf32>, tensor<2x3xf64>, tensor<5xf16>, tensor<f32>, tensor<4xf64>
}
"""


def test_rng_bit_exact() -> None:
    check(RNG, [], rtol=0, atol=0)
    check(RNG, [], rtol=0, atol=0, rng_seed=2**64 - 5)


SCAN = """
func.func @main(%h0: tensor<4xf32>, %a0: tensor<2xf32>, %xs: tensor<5x4xf32>, %zs: tensor<5x2x3xf32>) -> (tensor<4xf32>, tensor<2xf32>, tensor<5x4xf32>, tensor<5x2x3xf32>) {
  %r:4 = rlx.scan (%h0, %a0) over (%xs, %zs) {length = 5} : (tensor<4xf32>, tensor<2xf32>), (tensor<5x4xf32>, tensor<5x2x3xf32>) -> (tensor<4xf32>, tensor<2xf32>, tensor<5x4xf32>, tensor<5x2x3xf32>) {
  ^bb0(%h: tensor<4xf32>, %a: tensor<2xf32>, %x: tensor<4xf32>, %z: tensor<2x3xf32>):
    %w = rlx.param "w" : tensor<4xf32>
    %m = rlx.mul %h, %w : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %s = rlx.add %m, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %hn = rlx.tanh %s : (tensor<4xf32>) -> tensor<4xf32>
    %zr = rlx.reduce %z {kind = "sum", axes = array<i64: 1>} : (tensor<2x3xf32>) -> tensor<2xf32>
    %an = rlx.add %a, %zr : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    rlx.yield %hn, %an, %hn, %z : tensor<4xf32>, tensor<2xf32>, tensor<4xf32>, tensor<2x3xf32>
  }
  func.return %r#0, %r#1, %r#2, %r#3 : tensor<4xf32>, tensor<2xf32>, tensor<5x4xf32>, tensor<5x2x3xf32>
}
"""

SWAP = """
func.func @main(%a0: tensor<3xf32>, %b0: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>, tensor<4x3xf32>) {
  %r:3 = rlx.scan (%a0, %b0) over () {length = 4} : (tensor<3xf32>, tensor<3xf32>), () -> (tensor<3xf32>, tensor<3xf32>, tensor<4x3xf32>) {
  ^bb0(%a: tensor<3xf32>, %b: tensor<3xf32>):
    %s = rlx.add %a, %b : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    rlx.yield %b, %s, %a : tensor<3xf32>, tensor<3xf32>, tensor<3xf32>
  }
  func.return %r#0, %r#1, %r#2 : tensor<3xf32>, tensor<3xf32>, tensor<4x3xf32>
}
"""


def test_scan() -> None:
    ins = [rand((4,), seed=1), rand((2,), seed=2), rand((5, 4), seed=3), rand((5, 2, 3), seed=4)]
    check(SCAN, ins, {"w": rand((4,), seed=5)}, rtol=1e-5, atol=1e-6)
    check(SWAP, [rand((3,), seed=6), rand((3,), seed=7)], rtol=1e-6, atol=0)
