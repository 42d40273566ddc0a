"""`fusion` of attention in the standard multi-head layout of ONNX / torch exports
(reshape to [B, S, H, D], transpose to [B, H, S, D], kᵀ as two transposes or one
[0, 2, 3, 1] after canonicalize; pre-scaled q/kᵀ; GQA repeat_kv chains): the fused op
appears and the reference interpreter gives the same numbers before and after fusion,
and the compiled fused graph (flash kernel) matches the reference too."""

from __future__ import annotations

import numpy as np
import pytest
from test_fusion_common import assert_same_numbers, op_names, randn
from xdsl.context import Context

import rlx
from rlx.builder import Graph, Value
from rlx.interpreter import run
from rlx.transforms.canonicalize import RlxCanonicalizePass

B, S, H, D = 2, 7, 3, 4


def _heads(g: Graph, x: Value) -> Value:
    """[B, S, H·D] -> [B, H, S, D]."""
    return g.transpose(g.reshape(x, (B, S, H, D)), permutation=[0, 2, 1, 3])


def _mha(k_order: str, prescale: bool, mask: bool, param_scale: bool = False) -> Graph:
    g = Graph()
    x = g.input("x", (B, S, H * D))
    wq, wk, wv = (g.param(n, (H * D, H * D)) for n in ("wq", "wk", "wv"))
    q = _heads(g, g.matmul(x, wq))
    k4 = g.reshape(g.matmul(x, wk), (B, S, H, D))
    if k_order == "two":
        kt = g.transpose(g.transpose(k4, permutation=[0, 2, 1, 3]), permutation=[0, 1, 3, 2])
    else:
        kt = g.transpose(k4, permutation=[0, 2, 3, 1])
    v = _heads(g, g.matmul(x, wv))
    if prescale:
        c = g.constant(np.float32(D**-0.25))
        s = g.matmul(g.mul(q, c), g.mul(kt, c))
    elif param_scale:  # an ONNX initializer kept as a param (not bound at compile time)
        s = g.div(g.matmul(q, kt), g.param("sqrt_d", ()))
    else:
        s = g.div(g.matmul(q, kt), g.constant(np.float32(np.sqrt(D))))
    if mask:
        s = g.add(s, g.input("mask", (B, 1, 1, S)))
    o = g.matmul(g.softmax(s, axis=-1), v)
    g.output(g.reshape(g.transpose(o, permutation=[0, 2, 1, 3]), (B, S, H * D)))
    return g


