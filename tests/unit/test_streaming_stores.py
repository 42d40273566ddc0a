"""Non-temporal (streaming) stores of large outputs (`rlx_to_linalg/streaming.py`): the
strided elementwise and copy workers and the last pass of the normalizations.

The kernels are compiled with a tiny threshold (`streaming.threshold` patched, no disk
cache) so small shapes take the streaming path: results equal the ordinary path's bit for
bit and the reference interpreter's within the dtype's tolerance, for row lengths that are
not multiples of a cache line, chunked rows whose tasks start unaligned, f16/bf16
results.
Every buffer sits next to a guard page (`guarded_memory`), so a store out of bounds
faults or trips the canary. Small rows and multi-result ops keep ordinary stores.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import numpy as np
import pytest
from guarded_memory import guarded_run
from reference_helpers import assert_close
from xdsl.utils.exceptions import PassFailedException

import rlx
from rlx import host_cpu
from rlx.dtypes import numpy_dtype
from rlx.lowering.rlx_to_linalg import streaming
from rlx.lowering.rlx_to_linalg.bufferize import ConvertRlxToLinalgPass
from rlx.runtime import cache

TOL = {"float32": 1e-5, "float16": 1e-2, "bfloat16": 2e-2}


@pytest.fixture(autouse=True)
def no_disk_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RLX_CACHE", "0")
    cache.CACHE.clear_memory()


def _compile(build: Callable[[rlx.Graph], None], stream: bool, mp: pytest.MonkeyPatch) -> object:
    mp.setattr(streaming, "threshold", lambda option: 1 if stream else 0)
    g = rlx.Graph()
    build(g)
    return rlx.compile(g)


def _gelu(shape: tuple[int, ...], dtype: str) -> Callable[[rlx.Graph], None]:
    """gelu_tanh(x * a + b), `a` and `b` over the last axis (no collapse to one row)."""

    def build(g: rlx.Graph) -> None:
        x = g.input("x", shape, dtype)
        a, b = g.param("a", shape[-1:], dtype), g.param("b", shape[-1:], dtype)
        g.output(g.gelu_tanh(g.add(g.mul(x, a), b)))

    return build


def _data(shape: tuple[int, ...], dtype: str, seed: int = 0) -> dict[str, np.ndarray]:
    r = np.random.default_rng(seed)
    dt = numpy_dtype(dtype)
    return {
        "x": (r.standard_normal(shape) * 3).astype(dt),
        "a": r.uniform(0.5, 1.5, shape[-1:]).astype(dt),
        "b": r.uniform(-1, 1, shape[-1:]).astype(dt),
    }


def _ir(c: object) -> str:
    return str(c.ir("llvm-ir"))  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("shape", "dtype"),
    [
        ((3, 1000), "f32"),  # rows not a multiple of a line: every row starts unaligned
        ((45, 1001), "f32"),  # chunked: 15-row tasks start at unaligned addresses
        ((7, 1333), "f16"),
        ((5, 777), "bf16"),
        ((4099,), "f32"),  # one row
    ],
)
def test_streamed_results_equal_ordinary_ones(
    shape: tuple[int, ...], dtype: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    d = _data(shape, dtype)
    plain = _compile(_gelu(shape, dtype), False, monkeypatch)
    nt = _compile(_gelu(shape, dtype), True, monkeypatch)
    assert "!nontemporal" not in _ir(plain)
    ir = _ir(nt)
    assert "!nontemporal" in ir
    if streaming.is_x86():
        assert "@llvm.x86.sse.sfence" in ir
        asm = str(nt.ir("asm"))  # type: ignore[attr-defined]
        assert "vmovnt" in asm and "sfence" in asm  # ymm on AVX2 hosts, zmm on AVX-512
    for c in (plain, nt):
        c.set_params({"a": d["a"], "b": d["b"]})  # type: ignore[attr-defined]
    (want,) = rlx.reference.run(_module(shape, dtype), {"x": d["x"]}, {"a": d["a"], "b": d["b"]})
    for side in ("end", "start"):
        (got,), _ = guarded_run(nt, [d["x"]], side)
        (base,), _ = guarded_run(plain, [d["x"]], side)
        np.testing.assert_array_equal(got.view(np.uint8), base.view(np.uint8))
        assert_close(got, want, TOL[got.dtype.name])


def _module(shape: tuple[int, ...], dtype: str) -> object:
    g = rlx.Graph()
    _gelu(shape, dtype)(g)
    return g.module


def _norm(kind: str, shape: tuple[int, ...], dtype: str) -> Callable[[rlx.Graph], None]:
    """layer_norm / rms_norm over the last axis, or layer_norm(x + r) (the fused-residual
    form after fusion)."""

    def build(g: rlx.Graph) -> None:
        x = g.input("x", shape, dtype)
        gamma = g.param("a", shape[-1:], dtype)
        if kind == "rms_norm":
            g.output(g.rms_norm(x, gamma, epsilon=1e-6))
            return
        beta = g.param("b", shape[-1:], dtype)
        if kind == "residual":
            x = g.add(x, g.input("r", shape, dtype))
        g.output(g.layer_norm(x, gamma, beta, epsilon=1e-5))

    return build


@pytest.mark.parametrize(
    ("kind", "shape", "dtype"),
    [
        ("layer_norm", (6, 1001), "f32"),  # odd rows: every row starts unaligned
        ("layer_norm", (64, 768), "f32"),  # chunked over the pool
        ("layer_norm", (2, 3, 700), "bf16"),
        ("rms_norm", (5, 1000), "f16"),
        ("residual", (4, 999), "f32"),
        ("residual", (3, 1024), "f16"),
    ],
)
def test_streamed_norms_equal_ordinary_ones(
    kind: str, shape: tuple[int, ...], dtype: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    d = _data(shape, dtype, seed=2)
    inputs = [d["x"]] + ([(d["x"][::-1] * 0.5).copy()] if kind == "residual" else [])
    params = {"a": d["a"]} if kind == "rms_norm" else {"a": d["a"], "b": d["b"]}
    plain = _compile(_norm(kind, shape, dtype), False, monkeypatch)
    nt = _compile(_norm(kind, shape, dtype), True, monkeypatch)
    assert "!nontemporal" in _ir(nt) and "!nontemporal" not in _ir(plain)
    if kind == "residual":
        assert "fused_residual_layer_norm" in str(nt.ir("rlx"))  # type: ignore[attr-defined]
    g = rlx.Graph()
    _norm(kind, shape, dtype)(g)
    feeds = dict(zip(["x", "r"], inputs, strict=False))
    (want,) = rlx.reference.run(g.module, feeds, params)
    for c in (plain, nt):
        c.set_params(params)  # type: ignore[attr-defined]
    for side in ("end", "start"):
        (got,), _ = guarded_run(nt, inputs, side)
        (base,), _ = guarded_run(plain, inputs, side)
        np.testing.assert_array_equal(got.view(np.uint8), base.view(np.uint8))
        assert_close(got, want, TOL[got.dtype.name])


@pytest.mark.parametrize("kind", ["concat", "transpose"])
def test_streamed_copies_equal_ordinary_ones(kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The strided copy workers stream too: a concat writes rows of each operand at
    unaligned offsets of the output, a transpose reads strided and writes rows."""

    def build(g: rlx.Graph) -> None:
        if kind == "concat":
            a, b = g.input("a", (3, 700), "f32"), g.input("b", (3, 501), "f32")
            g.output(g.concat(a, b, axis=1))
        else:
            g.output(g.transpose(g.input("a", (600, 7), "f32"), permutation=[1, 0]))

    r = np.random.default_rng(4)
    shapes = [(3, 700), (3, 501)] if kind == "concat" else [(600, 7)]
    xs = [r.standard_normal(s).astype(np.float32) for s in shapes]
    plain, nt = (_compile(build, flag, monkeypatch) for flag in (False, True))
    assert "!nontemporal" in _ir(nt) and "!nontemporal" not in _ir(plain)
    want = np.concatenate(xs, axis=1) if kind == "concat" else xs[0].T
    for side in ("end", "start"):
        (got,), _ = guarded_run(nt, xs, side)
        np.testing.assert_array_equal(got, want)


