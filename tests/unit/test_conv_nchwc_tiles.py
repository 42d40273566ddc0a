"""Pixel tiles of the blocked kernels against the reference interpreter.

* The direct kernel's pointwise geometry (`conv_nchwc_plan.direct_tile`): 1x1 stride-1
  unpadded convs on narrow maps run with their rows merged (a 7x7 map as one row of 49
  pixels: tiles 14 + 14 + 14 + 7 on AVX-512), rows that whole tiles do not cover end in a
  tail tile (x read in place): batch 2, an odd number of output blocks, residual, the
  epilogues in registers, in the L1 tile loop and the scalar tile loop (gelu), f16 / bf16
  (no merge: the slab path), other ISAs.
* Depthwise (`conv_nchwc_dw`): stride-1 convs with kernels >= 5 on rows of at most
  `SMALL_OW` pixels read a zero-padded slab of the unit's input rows (no clipped column),
  the others clip their border columns; the
  rest of a row after the tiles of 8 in tiles of 4, 2, 1: strides, padding, dilation,
  row blocks, batch 2, residual, every epilogue kind, f16 / bf16, other ISAs."""

from __future__ import annotations

import pytest
from test_conv_nchwc import _check, _conv

from rlx.lowering.gemm.target import isa
from rlx.lowering.rlx_to_linalg.conv_nchwc_plan import BlockedGeom, direct_tile

CASES = [
    # (x NCHW, filters, block, activation, residual, AVX-512 path)
    ((1, 16, 7, 7), 64, 8, "clip", True, "14x2x8+7 (inplace"),  # merged: 1 row of 49
    ((1, 24, 7, 7), 56, 8, "relu", False, "14x2x8+7 (inplace"),  # odd block count
    ((2, 16, 7, 7), 112, 16, "silu", True, "14x2x16+7 (inplace"),  # batch 2, L1 tile loop
    ((1, 16, 6, 6), 64, 8, "gelu", False, "9x2x8 (inplace"),  # 3 rows merged: 2 x 18, 9 + 9
    ((1, 16, 5, 5), 32, 8, "none", True, "14x2x8+11 (inplace"),  # one row of 25: 14 + 11
    ((2, 16, 3, 17), 16, 8, "relu", True, "9x2x8+8 (inplace"),  # not merged: a tail of 8
    ((1, 8, 9, 5), 8, 8, "relu", False, "5x1x8 (inplace"),  # input > weights: not merged
]


@pytest.mark.parametrize("case", range(len(CASES)))
def test_pointwise_f32(case: int) -> None:
    x, f, block, act, res, path = CASES[case]
    want = f"nchwc direct {path}" if isa() == "avx512" else "nchwc direct"
    _check(*_conv(x, f, 1, {}, "f32", block, act, res), "f32", want)


@pytest.mark.parametrize("dt", ["f16", "bf16"])
def test_pointwise_low_precision(dt: str) -> None:
    _check(*_conv((1, 16, 7, 7), 64, 1, {}, dt, 8, "relu", True), dt, "nchwc direct")


@pytest.mark.parametrize("forced", ["avx2", "generic"])
@pytest.mark.parametrize("case", [0, 2, 5])
def test_pointwise_other_isas(monkeypatch: pytest.MonkeyPatch, forced: str, case: int) -> None:
    monkeypatch.setenv("RLX_GEMM_ISA", forced)
    x, f, block, act, res, _ = CASES[case]
    _check(*_conv(x, f, 1, {}, "f32", block, act, res), "f32", "nchwc direct")


