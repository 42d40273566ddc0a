"""convert-rlx-to-linalg + plan-memory, end to end: elementwise, matmul, reductions, norms
and shape ops are lowered to LLVM, JIT-compiled and compared with the reference
interpreter on random inputs (see test_rlx_to_linalg_harness). Each test compiles one module
holding many cases, to keep the suite fast."""

from __future__ import annotations

import numpy as np
import pytest
from test_rlx_to_linalg_harness import check, compile_text, multi_op, one_op, rand, t

UNARY = ["neg", "abs", "exp", "log", "sqrt", "rsqrt", "sin", "cos", "tanh", "sigmoid", "relu",
         "gelu", "gelu_tanh", "silu", "erf", "floor", "ceil", "round"]  # fmt: skip
POSITIVE = {"log", "sqrt", "rsqrt"}
TRANSCENDENTAL = {"exp", "log", "sin", "cos", "tanh", "sigmoid", "gelu", "gelu_tanh", "silu", "erf"}


def test_unary_f32() -> None:
    shp = (7, 13)
    xs = []
    for i, kind in enumerate(UNARY):
        x = rand(shp, seed=i) * 3
        if kind in POSITIVE:
            x = np.abs(x) + 0.1
        if kind == "round":
            x = np.array([0.5, 1.5, 2.5, -0.5, -1.5, 2.4, -2.6] * 13, np.float32).reshape(shp)
        xs.append(x)
    text = multi_op([(f"rlx.{k}", [t(shp)], t(shp), "") for k in UNARY])
    check(
        text,
        xs,
        rtol=[1e-4 if k in TRANSCENDENTAL else 1e-5 for k in UNARY],
        atol=1e-6,
        names=UNARY,
    )


@pytest.mark.parametrize("e", ["f16", "bf16", "f64"])
def test_unary_other_floats(e: str) -> None:
    kinds = ["gelu", "silu", "exp", "rsqrt", "round", "neg"]
    xs = [
        np.abs(rand((5, 3), e, seed=i)) if k == "rsqrt" else rand((5, 3), e, seed=i)
        for i, k in enumerate(kinds)
    ]
    text = multi_op([(f"rlx.{k}", [t((5, 3), e)], t((5, 3), e), "") for k in kinds])
    check(text, xs, rtol=1e-6 if e == "f64" else None, names=kinds)


def test_unary_int() -> None:
    cases = [
        (k, e)
        for e in ("i32", "i8", "ui8")
        for k in ("neg", "abs", "relu")
        if (k, e) != ("neg", "ui8")
    ]
    text = multi_op([(f"rlx.{k}", [t((9,), e)], t((9,), e), "") for k, e in cases])
    xs = [rand((9,), e, seed=i) for i, (_, e) in enumerate(cases)]
    xs[0][0] = np.iinfo(np.int32).min
    check(text, xs, names=[f"{k}:{e}" for k, e in cases])


BINARY = ["add", "sub", "mul", "div", "max", "min", "pow"]
BCAST = [
    ((7, 1), (1, 13), (7, 13)),
    ((13,), (7, 13), (7, 13)),
    ((2, 1, 5), (3, 1), (2, 3, 5)),
    ((), (4,), (4,)),
    ((1,), (1,), (1,)),
]


@pytest.mark.parametrize("shapes", BCAST)
def test_binary_f32_broadcast(shapes: tuple) -> None:
    a, b, o = shapes
    xs = []
    for i, k in enumerate(BINARY):
        x, y = rand(a, seed=2 * i), rand(b, seed=2 * i + 1)
        xs += [np.abs(x) + 0.5 if k == "pow" else x, y]
    text = multi_op([(f"rlx.{k}", [t(a), t(b)], t(o), "") for k in BINARY])
    check(text, xs, rtol=[1e-4 if k == "pow" else 1e-5 for k in BINARY], names=BINARY)


