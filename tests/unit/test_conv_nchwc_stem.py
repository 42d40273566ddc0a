"""The stem form of the blocked direct conv (x blocked by 1: an NCHW input reshaped to
`[N, C, H, W, 1]`, result `[N, F/B, OH, OW, B]`; `conv_nchwc` with `xb = 1`) against
the reference interpreter: 1, 3 and 4 input channels, odd output-block counts (3 -> 24
with B = 8: the one-block tail tile), strides 1 / 2, asymmetric padding, dilation, prime
sizes, batch 2, every epilogue (in registers, the vector tile loop, the scalar gelu
loop), f32 / f16 / bf16, and the AVX2 and generic tiles (RLX_GEMM_ISA)."""

from __future__ import annotations

import pytest
from test_conv_nchwc import _check, _conv

from rlx.lowering.gemm.target import isa

STEMS = [
    # (x NCHW, filters, kernel, attrs, block, activation, residual)
    ((1, 3, 23, 29), 64, 7, {"padding": (3, 3, 3, 3), "strides": (2, 2)}, 16, "relu", False),
    ((2, 3, 17, 13), 32, 3, {"padding": (1, 1, 1, 1), "strides": (2, 2)}, 8, "silu", False),
    ((1, 3, 11, 19), 24, 3, {"padding": (1, 0, 2, 1)}, 8, "clip", True),  # 3 blocks: tail
    ((1, 1, 13, 7), 8, 5, {"padding": (4, 4, 4, 4), "dilations": (2, 2)}, 8, "none", False),
    ((2, 4, 7, 11), 64, 1, {}, 16, "hard_swish", True),  # 1x1, no padding
    ((1, 3, 5, 14), 16, 3, {}, 16, "gelu", False),  # no padding, whole tiles: x in place
]


@pytest.mark.parametrize("case", range(len(STEMS)))
def test_stem_f32(case: int) -> None:
    x, f, k, attrs, block, act, res = STEMS[case]
    _check(*_conv(x, f, k, attrs, "f32", block, act, res, xblock=1), "f32", "x blocked by 1")


@pytest.mark.parametrize("dt", ["f16", "bf16"])
@pytest.mark.parametrize("case", [1, 2])
def test_stem_low_precision(case: int, dt: str) -> None:
    x, f, k, attrs, block, act, res = STEMS[case]
    _check(*_conv(x, f, k, attrs, dt, block, act, res, xblock=1), dt, "x blocked by 1")


@pytest.mark.parametrize("forced", ["avx2", "generic"])
def test_stem_other_isas(monkeypatch: pytest.MonkeyPatch, forced: str) -> None:
    """The AVX2 (u <= 6) and generic tiles of the stem form."""
    monkeypatch.setenv("RLX_GEMM_ISA", forced)
    assert isa() == forced
    for case in (0, 2):
        x, f, k, attrs, block, act, res = STEMS[case]
        _check(*_conv(x, f, k, attrs, "f32", 8, act, res, xblock=1), "f32", "x blocked by 1")


def test_mixed_blocks() -> None:
    """x blocked by 4, result by 8 (the general form the dialect states)."""
    attrs = {"padding": (1, 1, 1, 1)}
    _check(*_conv((1, 8, 6, 9), 16, 3, attrs, "f32", 8, "relu", False, xblock=4), "f32",
           "x blocked by 4")  # fmt: skip
