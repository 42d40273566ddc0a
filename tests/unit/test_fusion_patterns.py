"""Each `fusion` pattern: the fused op appears and the reference interpreter gives the
same numbers before and after fusion."""

from __future__ import annotations

import numpy as np
import pytest
from test_fusion_common import assert_same_numbers, fuse, op_names, randn

from rlx.builder import Graph


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(0)


@pytest.mark.parametrize("act", ["relu", "gelu", "gelu_tanh", "silu", None])
@pytest.mark.parametrize("bias_first", [False, True])
def test_matmul_bias_act(rng: np.random.Generator, act: str | None, bias_first: bool) -> None:
    g = Graph()
    x = g.input("x", (3, 8))
    w, b = g.param("w", (8, 5)), g.param("b", (5,))
    mm = g.matmul(x, w)
    h = g.add(b, mm) if bias_first else g.add(mm, b)
    g.output(getattr(g, act)(h) if act else h)
    fused = assert_same_numbers(
        g.module, {"x": randn(rng, 3, 8)}, {"w": randn(rng, 8, 5), "b": randn(rng, 5)}
    )
    assert op_names(fused) == ["rlx.param", "rlx.param", "rlx.fused_matmul_bias_act"]


def test_matmul_bias_scalar_bias_and_batch(rng: np.random.Generator) -> None:
    g = Graph()
    x = g.input("x", (2, 3, 8))
    w, b = g.param("w", (8, 5)), g.param("b", (1,))
    g.output(g.silu(g.add(g.matmul(x, w), b)))
    fused = assert_same_numbers(
        g.module, {"x": randn(rng, 2, 3, 8)}, {"w": randn(rng, 8, 5), "b": randn(rng, 1)}
    )
    assert "rlx.fused_matmul_bias_act" in op_names(fused)


@pytest.mark.parametrize("kind", ["layer_norm", "rms_norm", "rms_norm_beta"])
def test_residual_norms(rng: np.random.Generator, kind: str) -> None:
    g = Graph()
    x, r = g.input("x", (4, 16)), g.input("r", (4, 16))
    gamma, beta = g.param("g", (16,)), g.param("b", (16,))
    s = g.add(x, r)
    if kind == "layer_norm":
        out = g.layer_norm(s, gamma, beta, epsilon=1e-6)
    elif kind == "rms_norm":
        out = g.rms_norm(s, gamma)
    else:
        out = g.rms_norm(s, gamma, beta)
    g.output(out)
    fused = assert_same_numbers(
        g.module,
        {"x": randn(rng, 4, 16), "r": randn(rng, 4, 16)},
        {"g": randn(rng, 16), "b": randn(rng, 16)},
    )
    want = (
        "rlx.fused_residual_layer_norm" if kind == "layer_norm" else "rlx.fused_residual_rms_norm"
    )
    assert want in op_names(fused) and "rlx.add" not in op_names(fused)


def test_rms_norm_reshape(rng: np.random.Generator) -> None:
    g = Graph()
    x = g.input("x", (2, 3, 16))
    gamma = g.param("g", (16,))
    g.output(g.reshape(g.rms_norm(x, gamma), (6, 16)))
    fused = assert_same_numbers(g.module, {"x": randn(rng, 2, 3, 16)}, {"g": randn(rng, 16)})
    assert op_names(fused) == ["rlx.param", "rlx.reshape", "rlx.rms_norm"]


@pytest.mark.parametrize("silu_first", [True, False])
def test_swiglu_dual_matmul(rng: np.random.Generator, silu_first: bool) -> None:
    g = Graph()
    x = g.input("x", (4, 8))
    wg, wu = g.param("wg", (8, 6)), g.param("wu", (8, 6))
    s, u = g.silu(g.matmul(x, wg)), g.matmul(x, wu)
    g.output(g.mul(s, u) if silu_first else g.mul(u, s))
    params = {"wg": randn(rng, 8, 6), "wu": randn(rng, 8, 6)}
    fused = assert_same_numbers(g.module, {"x": randn(rng, 4, 8)}, params)
    assert op_names(fused) == ["rlx.param", "rlx.param", "rlx.fused_swiglu"]
    # The equivalent packed route (dual pattern off): shared-input matmul + packed swiglu.
    packed = assert_same_numbers(
        g.module, {"x": randn(rng, 4, 8)}, params, swiglu_dual_matmul=False
    )
    assert "rlx.fused_swiglu" in op_names(packed) and "rlx.concat" in op_names(packed)