@pytest.mark.parametrize("e", ["i32", "i64", "ui8", "i8"])
def test_binary_int(e: str) -> None:
    xs = []
    for i, k in enumerate(BINARY):
        x, y = rand((4, 6), e, seed=2 * i), rand((6,), e, seed=2 * i + 1)
        if k == "div":
            y = np.where(y == 0, 3, y).astype(y.dtype)
        if k == "pow":
            y = (np.abs(y.astype(np.int64)) % 4).astype(y.dtype)
        xs += [x, y]
    # INT_MIN / -1 is a run-time error (not a wrap): tests/unit/test_int_div.py
    text = multi_op([(f"rlx.{k}", [t((4, 6), e), t((6,), e)], t((4, 6), e), "") for k in BINARY])
    check(text, xs, names=BINARY)


@pytest.mark.parametrize("e", ["f32", "i32", "ui8", "f16"])
def test_compare(e: str) -> None:
    preds = ["eq", "ne", "lt", "le", "gt", "ge"]
    xs = []
    for i in range(len(preds)):
        x, y = rand((5, 4), e, seed=2 * i), rand((4,), e, seed=2 * i + 1)
        x[0, :] = y
        if e.startswith("f"):
            x[1, 0] = np.nan
        xs += [x, y]
    text = multi_op(
        [
            ("rlx.compare", [t((5, 4), e), t((4,), e)], t((5, 4), "i1"), f'{{predicate = "{p}"}}')
            for p in preds
        ]
    )
    check(text, xs, names=preds)


def test_where_broadcast() -> None:
    text = one_op("rlx.where", [t((3, 1), "i1"), t((4,)), t((3, 4))], t((3, 4)))
    check(text, [rand((3, 1), "i1", seed=10), rand((4,), seed=11), rand((3, 4), seed=12)])


CASTS = [("f32", "f16"), ("f16", "f32"), ("f32", "bf16"), ("f32", "i32"), ("f32", "ui8"), ("i32", "f32"),
         ("ui8", "f32"), ("i32", "i8"), ("i8", "i64"), ("ui8", "i32"), ("f32", "i1"), ("i1", "f32"), ("i32", "i1"),
         ("f64", "f16"), ("f16", "f64"), ("f64", "bf16"), ("bf16", "f16")]  # fmt: skip


def test_cast() -> None:
    xs = []
    for i, (src, _) in enumerate(CASTS):
        x = rand((6, 5), src, seed=i)
        if src.startswith("f"):
            x = (x * 50).astype(x.dtype)
            x.reshape(-1)[:3] = [np.nan, np.inf, -6e4]
        xs.append(x)
    text = multi_op([("rlx.cast", [t((6, 5), s)], t((6, 5), d), "") for s, d in CASTS])
    check(text, xs, rtol=0, atol=0, names=[f"{s}->{d}" for s, d in CASTS])


def test_elementwise_region() -> None:
    text = """
func.func @main(%a: tensor<4x5xf32>, %b: tensor<5xf32>) -> tensor<4x5xf32> {
  %r = rlx.elementwise_region %a, %b : (tensor<4x5xf32>, tensor<5xf32>) -> tensor<4x5xf32> {
  ^bb0(%x: f32, %y: f32):
    %s = arith.mulf %x, %y : f32
    %e = math.exp %s : f32
    rlx.yield %e : f32
  }
  func.return %r : tensor<4x5xf32>
}
"""
    check(text, [rand((4, 5), seed=14), rand((5,), seed=15)], rtol=1e-5)


MATMULS = [
    ((7, 13), (13, 5)),
    ((1, 1), (1, 1)),
    ((2, 3, 4), (4, 5)),
    ((3, 1, 4, 6), (2, 6, 3)),
    ((5, 1023), (1023, 3)),
    ((4, 8), (3, 8, 2)),
]


def test_matmul() -> None:
    cases, xs = [], []
    for i, (a, b) in enumerate(MATMULS):
        o = np.matmul(np.zeros(a), np.zeros(b)).shape
        cases.append(("rlx.matmul", [t(a), t(b)], t(o), ""))
        xs += [rand(a, seed=2 * i), rand(b, seed=2 * i + 1)]
    check(multi_op(cases), xs, rtol=1e-5, atol=1e-5, scale_atol=True)


def test_matmul_dtypes() -> None:
    es = ["f16", "bf16", "i32", "f64", "i8"]
    text = multi_op(
        [("rlx.matmul", [t((2, 5, 9), e), t((9, 4), e)], t((2, 5, 4), e), "") for e in es]
    )
    xs = [
        x
        for i, e in enumerate(es)
        for x in (rand((2, 5, 9), e, seed=2 * i), rand((9, 4), e, seed=2 * i + 1))
    ]
    check(text, xs, rtol=[None, None, None, 1e-12, None], names=es)


