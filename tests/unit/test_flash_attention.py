"""The flash kernel of rlx.attention (rlx/lowering/rlx_to_linalg/attention_flash.py)
against the reference interpreter at tile edges: Sq, Sk, D, Dv of 1, primes and sizes
that are not multiples of the query block (`nr` rows) or the key block (`mr` keys);
batch and heads > 1; grouped-query attention; causal with Sq != Sk either way; sliding
windows; biases with -inf / large negative entries and fully masked rows; softcap; f32,
f16, bf16; several query and key blocks; every microkernel tile (avx512, avx2, generic).
"""

from __future__ import annotations

import numpy as np
import pytest
from test_rlx_to_linalg_harness import Compiled, multi_op, rand, t

from rlx.interpreter import run
from rlx.lowering.rlx_to_linalg import attention_flash

Shape = tuple[int, ...]
TOL = {"f32": 2e-5, "f16": 1e-2, "bf16": 2e-2}


def _check(specs: list[tuple[Shape, Shape, Shape, str, Shape | None]], e: str = "f32",
           seed: int = 0) -> list[np.ndarray]:  # fmt: skip
    """Compile one module with one attention op per spec (q, k, v, attrs, bias shape) and
    compare every output with the reference interpreter."""
    ops, inputs = [], []
    for n, (q, k, v, attrs, bias) in enumerate(specs):
        tys = [t(q, e), t(k, e), t(v, e)] + ([t(bias, e)] if bias is not None else [])
        o = (*q[:3], v[3])
        ops.append(("rlx.attention", tys, t(o, e), attrs))
        inputs += [rand(q, e, seed + 4 * n), rand(k, e, seed + 4 * n + 1),
                   rand(v, e, seed + 4 * n + 2)]  # fmt: skip
        if bias is not None:
            m = rand(bias, e, seed + 4 * n + 3)
            m[rand(bias, "f32", seed + 99) > 0.9] = -np.inf
            inputs.append(m)
    text = multi_op(ops)
    c = Compiled(text)
    assert "rlx_blas_" not in c.jit.llvm_ir
    refs, gots = run(text, inputs), c(inputs)
    for i, (ref, got) in enumerate(zip(refs, gots, strict=True)):
        r64, g64 = ref.astype(np.float64), got.astype(np.float64)
        tol = TOL[e] * max(1.0, float(np.abs(r64).max()))
        np.testing.assert_allclose(g64, r64, rtol=TOL[e], atol=tol, err_msg=f"output {i}")
    return gots


def _qkv(b: int, h: int, hk: int, sq: int, sk: int, d: int, dv: int) -> tuple[Shape, ...]:
    return (b, h, sq, d), (b, hk, sk, d), (b, hk, sk, dv)


EDGES = [
    _qkv(1, 1, 1, 1, 1, 1, 1),
    _qkv(2, 3, 3, 37, 41, 13, 7),  # primes, Dv != D, batch > 1
    _qkv(1, 2, 2, 4, 67, 16, 16),  # the fewest query rows (decode steps take the loops)
    _qkv(2, 2, 2, 33, 1, 5, 3),  # one key
    _qkv(1, 4, 2, 70, 29, 8, 11),  # GQA (2 q heads per k/v head), Sq > Sk
    _qkv(2, 6, 1, 9, 12, 4, 4),  # multi-query attention
]


@pytest.mark.parametrize("kind", ["none", "causal"])
def test_edges(kind: str) -> None:
    attrs = "" if kind == "none" else f'{{mask_kind = "{kind}"}}'
    gots = _check([(q, k, v, attrs, None) for q, k, v in EDGES])
    if kind == "causal":  # Sq > Sk: the first Sq - Sk rows see no key
        assert not gots[4][:, :, : 70 - 29].any()


MASKS = [
    '{mask_kind = "causal", scale = 0.3 : f64}',
    '{mask_kind = "sliding_window", window = 0 : i64}',
    '{mask_kind = "sliding_window", window = 5 : i64, softcap = 2.5 : f64}',
    '{mask_kind = "none", softcap = 1.5 : f64}',
]


@pytest.mark.parametrize(("sq", "sk"), [(53, 53), (11, 40), (40, 11)])
def test_masks_several_blocks(monkeypatch: pytest.MonkeyPatch, sq: int, sk: int) -> None:
    """Small key blocks (several per query block, the last partial) and the smallest
    query blocks: the block skipping of causal / sliding-window masks."""
    monkeypatch.setattr(attention_flash, "K_ROWS", 7)
    monkeypatch.setattr(attention_flash, "Q_ROWS", 1)
    _check([(*_qkv(1, 2, 2, sq, sk, 6, 5)[:3], a, None) for a in MASKS], seed=sq)


@pytest.mark.parametrize("bias", [(2, 3, 20, 45), (1, 1, 1, 45), (2, 1, 1, 45), (20, 45)])
def test_bias(monkeypatch: pytest.MonkeyPatch, bias: Shape) -> None:
    """Broadcast biases with -inf entries (padding masks); two key blocks."""
    monkeypatch.setattr(attention_flash, "K_ROWS", 30)
    q, k, v = _qkv(2, 3, 3, 20, 45, 8, 6)
    _check([(q, k, v, '{mask_kind = "bias"}', bias)])