def test_shared_input_matmul(rng: np.random.Generator) -> None:
    g = Graph()
    x = g.input("x", (2, 3, 8))
    outs = [g.matmul(x, g.param(f"w{i}", (8, n))) for i, n in enumerate((4, 6, 2))]
    g.output(*outs)
    params = {f"w{i}": randn(rng, 8, n) for i, n in enumerate((4, 6, 2))}
    fused = assert_same_numbers(g.module, {"x": randn(rng, 2, 3, 8)}, params)
    names = op_names(fused)
    assert names.count("rlx.matmul") == 1 and names.count("rlx.slice") == 3


@pytest.mark.parametrize("gate_first", [True, False])
def test_swiglu_packed(rng: np.random.Generator, gate_first: bool) -> None:
    g = Graph()
    h = g.input("h", (2, 3, 8))
    lo = g.slice(h, starts=[0, 0, 0], limits=[2, 3, 4])
    hi = g.slice(h, starts=[0, 0, 4], limits=[2, 3, 8])
    gate, up = (lo, hi) if gate_first else (hi, lo)
    g.output(g.mul(up, g.silu(gate)))
    fused = assert_same_numbers(g.module, {"h": randn(rng, 2, 3, 8)})
    assert op_names(fused) == ["rlx.fused_swiglu"]
    op = next(iter(fused.body.block.ops)).regions[0].block.first_op
    assert op is not None and bool(op.attributes["gate_first"].value.data) == gate_first  # type: ignore[attr-defined]


@pytest.mark.parametrize("scale_op", ["mul", "mul_left", "div"])
@pytest.mark.parametrize("with_bias", [False, True])
def test_attention(rng: np.random.Generator, scale_op: str, with_bias: bool) -> None:
    g = Graph()
    q, k, v = (g.input(n, (1, 2, 4, 8)) for n in "qkv")
    bias = g.input("bias", (1, 1, 4, 4)) if with_bias else None
    s = g.matmul(q, g.transpose(k, permutation=[0, 1, 3, 2]))
    if scale_op == "div":
        s = g.div(s, g.constant(np.float32(np.sqrt(8.0))))
    elif scale_op == "mul":
        s = g.mul(s, g.constant(np.float32(0.3)))
    else:
        s = g.mul(g.constant(np.float32(0.3)), s)
    if bias is not None:
        s = g.add(s, bias)
    g.output(g.matmul(g.softmax(s, axis=-1), v))
    inputs = {n: randn(rng, 1, 2, 4, 8) for n in "qkv"}
    if with_bias:
        inputs["bias"] = randn(rng, 1, 1, 4, 4)
    fused = assert_same_numbers(g.module, inputs)
    assert [n for n in op_names(fused) if n != "rlx.constant"] == ["rlx.attention"]


UNARY = ["neg", "abs", "exp", "log", "sqrt", "rsqrt", "sin", "cos", "tanh", "sigmoid", "relu",
         "gelu", "gelu_tanh", "silu", "erf", "floor", "ceil", "round"]  # fmt: skip


@pytest.mark.parametrize("name", UNARY)
def test_region_unary(rng: np.random.Generator, name: str) -> None:
    g = Graph()
    x = g.input("x", (3, 5))
    y = getattr(g, name)(g.abs(x) if name in ("log", "sqrt", "rsqrt") else g.mul(x, x))
    g.output(getattr(g, name)(y) if name not in ("exp",) else g.neg(y))
    data = randn(rng, 3, 5, scale=1.5)
    data[0, :3] = [0.5, -1.5, 2.5]  # exact round-half cases
    fused = assert_same_numbers(g.module, {"x": data}, rtol=2e-5, atol=1e-6)
    assert op_names(fused) == ["rlx.elementwise_region"]


