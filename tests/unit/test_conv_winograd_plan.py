"""One Winograd plan (`rlx.conv_plan.winograd_tile`) for `blocked-layout` and the lowering:
the pass prepares U exactly for the convs the kernel then takes with U (a grid of
channels, maps, blocks and the AVX-512 / AVX2 / generic tiles); a conv the scratch
limits refuse keeps its 3x3 weights and runs right (against the reference interpreter);
and weights as a param (U in `@prepare`, a matmul by G ⊗ G) and as an input (U per call,
the kernel's ½(s ± g)) agree within the conv tolerance (not bit for bit: the two round
differently)."""

from __future__ import annotations

import numpy as np
import pytest
from conv_tolerances import CONV_TOL
from reference_helpers import assert_close
from test_conv_nchwc import _t
from xdsl.dialects.builtin import f32
from xdsl.ir import Block

import rlx
from rlx.conv_plan import winograd_tile
from rlx.dialects.rlx.base import tensor
from rlx.dialects.rlx.window import Conv2dOp
from rlx.interpreter import parse_module, run
from rlx.lowering.rlx_to_linalg.conv_nchwc_dispatch import nchwc_path
from rlx.runtime.options import CompileOptions
from rlx.transforms.blocked_winograd import candidate

OPTIONS = CompileOptions(blocked_layout=True, cache_param_invariant=True)
WINOGRAD = "nchwc winograd F(2x2,3x3)"


