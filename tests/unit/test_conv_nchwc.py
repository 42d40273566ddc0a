"""The blocked-layout (NCHWc) conv and pool kernels (`conv_nchwc`, `conv_nchwc_dw`,
`pool`) against the reference interpreter, through IR with layout = "nchwc": tile
edges (output widths 1, primes, several pixel tiles with a partial last one), blocks 8 and
16 (an odd number of output blocks: the one-block tail tile), strides 1/2, asymmetric
padding, dilation 2, kernels 1x1 / 3x3 / 5x5 / 7x7, batch 2, row and channel-block task
splits, depthwise, residual + every activation (in registers: special values too),
f32 / f16 / bf16."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from conv_tolerances import CONV_TOL
from reference_helpers import assert_close

import rlx
from rlx.interpreter import parse_module, run
from rlx.lowering.gemm.target import isa
from rlx.lowering.rlx_to_linalg.conv_nchwc_plan import TASKS, balance

DTYPES = {"f32": np.float32, "f16": np.float16, "bf16": ml_dtypes.bfloat16}
TOL = CONV_TOL["blocked"]


@pytest.fixture(autouse=True)
def _direct_kernel(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests are the direct kernel's: 3x3 stride-1 f32 convs would take Winograd
    (tests/unit/test_conv_winograd.py)."""
    monkeypatch.setenv("RLX_CONV_WINOGRAD", "0")


def _t(shape: tuple[int, ...], dt: str) -> str:
    return "tensor<" + "x".join(map(str, shape)) + f"x{dt}>"


def _arr(v: tuple[int, ...]) -> str:
    return "array<i64: " + ", ".join(map(str, v)) + ">"


def _out(size: int, k: int, s: int, p0: int, p1: int, d: int) -> int:
    return (size + p0 + p1 - d * (k - 1) - 1) // s + 1