def test_transpose_then_matmul() -> None:
    text = """
func.func @main(%a: tensor<6x5xf32>, %b: tensor<6x3xf32>) -> tensor<5x3xf32> {
  %at = rlx.transpose %a {permutation = array<i64: 1, 0>} : (tensor<6x5xf32>) -> tensor<5x6xf32>
  %r = rlx.matmul %at, %b : (tensor<5x6xf32>, tensor<6x3xf32>) -> tensor<5x3xf32>
  func.return %r : tensor<5x3xf32>
}
"""
    check(text, [rand((6, 5), seed=20), rand((6, 3), seed=21)], atol=1e-5)


def test_fused_matmul_family() -> None:
    acts = ["none", "relu", "gelu", "gelu_tanh", "silu"]
    cases = [
        (
            "rlx.fused_matmul_bias_act",
            [t((2, 3, 8)), t((8, 5)), t((5,))],
            t((2, 3, 5)),
            f'{{activation = "{a}"}}',
        )
        for a in acts
    ]
    xs = [
        x
        for i in range(len(acts))
        for x in (
            rand((2, 3, 8), seed=3 * i),
            rand((8, 5), seed=3 * i + 1),
            rand((5,), seed=3 * i + 2),
        )
    ]
    cases.append(
        (
            "rlx.fused_matmul_bias_act",
            [t((3, 8), "f16"), t((8, 5), "f16"), t((), "f16")],
            t((3, 5), "f16"),
            '{activation = "silu"}',
        )
    )
    xs += [rand((3, 8), "f16", 25), rand((8, 5), "f16", 26), rand((), "f16", 27)]
    cases.append(("rlx.fused_swiglu", [t((2, 3, 8)), t((8, 5)), t((8, 5))], t((2, 3, 5)), ""))
    xs += [rand((2, 3, 8), seed=28), rand((8, 5), seed=29), rand((8, 5), seed=30)]
    cases.append(
        (
            "rlx.fused_swiglu",
            [t((3, 8), "bf16"), t((8, 5), "bf16"), t((8, 5), "bf16")],
            t((3, 5), "bf16"),
            "",
        )
    )
    xs += [rand((3, 8), "bf16", 31), rand((8, 5), "bf16", 32), rand((8, 5), "bf16", 33)]
    for g in ("true", "false"):
        cases.append(("rlx.fused_swiglu", [t((3, 10))], t((3, 5)), f"{{gate_first = {g}}}"))
        xs.append(rand((3, 10), seed=34))
    rtol = [1e-4] * 5 + [None, 1e-4, None, 1e-4, 1e-4]
    check(multi_op(cases), xs, rtol=rtol, atol=[1e-5] * 5 + [None, 1e-5, None, 1e-6, 1e-6])


REDUCES = [((7, 13), "array<i64: 1>", False, (7,)), ((7, 13), "array<i64: 0>", True, (1, 13)),
           ((2, 3, 5), "array<i64: -1, 0>", False, (3,)), ((4, 1023), "array<i64: 1>", True, (4, 1)),
           ((3, 4), None, False, ())]  # fmt: skip


@pytest.mark.parametrize("kind", ["sum", "mean", "max", "min", "prod"])
def test_reduce(kind: str) -> None:
    cases, xs = [], []
    for i, (shp, axes, keep, out) in enumerate(REDUCES):
        attrs = (
            f'{{kind = "{kind}"'
            + (f", axes = {axes}" if axes else "")
            + (", keepdims = true" if keep else "")
            + "}"
        )
        cases.append(("rlx.reduce", [t(shp)], t(out), attrs))
        x = rand(shp, seed=i, lo=0.5, hi=1.5) if kind == "prod" else rand(shp, seed=i)
        xs.append(rand(shp, seed=i, lo=0.999, hi=1.001) if kind == "prod" and shp[-1] > 100 else x)
    check(multi_op(cases), xs, rtol=1e-5, atol=1e-5, scale_atol=True)