@pytest.mark.parametrize("name", ["add", "sub", "mul", "div", "max", "min", "pow"])
@pytest.mark.parametrize("dtype", ["f32", "i32"])
def test_region_binary(rng: np.random.Generator, name: str, dtype: str) -> None:
    g = Graph()
    x, y = g.input("x", (3, 4), dtype), g.input("y", (4,), dtype)
    g.output(g.abs(getattr(g, name)(g.abs(x), y)))
    if dtype == "f32":
        inputs = {"x": randn(rng, 3, 4) + 2, "y": randn(rng, 4) * 0.5 + 1.5}
    else:
        inputs = {
            "x": rng.integers(-5, 6, (3, 4)).astype(np.int32),
            "y": rng.integers(1, 4, (4,)).astype(np.int32),
        }
    fused = assert_same_numbers(g.module, inputs)
    assert op_names(fused) == ["rlx.elementwise_region"]


@pytest.mark.parametrize("pred", ["eq", "ne", "lt", "le", "gt", "ge"])
@pytest.mark.parametrize("dtype", ["f32", "i32"])
def test_region_compare_where(rng: np.random.Generator, pred: str, dtype: str) -> None:
    g = Graph()
    x, y = g.input("x", (2, 6), dtype), g.input("y", (2, 1), dtype)
    c = g.compare(x, y, predicate=pred)
    g.output(g.where(c, g.neg(x), y))
    ints = rng.integers(-2, 3, (2, 6))
    inputs = {"x": ints.astype(dtype.replace("f", "float").replace("i", "int")),
              "y": np.array([[0], [1]]).astype(dtype.replace("f", "float").replace("i", "int"))}  # fmt: skip
    fused = assert_same_numbers(g.module, inputs)
    assert op_names(fused) == ["rlx.elementwise_region"]


@pytest.mark.parametrize(
    ("src", "dst"),
    [("f32", "f16"), ("f32", "f64"), ("f32", "bf16"), ("f16", "bf16"), ("f32", "i32"), ("i32", "f32"),
     ("i1", "f32"), ("f32", "i1"), ("i32", "i8"), ("i8", "i32"), ("i32", "i1"), ("i1", "i32")],
)  # fmt: skip
def test_region_cast(rng: np.random.Generator, src: str, dst: str) -> None:
    from rlx.dtypes import element_type
    from rlx.interpreter import numpy_dtype

    g = Graph()
    x = g.input("x", (8,), src)
    a = g.abs(x) if src != "i1" else x
    out = g.cast(a, dst)
    g.output(
        g.abs(out)
        if dst != "i1"
        else g.where(out, g.constant(np.ones(8, np.float32)), g.constant(np.zeros(8, np.float32)))
    )
    vals = np.array([0, 1, -2, 3.5, -4.25, 0.5, 7, -1])
    np_src = numpy_dtype(element_type(src))
    data = (vals != 0) if src == "i1" else vals.astype(np_src)
    assert_same_numbers(g.module, {"x": data})


def test_region_inlines_scalar_constants(rng: np.random.Generator) -> None:
    g = Graph()
    x = g.input("x", (3, 4))
    g.output(g.sub(g.mul(x, g.constant(np.float32(2.0))), g.constant(np.float32(1.0))))
    fused = assert_same_numbers(g.module, {"x": randn(rng, 3, 4)})
    region = next(op for op in fused.walk() if op.name == "rlx.elementwise_region")
    assert len(region.operands) == 1


def test_elementwise_limits_and_disabled(rng: np.random.Generator) -> None:
    g = Graph()
    x = g.input("x", (4,))
    y = x
    for name in ("exp", "neg", "tanh", "sin", "cos"):
        y = getattr(g, name)(y)
    g.output(y)
    data = {"x": randn(rng, 4)}
    assert op_names(assert_same_numbers(g.module, data)) == ["rlx.elementwise_region"]
    assert (
        op_names(assert_same_numbers(g.module, data, max_steps=2)).count("rlx.elementwise_region")
        == 2
    )
    assert "rlx.elementwise_region" not in op_names(fuse(g.module, elementwise_region=False))
    assert op_names(fuse(g.module, target="none")) == [
        "rlx.exp",
        "rlx.neg",
        "rlx.tanh",
        "rlx.sin",
        "rlx.cos",
    ]
