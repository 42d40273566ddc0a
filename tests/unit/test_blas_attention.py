"""The BLAS path of rlx.attention (two GEMMs per block of query rows, see
rlx/lowering/rlx_to_linalg/attention.py) against the reference interpreter: odd shapes,
every mask kind, -inf / large negative biases, fully masked rows, softcap, several query
blocks, f64; and the loop kernel where the BLAS path does not apply (f16/bf16, BLAS off,
tiny problems)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest
from test_rlx_to_linalg_harness import Compiled, multi_op, rand, t

from rlx.interpreter import run
from rlx.lowering.rlx_to_linalg import attention
from rlx.runtime import blas

Shape = tuple[int, ...]


@pytest.fixture(autouse=True)
def _blas_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RLX_BLAS", "1")
    assert blas.register(), "scipy is installed but its BLAS was not found"
    monkeypatch.setattr(attention, "BLAS_MIN_WORK", 0)  # tiny shapes take the BLAS path too
    monkeypatch.setattr(attention, "MIN_ROWS", 1)
    monkeypatch.setattr(attention, "FLASH", False)  # f32 takes the flash kernel by default


def _text(q: Shape, k: Shape, v: Shape, attrs: str = "", bias: Shape | None = None,
          e: str = "f32") -> str:  # fmt: skip
    o = (*q[:3], v[3])
    tys = [t(q, e), t(k, e), t(v, e)] + ([t(bias, e)] if bias is not None else [])
    names = ["%q", "%k", "%v"] + (["%m"] if bias is not None else [])
    args = ", ".join(f"{n}: {ty}" for n, ty in zip(names, tys, strict=True))
    return f"""
