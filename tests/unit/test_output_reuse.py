"""`CompiledGraph.run` reuses the output buffer of an earlier run only when no output of
that run is still referenced (a fresh buffer costs a page fault per 4 KiB)."""

from __future__ import annotations

import numpy as np

import rlx


def _graph() -> rlx.CompiledGraph:
    g = rlx.Graph("main")
    x = g.input("x", (64,))
    g.output(g.neg(x))
    g.output(g.add(x, x))
    return rlx.compile(g)


def test_live_outputs_are_never_overwritten() -> None:
    c = _graph()
    first = c.run(x=np.ones(64, np.float32))
    view = first[1][10:20]  # a view keeps the buffer alive too
    del first
    second = c.run(x=np.full(64, 2, np.float32))
    np.testing.assert_array_equal(view, np.full(10, 2, np.float32))
    np.testing.assert_array_equal(second[0], np.full(64, -2, np.float32))
    assert view.base is not second[0].base


def test_dropped_outputs_release_their_buffer_for_reuse() -> None:
    c = _graph()
    a = c.run(x=np.ones(64, np.float32))
    ptr = a[0].base.ctypes.data
    del a
    b = c.run(x=np.full(64, 3, np.float32))
    assert b[0].base.ctypes.data == ptr
    np.testing.assert_array_equal(b[0], np.full(64, -3, np.float32))
    np.testing.assert_array_equal(b[1], np.full(64, 6, np.float32))
