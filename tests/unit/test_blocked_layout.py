"""The blocked-layout pass against the reference interpreter: graphs compiled with and
without `CompileOptions(blocked_layout=True)` (fusion on, so fused convs with epilogues
are blocked too) equal the interpreter on the original graph, and the pass's output IR
interprets to the same values; strides, padding, dilation, groups (1, depthwise, and a
non-blocked grouped conv in the middle), odd sizes, batch 2, f32 / f16 / bf16; a small
ResNet-like and MobileNet-like graph; bound weights folded; bad options."""

from __future__ import annotations

from collections.abc import Callable

import ml_dtypes
import numpy as np
import pytest
from reference_helpers import assert_close
from xdsl.context import Context
from xdsl.utils.exceptions import PassFailedException

import rlx
from rlx.interpreter import parse_module, run
from rlx.runtime.options import CompileOptions
from rlx.transforms.blocked_layout import BlockedLayout

DTYPES = {"f32": np.float32, "f16": np.float16, "bf16": ml_dtypes.bfloat16}
TOL = {"f32": 3e-5, "f16": 3e-3, "bf16": 2e-2}

G = rlx.Graph
V = object


def _w(g: G, name: str, f: int, c: int, k: int, dt: str) -> V:
    return g.input(name, (f, c, k, k), dtype=dt)


def _values(text: str, dt: str) -> list[np.ndarray]:
    m = parse_module(text)
    fn = next(op for op in m.walk() if op.name == "func.func")
    rng = np.random.default_rng(len(text) % 1000)
    shapes = [tuple(a.type.get_shape()) for a in fn.body.block.args]  # type: ignore[attr-defined]
    return [(rng.standard_normal(s) * 0.5).astype(DTYPES[dt]) for s in shapes]


def _close(got: np.ndarray, want: np.ndarray, dt: str) -> None:
    assert_close(got, want, TOL[dt])


def _check(
    build: Callable[[G, str], None], dt: str, expect_blocked: bool = True, baseline: bool = False
) -> None:
    """The interpreter before == after the pass (exactly), and the compiled graph with
    blocked_layout (and without it, for `baseline`) == the interpreter."""
    g = G()
    build(g, dt)
    text = str(g.module)
    vals = _values(text, dt)
    want = run(parse_module(text), vals)
    # the pass alone, in the reference interpreter: values only move
    m = parse_module(text)
    BlockedLayout(block=8).apply(Context(), m)
    assert ('layout = "nchwc"' in str(m)) == expect_blocked
    for a, b in zip(run(m, vals), want, strict=True):
        np.testing.assert_array_equal(a, b)
    for opts in (CompileOptions(),) * baseline + (CompileOptions(blocked_layout=True),):
        graph = rlx.compile(text, opts)
        if opts.blocked_layout():
            assert ("nchwc" in graph.dispatch_report()) == expect_blocked
        for got, ref in zip(graph.run(*vals), want, strict=True):
            _close(got, ref, dt)