func.func @main({args}) -> {t(o, e)} {{
  %y = rlx.attention {", ".join(names)} {attrs} : ({", ".join(tys)}) -> {t(o, e)}
  func.return %y : {t(o, e)}
}}
"""


def _check(
    text: str, inputs: Sequence[np.ndarray], dtype: str = "f32", blas_used: bool = True
) -> list[np.ndarray]:
    c = Compiled(text)
    assert ("rlx_blas_" in c.jit.llvm_ir) == blas_used
    refs = run(text, list(inputs))
    gots = c(inputs)
    tol = {"f32": 2e-5, "f64": 1e-12, "f16": 1e-2, "bf16": 2e-2}[dtype]
    for i, (ref, got) in enumerate(zip(refs, gots, strict=True)):
        scale = max(1.0, float(np.abs(ref.astype(np.float64)).max()))
        np.testing.assert_allclose(
            got.astype(np.float64),
            ref.astype(np.float64),
            rtol=tol,
            atol=tol * scale,
            err_msg=f"output {i}",
        )
    return gots


def _qkv(q: Shape, k: Shape, v: Shape, dtype: str = "f32", seed: int = 0) -> list[np.ndarray]:
    return [rand(q, dtype, seed), rand(k, dtype, seed + 1), rand(v, dtype, seed + 2)]


@pytest.mark.parametrize(
    ("q", "k", "v"),
    [
        ((2, 3, 5, 8), (2, 3, 7, 8), (2, 3, 7, 6)),  # Sq != Sk, Dv != D, batch > 1
        ((1, 4, 1, 16), (1, 4, 37, 16), (1, 4, 37, 16)),  # decode step
        ((2, 2, 9, 8), (2, 2, 1, 8), (2, 2, 1, 5)),  # a single key
        ((1, 1, 1, 1), (1, 1, 1, 1), (1, 1, 1, 1)),
        ((1, 2, 33, 13), (1, 2, 65, 13), (1, 2, 65, 7)),
    ],
)
@pytest.mark.parametrize("kind", ["none", "causal"])
def test_shapes(q: Shape, k: Shape, v: Shape, kind: str) -> None:
    attrs = "" if kind == "none" else f'{{mask_kind = "{kind}"}}'
    _check(_text(q, k, v, attrs), _qkv(q, k, v))


MASKS = [
    '{mask_kind = "causal"}',
    '{mask_kind = "sliding_window", window = 0 : i64}',
    '{mask_kind = "sliding_window", window = 3 : i64, softcap = 2.5 : f64}',
    '{mask_kind = "sliding_window", window = 100 : i64, scale = 0.7 : f64}',
]


@pytest.mark.parametrize("block_rows", [1, 2, 3, 64])
@pytest.mark.parametrize(("sq", "sk"), [(37, 37), (11, 4), (4, 11), (1, 9), (9, 1)])
def test_masks_blocks(monkeypatch: pytest.MonkeyPatch, block_rows: int, sq: int, sk: int) -> None:
    """Causal / sliding window with several query blocks (the last one partial), including
    Sq > Sk where the first rows (and whole blocks) see no key and are zeros."""
    monkeypatch.setattr(attention, "BLOCK_ROWS", block_rows)
    q, k, v = (2, 2, sq, 8), (2, 2, sk, 8), (2, 2, sk, 5)
    o = (2, 2, sq, 5)
    text = multi_op([("rlx.attention", [t(q), t(k), t(v)], t(o), a) for a in MASKS])
    gots = _check(text, [x for i in range(len(MASKS)) for x in _qkv(q, k, v, seed=sq + 3 * i)])
    if sq > sk:
        assert not any(g[:, :, : sq - sk].any() for g in gots)


@pytest.mark.parametrize(
    "bias",
    [(2, 3, 6, 10), (1, 1, 1, 10), (1, 3, 6, 1), (6, 10), (10,), (2, 1, 6, 10)],
)
def test_bias_broadcast(bias: Shape) -> None:
    q, k, v = (2, 3, 6, 8), (2, 3, 10, 8), (2, 3, 10, 4)
    _check(_text(q, k, v, '{mask_kind = "bias"}', bias), [*_qkv(q, k, v), rand(bias, seed=9)])


@pytest.mark.parametrize("softcap", [None, 4.0])
@pytest.mark.parametrize("block_rows", [2, 64])
def test_bias_masked(
    monkeypatch: pytest.MonkeyPatch, softcap: float | None, block_rows: int
) -> None:
    """-inf and large negative biases; rows whose keys are all -inf (all zeros, or with a
    softcap all live at -softcap); -1e30 everywhere in a row (uniform weights)."""
    monkeypatch.setattr(attention, "BLOCK_ROWS", block_rows)
    q, k, v = (2, 2, 7, 16), (2, 2, 12, 16), (2, 2, 12, 9)
    m = rand((2, 2, 7, 12), seed=5)
    m[rand((2, 2, 7, 12), seed=6) > 0.8] = -np.inf
    m[0, 1, 3, :] = -np.inf  # a fully masked row
    m[1, 0, 0, :] = -np.inf
    m[1, 1, 2, :] = -1e30  # large negative everywhere: uniform
    m[0, 0, 4, ::2] = -1e9
    m[1, 0, 6, :-1] = -np.inf  # one live key
    attrs = '{mask_kind = "bias"' + (f", softcap = {softcap} : f64" if softcap else "") + "}"
    (got,) = _check(_text(q, k, v, attrs, m.shape), [*_qkv(q, k, v, seed=3), m])
    if softcap is None:
        assert not got[0, 1, 3].any() and not got[1, 0, 0].any()


def test_bigger_default_blocking() -> None:
    """Default thresholds and blocking: several query blocks, the last partial."""
    q = (1, 2, 300, 64)
    _check(_text(q, q, q, '{mask_kind = "causal"}'), _qkv(q, q, q))
    q = (1, 4, 128, 32)
    m = np.where(rand((1, 1, 1, 128), seed=4) > 1.0, -1e4, 0.0).astype(np.float32)
    _check(_text(q, q, q, '{mask_kind = "bias"}', m.shape), [*_qkv(q, q, q), m])


@pytest.mark.parametrize(
    "attrs",
    [
        "",
        '{mask_kind = "causal", scale = 0.3 : f64}',
        '{mask_kind = "sliding_window", window = 2 : i64, softcap = 3.0 : f64}',
    ],
)
def test_f64_uses_dgemm(monkeypatch: pytest.MonkeyPatch, attrs: str) -> None:
    monkeypatch.setattr(attention, "BLOCK_ROWS", 3)
    q, k, v = (2, 2, 17, 8), (2, 2, 13, 8), (2, 2, 13, 6)
    text = _text(q, k, v, attrs, e="f64")
    assert "rlx_blas_dgemm" in Compiled(text).jit.llvm_ir
    _check(text, _qkv(q, k, v, "f64"), "f64")


def test_f64_bias() -> None:
    q, k, v = (1, 3, 9, 8), (1, 3, 14, 8), (1, 3, 14, 8)
    m = rand((1, 3, 9, 14), "f64", seed=4)
    m[0, 2, 5, :] = -np.inf
    _check(_text(q, k, v, '{mask_kind = "bias"}', m.shape, "f64"), [*_qkv(q, k, v, "f64"), m], "f64")  # fmt: skip


@pytest.mark.parametrize("e", ["f16", "bf16"])
def test_low_precision_uses_loops(e: str) -> None:
    q, k, v = (1, 2, 20, 16), (1, 2, 24, 16), (1, 2, 24, 8)
    _check(_text(q, k, v, '{mask_kind = "causal"}', e=e), _qkv(q, k, v, e), e, blas_used=False)


def test_blas_off_uses_loops(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RLX_BLAS", "0")
    q = (1, 2, 40, 16)
    _check(_text(q, q, q, '{mask_kind = "causal"}'), _qkv(q, q, q), blas_used=False)


def test_small_problems_use_loops(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.undo()  # the default MIN_ROWS / BLAS_MIN_WORK
    monkeypatch.setattr(attention, "FLASH", False)
    monkeypatch.setenv("RLX_BLAS", "1")
    q, k = (2, 3, 5, 8), (2, 3, 7, 8)
    _check(_text(q, k, k, '{mask_kind = "causal"}'), _qkv(q, k, k), blas_used=False)
    q, k = (1, 2, 1, 64), (1, 2, 300, 64)  # a decode step
    _check(_text(q, k, k, '{mask_kind = "causal"}'), _qkv(q, k, k), blas_used=False)
    q = (1, 2, 64, 32)
    _check(_text(q, q, q, '{mask_kind = "causal"}'), _qkv(q, q, q), blas_used=True)


@pytest.mark.parametrize("e", ["f32", "f16"])
def test_fully_masked_rows_loops(monkeypatch: pytest.MonkeyPatch, e: str) -> None:
    """The loop kernel also gives all-zero rows when every key of a row is -inf."""
    monkeypatch.setenv("RLX_BLAS", "0")
    q, k = (1, 2, 5, 8), (1, 2, 6, 8)
    m = rand((1, 2, 5, 6), e, seed=5)
    m[0, 1, 3, :] = -np.inf
    m[0, 0, 1, 1:] = -np.inf
    (got,) = _check(_text(q, k, k, '{mask_kind = "bias"}', m.shape, e), [*_qkv(q, k, k, e), m], e,
                 blas_used=False)  # fmt: skip
    assert not got[0, 1, 3].any()
