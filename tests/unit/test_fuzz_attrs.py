"""Attribute fuzzing of the ops whose lowering indexes by attributes: conv2d (strides,
padding, dilations, groups, bias, activation), pool2d (kind, kernel, strides, padding),
slice (starts, limits, strides) and cumsum (axis, exclusive), with any attribute
values the verifier accepts, on tiny shapes. Each graph is compiled, run on guard-page
buffers (`guarded_memory`: no access out of bounds on either side) and compared with the
reference interpreter. An attribute the verifier refuses must be a ValueError from the
builder, never another exception. CI: `RLX_FUZZ_EXAMPLES` derandomized examples per op.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from guarded_memory import guarded_run
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from test_fuzz_graphs import assert_matches

import rlx
from rlx.builder import Graph
from rlx.interpreter import run
from rlx.runtime import cache

EXAMPLES = int(os.environ.get("RLX_FUZZ_EXAMPLES", "10"))
RANDOM = os.environ.get("RLX_FUZZ_RANDOM", "") not in ("", "0")
FUZZ = settings(max_examples=EXAMPLES, deadline=None, derandomize=not RANDOM, database=None,
                suppress_health_check=list(HealthCheck))  # fmt: skip


@pytest.fixture(autouse=True)
def no_disk_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RLX_CACHE", "0")
    cache.CACHE.clear_memory()


def _check(g: Graph, inputs: dict[str, np.ndarray], side: str, dtype: str = "f32") -> None:
    want = run(g.module, inputs)
    cg = rlx.compile(g)
    outs, status = guarded_run(cg, [inputs[n] for n, _, _ in cg.inputs], side)
    assert status is None or not status[0]
    assert_matches(outs, want, dtype)


def _build(make) -> Graph:  # type: ignore[no-untyped-def]
    """The graph `make(g)` builds, or a skipped example when the verifier refuses it."""
    g = Graph("main")
    try:
        g.output(make(g))
    except ValueError:
        assume(False)
    return g


small = st.integers(0, 3)


@FUZZ
@given(n=st.integers(1, 2), c=st.sampled_from([1, 2, 4]), h=st.integers(1, 9), w=st.integers(1, 9),
       f=st.sampled_from([1, 2, 4]), kh=st.integers(1, 4), kw=st.integers(1, 4),
       sh=st.integers(1, 4), sw=st.integers(1, 4), pads=st.lists(small, min_size=4, max_size=4),
       dh=st.integers(1, 3), dw=st.integers(1, 3), groups=st.sampled_from([1, 2, 4]),
       bias=st.booleans(), act=st.sampled_from(["none", "relu", "clip"]),
       side=st.sampled_from(["end", "start"]), seed=st.integers(0, 99))  # fmt: skip
def test_conv2d_attributes(
    n, c, h, w, f, kh, kw, sh, sw, pads, dh, dw, groups, bias, act, side, seed
):
    assume(c % groups == 0 and f % groups == 0)
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, c, h, w)).astype(np.float32)
    k = rng.standard_normal((f, c // groups, kh, kw)).astype(np.float32)
    b = rng.standard_normal(f).astype(np.float32)

    def make(g: Graph):  # type: ignore[no-untyped-def]
        xs = [g.input("x", x.shape, "f32"), g.input("k", k.shape, "f32")]
        if bias:
            xs.append(g.input("b", b.shape, "f32"))
        extra = {"clip": [-0.5, 0.5]} if act == "clip" else {}
        return g.op("conv2d", *xs, strides=[sh, sw], padding=pads, dilations=[dh, dw],
                    groups=groups, activation=act, **extra)  # fmt: skip

    g = _build(make)
    _check(g, {"x": x, "k": k, "b": b} if bias else {"x": x, "k": k}, side)


@FUZZ
@given(c=st.sampled_from([1, 3]), h=st.integers(1, 9), w=st.integers(1, 9),
       kind=st.sampled_from(["max", "avg"]), kh=st.integers(1, 5), kw=st.integers(1, 5),
       strides=st.none() | st.tuples(st.integers(1, 4), st.integers(1, 4)),
       pads=st.lists(small, min_size=4, max_size=4), side=st.sampled_from(["end", "start"]),
       seed=st.integers(0, 99))  # fmt: skip
def test_pool2d_attributes(c, h, w, kind, kh, kw, strides, pads, side, seed):
    x = np.random.default_rng(seed).standard_normal((1, c, h, w)).astype(np.float32)
    extra = {} if strides is None else {"strides": list(strides)}

    def make(g: Graph):  # type: ignore[no-untyped-def]
        return g.op("pool2d", g.input("x", x.shape, "f32"), kind=kind, kernel=[kh, kw],
                    padding=pads, **extra)  # fmt: skip

    _check(_build(make), {"x": x}, side)


@FUZZ
@given(shape=st.lists(st.integers(1, 7), min_size=1, max_size=3), data=st.data(),
       side=st.sampled_from(["end", "start"]))  # fmt: skip
def test_slice_attributes(shape, data, side):
    r = len(shape)
    big = st.integers(-9, 9)
    starts = data.draw(st.lists(big, min_size=r, max_size=r))
    limits = data.draw(st.lists(big, min_size=r, max_size=r))
    strides = data.draw(st.lists(st.integers(1, 3), min_size=r, max_size=r))
    x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)

    def make(g: Graph):  # type: ignore[no-untyped-def]
        return g.op("slice", g.input("x", x.shape, "f32"), starts=starts, limits=limits,
                    strides=strides)  # fmt: skip

    _check(_build(make), {"x": x}, side)


@FUZZ
@given(shape=st.lists(st.integers(1, 6), min_size=1, max_size=3), axis=st.integers(-4, 3),
       exclusive=st.booleans(), dtype=st.sampled_from(["f32", "i32"]),
       side=st.sampled_from(["end", "start"]))  # fmt: skip
def test_cumsum_attributes(shape, axis, exclusive, dtype, side):
    x = (np.arange(int(np.prod(shape))) % 7 - 3).reshape(shape)
    x = x.astype(np.float32 if dtype == "f32" else np.int32)

    def make(g: Graph):  # type: ignore[no-untyped-def]
        return g.op("cumsum", g.input("x", x.shape, dtype), axis=axis, exclusive=exclusive)

    _check(_build(make), {"x": x}, side, dtype)