def test_direct_tile_geometry(monkeypatch: pytest.MonkeyPatch) -> None:
    """The merged geometry and tiles, on the AVX-512 registers (u_max 14 with 2 blocks),
    forced, so AVX2-only hosts check them too (the choice is plain Python)."""
    monkeypatch.setenv("RLX_GEMM_ISA", "avx512")

    def geom(c: int, f: int, h: int, w: int, k: int = 1, pad: int = 0) -> BlockedGeom:
        return BlockedGeom(1, c, h, w, f, c, k, k, h + 2 * pad - k + 1, w + 2 * pad - k + 1,
                           1, 1, pad, pad, pad, pad, 1, 1, 1, 8, False, 8)  # fmt: skip

    g, u, ut, nblk = direct_tile(geom(960, 160, 7, 7), True)
    assert (g.h, g.w, g.oh, g.ow, u, ut, nblk) == (1, 49, 1, 49, 14, 7, 2)
    assert g.macs == geom(960, 160, 7, 7).macs
    g, u, ut, _ = direct_tile(geom(64, 384, 14, 14), True)  # a whole-tile row: unchanged
    assert (g.oh, g.ow, u, ut) == (14, 14, 14, 0)
    g, u, ut, _ = direct_tile(geom(960, 160, 7, 7), False)  # f16 x: the slab path, no merge
    assert (g.oh, g.ow, u, ut) == (7, 7, 7, 0)
    g, u, ut, _ = direct_tile(geom(64, 64, 7, 7, k=3, pad=1), True)  # not pointwise
    assert (g.oh, g.ow, u, ut) == (7, 7, 7, 0)


DEPTHWISE = [
    # (x NCHW, kernel, attrs, block, activation, residual)
    ((1, 16, 5, 45), 3, {"padding": (1, 1, 1, 1)}, 8, "relu", False),  # wide: 43 = 5·8 + 2 + 1
    ((2, 16, 9, 75), 3, {"padding": (1, 1, 1, 0), "strides": (2, 2)}, 16, "silu", True),  # ow 37
    ((1, 16, 6, 40), 5, {"padding": (2, 2, 2, 2), "dilations": (2, 2)}, 8, "none", False),
    ((1, 16, 30, 30), 5, {"padding": (2, 2, 2, 2)}, 8, "clip", True),  # slab, 2 row blocks
    ((1, 32, 7, 7), 5, {"padding": (2, 2, 2, 2)}, 8, "silu", False),  # 7x7: all from the slab
    ((1, 16, 14, 13), 5, {"padding": (2, 1, 2, 3), "strides": (2, 2)}, 16, "hard_swish", True),
    ((2, 16, 7, 7), 5, {"padding": (2, 2, 2, 2)}, 8, "gelu", False),  # slab, scalar tile loop
    ((1, 16, 3, 6), 3, {"padding": (0, 0, 0, 0)}, 8, "relu", False),  # no padding: 4 pixels
    ((1, 16, 9, 12), 5, {"padding": (4, 3, 4, 5), "dilations": (2, 2)}, 16, "sigmoid", True),
    ((1, 8, 4, 3), 7, {"padding": (3, 3, 3, 3)}, 8, "gelu_tanh", False),  # slab > input
]


def _dw(case: int, dt: str) -> None:
    x, k, attrs, block, act, res = DEPTHWISE[case]
    attrs = {**attrs, "groups": x[1]}
    _check(*_conv(x, x[1], k, attrs, dt, block, act, res), dt, "nchwc depthwise")


@pytest.mark.parametrize("case", range(len(DEPTHWISE)))
def test_depthwise_f32(case: int) -> None:
    _dw(case, "f32")


@pytest.mark.parametrize("dt", ["f16", "bf16"])
@pytest.mark.parametrize("case", [1, 4, 8])
def test_depthwise_low_precision(dt: str, case: int) -> None:
    _dw(case, dt)


@pytest.mark.parametrize("forced", ["avx2", "generic"])
@pytest.mark.parametrize("case", [0, 3, 4, 5])
def test_depthwise_other_isas(monkeypatch: pytest.MonkeyPatch, forced: str, case: int) -> None:
    monkeypatch.setenv("RLX_GEMM_ISA", forced)
    _dw(case, "f32")