def test_reduce_dtypes() -> None:
    cases = [
        (k, e) for e in ("f16", "i32", "ui8", "i8", "bf16") for k in ("sum", "mean", "max", "min")
    ]
    text = multi_op(
        [
            ("rlx.reduce", [t((5, 6), e)], t((5,), e), f'{{kind = "{k}", axes = array<i64: 1>}}')
            for k, e in cases
        ]
    )
    xs = [rand((5, 6), e, seed=i) for i, (_, e) in enumerate(cases)]
    check(text, xs, names=[f"{k}:{e}" for k, e in cases])


def test_softmax() -> None:
    shapes = [((7, 13), -1), ((7, 13), 0), ((2, 3, 5), 1), ((1023,), 0)]
    cases = [("rlx.softmax", [t(s)], t(s), f"{{axis = {a}}}") for s, a in shapes]
    cases.append(("rlx.softmax", [t((3, 7), "bf16")], t((3, 7), "bf16"), ""))
    xs = [rand(s, seed=i) * 4 for i, (s, _) in enumerate(shapes)] + [rand((3, 7), "bf16", 35)]
    check(multi_op(cases), xs, rtol=[1e-5] * 4 + [None], atol=[1e-6] * 4 + [None])


def test_cumsum() -> None:
    params = [
        ((7, 13), -1, False, "f32"),
        ((4, 5, 3), 1, True, "f32"),
        ((9,), 0, False, "i32"),
        ((3, 4), 0, True, "f16"),
        ((1023,), 0, False, "f32"),
    ]
    cases = [
        (
            "rlx.cumsum",
            [t(s, e)],
            t(s, e),
            f"{{axis = {a}, exclusive = {'true' if x else 'false'}}}",
        )
        for s, a, x, e in params
    ]
    xs = [rand(s, e, i) for i, (s, _, _, e) in enumerate(params)]
    check(multi_op(cases), xs)


def test_norms() -> None:
    cases, xs = [], []
    for i, e in enumerate(["f32", "f16", "bf16"]):
        cases.append(
            (
                "rlx.layer_norm",
                [t((2, 3, 13), e), t((13,), e), t((13,), e)],
                t((2, 3, 13), e),
                "{epsilon = 1.0e-05 : f64}",
            )
        )
        xs += [
            rand((2, 3, 13), e, 3 * i) * 3 + 1,
            rand((13,), e, 3 * i + 1),
            rand((13,), e, 3 * i + 2),
        ]
    cases.append(("rlx.rms_norm", [t((4, 1023)), t((1023,))], t((4, 1023)), ""))
    xs += [rand((4, 1023), seed=40), rand((1023,), seed=41)]
    cases.append(
        ("rlx.rms_norm", [t((5,)), t((5,)), t((5,))], t((5,)), "{epsilon = 1.0e-03 : f64}")
    )
    xs += [rand((5,), seed=42), rand((5,), seed=43), rand((5,), seed=44)]
    cases.append(
        ("rlx.fused_residual_layer_norm", [t((3, 7)), t((3, 7)), t((7,)), t((7,))], t((3, 7)), "")
    )
    xs += [rand((3, 7), seed=45), rand((3, 7), seed=46), rand((7,), seed=47), rand((7,), seed=48)]
    cases.append(("rlx.fused_residual_rms_norm", [t((3, 7)), t((3, 7)), t((7,))], t((3, 7)), ""))
    xs += [rand((3, 7), seed=49), rand((3, 7), seed=50), rand((7,), seed=51)]
    f32 = (1e-4, 1e-5)
    check(
        multi_op(cases),
        xs,
        rtol=[f32[0], None, None, *[f32[0]] * 4],
        atol=[f32[1], None, None, *[f32[1]] * 4],
    )


