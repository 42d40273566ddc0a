"""rlx.Graph: every op is reachable from Python with inferred types; errors are ValueErrors."""

from __future__ import annotations

import numpy as np
import pytest

from rlx.builder import Graph
from rlx.dialects.rlx import OPS_BY_NAME


def test_mlp_builds_and_verifies() -> None:
    g = Graph()
    x = g.input("x", (8, 64))
    h = g.gelu(g.add(g.matmul(x, g.param("w1", (64, 128))), g.param("b1", (128,))))
    y = g.softmax(g.matmul(h, g.param("w2", (128, 10))), axis=-1)
    g.output(y)
    text = str(g.module)
    assert 'rlx.param "w1" : tensor<64x128xf32>' in text
    assert "-> tensor<8x10xf32>" in text
    assert '{rlx.name = "x"}' in text


def test_every_op_has_a_method() -> None:
    for name in OPS_BY_NAME:
        short = name.removeprefix("rlx.")
        if short in ("yield", "scan", "if"):  # region ops built by the caller (Graph.add_op)
            continue
        assert hasattr(Graph, short), short


def test_typed_result_ops() -> None:
    g = Graph()
    x = g.input("x", (2, 3), "f32")
    r = g.reshape(x, (3, 2))
    c = g.cast(r, "bf16")
    b = g.broadcast_to(x, (4, 2, 3))
    u = g.rng_normal((5,), seed_offset=3)
    k = g.constant(np.arange(6, dtype=np.int32).reshape(2, 3))
    g.output(c, b, u, k)
    text = str(g.module)
    assert "tensor<3x2xbf16>" in text and "tensor<4x2x3xf32>" in text
    assert "dense<[[0, 1, 2], [3, 4, 5]]> : tensor<2x3xi32>" in text


def test_attributes_and_inference() -> None:
    g = Graph()
    q = g.input("q", (1, 2, 4, 8))
    a = g.attention(q, q, q, mask_kind="causal")
    r = g.reduce(a, kind="mean", axes=[1, -1], keepdims=False)
    t = g.transpose(r, permutation=[1, 0])
    g.output(t)
    assert "-> tensor<4x1xf32>" in str(g.module)


def test_elementwise_region_builder() -> None:
    from xdsl.dialects import arith, math

    g = Graph()
    x = g.input("x", (2, 8))
    y = g.input("y", (8,))
    r = g.elementwise_region([x, y], lambda a, b: math.TanhOp(arith.AddfOp(a, b).result).result)
    g.output(r)
    assert "rlx.elementwise_region %x, %y" in str(g.module)


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda g, x: g.matmul(x, x), "contracting dimensions differ"),
        (lambda g, x: g.softmax(x, axis=5), "out of range"),
        (lambda g, x: g.reduce(x, kind="median"), "must be one of"),
        (lambda g, x: g.op("nosuchop", x), "unknown rlx op"),
        (lambda g, x: g.reshape(x, (7,)), "elements"),
    ],
)
def test_builder_errors_are_value_errors(build, message) -> None:  # type: ignore[no-untyped-def]
    g = Graph()
    x = g.input("x", (2, 3))
    with pytest.raises(ValueError, match=message):
        build(g, x)


def test_graph_without_outputs() -> None:
    with pytest.raises(ValueError, match="no outputs"):
        _ = Graph().module