def _blocked_conv(c: int, f: int, hw: int, b: int, u: bool) -> Conv2dOp:
    """A blocked 3x3 stride-1 padding-1 conv with bias + relu on an `hw` x `hw` map: its
    weights 3x3 blocked, or U (`u`: `winograd = true`)."""
    w = (16, f // b, c // b, b, b) if u else (f // b, c // b, 3, 3, b, b)
    block = Block(
        arg_types=[tensor((1, c // b, hw, hw, b), f32), tensor(w, f32), tensor((f,), f32)]
    )
    return Conv2dOp(*block.args, padding=(1, 1, 1, 1), activation="relu", layout="nchwc",
                    winograd=u)  # fmt: skip


GRID = [(c, f, hw, b) for c in (16, 64, 256, 512) for f in (16, 64, 256, 512)
        for hw in (6, 7, 14, 28, 56, 57, 112) for b in (8, 16)]  # fmt: skip


@pytest.mark.parametrize("isa", ["avx512", "avx2", "generic"])
def test_pass_and_lowering_agree(monkeypatch: pytest.MonkeyPatch, isa: str) -> None:
    """`candidate` (the pass: prepare U) is true exactly when the lowering takes the
    same conv reading U with the Winograd kernel (not the direct kernel on L U Lᵀ)."""
    monkeypatch.setenv("RLX_GEMM_ISA", isa)
    taken = {}
    for c, f, hw, b in GRID:
        prepare = candidate(_blocked_conv(c, f, hw, b, u=False))
        path = nchwc_path(_blocked_conv(c, f, hw, b, u=True))
        assert prepare == path.startswith(WINOGRAD), (c, f, hw, b, path)
        taken[c, f, hw, b] = prepare
    assert taken[64, 64, 56, 16] and taken[512, 512, 7, 16]  # resnet18's
    assert not taken[256, 256, 56, 16] and not taken[512, 512, 28, 16]  # VGG's: V too large
    assert not taken[64, 64, 6, 16]  # 36 < MIN_HW_PREPARED pixels


def test_plan_refuses_unknown_sizes() -> None:
    """Dynamic sizes (negative in the shapes) are refused, not planned."""
    assert winograd_tile(x=(-1, 4, 56, 56, 16), w=(4, 4, 3, 3, 16, 16), out=(-1, 4, 56, 56, 16),
                         kernel=(3, 3), stride=(1, 1), dilation=(1, 1), groups=1, f32=True,
                         act="relu", reduce="none", prepared=True) is None  # fmt: skip


def _model(c: int, f: int, hw: int, w1_param: bool) -> str:
    """x [1, 16, hw, hw] -> conv 16 -> c (w1, bias, relu) -> conv c -> f (w2, a param)."""
    x, a, y = ((1, n, hw, hw) for n in (16, c, f))
    w1, w2 = (c, 16, 3, 3), (f, c, 3, 3)
    p = "padding = array<i64: 1, 1, 1, 1>"
    args = f"%x: {_t(x, 'f32')}" + ("" if w1_param else f", %w1: {_t(w1, 'f32')}")
    w1_def = f'  %w1 = rlx.param "w1" : {_t(w1, "f32")}\n' if w1_param else ""
    return f"""func.func @main({args}) -> {_t(y, "f32")} {{
{w1_def}  %b1 = rlx.param "b1" : tensor<{c}xf32>
  %w2 = rlx.param "w2" : {_t(w2, "f32")}
  %a = rlx.conv2d %x, %w1, %b1 {{{p}, activation = "relu"}} : ({_t(x, "f32")}, {_t(w1, "f32")}, tensor<{c}xf32>) -> {_t(a, "f32")}
  %y = rlx.conv2d %a, %w2 {{{p}}} : ({_t(a, "f32")}, {_t(w2, "f32")}) -> {_t(y, "f32")}
  func.return %y : {_t(y, "f32")}
}}"""  # fmt: skip


def _params(c: int, f: int, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    shapes = {"w1": (c, 16, 3, 3), "b1": (c,), "w2": (f, c, 3, 3)}
    return {k: (rng.standard_normal(s) / np.sqrt(np.prod(s[1:]) or 1)).astype(np.float32)
            for k, s in shapes.items()}  # fmt: skip


def test_refused_conv_keeps_its_weights() -> None:
    """256 -> 16 on 34x34 (16 · 256 · 17 > V_ELEMENTS on every ISA): the first conv reads
    U, the second the direct kernel on its blocked weights; both against the reference."""
    text = _model(256, 16, 34, w1_param=True)
    params = _params(256, 16, 0)
    x = np.random.default_rng(1).standard_normal((1, 16, 34, 34)).astype(np.float32)
    graph = rlx.compile(text, OPTIONS)
    report = graph.dispatch_report()
    assert report.count("prepared weights") == 1 and "nchwc direct" in report, report
    graph.set_params(params)
    (want,) = run(parse_module(text), [x], params=params)
    assert_close(graph.run(x)[0], want, CONV_TOL["blocked"]["f32"])


CONV_CHAIN = """func.func @main(%x: tensor<1x16x10x10xf32>, %wa: tensor<16x16x3x3xf32>) -> tensor<1x16x10x10xf32> {
  %w = rlx.param "w" : tensor<16x16x3x3xf32>
  %a = rlx.conv2d %x, %w {padding = array<i64: 1, 1, 1, 1>} : (tensor<1x16x10x10xf32>, tensor<16x16x3x3xf32>) -> tensor<1x16x10x10xf32>
  %b = rlx.conv2d %a, %wa {padding = array<i64: 1, 1, 1, 1>} : (tensor<1x16x10x10xf32>, tensor<16x16x3x3xf32>) -> tensor<1x16x10x10xf32>
  func.return %b : tensor<1x16x10x10xf32>
}"""
"""Two convs (a blocked region): weights as a param, then as an input."""


def test_param_and_input_weights_agree() -> None:
    """A conv with its weights as a param (U in `@prepare`, a matmul by G ⊗ G) feeding
    one with its weights as an input (U per call, by the kernel): both Winograd, the
    result against the reference interpreter."""
    rng = np.random.default_rng(2)
    x = rng.standard_normal((1, 16, 10, 10)).astype(np.float32)
    w, wa = (rng.standard_normal((16, 16, 3, 3)).astype(np.float32) for _ in range(2))
    graph = rlx.compile(CONV_CHAIN, OPTIONS)
    paths = [line for line in graph.dispatch_report().splitlines() if WINOGRAD in line]
    assert len(paths) == 2 and sum("prepared weights" in p for p in paths) == 1, paths
    graph.set_params({"w": w})
    (want,) = run(parse_module(CONV_CHAIN), [x, wa], {"w": w})
    assert_close(graph.run(x, wa)[0], want, CONV_TOL["blocked"]["f32"])
