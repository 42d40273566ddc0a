"""`shared_input_matmul` on biased projections (q/k/v): the reference interpreter agrees
before and after fusion, and the compiled graph (one GEMM with N = sum of the Ns, its
weight concatenated and packed in @prepare) matches the reference at tile edges, in f32,
f16 and bf16, with and without `cache_param_invariant`, with torch-style transposed
weights and a batch."""

from __future__ import annotations

import numpy as np
import pytest
from test_rlx_to_linalg_harness import TOL, rand, t
from xdsl.context import Context

import rlx
from rlx.interpreter import parse_module, run
from rlx.runtime.options import CompileOptions
from rlx.transforms.fusion.fusion import FusionPass


@pytest.fixture(autouse=True)
def _no_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RLX_CACHE", "0")


def _graph(x: tuple[int, ...], ns: tuple[int, ...], e: str, act: str | None, tw: bool) -> str:
    """x @ W_i + b_i [-> act] for each N_i; `tw`: W_i given as [N_i, K] and transposed."""
    k = x[-1]
    lines = []
    outs = []
    for i, n in enumerate(ns):
        o = (*x[:-1], n)
        if tw:
            lines.append(f'%p{i} = rlx.param "w{i}" : {t((n, k), e)}')
            lines.append(f"%w{i} = rlx.transpose %p{i} {{permutation = array<i64: 1, 0>}}"
                         f" : ({t((n, k), e)}) -> {t((k, n), e)}")  # fmt: skip
        else:
            lines.append(f'%w{i} = rlx.param "w{i}" : {t((k, n), e)}')
        lines.append(f'%b{i} = rlx.param "b{i}" : {t((n,), e)}')
        lines.append(f"%m{i} = rlx.matmul %x, %w{i} : ({t(x, e)}, {t((k, n), e)}) -> {t(o, e)}")
        lines.append(f"%a{i} = rlx.add %m{i}, %b{i} : ({t(o, e)}, {t((n,), e)}) -> {t(o, e)}")
        last = f"%a{i}"
        if act:
            lines.append(f"%y{i} = rlx.{act} %a{i} : ({t(o, e)}) -> {t(o, e)}")
            last = f"%y{i}"
        outs.append((last, t(o, e)))
    body = "\n  ".join(lines)
    rets = ", ".join(v for v, _ in outs)
    types = ", ".join(ty for _, ty in outs)
    return f"""
func.func @main(%x: {t(x, e)} {{rlx.name = "x"}}) -> ({types}) {{
  {body}
  func.return {rets} : {types}
}}
"""


def _params(x: tuple[int, ...], ns: tuple[int, ...], e: str, tw: bool, seed: int) -> dict:
    k = x[-1]
    out = {}
    for i, n in enumerate(ns):
        out[f"w{i}"] = rand((n, k) if tw else (k, n), e, seed=seed + 2 * i)
        out[f"b{i}"] = rand((n,), e, seed=seed + 2 * i + 1)
    return out


def _close(got: np.ndarray, ref: np.ndarray, e: str) -> None:
    rtol, atol = TOL[e]
    scale = max(1.0, float(np.abs(ref.astype(np.float32)).max()))
    np.testing.assert_allclose(got.astype(np.float32), ref.astype(np.float32),
                               rtol=rtol, atol=atol * scale * 4)  # fmt: skip


# (x shape, the Ns, element type, activation, transposed weights): M, K, N of 1, primes,
# not multiples of the register tile; a batch; the MiniLM q/k/v shape class.
CASES = [
    ((1, 37), (1, 5, 3), "f32", None, False),
    ((29, 67), (41, 41, 41), "f32", None, True),
    ((2, 13, 64), (48, 17), "f32", "gelu", False),
    ((17, 96), (96, 96, 96), "f16", None, True),
    ((11, 64), (32, 33), "bf16", "relu", False),
]


@pytest.mark.parametrize("x,ns,e,act,tw", CASES)
def test_reference_before_and_after(
    x: tuple[int, ...], ns: tuple[int, ...], e: str, act: str | None, tw: bool
) -> None:
    text = _graph(x, ns, e, act, tw)
    params = _params(x, ns, e, tw, seed=2)
    inputs = {"x": rand(x, e, seed=1)}
    before = run(text, inputs, params)
    m = parse_module(text)
    FusionPass().apply(Context(), m)
    names = [op.name for op in m.walk()]
    assert names.count("rlx.fused_matmul_bias_act") == 1 and names.count("rlx.matmul") == 0
    assert names.count("rlx.slice") == len(ns)
    after = run(m, inputs, params)
    for a, b in zip(after, before, strict=True):
        _close(a, b, e)


@pytest.mark.parametrize("invariant", [True, False])
@pytest.mark.parametrize("x,ns,e,act,tw", CASES)
def test_compiled_matches_reference(
    x: tuple[int, ...], ns: tuple[int, ...], e: str, act: str | None, tw: bool, invariant: bool
) -> None:
    text = _graph(x, ns, e, act, tw)
    params = _params(x, ns, e, tw, seed=5)
    xv = rand(x, e, seed=4)
    g = rlx.compile(text, CompileOptions(cache_param_invariant=invariant))
    ir = str(g.ir("rlx"))
    assert ir.count("rlx.concat") >= 1 and ir.count("rlx.slice") == len(ns)
    g.set_params(params)
    refs = run(text, {"x": xv}, params)
    for got, ref in zip(g.run(xv), refs, strict=True):
        _close(got, ref, e)


def _main_text(ir: str) -> str:
    """The text of `@main` in a module's printout."""
    return ir[ir.index("func.func @main") :]


@pytest.mark.parametrize("x,ns,e,act,tw", [CASES[1], CASES[3], CASES[4]])
def test_weight_and_bias_concats_run_in_prepare(
    x: tuple[int, ...], ns: tuple[int, ...], e: str, act: str | None, tw: bool
) -> None:
    """With `cache_param_invariant`, neither the weight concat nor the bias concat (made by
    fusion after hoisting) runs per call: both are in @prepare, which runs again (and the
    result follows) when only a bias changes."""
    text = _graph(x, ns, e, act, tw)
    params = _params(x, ns, e, tw, seed=5)
    xv = rand(x, e, seed=4)
    g = rlx.compile(text, CompileOptions(cache_param_invariant=True))
    ir = str(g.ir("rlx"))
    assert ir.count("rlx.concat") == 2 and "rlx.concat" not in _main_text(ir), ir
    g.set_params(params)
    for got, ref in zip(g.run(xv), run(text, {"x": xv}, params), strict=True):
        _close(got, ref, e)
    params2 = params | {"b1": rand((ns[1],), e, seed=11)}
    g.set_params(params2)
    for got, ref in zip(g.run(xv), run(text, {"x": xv}, params2), strict=True):
        _close(got, ref, e)
    assert g.prepare_runs == 2