def _check_compiled(module: object, inputs: dict, params: dict) -> None:
    want = run(module, dict(inputs), dict(params))
    c = rlx.compile(module)
    c.set_params(params)
    got = c.run(**inputs)
    for w, o in zip(want, got, strict=True):
        np.testing.assert_allclose(o, w, rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("k_order", ["two", "merged"])
@pytest.mark.parametrize(("prescale", "mask"), [(False, True), (True, False)])
def test_multi_head_layout(k_order: str, prescale: bool, mask: bool) -> None:
    rng = np.random.default_rng(0)
    g = _mha(k_order, prescale, mask)
    module = g.module.clone()
    RlxCanonicalizePass().apply(Context(), module)
    inputs = {"x": randn(rng, B, S, H * D)}
    if mask:
        m = np.zeros((B, 1, 1, S), np.float32)
        m[1, ..., 4:] = np.finfo(np.float32).min  # padding of the second sequence
        inputs["mask"] = m
    params = {n: randn(rng, H * D, H * D, scale=0.5) for n in ("wq", "wk", "wv")}
    fused = assert_same_numbers(module, inputs, params)
    names = op_names(fused)
    assert names.count("rlx.attention") == 1 and "rlx.softmax" not in names
    _check_compiled(fused, inputs, params)
    _check_compiled(module, inputs, params)


def test_param_scale_moves_onto_q() -> None:
    """A scale that is a param (unknown until set_params) still fuses: q / s feeds the op
    (scale 1), and the transposes are absorbed; same numbers as the reference, compiled
    with and without `cache_param_invariant`."""
    rng = np.random.default_rng(3)
    module = _mha("merged", prescale=False, mask=True, param_scale=True).module.clone()
    RlxCanonicalizePass().apply(Context(), module)
    inputs = {"x": randn(rng, B, S, H * D)}
    inputs["mask"] = np.zeros((B, 1, 1, S), np.float32)
    params = {n: randn(rng, H * D, H * D, scale=0.5) for n in ("wq", "wk", "wv")}
    params["sqrt_d"] = np.array(np.sqrt(D), np.float32)
    fused = assert_same_numbers(module, inputs, params)
    names = op_names(fused)
    assert names.count("rlx.attention") == 1 and "rlx.softmax" not in names
    assert "rlx.transpose" not in names  # q / s is taken before q's transpose: bshd
    want = run(module, dict(inputs), dict(params))
    for cached in (False, True):
        c = rlx.compile(module, rlx.CompileOptions(cache_param_invariant=cached))
        c.set_params(params)
        np.testing.assert_allclose(c.run(**inputs)[0], want[0], rtol=2e-5, atol=2e-5)


def _repeat_kv(g: Graph, x: Value, hk: int, groups: int) -> Value:
    """HF's repeat_kv: [B, Hkv, S, D] -> [B, Hkv·groups, S, D]."""
    x5 = g.reshape(x, (B, hk, 1, S, D))
    return g.reshape(g.broadcast_to(x5, (B, hk, groups, S, D)), (B, hk * groups, S, D))


def test_gqa_repeat_kv() -> None:
    rng = np.random.default_rng(1)
    hq, hk = 4, 2
    g = Graph()
    q = g.input("q", (B, hq, S, D))
    k, v = g.input("k", (B, hk, S, D)), g.input("v", (B, hk, S, D))
    kr, vr = _repeat_kv(g, k, hk, hq // hk), _repeat_kv(g, v, hk, hq // hk)
    s = g.mul(g.matmul(q, g.transpose(kr, permutation=[0, 1, 3, 2])), g.constant(np.float32(0.5)))
    g.output(g.matmul(g.softmax(s, axis=-1), vr))
    inputs = {"q": randn(rng, B, hq, S, D), "k": randn(rng, B, hk, S, D),
              "v": randn(rng, B, hk, S, D)}  # fmt: skip
    fused = assert_same_numbers(g.module, inputs)
    names = op_names(fused)
    assert "rlx.attention" in names and "rlx.broadcast_to" not in names
    att = next(
        op for f in fused.body.block.ops for op in f.regions[0].block.ops
        if op.name == "rlx.attention"
    )  # fmt: skip
    assert att.operands[1].type.get_shape()[1] == hk  # type: ignore[attr-defined]
    _check_compiled(fused, inputs, {})


def test_gqa_verifier_rejects_non_dividing_heads() -> None:
    g = Graph()
    q, k = g.input("q", (1, 3, 4, 8)), g.input("k", (1, 2, 4, 8))
    with pytest.raises(Exception, match=r"k/v heads \(2\) must divide q heads \(3\)"):
        g.attention(q, k, k)


@pytest.mark.parametrize("bias", [False, True])
def test_attention_on_repeated_kv(bias: bool) -> None:
    """rlx.attention(q, repeat_kv(k), repeat_kv(v)) reads k/v unrepeated: same numbers."""
    rng = np.random.default_rng(2)
    hq, hk = 6, 2
    g = Graph()
    q = g.input("q", (B, hq, S, D))
    k, v = g.input("k", (B, hk, S, D)), g.input("v", (B, hk, S, D))
    m = g.input("m", (B, 1, 1, S)) if bias else None
    kr, vr = _repeat_kv(g, k, hk, hq // hk), _repeat_kv(g, v, hk, hq // hk)
    if m is None:
        g.output(g.attention(q, kr, vr, mask_kind="causal"))
    else:
        g.output(g.attention(q, kr, vr, m, mask_kind="bias"))
    inputs = {"q": randn(rng, B, hq, S, D), "k": randn(rng, B, hk, S, D),
              "v": randn(rng, B, hk, S, D)}  # fmt: skip
    if bias:
        inputs["m"] = np.where(rng.random((B, 1, 1, S)) < 0.3, -np.inf, 0).astype(np.float32)
    fused = assert_same_numbers(g.module, inputs)
    assert "rlx.broadcast_to" not in op_names(fused)
    _check_compiled(fused, inputs, {})
