"""rlx.attention with layout = "bshd" ([B, S, H, D] q, k, v and result, read and written
in place by the flash and loop kernels): the reference interpreter equals the "bhsd" op
on the transposed operands (NumPy), and every kernel (flash on f32/f16/bf16, loops for
decode steps and with the flash kernel off, the common-IR decomposition) matches the
reference at odd sizes: primes, batch and heads > 1, GQA, causal with Sq != Sk, bias."""

from __future__ import annotations

import numpy as np
import pytest
from test_flash_attention import TOL, Shape, _check
from test_rlx_to_linalg_harness import multi_op, parse, rand, t

from rlx.interpreter import run
from rlx.lowering.rlx_to_linalg import attention
from rlx.transforms.kernel_dispatch import KernelDispatchPass


def _bshd(b: int, h: int, hk: int, sq: int, sk: int, d: int, dv: int) -> tuple[Shape, ...]:
    return (b, sq, h, d), (b, sk, hk, d), (b, sk, hk, dv)


CASES = [
    (*_bshd(2, 3, 3, 37, 41, 13, 7), '{layout = "bshd"}', None),  # primes, Dv != D
    (*_bshd(1, 4, 2, 23, 17, 8, 11), '{layout = "bshd", mask_kind = "causal"}', None),  # GQA
    (*_bshd(2, 2, 2, 11, 29, 5, 5), '{layout = "bshd", mask_kind = "causal"}', None),  # Sq < Sk
    (*_bshd(2, 3, 1, 13, 19, 6, 4), '{layout = "bshd", mask_kind = "bias"}', (2, 1, 1, 19)),
]


def _swap(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(np.swapaxes(x, 1, 2))


def test_reference_is_bhsd_transposed() -> None:
    """The interpreter's "bshd" op is the "bhsd" op between [0, 2, 1, 3] transposes."""
    q, k, v, attrs, _ = CASES[1]
    ins = [rand(q, seed=1), rand(k, seed=2), rand(v, seed=3)]
    out = (*q[:3], v[3])
    got = run(multi_op([("rlx.attention", [t(q), t(k), t(v)], t(out), attrs)]), ins)[0]
    qh, kh, vh = (tuple(s[i] for i in (0, 2, 1, 3)) for s in (q, k, v))
    text = multi_op([("rlx.attention", [t(qh), t(kh), t(vh)], t((*qh[:3], vh[3])),
                      '{mask_kind = "causal"}')])  # fmt: skip
    want = run(text, [_swap(x) for x in ins])[0]
    np.testing.assert_array_equal(got, _swap(want))


@pytest.mark.parametrize("e", ["f32", "f16", "bf16"])
def test_flash(e: str) -> None:
    _check(CASES, e)


def test_loops(monkeypatch: pytest.MonkeyPatch) -> None:
    """The loop kernel: flash off (the BLAS path takes "bhsd" only) and a decode step."""
    monkeypatch.setattr(attention, "FLASH", False)
    _check(CASES[:2])
    monkeypatch.setattr(attention, "FLASH", True)
    _check([(*_bshd(2, 4, 2, 2, 31, 7, 9), '{layout = "bshd", mask_kind = "causal"}', None)])


def test_decomposition() -> None:
    """kernel-dispatch=common expands the "bshd" op through transposes: same numbers."""
    ops, ins = [], []
    for n, (q, k, v, attrs, bias) in enumerate(CASES):
        tys = [t(q), t(k), t(v)] + ([t(bias)] if bias else [])
        ops.append(("rlx.attention", tys, t((*q[:3], v[3])), attrs))
        ins += [
            rand(s, seed=10 * n + i) for i, s in enumerate([q, k, v] + ([bias] if bias else []))
        ]
    text = multi_op(ops)
    ctx, module = parse(text)
    KernelDispatchPass(policy="common").apply(ctx, module)
    assert "rlx.attention" not in str(module)
    for got, want in zip(run(module, ins), run(text, ins), strict=True):
        np.testing.assert_allclose(got, want, rtol=TOL["f32"], atol=TOL["f32"])
