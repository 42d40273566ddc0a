"""The rank-3 head-layout attention fusion (`attention_heads3`): the reference interpreter
agrees before and after `fusion`, and the compiled graph (the flash kernel reading
[1, S, H, D] reshapes in place) matches the reference at tile edges (S of 1, primes, Sq !=
Sk, head_dim of 1 and primes) in f32, f16 and bf16, with the projections produced by one
merged q/k/v GEMM as in a BERT layer."""

from __future__ import annotations

import numpy as np
import pytest
from reference_helpers import assert_close
from test_rlx_to_linalg_harness import rand, t
from xdsl.context import Context

import rlx
from rlx.interpreter import parse_module, run
from rlx.runtime.options import CompileOptions
from rlx.transforms.fusion.fusion import FusionPass

TOL = {"f32": 2e-5, "f16": 1e-2, "bf16": 2e-2}


@pytest.fixture(autouse=True)
def _no_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RLX_CACHE", "0")


def _graph(sq: int, sk: int, h: int, d: int, e: str, back: bool) -> str:
    """softmax(q kᵀ * 0.3) v on [S, H, D] inputs in the head layout; `back`: the output
    transposed back to [Sq, H, D] (else returned as [H, Sq, D])."""
    q3, k3, o = (sq, h, d), (sk, h, d), (h, sq, d)
    out = (sq, h, d) if back else o
    tail = (f"%b = rlx.transpose %o {{permutation = array<i64: 1, 0, 2>}} : ({t(o, e)}) -> {t(out, e)}\n"
            "  func.return %b" if back else "func.return %o")  # fmt: skip
    return f"""
func.func @main(%q3: {t(q3, e)}, %k3: {t(k3, e)}, %v3: {t(k3, e)}) -> {t(out, e)} {{
  %q = rlx.transpose %q3 {{permutation = array<i64: 1, 0, 2>}} : ({t(q3, e)}) -> {t((h, sq, d), e)}
  %kt = rlx.transpose %k3 {{permutation = array<i64: 1, 2, 0>}} : ({t(k3, e)}) -> {t((h, d, sk), e)}
  %v = rlx.transpose %v3 {{permutation = array<i64: 1, 0, 2>}} : ({t(k3, e)}) -> {t((h, sk, d), e)}
  %s = rlx.matmul %q, %kt : ({t((h, sq, d), e)}, {t((h, d, sk), e)}) -> {t((h, sq, sk), e)}
  %c = rlx.constant dense<0.3> : {t((), e)}
  %m = rlx.mul %s, %c : ({t((h, sq, sk), e)}, {t((), e)}) -> {t((h, sq, sk), e)}
  %p = rlx.softmax %m {{axis = -1 : i64}} : ({t((h, sq, sk), e)}) -> {t((h, sq, sk), e)}
  %o = rlx.matmul %p, %v : ({t((h, sq, sk), e)}, {t((h, sk, d), e)}) -> {t(o, e)}
  {tail} : {t(out, e)}
}}
"""


# (Sq, Sk, H, D, element type, transpose back)
CASES = [(1, 1, 1, 1, "f32", True), (7, 13, 3, 5, "f32", False), (37, 29, 2, 17, "f32", True),
         (64, 64, 4, 32, "f16", True), (19, 41, 3, 8, "bf16", False)]  # fmt: skip


@pytest.mark.parametrize("sq,sk,h,d,e,back", CASES)
def test_fused_matches_reference(sq: int, sk: int, h: int, d: int, e: str, back: bool) -> None:
    text = _graph(sq, sk, h, d, e, back)
    ins = [rand((sq, h, d), e, seed=1), rand((sk, h, d), e, seed=2), rand((sk, h, d), e, seed=3)]
    (ref,) = run(text, ins)
    m = parse_module(text)
    FusionPass().apply(Context(), m)
    names = [op.name for op in m.walk()]
    assert "rlx.attention" in names and "rlx.softmax" not in names and "rlx.matmul" not in names
    (after,) = run(m, ins)
    assert_close(after, ref, TOL[e])
    (got,) = rlx.compile(text).run(*ins)
    assert_close(got, ref, TOL[e])


def _small(w: np.ndarray, e: str) -> np.ndarray:
    """`w` / sqrt(K) in element type `e` (the NumPy / ml_dtypes type `rand` uses for it)."""
    return (w / np.sqrt(w.shape[0])).astype(rand((1,), e, seed=0).dtype)


def _bert(e: str, s: int, h: int, d: int, k: int) -> rlx.Graph:
    """x [S, K] @ Wq/Wk/Wv + b, reshaped to [S, H, D] heads, attention, back to [S, H·D]."""
    hd = h * d
    g = rlx.Graph()
    x = g.input("x", (s, k), dtype=e)

    def heads(w: str, b: str) -> rlx.Value:
        y = g.add(g.matmul(x, g.param(w, (k, hd), dtype=e)), g.param(b, (hd,), dtype=e))
        return g.transpose(g.reshape(y, (s, h, d)), permutation=[1, 0, 2])

    q, kk, v = heads("wq", "bq"), heads("wk", "bk"), heads("wv", "bv")
    sc = g.mul(g.matmul(q, g.transpose(kk, permutation=[0, 2, 1])), g.constant(0.25, dtype=e))
    o = g.matmul(g.softmax(sc, axis=-1), v)
    g.output(g.reshape(g.transpose(o, permutation=[1, 0, 2]), (s, hd)))
    return g


@pytest.mark.parametrize("e", ["f32", "f16", "bf16"])
def test_bert_layout_from_merged_qkv(e: str) -> None:
    """The q/k/v projections become one GEMM (shared_input_matmul) whose slices feed the
    lifted attention; checked against the reference interpreter of the f32 graph on the
    same (rounded) values: the unfused low-precision reference rounds the scores. Weights
    scaled by 1/sqrt(K) as in a trained layer (scores of order 1: with scores of order 20
    the bf16 rounding of q and k alone moves the softmax by tens of percent)."""
    s, h, d, k = 23, 3, 16, 40
    hd = h * d
    params = {n: _small(rand((k, hd), "f32", seed=i), e) for i, n in enumerate(("wq", "wk", "wv"))}
    params |= {n: rand((hd,), e, seed=5 + i) for i, n in enumerate(("bq", "bk", "bv"))}
    xv = rand((s, k), e, seed=9)
    f32 = {n: v.astype(np.float32) for n, v in params.items()}
    (ref,) = run(_bert("f32", s, h, d, k).module, {"x": xv.astype(np.float32)}, f32)
    c = rlx.compile(_bert(e, s, h, d, k), CompileOptions(cache_param_invariant=True))
    rep = c.fusion_report()
    assert "attention=1" in rep and "matmul=5→0" in rep and "fused_mm_act=1" in rep, rep
    c.set_params(params)
    assert_close(c.run(xv)[0], ref, TOL[e])
