"""The generated GEMM's task split (`driver._split`, `RLX_GEMM_TASKS`): small-M GEMMs are
cut into at least `MIN_TASKS` tasks (never below `TASK_MACS` each), the result matches the
reference interpreter at tile edges in f32/f16/bf16 and with a batch, `RLX_GEMM_TASKS=1`
keeps the `mc x nc` blocks, and a bad value is a ValueError naming the variable."""

from __future__ import annotations

import numpy as np
import pytest
from test_rlx_to_linalg_harness import TOL, Compiled, rand, t

from rlx.interpreter import run
from rlx.lowering.gemm import driver, target
from rlx.lowering.gemm.packing import panels
from rlx.lowering.gemm.target import TILES


@pytest.fixture(autouse=True)
def _generated(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RLX_BLAS", "0")
    monkeypatch.setenv("RLX_CACHE", "0")
    monkeypatch.delenv(target.TASKS_ENV, raising=False)


@pytest.mark.parametrize("isa", sorted(TILES))
@pytest.mark.parametrize(
    "mkn", [(128, 384, 384), (131, 389, 389), (128, 1536, 384), (7, 601, 1000)]
)
def test_split_reaches_min_tasks_or_task_macs(isa: str, mkn: tuple[int, int, int]) -> None:
    m, k, n = mkn
    tile = TILES[isa]
    plan = driver._plan(tile, [m, k], [k, n], [m, n])
    pm, pn = panels(m, tile.mr), panels(n, tile.nr)
    assert 1 <= plan.mb <= max(1, tile.mc // tile.mr) and 1 <= plan.nb <= max(1, tile.nc // tile.nr)
    assert plan.tasks == panels(pm, plan.mb) * panels(pn, plan.nb)
    if plan.tasks < target.MIN_TASKS:  # stopped by the task size, or nothing left to split
        assert (plan.mb == 1 and plan.nb == 1) or m * n * k // (2 * plan.tasks) < target.TASK_MACS


def test_env_one_keeps_blocks_and_bad_value(monkeypatch: pytest.MonkeyPatch) -> None:
    tile = TILES["avx512"]
    monkeypatch.setenv(target.TASKS_ENV, "1")
    assert driver._plan(tile, [128, 384], [384, 384], [128, 384]).tasks == 4
    monkeypatch.setenv(target.TASKS_ENV, "0")
    with pytest.raises(ValueError, match="RLX_GEMM_TASKS must be a positive integer"):
        target.min_tasks()
    monkeypatch.setenv(target.TASKS_ENV, "x")
    with pytest.raises(ValueError, match="RLX_GEMM_TASKS"):
        target.min_tasks()


def _mm(a: tuple[int, ...], b: tuple[int, ...], o: tuple[int, ...], e: str, bias: bool) -> str:
    n = b[-1]
    if bias:
        body = (f'%y = rlx.fused_matmul_bias_act %a, %b, %c {{activation = "gelu"}}'
                f" : ({t(a, e)}, {t(b, e)}, {t((n,), e)}) -> {t(o, e)}")  # fmt: skip
        args = f"%a: {t(a, e)}, %b: {t(b, e)}, %c: {t((n,), e)}"
    else:
        body = f"%y = rlx.matmul %a, %b : ({t(a, e)}, {t(b, e)}) -> {t(o, e)}"
        args = f"%a: {t(a, e)}, %b: {t(b, e)}"
    return f"""
func.func @main({args}) -> {t(o, e)} {{
  {body}
  func.return %y : {t(o, e)}
}}
"""


# split GEMMs at tile edges: primes, a single column panel, a batch (shape-specialised worker)
CASES = [((131, 389), (389, 389), (131, 389), "f32", False), ((97, 257), (257, 33), (97, 33), "f32", True),
         ((61, 300), (300, 190), (61, 190), "f16", True), ((2, 53, 128), (128, 101), (2, 53, 101), "bf16", False),
         ((3, 40, 96), (3, 96, 70), (3, 40, 70), "f32", False)]  # fmt: skip


@pytest.mark.parametrize("a,b,o,e,bias", CASES)
def test_split_matches_reference(
    a: tuple[int, ...], b: tuple[int, ...], o: tuple[int, ...], e: str, bias: bool
) -> None:
    text = _mm(a, b, o, e, bias)
    ins = [rand(a, e, seed=1), rand(b, e, seed=2)] + ([rand((b[-1],), e, seed=3)] if bias else [])
    (ref,) = run(text, ins)
    (got,) = Compiled(text)(ins)
    rtol, atol = TOL[e]
    scale = max(1.0, float(np.abs(ref.astype(np.float32)).max()))
    np.testing.assert_allclose(got.astype(np.float32), ref.astype(np.float32),
                               rtol=rtol, atol=atol * scale * 4)  # fmt: skip