def _chain(strides: tuple[int, int], pad: list[int], dil: tuple[int, int], depthwise: bool):  # type: ignore[no-untyped-def]
    def build(g: G, dt: str) -> None:
        x = g.input("x", (2, 16, 9, 7), dtype=dt)
        b = g.input("b", (16,), dtype=dt)
        a = g.relu(g.add(g.conv2d(x, _w(g, "w0", 16, 16, 1, dt)), g.reshape(b, (1, 16, 1, 1))))
        groups = 16 if depthwise else 1
        w1 = g.input("w1", (16, 16 // groups, 3, 3), dtype=dt)
        a = g.conv2d(a, w1, b, strides=list(strides), padding=pad, dilations=list(dil),
                     groups=groups, activation="relu")  # fmt: skip
        g.output(g.conv2d(a, _w(g, "w2", 8, 16, 1, dt)))

    return build


CHAINS = [
    ((1, 1), [1, 1, 1, 1], (1, 1), False),
    ((2, 1), [0, 2, 1, 0], (1, 2), False),
    ((1, 1), [1, 1, 1, 1], (1, 1), True),
    ((2, 2), [2, 1, 1, 2], (2, 1), True),
]


@pytest.mark.parametrize("case", range(len(CHAINS)))
def test_conv_chains_f32(case: int) -> None:
    _check(_chain(*CHAINS[case]), "f32", baseline=case == 0)


@pytest.mark.parametrize("dt", ["f16", "bf16"])
def test_conv_chain_low_precision(dt: str) -> None:
    _check(_chain(*CHAINS[3]), dt)


def _grouped_middle(g: G, dt: str) -> None:
    """conv -> grouped conv (groups 2: stays NCHW) -> conv -> conv: two regions' worth of
    convs, with a from_nchwc / to_nchwc pair around the grouped conv."""
    x = g.input("x", (1, 16, 5, 5), dtype=dt)
    a = g.conv2d(x, _w(g, "w0", 16, 16, 3, dt), padding=[1, 1, 1, 1])
    a = g.conv2d(a, _w(g, "wg", 16, 8, 3, dt), padding=[1, 1, 1, 1], groups=2)
    a = g.conv2d(a, _w(g, "w1", 16, 16, 1, dt))
    g.output(g.conv2d(g.relu(a), _w(g, "w2", 16, 16, 1, dt)))


def test_non_blocked_grouped_conv_in_the_middle() -> None:
    _check(_grouped_middle, "f32")


def _resnet(g: G, dt: str) -> None:
    """A ResNet-like net: 7x7/2 stem (3 channels: x blocked by 1), max pool, two basic blocks (the
    second downsampling with a strided 1x1 shortcut), global average pool, a linear head."""
    x = g.input("x", (2, 3, 19, 17), dtype=dt)
    a = g.conv2d(x, _w(g, "stem", 16, 3, 7, dt), strides=[2, 2], padding=[3, 3, 3, 3],
                 activation="relu")  # fmt: skip
    a = g.pool2d(a, kind="max", kernel=[3, 3], strides=[2, 2], padding=[1, 1, 1, 1])
    s = g.input("scale", (1, 16, 1, 1), dtype=dt)
    h = g.relu(g.mul(g.conv2d(a, _w(g, "b1a", 16, 16, 3, dt), padding=[1, 1, 1, 1]), s))
    h = g.conv2d(h, _w(g, "b1b", 16, 16, 3, dt), padding=[1, 1, 1, 1])
    a = g.relu(g.add(h, a))
    h = g.conv2d(a, _w(g, "b2a", 32, 16, 3, dt), strides=[2, 2], padding=[1, 1, 1, 1],
                 activation="relu")  # fmt: skip
    h = g.conv2d(h, _w(g, "b2b", 32, 32, 3, dt), padding=[1, 1, 1, 1])
    sc = g.conv2d(a, _w(g, "b2s", 32, 16, 1, dt), strides=[2, 2])
    a = g.relu(g.add(h, sc))
    p = g.reduce(a, kind="mean", axes=[2, 3])
    g.output(g.matmul(p, g.input("fc", (32, 10), dtype=dt)))


@pytest.mark.parametrize("dt", ["f32", "bf16"])
def test_resnet_like(dt: str) -> None:
    _check(_resnet, dt, baseline=dt == "f32")


def _classifier_tail(g: G, dt: str) -> None:
    """SqueezeNet's end: 16-channel convs, then a 1x1 conv to 24 classes (a channel count
    16 does not divide), relu and a global average pool."""
    x = g.input("x", (2, 16, 9, 7), dtype=dt)
    a = g.conv2d(x, _w(g, "c0", 16, 16, 3, dt), padding=[1, 1, 1, 1], activation="relu")
    a = g.conv2d(a, _w(g, "c1", 16, 16, 3, dt), padding=[1, 1, 1, 1], activation="relu")
    a = g.conv2d(a, _w(g, "c2", 16, 16, 3, dt), strides=[2, 2], padding=[1, 1, 1, 1])
    a = g.relu(g.conv2d(g.relu(a), _w(g, "cls", 24, 16, 1, dt)))
    g.output(g.reduce(a, kind="mean", axes=[2, 3]))


@pytest.mark.parametrize("dt", ["f32", "f16"])
def test_a_narrow_tail_stays_nchw_at_block_16(dt: str) -> None:
    """With block 16 the classifier conv (24 channels) and its relu stay NCHW and the rest
    runs blocked by 16 (by 8 if the tail were blocked with it): values only move in the
    interpreter, and the compiled graph (the host's block) matches it."""
    g = G()
    _classifier_tail(g, dt)
    text = str(g.module)
    m = parse_module(text)
    BlockedLayout(block=16).apply(Context(), m)
    out = str(m)
    assert "block = 16" in out and "block = 8" not in out
    (cls,) = [ln for ln in out.splitlines() if "rlx.conv2d" in ln and "%cls" in ln]
    assert "nchwc" not in cls  # the classifier conv reads its NCHW weights, unblocked
    vals = _values(text, dt)
    for a, b in zip(run(m, vals), run(parse_module(text), vals), strict=True):
        np.testing.assert_array_equal(a, b)
    _check(_classifier_tail, dt)


def _stem(g: G, dt: str) -> None:
    """An EfficientNet-like stem: 3 -> 16 3x3/2 + bias + silu, depthwise, 1x1 (odd sizes,
    batch 2)."""
    x = g.input("x", (2, 3, 13, 11), dtype=dt)
    a = g.conv2d(x, _w(g, "stem", 16, 3, 3, dt), g.input("b", (16,), dtype=dt), strides=[2, 2],
                 padding=[1, 1, 1, 1], activation="silu")  # fmt: skip
    a = g.conv2d(a, g.input("dw", (16, 1, 3, 3), dtype=dt), padding=[1, 1, 1, 1], groups=16,
                 activation="clip", clip=[0.0, 6.0])  # fmt: skip
    g.output(g.conv2d(a, _w(g, "pw", 8, 16, 1, dt)))


@pytest.mark.parametrize("dt", ["f32", "f16"])
def test_stem_reads_x_blocked_by_1(dt: str) -> None:
    """The 3-channel stem joins the region (x reshaped to [N, C, H, W, 1]): no to_nchwc is
    left, and the stem runs the direct kernel's stem form."""
    _check(_stem, dt)
    m = parse_module(_text(_stem, dt))
    BlockedLayout(block=8).apply(Context(), m)
    assert "rlx.to_nchwc" not in str(m)
    for text in (_text(_stem, dt), _text(_resnet, dt)):
        report = rlx.compile(text, CompileOptions(blocked_layout=True)).dispatch_report()
        assert "x blocked by 1" in report and "implicit GEMM" not in report


def _pooled(g: G, dt: str) -> None:
    """A global mean after a conv with silu and after a residual conv: both fuse into
    pooled convs (reduce = "mean"), which run as blocked convs and blocked means."""
    x = g.input("x", (2, 16, 5, 7), dtype=dt)
    a = g.conv2d(x, _w(g, "w0", 16, 16, 3, dt), padding=[1, 1, 1, 1], activation="relu")
    s = g.conv2d(a, _w(g, "w1", 16, 16, 1, dt), g.input("b1", (16,), dtype=dt), activation="silu")
    r = g.relu(g.add(g.conv2d(a, _w(g, "w2", 16, 16, 3, dt), padding=[1, 1, 1, 1]), x))
    g.output(
        g.reduce(s, kind="mean", axes=[2, 3], keepdims=True), g.reduce(r, kind="mean", axes=[2, 3])
    )


@pytest.mark.parametrize("dt", ["f32", "f16"])
def test_pooled_convs_run_blocked(dt: str) -> None:
    _check(_pooled, dt)
    graph = rlx.compile(_text(_pooled, dt), CompileOptions(blocked_layout=True))
    report = graph.dispatch_report()
    assert "fused_conv2d_residual ×1: nchwc direct" in report
    assert "implicit GEMM" not in report and "fallback" not in report


def _text(build: Callable[[G, str], None], dt: str) -> str:
    g = G()
    build(g, dt)
    return str(g.module)


def _mobilenet(g: G, dt: str) -> None:
    """MobileNetV2-like inverted residual with squeeze-excitation, a spatial attention
    map, a channel concat and avg pooling."""
    x = g.input("x", (1, 8, 11, 9), dtype=dt)
    e = g.conv2d(x, _w(g, "exp", 32, 8, 1, dt), activation="clip", clip=[0.0, 6.0])
    d = g.conv2d(e, g.input("dw", (32, 1, 3, 3), dtype=dt), padding=[1, 1, 1, 1], groups=32,
                 activation="clip", clip=[0.0, 6.0])  # fmt: skip
    se = g.reduce(d, kind="mean", axes=[2, 3], keepdims=True)
    se = g.sigmoid(g.conv2d(se, _w(g, "se", 32, 32, 1, dt)))
    d = g.mul(d, se)
    att = g.sigmoid(g.reduce(d, kind="max", axes=[1], keepdims=True))  # [1, 1, H, W]: NCHW
    d = g.mul(d, att)  # a channel-less broadcast operand, reshaped to [1, 1, H, W, 1]
    p = g.conv2d(d, _w(g, "proj", 8, 32, 1, dt))
    c = g.concat(g.add(p, x), x, axis=1)
    g.output(g.pool2d(c, kind="avg", kernel=[2, 2], strides=[2, 2]))


def test_mobilenet_like() -> None:
    _check(_mobilenet, "f32")


def _resize_pad_crop(g: G, dt: str) -> None:
    """Nearest 2x resize (gathers on H and W), a zero pad (concat of fills on W), a crop
    (slice of H) and a channel concat between convs, batch 2, odd sizes."""
    x = g.input("x", (2, 8, 3, 5), dtype=dt)
    a = g.conv2d(x, _w(g, "w0", 16, 8, 3, dt), padding=[1, 1, 1, 1], activation="relu")
    a = g.gather(a, g.constant(np.repeat(np.arange(3), 2)), axis=2)
    a = g.gather(a, g.constant(np.repeat(np.arange(5), 2)), axis=-1)  # [2, 16, 6, 10]
    fill = g.broadcast_to(g.constant(np.zeros((), DTYPES[dt])), (2, 16, 6, 1))
    a = g.concat(fill, a, fill, axis=3)  # [2, 16, 6, 12]
    a = g.slice(a, starts=[0, 0, 1, 0], limits=[2, 16, 5, 12])  # [2, 16, 4, 12]
    b = g.conv2d(a, _w(g, "w1", 8, 16, 1, dt))
    g.output(g.conv2d(g.concat(a, b, axis=1), _w(g, "w2", 8, 24, 3, dt)))


@pytest.mark.parametrize("dt", ["f32", "f16"])
def test_resize_pad_crop(dt: str) -> None:
    _check(_resize_pad_crop, dt)


def test_single_conv_is_left_alone() -> None:
    def build(g: G, dt: str) -> None:
        x = g.input("x", (1, 8, 4, 4), dtype=dt)
        g.output(g.relu(g.conv2d(x, _w(g, "w", 8, 8, 3, dt), padding=[1, 1, 1, 1])))

    _check(build, "f32", expect_blocked=False)


def test_bound_weights_are_folded_into_blocked_constants() -> None:
    """Params bound to values (bind-params): the weight reorder folds, no transpose is left
    for run time, and the compiled graph matches the reference with the same bindings."""
    g = G()
    x = g.input("x", (1, 16, 6, 6))
    a = g.conv2d(x, g.param("w1", (16, 16, 3, 3)), padding=[1, 1, 1, 1], activation="relu")
    g.output(g.conv2d(a, g.param("w2", (16, 16, 1, 1))))
    text = str(g.module)
    rng = np.random.default_rng(3)
    params = {n: rng.standard_normal(s).astype(np.float32)
              for n, s in (("w1", (16, 16, 3, 3)), ("w2", (16, 16, 1, 1)))}  # fmt: skip
    xv = rng.standard_normal((1, 16, 6, 6)).astype(np.float32)
    (want,) = run(parse_module(text), [xv], params=params)
    from rlx.transforms.bind_params import BindParams

    m = parse_module(text)
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "w.npz"
        np.savez(path, **params)
        BindParams(path=str(path)).apply(Context(), m)
    BlockedLayout(block=8).apply(Context(), m)
    ir = str(m)
    assert "rlx.transpose" not in ir and "tensor<2x2x3x3x8x8xf32>" in ir
    (got,) = run(m, [xv])
    np.testing.assert_array_equal(got, want)
    opts = CompileOptions(blocked_layout=True, param_bindings=params)
    (got,) = rlx.compile(text, opts).run(xv)
    _close(got, want, "f32")


def test_param_weights_are_reordered_in_prepare() -> None:
    """With cache_param_invariant the weight reorders of param weights (one scaled by a
    param, so hoist-param-invariant made a @prepare before fusion) run in @prepare, once
    per set_params: @main reads blocked prepared weights; results follow new params."""
    g = G()
    x = g.input("x", (1, 16, 6, 6))
    w2 = g.mul(g.param("w2", (16, 16, 1, 1)), g.param("s", (16, 1, 1, 1)))
    a = g.conv2d(x, g.param("w1", (16, 16, 3, 3)), padding=[1, 1, 1, 1], activation="relu")
    g.output(g.conv2d(a, w2))
    text = str(g.module)
    m = parse_module(text)
    from rlx.transforms.hoist_param_invariant import HoistParamInvariant

    HoistParamInvariant().apply(Context(), m)
    BlockedLayout(block=8, prepare_weights=True).apply(Context(), m)
    main = next(f for f in m.walk() if getattr(f, "sym_name", None) and f.sym_name.data == "main")
    assert "rlx.transpose" not in str(main) and 'layout = "nchwc"' in str(main)
    rng = np.random.default_rng(5)
    xv = rng.standard_normal((1, 16, 6, 6)).astype(np.float32)
    graph = rlx.compile(text, CompileOptions(blocked_layout=True, cache_param_invariant=True))
    for _ in range(2):
        params = {"w1": rng.standard_normal((16, 16, 3, 3)).astype(np.float32),
                  "w2": rng.standard_normal((16, 16, 1, 1)).astype(np.float32),
                  "s": rng.standard_normal((16, 1, 1, 1)).astype(np.float32)}  # fmt: skip
        graph.set_params(params)
        (want,) = run(parse_module(text), [xv], params=params)
        (got,) = graph.run(xv)
        _close(got, want, "f32")


def test_bad_options() -> None:
    m = parse_module("builtin.module {}")
    with pytest.raises(PassFailedException, match="block must be one of 0, 8, 16, 32, 64"):
        BlockedLayout(block=6).apply(Context(), m)
    with pytest.raises(PassFailedException, match="min-convs must be >= 1, got 0"):
        BlockedLayout(min_convs=0).apply(Context(), m)
    with pytest.raises(ValueError, match="blocked_layout"):
        CompileOptions(blocked_layout="yes")  # type: ignore[arg-type]
    assert "blocked_layout" not in CompileOptions().to_dict()
    assert CompileOptions(blocked_layout=True).blocked_layout() is True