def test_intermediates_that_are_not_element_aligned(monkeypatch: pytest.MonkeyPatch) -> None:
    """With `arena_alignment=1` an f32 intermediate lands 2 bytes off a 4-byte boundary
    (after a 14014-byte f16 one): its rows have no aligned line and are stored ordinarily
    (a `movnt` there would fault), with the same values."""

    def build(g: rlx.Graph) -> None:
        x, h = g.input("x", (3, 1000)), g.input("h", (7, 1001), "f16")
        a, b = g.tanh(h), g.exp(x)  # both live until their transposes
        g.output(g.transpose(a, permutation=[1, 0]))
        g.output(g.transpose(b, permutation=[1, 0]))

    opts = rlx.CompileOptions(arena_alignment=1)
    graphs = []
    for flag in (False, True):
        monkeypatch.setattr(streaming, "threshold", lambda option, f=flag: 1 if f else 0)
        g = rlx.Graph()
        build(g)
        graphs.append(rlx.compile(g, opts))
    plain, nt = graphs
    loops = str(nt.ir("loops"))  # type: ignore[attr-defined]
    assert "rlx.arena_bytes = 26014" in loops and "nontemporal" in loops
    r = np.random.default_rng(5)
    xs = [
        r.standard_normal((3, 1000)).astype(np.float32),
        r.standard_normal((7, 1001)).astype(np.float16),
    ]
    for side in ("end", "start"):
        got, _ = guarded_run(nt, xs, side)
        want, _ = guarded_run(plain, xs, side)
        for a, b in zip(got, want, strict=True):
            np.testing.assert_array_equal(a.view(np.uint8), b.view(np.uint8))
    assert_close(got[1], np.exp(xs[0].astype(np.float64)).T, 1e-5)