def _conv(x: tuple[int, ...], f: int, k: int, attrs: dict, dt: str, block: int,
          act: str, residual: bool, xblock: int = 0) -> tuple[str, list[tuple[int, ...]]]:  # fmt: skip
    """Blocked x, weight, bias (and residual) in, blocked result out: the kernel alone.
    `xblock`: x's block (0: `block`; 1: the stem form, x [N, C, H, W, 1])."""
    n, c, h, w = x
    xblock = xblock or block
    groups = attrs.get("groups", 1)
    dw = groups > 1
    st = attrs.get("strides", (1, 1))
    pad = attrs.get("padding", (0, 0, 0, 0))
    dil = attrs.get("dilations", (1, 1))
    oh = _out(h, k, st[0], pad[0], pad[2], dil[0])
    ow = _out(w, k, st[1], pad[1], pad[3], dil[1])
    xb, yb = (n, c // xblock, h, w, xblock), (n, f // block, oh, ow, block)
    w6 = (f // block, 1 if dw else c // xblock, k, k, 1 if dw else xblock, block)
    a = [f"{key} = {_arr(v)}" for key, v in attrs.items() if key != "groups"]
    a += [f"groups = {groups} : i64"] if dw else []
    a += [f'activation = "{act}"', 'layout = "nchwc"']
    if act == "clip":
        a.append("clip = array<f64: -0.5, 0.75>")
    shapes = [xb, w6, *([yb] if residual else []), (f,)]
    names = ["%x", "%w", *(["%r"] if residual else []), "%b"]
    types = [_t(s, dt) for s in shapes]
    args = ", ".join(f"{nm}: {ty}" for nm, ty in zip(names, types, strict=True))
    op = "rlx.fused_conv2d_residual" if residual else "rlx.conv2d"
    text = f"""func.func @main({args}) -> {_t(yb, dt)} {{
  %y = {op} {", ".join(names)} {{{", ".join(a)}}} : ({", ".join(types)}) -> {_t(yb, dt)}
  func.return %y : {_t(yb, dt)}
}}"""
    return text, shapes


def _check(text: str, shapes: list[tuple[int, ...]], dt: str, path: str) -> None:
    rng = np.random.default_rng(len(text))
    vals = [rng.standard_normal(s).astype(DTYPES[dt]) for s in shapes]
    (want,) = run(parse_module(text), vals)
    compiled = rlx.compile(text)
    assert path in compiled.dispatch_report()
    (got,) = compiled.run(*vals)
    assert got.shape == want.shape and got.dtype == want.dtype
    assert_close(got, want, TOL[dt])


CONVS = [
    # (x NCHW, filters, kernel, attrs, block, activation, residual)
    ((1, 16, 5, 17), 32, 3, {"padding": (1, 1, 1, 1)}, 16, "relu", False),  # 2 tiles of 9
    ((2, 16, 7, 31), 24, 3, {"padding": (1, 2, 0, 1), "strides": (2, 2)}, 8, "none", True),
    ((1, 16, 20, 13), 16, 3, {"padding": (2, 2, 2, 2), "dilations": (2, 2)}, 8, "silu", False),
    ((1, 32, 3, 1), 64, 3, {"padding": (1, 1, 1, 1)}, 16, "clip", True),  # width 1, fb split
    ((2, 24, 6, 29), 40, 1, {}, 8, "relu", False),  # 1x1, odd block count, tail tile: in place
    ((1, 16, 9, 11), 16, 5, {"padding": (2, 1, 2, 3)}, 16, "none", False),
    ((1, 16, 12, 12), 32, 7, {"padding": (3, 3, 3, 3), "strides": (2, 2)}, 16, "relu", False),
    ((2, 16, 5, 14), 48, 1, {}, 16, "relu", True),  # whole tiles, no padding: x read in place
    ((1, 16, 9, 16), 16, 3, {"strides": (1, 1)}, 8, "none", False),  # in place, 3x3
    ((2, 16, 3, 5), 128, 3, {"padding": (1, 1, 1, 1)}, 8, "relu", False),  # shared copy
    ((1, 16, 4, 17), 16, 3, {"padding": (1, 1, 1, 1)}, 16, "relu", True),  # partial tile + res
    ((1, 8, 28, 8), 16, 3, {"padding": (1, 1, 1, 1)}, 8, "silu", False),  # 14 row tasks
]

MODES = ["slab"] * 4 + ["inplace"] + ["slab"] * 2 + ["inplace", "inplace", "shared", "slab", "slab"]

DEPTHWISE = [
    ((2, 16, 9, 23), 3, {"padding": (1, 1, 1, 1)}, 8, "relu", False),  # 2 tiles + rest
    ((1, 32, 11, 19), 3, {"padding": (1, 0, 1, 2), "strides": (2, 2)}, 16, "clip", True),
    ((1, 16, 17, 13), 5, {"padding": (4, 4, 4, 4), "dilations": (2, 2)}, 16, "silu", False),
    ((1, 16, 3, 2), 7, {"padding": (3, 3, 3, 3)}, 8, "none", False),  # kernel > input
    ((1, 48, 7, 7), 3, {"padding": (1, 1, 1, 1)}, 16, "clip", False),
]


@pytest.mark.parametrize("case", range(len(CONVS)))
def test_direct_f32(case: int) -> None:
    x, f, k, attrs, block, act, res = CONVS[case]
    # the input modes are those of the AVX-512 tile (other tiles: other pixel tiles)
    mode = f"({MODES[case]} input)" if isa() == "avx512" else "nchwc direct"
    _check(*_conv(x, f, k, attrs, "f32", block, act, res), "f32", mode)


@pytest.mark.parametrize("case", range(len(DEPTHWISE)))
def test_depthwise_f32(case: int) -> None:
    x, k, attrs, block, act, res = DEPTHWISE[case]
    attrs = {**attrs, "groups": x[1]}
    _check(*_conv(x, x[1], k, attrs, "f32", block, act, res), "f32", "nchwc depthwise")


@pytest.mark.parametrize("dt", ["f16", "bf16"])
@pytest.mark.parametrize("case", [1, 3])
def test_low_precision(case: int, dt: str) -> None:
    x, f, k, attrs, block, act, res = CONVS[case]
    _check(*_conv(x, f, k, attrs, dt, block, act, res), dt, "nchwc direct")
    x, k, attrs, block, act, res = DEPTHWISE[case - 1]
    attrs = {**attrs, "groups": x[1]}
    _check(*_conv(x, x[1], k, attrs, dt, block, act, res), dt, "nchwc depthwise")


@pytest.mark.parametrize(
    ("dt", "kind", "kernel", "strides", "pads", "block"),
    [
        ("f32", "max", (3, 3), (2, 2), (1, 1, 1, 1), 16),
        ("f32", "avg", (2, 3), (1, 2), (0, 1, 1, 0), 8),
        ("bf16", "avg", (3, 3), (1, 1), (1, 1, 1, 1), 8),
        ("f16", "max", (2, 2), (2, 2), (0, 0, 0, 0), 16),
    ],
)
def test_pool(dt: str, kind: str, kernel: tuple[int, int], strides: tuple[int, int],
              pads: tuple[int, ...], block: int) -> None:  # fmt: skip
    n, c, h, w = 2, 32, 9, 7
    oh = _out(h, kernel[0], strides[0], pads[0], pads[2], 1)
    ow = _out(w, kernel[1], strides[1], pads[1], pads[3], 1)
    xb, yb = (n, c // block, h, w, block), (n, c // block, oh, ow, block)
    attrs = (f'kind = "{kind}", kernel = {_arr(kernel)}, strides = {_arr(strides)}, '
             f'padding = {_arr(pads)}, layout = "nchwc"')  # fmt: skip
    text = f"""func.func @main(%x: {_t(xb, dt)}) -> {_t(yb, dt)} {{
  %y = rlx.pool2d %x {{{attrs}}} : ({_t(xb, dt)}) -> {_t(yb, dt)}
  func.return %y : {_t(yb, dt)}
}}"""
    _check(text, [xb], dt, "")


def _busy(oh: int, pairs: int, rows: int, fgroups: int, threads: int) -> float:
    """Busy share of `threads` threads taking the split's tasks in order, each the next
    free thread (the pool's ticket), a task costing its rows x its output-block pairs:
    simulated here, independently of the planner's own estimate."""
    per = -(-pairs // fgroups)
    tasks = [min(rows, oh - r0) * min(per, pairs - p0)
             for r0 in range(0, oh, rows) for p0 in range(0, pairs, per)]  # fmt: skip
    free = [0] * threads
    for t in tasks:
        free[free.index(min(free))] += t
    return sum(tasks) / (threads * max(free))


@pytest.mark.parametrize("oh", [1, 3, 7, 14, 28, 56, 112])
@pytest.mark.parametrize("pairs", [1, 3, 9, 36])
@pytest.mark.parametrize("rows_first", [False, True])
def test_task_balance(oh: int, pairs: int, rows_first: bool) -> None:
    """The task split keeps 2 threads busy where the work allows (never worse than the
    split aimed at TASKS, at most 4 x TASKS tasks) and splits only the output blocks of
    a whole-image split."""
    rows, fgroups = (-(-oh // min(oh, TASKS)), 1) if rows_first else (oh, min(pairs, TASKS))
    r, f = balance(1, oh, pairs, rows, fgroups, rows_fixed=not rows_first)
    per = -(-pairs // f)
    assert 1 <= r <= rows and 1 <= f <= pairs and -(-oh // r) * -(-pairs // per) <= 4 * TASKS
    assert rows_first or r == oh
    before, after = (_busy(oh, pairs, *s, 2) for s in ((rows, fgroups), (r, f)))
    parallel = oh * pairs if rows_first else pairs
    assert after >= before and (after >= 0.9 or parallel < 2 * TASKS)


ACTS = ["sigmoid", "silu", "hard_swish", "gelu_tanh", "gelu"]


@pytest.mark.parametrize("act", ACTS)
def test_vector_activations(act: str) -> None:
    """Every activation (vector_act's; gelu: the scalar tile loop) on the direct kernel
    (residual, slab input, partial tile) and the depthwise kernel (border and interior
    pixels)."""
    _check(*_conv((1, 16, 4, 17), 16, 3, {"padding": (1, 1, 1, 1)}, "f32", 16, act, True), "f32",
           "nchwc direct")  # fmt: skip
    attrs = {"padding": (1, 1, 1, 1), "groups": 16}
    _check(*_conv((1, 16, 5, 13), 16, 3, attrs, "f32", 8, act, False), "f32", "nchwc depthwise")


@pytest.mark.parametrize("forced", ["avx2", "generic"])
def test_other_isas(monkeypatch: pytest.MonkeyPatch, forced: str) -> None:
    """The tiles of other instruction sets (RLX_GEMM_ISA: AVX2 u <= 6, generic), with the
    vector activations, a residual, the balanced row split and depthwise convs."""
    monkeypatch.setenv("RLX_GEMM_ISA", forced)
    _check(*_conv((1, 8, 28, 8), 16, 3, {"padding": (1, 1, 1, 1)}, "f32", 8, "silu", True), "f32",
           "nchwc direct")  # fmt: skip
    x, f, k, attrs, block, act, res = CONVS[1]
    _check(*_conv(x, f, k, attrs, "f32", block, "hard_swish", res), "f32", "nchwc direct")
    attrs = {"padding": (1, 1, 1, 1), "strides": (2, 2), "groups": 16}
    _check(*_conv((1, 16, 9, 13), 16, 3, attrs, "f32", 16, "gelu_tanh", True), "f32",
           "nchwc depthwise")  # fmt: skip


SPECIAL = [float("-inf"), float("inf"), float("nan"), -1e30, -100.0, -88.5, -87.0, -86.9,
           -20.0, -3.0, -1e-30, -0.0, 0.0, 1e-30, 0.5, 2.999, 3.0, 20.0, 88.8, 1e30]  # fmt: skip


@pytest.mark.parametrize("act", ["sigmoid", "silu", "hard_swish", "gelu_tanh"])
@pytest.mark.parametrize("depthwise", [False, True])
def test_activation_special_values(act: str, depthwise: bool) -> None:
    """The register activations at the edges of their range (overflow, denormal results,
    +-inf, NaN, signed zeros), through a conv that passes its input on: a 1x1 identity
    (a weight of exactly 1 per channel), so the output is the activation of x itself."""
    attrs = {"groups": 16} if depthwise else {}
    text, shapes = _conv((1, 16, 1, 20), 16, 1, attrs, "f32", 16, act, False)
    x = np.broadcast_to(np.array(SPECIAL, np.float32)[:, None], (1, 1, 1, 20, 16)).copy()
    x *= np.where(np.arange(16) % 2, 1.0, 0.5).astype(np.float32)  # two scales per pixel
    w = np.zeros(shapes[1], np.float32)
    if depthwise:
        w[...] = 1.0
    else:
        w[0, 0, 0, 0] = np.eye(16, dtype=np.float32)
    vals = [x, w, np.zeros(16, np.float32)]
    (want,) = run(parse_module(text), vals)
    compiled = rlx.compile(text)
    assert "nchwc" in compiled.dispatch_report()
    (got,) = compiled.run(*vals)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(np.signbit(got[got == 0]), np.signbit(want[got == 0]))
    ok = ~np.isnan(want)
    # exp(-|x|) below 2^-125.5 is flushed to 0 (vector_act): silu(-88.5) = -3.2e-37 -> -0.0
    np.testing.assert_allclose(got[ok], want[ok], rtol=3e-6, atol=2e-36)


def test_integer_conv_falls_back() -> None:
    """An i32 nchwc conv is not the blocked kernels' (floats only): the fallback takes it."""
    text, shapes = _conv((1, 8, 5, 6), 8, 3, {"padding": (1, 1, 1, 1)}, "f32", 8, "none", False)
    text = text.replace("f32", "i32")
    rng = np.random.default_rng(0)
    vals = [rng.integers(-3, 4, s).astype(np.int32) for s in shapes]
    (want,) = run(parse_module(text), vals)
    compiled = rlx.compile(text)
    assert "nchwc fallback" in compiled.dispatch_report()
    (got,) = compiled.run(*vals)
    np.testing.assert_array_equal(got, want)
