"""parallel_build: kernels lowered and LLVM-optimised in forked children compute the same
bits as a serial compile (and what the reference interpreter computes); the partition keeps
call groups together and graph functions here; a child that fails, dies or cannot run
LLVM has its part done in this process; bad settings are clear errors."""

from __future__ import annotations

import functools
import os
import platform

import numpy as np
import pytest
from xdsl.dialects import func, memref
from xdsl.dialects.builtin import SymbolRefAttr

import rlx
from rlx.builder import Graph
from rlx.runtime import compiler, parallel_build, text_later
from rlx.runtime.cache import CACHE
from rlx.runtime.llvm_host import Codegen

OPTS = rlx.CompileOptions(cache_param_invariant=True)


def conv_graph() -> tuple[Graph, dict[str, np.ndarray], dict[str, np.ndarray]]:
    """A small CNN-like graph with several distinct kernels (convs of two shapes, bias,
    relu, a residual add, a global mean, a matmul) and a `@prepare` (weight-only work)."""
    rng = np.random.default_rng(0)
    g = Graph()
    x = g.input("x", (1, 8, 10, 10))
    params: dict[str, np.ndarray] = {}

    def w(name: str, shape: tuple[int, ...]) -> object:
        params[name] = (rng.standard_normal(shape) * 0.3).astype(np.float32)
        return g.param(name, shape)

    a = g.relu(g.conv2d(x, w("w0", (16, 8, 3, 3)), w("b0", (16,)), padding=[1, 1, 1, 1]))
    b = g.conv2d(a, w("w1", (16, 16, 1, 1)), w("b1", (16,)))
    c = g.relu(g.add(a, b))
    d = g.conv2d(c, w("w2", (8, 16, 3, 3)), strides=[2, 2])
    m = g.reshape(g.reduce(d, axes=[2, 3], kind="mean"), (1, 8))
    g.output(g.tanh(g.matmul(m, w("fc", (8, 5)))), g.sigmoid(d))
    inputs = {"x": rng.standard_normal((1, 8, 10, 10)).astype(np.float32)}
    return g, inputs, params


@pytest.fixture
def parallel(monkeypatch: pytest.MonkeyPatch) -> list[parallel_build.Split]:
    """Compiles split any module into two parts (MIN_OPS 0), cache off; returns the
    list of the splits made."""
    monkeypatch.setenv("RLX_CACHE", "0")
    monkeypatch.setenv(parallel_build.JOBS_ENV, "2")
    monkeypatch.setattr(parallel_build, "MIN_OPS", 0)
    CACHE.clear_memory()
    seen: list[parallel_build.Split] = []
    orig = parallel_build.split_module

    def spy(module, n):  # type: ignore[no-untyped-def]
        s = orig(module, n)
        if s is not None:
            seen.append(s)
        return s

    monkeypatch.setattr(parallel_build, "split_module", spy)
    return seen


def _run(g: Graph, inputs: dict, params: dict) -> list[np.ndarray]:  # type: ignore[type-arg]
    c = rlx.compile(g.module.clone(), OPTS)
    c.set_params(params)
    return [np.array(v) for v in c.run(**inputs)]


@functools.cache
def _serial_build() -> tuple[rlx.CompiledGraph, list[np.ndarray]]:
    """The serial compile of `conv_graph()` (one process, cache off) and its outputs: the
    bits every parallel build must reproduce. Compiled once per test process (the graph
    and its inputs are the same in every test), not once per test."""
    g, inputs, params = conv_graph()
    with pytest.MonkeyPatch.context() as m:
        m.setenv(parallel_build.JOBS_ENV, "1")
        m.setenv("RLX_CACHE", "0")
        c = rlx.compile(g.module.clone(), OPTS)
    c.set_params(params)
    return c, [np.array(v) for v in c.run(**inputs)]