def test_small_rows_and_small_outputs_keep_ordinary_stores(monkeypatch: pytest.MonkeyPatch) -> None:
    """Rows under `MIN_ROW_BYTES` (a per-channel op of short rows) and outputs under the
    threshold are stored ordinarily."""
    short = _compile(_gelu((64, 100), "f32"), True, monkeypatch)
    assert "!nontemporal" not in _ir(short)
    monkeypatch.setattr(streaming, "threshold", lambda option: 1 << 30)
    g = rlx.Graph()
    _gelu((8, 1000), "f32")(g)
    assert "!nontemporal" not in _ir(rlx.compile(g))


def test_ops_without_a_streaming_kernel_are_untouched(monkeypatch: pytest.MonkeyPatch) -> None:
    """softmax's kernel does not stream (measured slower): no streaming stores and the same
    chunking (tasks) as with streaming off."""
    text = {}
    for flag in (False, True):

        def build(g: rlx.Graph) -> None:
            g.output(g.softmax(g.input("x", (256, 512)), axis=-1))

        text[flag] = str(_compile(build, flag, monkeypatch).ir("loops"))  # type: ignore[attr-defined]
    assert "nontemporal" not in text[True]
    tasks = [re.search(r"tasks = (\d+)", t) for t in text.values()]
    assert tasks[0] is not None and tasks[1] is not None
    assert tasks[0].group(1) == tasks[1].group(1)


def test_threshold_option() -> None:
    assert streaming.threshold(0) == 0
    assert streaming.threshold(12345) == 12345
    llc = host_cpu.last_level_cache_bytes()
    want = (llc or 0) // 2 if streaming.is_x86() else 0
    assert streaming.threshold(-1) == want
    with pytest.raises(PassFailedException, match=r"stream-bytes must be >= -1, got -2"):
        from xdsl.context import Context
        from xdsl.dialects.builtin import ModuleOp

        ConvertRlxToLinalgPass(stream_bytes=-2).apply(Context(), ModuleOp([]))


def test_last_level_cache_bytes_is_a_size() -> None:
    llc = host_cpu.last_level_cache_bytes()
    assert llc is None or (llc > 0 and llc % 1024 == 0)
    if llc is not None:
        assert re.fullmatch(r"\d+", str(llc))
