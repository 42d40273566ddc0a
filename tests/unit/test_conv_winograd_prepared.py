"""Winograd weights prepared once (`winograd = true`, `transforms/blocked_winograd.py`):
the conv reading U against the reference interpreter (odd sizes, padding, batch 2,
residual, the AVX2 and generic tiles; the direct-kernel fallback on `L U Lᵀ`: switched
off, gelu, the scratch limits), and
`blocked-layout` moving the transform into `@prepare` for param weights only, with the
compiled model against the interpreter on the NCHW module."""

from __future__ import annotations

import numpy as np
import pytest
from conv_tolerances import CONV_TOL
from reference_helpers import assert_close
from test_conv_nchwc import _arr, _out, _t
from xdsl.context import Context

import rlx
from rlx.interpreter import parse_module, run
from rlx.interpreter.ops.layout import winograd_unweight, winograd_weight
from rlx.runtime.options import CompileOptions
from rlx.transforms.blocked_layout import BlockedLayout
from rlx.transforms.hoist_param_invariant import HoistParamInvariant

TOL = CONV_TOL["blocked"]
PREPARED = "nchwc winograd F(2x2,3x3)"

CASES = [
    # (x NCHW, filters, padding, block, activation, residual)
    ((1, 16, 5, 17), 32, (1, 1, 1, 1), 16, "relu", False),  # odd rows, partial tiles
    ((2, 16, 8, 9), 24, (1, 2, 0, 1), 8, "none", True),  # batch 2, asymmetric, tail block
    ((1, 32, 11, 12), 48, (0, 0, 0, 0), 16, "silu", True),  # no padding
    ((1, 16, 13, 7), 16, (2, 2, 2, 2), 8, "clip", False),  # padding 2
]


