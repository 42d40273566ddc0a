"""Winograd F(2x2, 3x3) for blocked 3x3 stride-1 convs (`conv_winograd`) against the
reference interpreter: odd and prime output sizes (partial 2x2 tiles, a partial last
pixel tile), padding 0 / 1 / 2 and asymmetric, batch 2, blocks 8 and 16, an odd output
block count (the one-block tail tile), row and output-block task splits, residual and
every vector activation, the AVX2 and generic tiles; and which convs it does not take."""

from __future__ import annotations

import pytest
from test_conv_nchwc import _check, _conv

from rlx.lowering.gemm.conv_blocked import VectorEpilogue
from rlx.lowering.rlx_to_linalg.conv_nchwc_plan import BlockedGeom
from rlx.lowering.rlx_to_linalg.conv_winograd import ENV, MAX_UF, winograd_plan

PATH = "nchwc winograd F(2x2,3x3)"

CASES = [
    # (x NCHW, filters, padding, block, activation, residual)
    ((1, 16, 5, 17), 32, (1, 1, 1, 1), 16, "relu", False),  # odd rows, 9 tiles per row
    ((2, 16, 8, 9), 24, (1, 2, 0, 1), 8, "none", True),  # batch 2, 3 blocks: tail tile
    ((1, 32, 11, 12), 48, (0, 0, 0, 0), 16, "silu", True),  # no padding, 3 blocks of 16
    ((1, 16, 13, 7), 16, (2, 2, 2, 2), 8, "clip", False),  # padding 2: 15 x 9
    ((1, 8, 28, 8), 16, (1, 1, 1, 1), 8, "sigmoid", False),  # 14 tile rows: row tasks
    ((2, 64, 9, 9), 64, (1, 1, 1, 1), 16, "hard_swish", True),  # output-block tasks
    ((1, 16, 10, 11), 16, (1, 0, 1, 1), 16, "gelu_tanh", False),
]


@pytest.mark.parametrize("case", range(len(CASES)))
def test_winograd_f32(case: int) -> None:
    x, f, pad, block, act, res = CASES[case]
    _check(*_conv(x, f, 3, {"padding": pad}, "f32", block, act, res), "f32", PATH)


@pytest.mark.parametrize("forced", ["avx2", "generic"])
def test_other_isas(monkeypatch: pytest.MonkeyPatch, forced: str) -> None:
    """The AVX2 (u <= 6) and generic tiles: several pixel tiles per row, the tail block."""
    monkeypatch.setenv("RLX_GEMM_ISA", forced)
    for case in (1, 2):
        x, f, pad, block, act, res = CASES[case]
        _check(*_conv(x, f, 3, {"padding": pad}, "f32", block, act, res), "f32", PATH)


def test_switched_off(monkeypatch: pytest.MonkeyPatch) -> None:
    """`RLX_CONV_WINOGRAD=0`: the direct kernel takes the same conv."""
    monkeypatch.setenv(ENV, "0")
    x, f, pad, block, act, res = CASES[0]
    _check(*_conv(x, f, 3, {"padding": pad}, "f32", block, act, res), "f32", "nchwc direct")


def _geom(c: int = 16, f: int = 32, hw: int = 9, k: int = 3, s: int = 1, d: int = 1,
          b: int = 16) -> BlockedGeom:  # fmt: skip
    o = (hw + 2 - d * (k - 1) - 1) // s + 1
    return BlockedGeom(1, c, hw, hw, f, c, k, k, o, o, s, s, 1, 1, 1, 1, d, d, 1, b, False, b)


RELU = VectorEpilogue(True, False, "relu")


@pytest.mark.parametrize(
    ("geom", "f32s", "epi", "reduce"),
    [
        (_geom(s=2, hw=17), True, RELU, "none"),  # stride 2
        (_geom(d=2, hw=11), True, RELU, "none"),  # dilation 2
        (_geom(k=5), True, RELU, "none"),  # 5x5
        (_geom(hw=7), True, RELU, "none"),  # 7x7 map: < MIN_HW pixels
        (_geom(c=512, f=512, hw=14), True, RELU, "none"),  # U over MAX_UF
        (_geom(), False, RELU, "none"),  # f16 / bf16 operands
        (_geom(), True, None, "none"),  # gelu (erf): no vector epilogue
        (_geom(), True, RELU, "mean"),  # a pooled conv
    ],
)
def test_not_taken(geom: BlockedGeom, f32s: bool, epi: VectorEpilogue | None,
                   reduce: str) -> None:  # fmt: skip
    assert winograd_plan(_geom(), True, RELU) is not None
    assert winograd_plan(geom, f32s, epi, reduce) is None
    assert 16 * 256 * 256 <= MAX_UF  # resnet18's 14x14 convs are taken


def test_not_taken_compiled() -> None:
    """f16 and gelu (erf) convs compile to the direct kernel."""
    x, f, pad, block, _, res = CASES[0]
    _check(*_conv(x, f, 3, {"padding": pad}, "f16", block, "relu", res), "f16", "nchwc direct")
    _check(*_conv(x, f, 3, {"padding": pad}, "f32", block, "gelu", res), "f32", "nchwc direct")


@pytest.mark.parametrize("residual", [False, True])
def test_no_bias(residual: bool) -> None:
    """Without a bias operand (residual or not)."""
    text, shapes = _conv((1, 16, 9, 10), 32, 3, {"padding": (1, 1, 1, 1)}, "f32", 16, "relu",
                         residual)  # fmt: skip
    bias_t = ", tensor<32xf32>"
    text = (
        text.replace(", %b: tensor<32xf32>", "").replace(", %b {", " {").replace(bias_t + ")", ")")
    )
    _check(text, shapes[:-1], "f32", PATH)