@pytest.mark.parametrize("softcap", [None, 4.0])
def test_fully_masked_rows(monkeypatch: pytest.MonkeyPatch, softcap: float | None) -> None:
    """Rows whose keys are all -inf are zeros (with a softcap they are all live at
    -softcap); -1e30 everywhere is uniform; a large negative padding bias; one live key;
    -inf in one key block only."""
    monkeypatch.setattr(attention_flash, "K_ROWS", 5)
    q, k, v = _qkv(2, 2, 2, 7, 12, 16, 9)
    m = rand((2, 2, 7, 12), seed=5)
    m[0, 1, 3, :] = -np.inf
    m[1, 0, 0, :] = -np.inf
    m[1, 1, 2, :] = -1e30
    m[0, 0, 4, ::2] = -1e9
    m[1, 0, 6, :-1] = -np.inf
    m[1, 1, 5, :6] = -np.inf
    attrs = '{mask_kind = "bias"' + (f", softcap = {softcap} : f64" if softcap else "") + "}"
    text = multi_op([("rlx.attention", [t(q), t(k), t(v), t(m.shape)], t(q[:3] + (9,)), attrs)])
    ins = [rand(q, seed=1), rand(k, seed=2), rand(v, seed=3), m]
    got = Compiled(text)(ins)[0]
    np.testing.assert_allclose(got, run(text, ins)[0], rtol=2e-5, atol=2e-5)
    if softcap is None:
        assert not got[0, 1, 3].any() and not got[1, 0, 0].any()


@pytest.mark.parametrize("e", ["f16", "bf16"])
def test_low_precision(e: str) -> None:
    """f16/bf16 operands, f32 accumulators: causal, bias, GQA."""
    specs = [
        (*_qkv(2, 2, 2, 37, 41, 13, 7), '{mask_kind = "causal"}', None),
        (*_qkv(1, 4, 2, 19, 23, 8, 8), '{mask_kind = "bias"}', (1, 1, 19, 23)),
    ]
    _check(specs, e)


@pytest.mark.parametrize("isa", ["avx2", "generic"])
def test_other_tiles(monkeypatch: pytest.MonkeyPatch, isa: str) -> None:
    """The kernel on the other microkernel tiles (mr, nr) than the host's."""
    monkeypatch.setenv("RLX_GEMM_ISA", isa)
    specs = [
        (*_qkv(2, 3, 3, 37, 41, 13, 7), '{mask_kind = "causal"}', None),
        (*_qkv(1, 4, 2, 20, 9, 5, 1), '{mask_kind = "sliding_window", window = 3 : i64}', None),
    ]
    _check(specs)


def test_default_blocking_long() -> None:
    """Default block sizes: several query and key blocks, the last ones partial."""
    q, k, v = _qkv(1, 2, 2, 300, 300, 64, 64)
    _check(
        [
            (q, k, v, '{mask_kind = "causal"}', None),
            (q, k, v, '{mask_kind = "bias"}', (1, 1, 1, 300)),
        ]
    )


def test_plan() -> None:
    """Block sizes: multiples of the tile, equal query blocks, enough tasks."""

    class At:
        b, h, sq, sk, dv = 1, 2, 300, 500, 40

    p = attention_flash.plan(At())  # type: ignore[arg-type]
    tile = p.tile
    assert p.bq % tile.nr == 0 and p.bk % tile.mr == 0 and p.dvp % tile.mr == 0
    assert p.bq * p.nqb >= 300 > p.bq * (p.nqb - 1)
    assert p.tasks == 2 * p.nqb >= attention_flash.MIN_TASKS
    assert p.bk >= -(-500 // -(-500 // attention_flash.K_ROWS))


def test_tile_rows_divide_nr() -> None:
    """mr is lowered to the largest divisor of nr (P is repacked in contiguous runs)."""
    from rlx.lowering.gemm.target import TILES

    assert [attention_flash._tile(TILES[i]).mr for i in ("avx512", "avx2", "generic")] == [
        8, 4, 4,
    ]  # fmt: skip


def test_dispatch_report_names_the_kernel(monkeypatch: pytest.MonkeyPatch) -> None:
    """The dispatch report's attention lines follow the lowering's rules: the flash
    kernel (its label in the lowered IR), openblas for f64 with BLAS, loops otherwise."""
    from test_rlx_to_linalg_harness import lower, parse

    from rlx.lowering.rlx_to_linalg.attention_report import attention_lines

    monkeypatch.setenv("RLX_BLAS", "1")
    q = (1, 2, 64, 16)
    cases = [
        ("rlx.attention", [t(q), t(q), t(q)], t(q), '{mask_kind = "causal"}'),
        ("rlx.attention", [t(q, "f64")] * 3, t(q, "f64"), ""),
        ("rlx.attention", [t((1, 2, 1, 16)), t(q), t(q)], t((1, 2, 1, 16)), ""),  # decode
    ]
    text = multi_op(cases)
    lines = attention_lines(parse(text)[1])
    flash = next(ln for ln in lines.splitlines() if "flash" in ln).split(": ", 1)[1]
    assert "openblas" in lines and "×1: loops" in lines
    assert f'rlx.kernel = "rlx.attention {flash}"' in str(lower(text, plan=False)[0])
    monkeypatch.setenv("RLX_BLAS", "0")
    assert "×2: loops" in attention_lines(parse(text)[1])