SHAPE_OPS = """
func.func @main(%a: tensor<2x3x4xf32>, %b: tensor<2x5x4xf32>, %i: tensor<2x3xi32>, %u: tensor<4xui8>) -> (tensor<6x4xf32>, tensor<4x2x3xf32>, tensor<2x8x4xf32>, tensor<1x2x2xf32>, tensor<3x2x3x4xf32>, tensor<2x2x3x4xf32>, tensor<2x4x4xf32>, tensor<2x3x1xf32>) {
  %r = rlx.reshape %a : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
  %t = rlx.transpose %a {permutation = array<i64: 2, 0, 1>} : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
  %c = rlx.concat %a, %b {axis = -2} : (tensor<2x3x4xf32>, tensor<2x5x4xf32>) -> tensor<2x8x4xf32>
  %s = rlx.slice %a {starts = array<i64: 1, 0, 1>, limits = array<i64: 2, 3, 4>, strides = array<i64: 1, 2, 2>} : (tensor<2x3x4xf32>) -> tensor<1x2x2xf32>
  %bt = rlx.broadcast_to %a : (tensor<2x3x4xf32>) -> tensor<3x2x3x4xf32>
  %g = rlx.gather %a, %i {axis = 1} : (tensor<2x3x4xf32>, tensor<2x3xi32>) -> tensor<2x2x3x4xf32>
  %gu = rlx.gather %a, %u {axis = 1} : (tensor<2x3x4xf32>, tensor<4xui8>) -> tensor<2x4x4xf32>
  %gl = rlx.gather %a, %i {axis = -1} : (tensor<2x3x4xf32>, tensor<2x3xi32>) -> tensor<2x3x2x3xf32>
  %sl = rlx.slice %gl {starts = array<i64: 0, 0, 1, 2>, limits = array<i64: 2, 3, 2, 3>} : (tensor<2x3x2x3xf32>) -> tensor<2x3x1x1xf32>
  %rs = rlx.reshape %sl : (tensor<2x3x1x1xf32>) -> tensor<2x3x1xf32>
  func.return %r, %t, %c, %s, %bt, %g, %gu, %rs : tensor<6x4xf32>, tensor<4x2x3xf32>, tensor<2x8x4xf32>, tensor<1x2x2xf32>, tensor<3x2x3x4xf32>, tensor<2x2x3x4xf32>, tensor<2x4x4xf32>, tensor<2x3x1xf32>
}
"""


def test_shape_ops() -> None:
    idx = np.array([[0, 2, -1], [1, -3, 2]], np.int32)
    u = np.array([2, 0, 1, 2], np.uint8)
    check(SHAPE_OPS, [rand((2, 3, 4), seed=50), rand((2, 5, 4), seed=51), idx, u], rtol=0, atol=0)


def test_reshape_views_and_returned_input() -> None:
    text = """
func.func @main(%a: tensor<2x3xf32>) -> (tensor<3x2xf32>, tensor<2x3xf32>, tensor<f32>, tensor<3x2xf32>) {
  %r = rlx.reshape %a : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %e = rlx.exp %r : (tensor<3x2xf32>) -> tensor<3x2xf32>
  %f = rlx.reshape %e : (tensor<3x2xf32>) -> tensor<6xf32>
  %s = rlx.reduce %f {kind = "sum"} : (tensor<6xf32>) -> tensor<f32>
  %one = rlx.reshape %s : (tensor<f32>) -> tensor<1x1xf32>
  %back = rlx.reshape %one : (tensor<1x1xf32>) -> tensor<f32>
  func.return %e, %a, %back, %e : tensor<3x2xf32>, tensor<2x3xf32>, tensor<f32>, tensor<3x2xf32>
}
"""
    check(text, [rand((2, 3), seed=52)], rtol=1e-5)


def test_params_and_constants() -> None:
    text = """
func.func @main(%x: tensor<2x3xf32> {rlx.name = "x"}) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2xui8>) {
  %w = rlx.param "w" : tensor<2x3xf32>
  %c = rlx.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %z = rlx.constant dense<0.5> : tensor<2x3xf32>
  %u = rlx.constant dense<[200, 7]> : tensor<2xui8>
  %w2 = rlx.param "w" : tensor<2x3xf32>
  %a = rlx.add %x, %w : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %b = rlx.mul %a, %c : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %d = rlx.add %b, %w2 : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %d, %z, %u : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2xui8>
}
"""
    c = compile_text(text)
    assert c.arg_attrs == [
        ("input", "x"),
        ("param", "w"),
        ("output", "out0"),
        ("output", "out1"),
        ("output", "out2"),
        ("arena", "arena"),
    ]
    check(text, [rand((2, 3), seed=53)], {"w": rand((2, 3), seed=54)})