def _module(x: tuple[int, ...], f: int, pad: tuple[int, ...], b: int, act: str,
            res: bool) -> tuple[str, list[tuple[int, ...]]]:  # fmt: skip
    """A `winograd = true` conv: blocked x, U, (residual,) bias in, blocked result out."""
    n, c, h, w = x
    oh, ow = _out(h, 3, 1, pad[0], pad[2], 1), _out(w, 3, 1, pad[1], pad[3], 1)
    xb, yb, u = (n, c // b, h, w, b), (n, f // b, oh, ow, b), (16, f // b, c // b, b, b)
    a = [f"padding = {_arr(pad)}", f'activation = "{act}"', 'layout = "nchwc"', "winograd = true"]
    if act == "clip":
        a.append("clip = array<f64: -0.5, 0.75>")
    shapes = [xb, u, *([yb] if res else []), (f,)]
    names = ["%x", "%u", *(["%r"] if res else []), "%b"]
    types = [_t(s, "f32") for s in shapes]
    args = ", ".join(f"{nm}: {ty}" for nm, ty in zip(names, types, strict=True))
    op = "rlx.fused_conv2d_residual" if res else "rlx.conv2d"
    text = f"""func.func @main({args}) -> {_t(yb, "f32")} {{
  %y = {op} {", ".join(names)} {{{", ".join(a)}}} : ({", ".join(types)}) -> {_t(yb, "f32")}
  func.return %y : {_t(yb, "f32")}
}}"""
    return text, shapes


def _values(shapes: list[tuple[int, ...]], seed: int) -> list[np.ndarray]:
    """Random operands; U is the transform of random 3x3 blocked weights (U's range)."""
    rng = np.random.default_rng(seed)
    vals = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    _, fb, cb, bi, b = shapes[1]
    vals[1] = winograd_weight(rng.standard_normal((fb, cb, 3, 3, bi, b)).astype(np.float32))
    return vals


def _check(case: int, path: str) -> None:
    text, shapes = _module(*CASES[case])
    vals = _values(shapes, case)
    (want,) = run(parse_module(text), vals)
    compiled = rlx.compile(text)
    assert path in compiled.dispatch_report()
    (got,) = compiled.run(*vals)
    assert got.shape == want.shape
    assert_close(got, want, TOL["f32"])


def test_transform_round_trip() -> None:
    """The reference statement: L U Lᵀ gives back the 3x3 weights."""
    g = np.random.default_rng(0).standard_normal((2, 3, 3, 3, 8, 8))
    np.testing.assert_allclose(winograd_unweight(winograd_weight(g)), g, atol=1e-12)


@pytest.mark.parametrize("case", range(len(CASES)))
def test_prepared_weights(case: int) -> None:
    _check(case, "prepared weights")


@pytest.mark.parametrize("forced", ["avx2", "generic"])
def test_other_isas(monkeypatch: pytest.MonkeyPatch, forced: str) -> None:
    monkeypatch.setenv("RLX_GEMM_ISA", forced)
    for case in (0, 1):
        _check(case, PREPARED)


def test_direct_fallback(monkeypatch: pytest.MonkeyPatch) -> None:
    """`RLX_CONV_WINOGRAD=0` at compile time: the direct kernel on `L U Lᵀ`."""
    monkeypatch.setenv("RLX_CONV_WINOGRAD", "0")
    for case in (1, 3):
        _check(case, "nchwc direct")


@pytest.mark.parametrize(
    ("x_shape", "f", "act", "seed"),
    [((1, 256, 34, 34), 16, "relu", 5), ((1, 16, 8, 8), 8, "gelu", 7)],
    ids=["refused-by-limits", "gelu"],
)
def test_direct_kernel_where_winograd_does_not_apply(
    x_shape: tuple[int, int, int, int], f: int, act: str, seed: int
) -> None:
    """The direct kernel on `L U Lᵀ` where U is given (IR written so: `blocked-layout`
    prepares U only for convs the kernel takes) but the Winograd kernel refuses: a
    transformed input row over `V_ELEMENTS` on every ISA (16 · 256 · 17), or gelu (erf),
    which it does not apply."""
    text, shapes = _module(x_shape, 16, (1, 1, 1, 1), f, act, False)
    vals = _values(shapes, seed)
    (want,) = run(parse_module(text), vals)
    compiled = rlx.compile(text)
    assert "nchwc direct" in compiled.dispatch_report()
    assert_close(compiled.run(*vals)[0], want, TOL["f32"])


NCHW = """func.func @main(%x: tensor<2x16x9x9xf32>, %wa: tensor<16x16x3x3xf32>) -> tensor<2x16x9x9xf32> {
  %w1 = rlx.param "w1" : tensor<16x16x3x3xf32>
  %b1 = rlx.param "b1" : tensor<16xf32>
  %a = rlx.conv2d %x, %w1, %b1 {padding = array<i64: 1, 1, 1, 1>, activation = "relu"} : (tensor<2x16x9x9xf32>, tensor<16x16x3x3xf32>, tensor<16xf32>) -> tensor<2x16x9x9xf32>
  %b = rlx.conv2d %a, %wa {padding = array<i64: 1, 1, 1, 1>} : (tensor<2x16x9x9xf32>, tensor<16x16x3x3xf32>) -> tensor<2x16x9x9xf32>
  func.return %b : tensor<2x16x9x9xf32>
}"""


def test_pass_moves_param_transform_only() -> None:
    """The param weights' U is computed in @prepare; the argument weights stay per call."""
    m = parse_module(NCHW)
    HoistParamInvariant().apply(Context(), m)
    BlockedLayout(block=8, prepare_weights=True).apply(Context(), m)
    prep, main = m.body.block.ops
    assert [o.name for o in prep.body.block.ops].count("rlx.matmul") == 1
    convs = [o for o in main.body.block.ops if o.name == "rlx.conv2d"]
    assert [c.winograd for c in convs] == [True, False]
    assert "rlx.matmul" not in {o.name for o in main.body.block.ops}


def test_compiled_model_vs_reference() -> None:
    """The whole pipeline (blocked layout, @prepare) against the NCHW module, for two sets
    of params (U follows `set_params`)."""
    rng = np.random.default_rng(3)
    x, wa = (rng.standard_normal(s).astype(np.float32) for s in ((2, 16, 9, 9), (16, 16, 3, 3)))
    graph = rlx.compile(NCHW, CompileOptions(blocked_layout=True, cache_param_invariant=True))
    report = graph.dispatch_report()
    assert "prepared weights" in report and report.count(PREPARED) == 2
    for _ in range(2):
        params = {"w1": rng.standard_normal((16, 16, 3, 3)).astype(np.float32),
                  "b1": rng.standard_normal(16).astype(np.float32)}  # fmt: skip
        graph.set_params(params)
        (want,) = run(parse_module(NCHW), [x, wa], params=params)
        assert_close(graph.run(x, wa)[0], want, TOL["f32"])


def test_prepared_limits() -> None:
    """Prepared U: no `MAX_UF` limit and 7x7 maps (`MIN_HW_PREPARED`); not below that."""
    from rlx.lowering.gemm.conv_blocked import VectorEpilogue
    from rlx.lowering.rlx_to_linalg.conv_nchwc_plan import BlockedGeom
    from rlx.lowering.rlx_to_linalg.conv_winograd import winograd_plan

    def geom(c: int, hw: int) -> BlockedGeom:
        return BlockedGeom(1, c, hw, hw, c, c, 3, 3, hw, hw, 1, 1, 1, 1, 1, 1, 1, 1, 1, 16,
                           False, 16)  # fmt: skip

    relu = VectorEpilogue(True, False, "relu")
    assert winograd_plan(geom(512, 7), True, relu) is None  # per call: U over MAX_UF
    assert winograd_plan(geom(512, 7), True, relu, prepared=True) is not None
    assert winograd_plan(geom(128, 6), True, relu, prepared=True) is None  # 36 < 49 pixels
