"""text_later: the input and graph-pass texts printed by a forked child are the texts a
serial compile keeps; a child that fails leaves the input printed from the source and the
"rlx" stage regenerated on demand (never a wrong or missing text)."""

from __future__ import annotations

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


def test_small_modules_print_here(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv(parallel_build.JOBS_ENV, "2")
    g = _graph()
    t = text_later.TextLater(g.module)
    assert t._pid == 0 and t.result() == str(g.module)
