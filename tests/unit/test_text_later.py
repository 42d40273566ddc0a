"""text_later: the input and graph-pass texts printed by a forked child are the texts a
serial compile keeps; a child that fails leaves the input printed from the source and the
"rlx" stage regenerated on demand (never a wrong or missing text)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pytest

import rlx
from rlx.builder import Graph
from rlx.runtime import counters, parallel_build, text_later
from rlx.runtime.cache import CACHE


def _graph() -> Graph:
    g = Graph()
    x = g.input("x", (4, 8))
    w = g.param("w", (8, 8))
    g.output(g.tanh(g.add(g.matmul(x, w), x)))
    return g


def _compile(g: Graph) -> rlx.CompiledGraph:
    CACHE.clear_memory()
    return rlx.compile(g.module.clone())


@pytest.fixture
def forked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RLX_CACHE", "0")
    monkeypatch.setenv(parallel_build.JOBS_ENV, "2")
    monkeypatch.setattr(text_later, "MIN_OPS", 0)


def _serial_texts(monkeypatch: pytest.MonkeyPatch, g: Graph) -> tuple[str, str]:
    with monkeypatch.context() as m:
        m.setenv(parallel_build.JOBS_ENV, "1")
        c = _compile(g)
        return c.ir("input"), c.ir("rlx")


def test_child_texts_equal_serial_texts(forked, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    g = _graph()
    want = _serial_texts(monkeypatch, g)
    forks: list[int] = []
    orig = text_later.os.fork

    def spy() -> int:
        pid = orig()
        if pid:
            forks.append(pid)
        return pid

    monkeypatch.setattr(text_later.os, "fork", spy)
    c = _compile(g)
    assert len(forks) == 2  # the input and the graph-pass output
    assert (c.ir("input"), c.ir("rlx")) == want
    x = np.ones((4, 8), np.float32)
    c.set_params({"w": np.eye(8, dtype=np.float32)})
    np.testing.assert_allclose(c.run(x)[0], np.tanh(2 * x), rtol=1e-6)


def test_failed_child_falls_back(forked, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    g = _graph()
    want = _serial_texts(monkeypatch, g)

    def broken(fd: int, data: bytes) -> None:
        raise OSError("injected")

    monkeypatch.setattr(text_later, "_write", broken)
    c = _compile(g)
    assert "rlx" not in c._art.stages  # left to be regenerated
    before = counters.snapshot()["pipeline"]
    assert c.ir("input") == want[0]  # printed from the (unchanged) source
    assert counters.snapshot()["pipeline"] == before
    assert c.ir("rlx") == want[1]  # regenerated
    assert counters.snapshot()["pipeline"] == before + 1


def test_small_modules_print_here() -> None:
    g = _graph()
    t = text_later.TextLater(g.module, jobs=2)
    assert t._pid == 0 and t.result() == str(g.module)


def _break_last_graph_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the last graph pass leave invalid IR (the entry's last op moved before its
    operands)."""
    from rlx.runtime import compiler, option_pipeline

    orig = compiler._run_pass
    plan = option_pipeline.build_plan(rlx.CompileOptions(), Path(tempfile.gettempdir()))
    last = plan.phase("graph")[-1].name

    class Breaking:
        def __init__(self, p):  # type: ignore[no-untyped-def]
            self.p = p

        def apply(self, ctx, module) -> None:  # type: ignore[no-untyped-def]
            self.p.apply(ctx, module)
            ret = next(o for o in module.walk() if o.name == "func.return")
            op, block = ret.prev_op, ret.parent
            op.detach()
            block.insert_op_before(op, block.first_op)

    def run(name, p, *a, **k):  # type: ignore[no-untyped-def]
        orig(name, Breaking(p) if name == last else p, *a, **k)

    monkeypatch.setattr(compiler, "_run_pass", run)


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_invalid_graph_pass_output_is_reported(forked, monkeypatch, jobs: str) -> None:  # type: ignore[no-untyped-def]
    """The output of the graph passes is verified (in the child printing it, or here): a
    pass leaving invalid IR is named, whatever the lowering then made of that IR."""
    monkeypatch.setenv(parallel_build.JOBS_ENV, jobs)
    _break_last_graph_pass(monkeypatch)
    with pytest.raises(RuntimeError, match=r"pass '.*' produced invalid IR: .*does not dominate"):
        _compile(_graph())


def test_dead_checking_child_is_replaced_by_a_check_here(forked, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A child that dies before its verdict: the graph passes are re-run and verified
    here; a valid compile goes on, an invalid one is reported."""
    import os

    from rlx.runtime import compiler

    parent = os.getpid()
    orig_check = compiler._invalid_ir

    def dying(*a):  # type: ignore[no-untyped-def]
        if os.getpid() != parent:
            os._exit(1)
        return orig_check(*a)

    monkeypatch.setattr(compiler, "_invalid_ir", dying)
    rechecks: list[int] = []
    orig_recheck = compiler._recheck

    def recheck(*a):  # type: ignore[no-untyped-def]
        rechecks.append(1)
        return orig_recheck(*a)

    monkeypatch.setattr(compiler, "_recheck", recheck)
    c = _compile(_graph())
    assert rechecks == [1]
    x = np.ones((4, 8), np.float32)
    c.set_params({"w": np.eye(8, dtype=np.float32)})
    np.testing.assert_allclose(c.run(x)[0], np.tanh(2 * x), rtol=1e-6)
    _break_last_graph_pass(monkeypatch)
    with pytest.raises(RuntimeError, match=r"pass '.*' produced invalid IR: .*does not dominate"):
        _compile(_graph())
    assert rechecks == [1, 1]