def test_parallel_matches_serial_and_reference(parallel, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    g, inputs, params = conv_graph()
    want = rlx.reference.run(g.module, inputs, params)
    _, serial = _serial_build()
    assert not parallel
    got = _run(g, inputs, params)
    assert len(parallel) == 1 and len(parallel[0].parts) == 2
    for w, s, a in zip(want, serial, got, strict=True):
        np.testing.assert_allclose(a, w, rtol=1e-4, atol=1e-4)
        np.testing.assert_array_equal(a, s)  # the same kernels, the same code: same bits


def test_partition_keeps_groups_and_graph_functions(parallel, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Every function is defined in one part; a kernel's callees are in its part; every
    symbol a part references is defined or declared in it, and the functions referenced
    from another part than their own are exactly `cross`."""
    captured: list[parallel_build.Split] = []

    def keep(split, lower, codegen):  # type: ignore[no-untyped-def]
        captured.append(split)
        raise RuntimeError("stop")

    monkeypatch.setattr(parallel_build, "lower_split", keep)
    g, _, _ = conv_graph()
    with pytest.raises(RuntimeError, match="stop"):
        rlx.compile(g.module.clone(), OPTS)
    (split,) = captured
    defined: dict[str, int] = {}
    referenced: list[tuple[str, int]] = []
    for i, part in enumerate(split.parts):
        names = set()
        for o in part.ops:
            assert isinstance(o, func.FuncOp | memref.GlobalOp)
            names.add(o.sym_name.data)
            if isinstance(o, func.FuncOp) and o.body.blocks:
                assert o.sym_name.data not in defined
                defined[o.sym_name.data] = i
        for o in part.walk():
            for v in (*o.properties.values(), *o.attributes.values()):
                if isinstance(v, SymbolRefAttr):
                    assert v.root_reference.data in names
                    referenced.append((v.root_reference.data, i))
    assert sum(1 for i in defined.values() if i > 0) >= 1
    for i, part in enumerate(split.parts):
        for f in part.ops:
            if not (isinstance(f, func.FuncOp) and f.body.blocks and "rlx.kernel" in f.attributes):
                continue
            for o in f.walk():
                if isinstance(o, func.CallOp):
                    callee = o.callee.root_reference.data
                    if callee in defined:
                        assert defined[callee] == i  # kernels and their workers together
    assert split.cross == {n for n, i in referenced if n in defined and defined[n] != i}


def _spy_replies(monkeypatch: pytest.MonkeyPatch) -> list[bytes | None]:
    """The list every `Child.receive` reply is appended to (None: a failed message)."""
    replies: list[bytes | None] = []
    receive = parallel_build.Child.receive

    def spy(self):  # type: ignore[no-untyped-def]
        replies.append(receive(self))
        return replies[-1]

    monkeypatch.setattr(parallel_build.Child, "receive", spy)
    return replies


@pytest.mark.parametrize("how", ["pass error", "dies", "llvm error"])
def test_failing_child_is_done_here(parallel, monkeypatch, how: str) -> None:  # type: ignore[no-untyped-def]
    g, inputs, params = conv_graph()
    _, serial = _serial_build()
    if how == "pass error":

        def child(fd, part, lower, cross, codegen):  # type: ignore[no-untyped-def]
            parallel_build._send(fd, False, error="RuntimeError: injected")

        monkeypatch.setattr(parallel_build, "_child", child)
    elif how == "dies":
        monkeypatch.setattr(parallel_build, "_child", lambda *a: os._exit(3))
    else:

        def broken(text: str, codegen: Codegen) -> bytes:
            raise RuntimeError("injected LLVM failure")

        monkeypatch.setattr(parallel_build, "_optimise_text", broken)
    replies = _spy_replies(monkeypatch)
    got = _run(g, inputs, params)
    assert len(parallel) == 1
    assert None in replies  # the failure reached the child: its part was done here
    for s, a in zip(serial, got, strict=True):
        np.testing.assert_array_equal(a, s)


AVX2 = Codegen(
    opt_level=1,
    cpu="haswell",
    features="+avx,+avx2,+fma,+f16c,+bmi,+bmi2,+popcnt,+sse4.2",
    unroll=True,
)
"""A setting unlike `rlx.compile`'s default in every field (level, CPU, features, unrolling)."""


@pytest.mark.skipif(
    platform.machine().lower() not in ("x86_64", "amd64"), reason="an x86-64 CPU setting"
)
def test_children_use_the_parents_codegen(parallel, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A non-default code generation setting reaches the children (each checks the one it
    was given: a child given another fails, and its part would be done here) and the
    parallel build computes the bits of the serial build with that setting."""
    monkeypatch.setenv("RLX_GEMM_ISA", "avx2")  # the lowering's tiles fit the AVX2 CPU
    monkeypatch.setattr(compiler, "CODEGEN", AVX2)
    g, inputs, params = conv_graph()
    with monkeypatch.context() as m:
        m.setenv(parallel_build.JOBS_ENV, "1")
        serial = _run(g, inputs, params)
    assert not parallel
    optimise = parallel_build._optimise_text

    def checked(text: str, codegen: Codegen) -> tuple[bytes, bytes]:
        if codegen != AVX2:
            raise RuntimeError(f"the child was given {codegen}")
        return optimise(text, codegen)

    monkeypatch.setattr(parallel_build, "_optimise_text", checked)
    replies = _spy_replies(monkeypatch)
    got = _run(g, inputs, params)
    assert len(parallel) == 1
    assert len(replies) == 3 and None not in replies  # text, bitcode, object: all the child's
    want = rlx.reference.run(g.module, inputs, params)
    for w, s, a in zip(want, serial, got, strict=True):
        np.testing.assert_allclose(a, w, rtol=1e-4, atol=1e-4)
        np.testing.assert_array_equal(a, s)


def test_jobs_read_once_per_compile(parallel, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """`RLX_COMPILE_JOBS` is read once per compile and the count handed to every part
    that forks (the input's and the graph passes' texts, the split), not read by each."""
    calls: list[int] = []
    jobs = parallel_build.jobs

    def counted() -> int:
        calls.append(jobs())
        return calls[-1]

    monkeypatch.setattr(parallel_build, "jobs", counted)
    monkeypatch.setattr(text_later, "MIN_OPS", 0)  # the texts are printed in children too
    forks: list[int] = []
    fork = parallel_build.fork

    def spy(run):  # type: ignore[no-untyped-def]
        forks.append(fork(run))
        return forks[-1]

    monkeypatch.setattr(parallel_build, "fork", spy)
    g, inputs, params = conv_graph()
    got = _run(g, inputs, params)
    assert calls == [2]
    assert len(parallel) == 1 and len(forks) == 3  # two texts and one part: all forked
    for s, a in zip(_serial_build()[1], got, strict=True):
        np.testing.assert_array_equal(a, s)


def test_small_modules_compile_serially(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv(parallel_build.JOBS_ENV, "2")
    g = Graph()
    x = g.input("x", (4, 4))
    g.output(g.tanh(g.add(x, x)))
    module = g.module
    from rlx.runtime.compiler import make_context  # noqa: F401  (the dialects load)

    assert parallel_build.split_module(module, 2) is None  # far below MIN_OPS
    assert parallel_build.split_module(module, 1) is None


@pytest.mark.parametrize("value", ["0", "two", "-1"])
def test_bad_jobs_setting_is_a_clear_error(monkeypatch, value: str) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv(parallel_build.JOBS_ENV, value)
    g = Graph()
    g.output(g.neg(g.input("x", (2,))))
    with pytest.raises(ValueError, match=parallel_build.JOBS_ENV):
        rlx.compile(g.module)


def test_jobs_setting(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv(parallel_build.JOBS_ENV, "3")
    assert parallel_build.jobs() == 3
    monkeypatch.setenv(parallel_build.JOBS_ENV, "auto")
    assert 1 <= parallel_build.jobs() <= parallel_build.MAX_JOBS


def test_serial_where_fork_is_unsafe(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Off Linux (macOS, Windows) a compile never forks, whatever the setting."""
    monkeypatch.setattr(parallel_build.sys, "platform", "darwin")
    for value in ("auto", "4"):
        monkeypatch.setenv(parallel_build.JOBS_ENV, value)
        assert parallel_build.jobs() == 1


def test_child_objects_and_cached_bundle(parallel, monkeypatch, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Each child sends its object code: the compile holds one object per part (a bundle,
    `object_bundle`), the cache stores and loads that bundle, and both compute the bits
    of a serial compile; a serial compile's entry stays one plain object file."""
    from rlx.runtime import object_bundle

    g, inputs, params = conv_graph()
    _, serial = _serial_build()
    monkeypatch.setenv("RLX_CACHE", "1")
    monkeypatch.setenv("RLX_CACHE_DIR", str(tmp_path))
    CACHE.clear_memory()
    c = rlx.compile(g.module.clone(), OPTS)
    assert not c.cache_hit and len(parallel) == 1
    code = c._art.jit.object_code
    assert code.startswith(object_bundle.MAGIC) and len(object_bundle.unpack(code)) == 2
    (obj,) = tmp_path.rglob("*.o")
    assert obj.read_bytes() == code
    CACHE.clear_memory()
    hit = rlx.compile(g.module.clone(), OPTS)
    assert hit.cache_hit and hit._art.jit.__class__.__name__ == "ObjectModule"
    llvm_ir = hit.ir("llvm-ir")
    assert "define" in llvm_ir and llvm_ir == c.ir("llvm-ir")  # one linked module's text
    for cg in (c, hit):
        cg.set_params(params)
        for s, a in zip(serial, cg.run(**inputs), strict=True):
            np.testing.assert_array_equal(np.array(a), s)
    with monkeypatch.context() as m:  # serial: the single-object format, unchanged
        m.setenv(parallel_build.JOBS_ENV, "1")
        m.setenv("RLX_CACHE_DIR", str(tmp_path / "serial"))
        CACHE.clear_memory()
        rlx.compile(g.module.clone(), OPTS)
        (one,) = (tmp_path / "serial").rglob("*.o")
        assert one.read_bytes()[:4] == b"\x7fELF"
        CACHE.clear_memory()
        old = rlx.compile(g.module.clone(), OPTS)  # a single-object entry still loads
        assert old.cache_hit and old._art.jit.__class__.__name__ == "ObjectModule"
        old.set_params(params)
        for s, a in zip(serial, old.run(**inputs), strict=True):
            np.testing.assert_array_equal(np.array(a), s)


def test_fork_failure_compiles_here(parallel, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """No process to be had (fork raises EAGAIN): every part and text is done in this
    process, with the serial compile's bits and texts."""
    from rlx.runtime import text_later

    g, inputs, params = conv_graph()
    want, serial = _serial_build()

    def no_fork() -> int:
        raise BlockingIOError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(text_later, "MIN_OPS", 0)
    monkeypatch.setattr(os, "fork", no_fork)
    c = rlx.compile(g.module.clone(), OPTS)
    assert len(parallel) == 1
    assert (c.ir("input"), c.ir("rlx")) == (want.ir("input"), want.ir("rlx"))
    c.set_params(params)
    for s, a in zip(serial, c.run(**inputs), strict=True):
        np.testing.assert_array_equal(np.array(a), s)


_COST_IR = """
func.func @flat(%a: f32) -> f32 {
  %b = arith.addf %a, %a : f32
  %c = arith.addf %b, %b : f32
  func.return %c : f32
}
func.func @looped(%a: f32, %n: index) -> f32 {
  %z = arith.constant 0 : index
  %one = arith.constant 1 : index
  %r = scf.for %i = %z to %n step %one iter_args(%s = %a) -> (f32) {
    %b = arith.addf %s, %s : f32
    %c = arith.addf %b, %b : f32
    scf.yield %c : f32
  }
  func.return %r : f32
}
"""


def test_split_cost_weighs_loop_bodies() -> None:
    """The split balances estimated cost, not op count: ops inside a loop count
    LOOP_OP_COST times (a graph function's calls are cheap to lower and optimise, a
    microkernel's loop bodies are not; densenet121 split by op count left this process
    idle for a second while the child finished)."""
    from xdsl.parser import Parser

    from rlx.runtime.loading import make_context

    m = Parser(make_context(), _COST_IR).parse_module()
    flat, looped = (o for o in m.ops if isinstance(o, func.FuncOp))
    k = parallel_build.LOOP_OP_COST
    assert parallel_build._cost(flat) == (4, 4)  # the func, 2 adds, the return
    assert parallel_build._cost(looped) == (8, 5 + 3 * k)  # the loop body: 2 adds, yield
