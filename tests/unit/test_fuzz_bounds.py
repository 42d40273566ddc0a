"""Generated code stays inside its buffers: every argument on its own mapping next to a
guard page (`guarded_memory`), inputs and params read-only, so an access out of bounds
faults where it happens instead of corrupting the heap.

Covers the test harness's own buffers (a 1-byte "arena" passed as the status record was
overwritten by the entry function: the flaky GC-time segfault of docs/fuzzing.md), random
graphs of the graph fuzzer, and hostile index data of every op that takes indices, on both
sides of every buffer. CI: a few derandomized examples (`RLX_FUZZ_EXAMPLES`).
"""

from __future__ import annotations

import os

import numpy as np
import pytest
import test_rlx_to_linalg_harness as harness
from graphgen import FUZZ_FLOAT_DTYPES, FUZZ_INT_DTYPES, fuzz_graph
from guarded_memory import Guarded, guarded_run
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_fuzz_graphs import assert_matches

import rlx
from rlx.errors import RlxIndexError, status_error
from rlx.runtime import cache

EXAMPLES = int(os.environ.get("RLX_FUZZ_EXAMPLES", "10"))
RANDOM = os.environ.get("RLX_FUZZ_RANDOM", "") not in ("", "0")
SIDES = ["end", "start"]


@pytest.fixture(autouse=True)
def no_disk_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RLX_CACHE", "0")
    cache.CACHE.clear_memory()


def test_harness_buffers_are_as_large_as_their_types(monkeypatch: pytest.MonkeyPatch) -> None:
    """The harness's buffers on guard pages: integer division takes the status record."""
    made: list[Guarded] = []

    def aligned(a: np.ndarray | None, shape: object = (), dtype: object = None) -> np.ndarray:
        src = None if a is None else np.asarray(a)
        g = Guarded(
            shape if src is None else src.shape, np.dtype(dtype if src is None else src.dtype)
        )  # type: ignore[arg-type]
        if src is not None:
            g.array[...] = src
        made.append(g)
        return g.array

    monkeypatch.setattr(harness, "aligned", aligned)
    ops = ["div", "pow", "add"]
    text = harness.multi_op(
        [
            (
                f"rlx.{k}",
                [harness.t((4, 6), "i32"), harness.t((6,), "i32")],
                harness.t((4, 6), "i32"),
                "",
            )
            for k in ops
        ]  # fmt: skip
    )
    xs = []
    for i in range(len(ops)):
        xs += [harness.rand((4, 6), "i32", seed=i), np.arange(1, 7, dtype=np.int32)]
    harness.check(text, xs)
    assert any(g.nbytes == 40 for g in made)  # the status record, memref<5xi64>
    for g in made:
        g.check()
    xs[1] = np.zeros(6, np.int32)
    with pytest.raises(ZeroDivisionError, match=r"rlx.div .*: integer division by zero"):
        harness.compile_and_run(text, xs)


@settings(max_examples=EXAMPLES, deadline=None, derandomize=not RANDOM, database=None,
          suppress_health_check=list(HealthCheck))  # fmt: skip
@given(
    seed=st.integers(0, 2**32 - 1),
    dtype=st.sampled_from(FUZZ_FLOAT_DTYPES + FUZZ_INT_DTYPES),
    shape=st.sampled_from([(3, 5), (1, 7), (4, 16, 33), (64, 64), (8, 512)]),
    n_ops=st.integers(1, 6),
    side=st.sampled_from(SIDES),
)
def test_random_graphs_stay_in_bounds(seed, dtype, shape, n_ops, side) -> None:
    rg = fuzz_graph(seed, dtype, shape, n_ops)
    g = rlx.compile(rg.module)
    g.set_params(rg.params)
    names = [n for n, _, _ in g.inputs]
    outs, status = guarded_run(g, [rg.inputs[n] for n in names], side)
    assert status is None or not status[0]
    assert_matches(outs, rg.run(), dtype)


INDEXED = """
func.func @main(%x: tensor<5x3xf32>, %i: tensor<4xi64>, %j: tensor<2x3xi32>, %k: tensor<1xui8>) -> (tensor<4x3xf32>, tensor<5x2x3xf32>, tensor<1x3xf32>) {
  %0 = rlx.gather %x, %i : (tensor<5x3xf32>, tensor<4xi64>) -> tensor<4x3xf32>
  %1 = rlx.gather %x, %j {axis = 1 : i64} : (tensor<5x3xf32>, tensor<2x3xi32>) -> tensor<5x2x3xf32>
  %2 = rlx.gather %x, %k : (tensor<5x3xf32>, tensor<1xui8>) -> tensor<1x3xf32>
  func.return %0, %1, %2 : tensor<4x3xf32>, tensor<5x2x3xf32>, tensor<1x3xf32>
}
"""
BAD_INDICES = [
    ("i", np.array([0, 5, 1, 2]), 5), ("i", np.array([-6, 0, 0, 0]), -6),
    ("i", np.array([2**62, 0, 0, 0]), 2**62), ("i", np.array([-(2**63), 0, 0, 0]), -(2**63)),
    ("j", np.array([[0, 3, 0], [0, 0, 0]], np.int32), 3),
    ("j", np.array([[0, 0, 0], [0, 0, -(2**31)]], np.int32), -(2**31)),
    ("k", np.array([255], np.uint8), 255), ("k", np.array([5], np.uint8), 5),
]  # fmt: skip


@pytest.fixture(scope="module")
def indexed() -> rlx.CompiledGraph:
    return rlx.compile(INDEXED)


def _indexed_inputs(**bad: np.ndarray) -> list[np.ndarray]:
    good = {"i": np.array([0, 4, -1, -5]), "j": np.array([[0, 2, -1], [1, -3, 2]], np.int32),
            "k": np.array([4], np.uint8)}  # fmt: skip
    good.update(bad)
    return [np.arange(15, dtype=np.float32).reshape(5, 3), good["i"], good["j"], good["k"]]


@pytest.mark.parametrize("side", SIDES)
@pytest.mark.parametrize(("arg", "idx", "value"), BAD_INDICES)
def test_bad_indices_read_nothing_out_of_bounds(indexed, side, arg, idx, value) -> None:
    outs, status = guarded_run(indexed, _indexed_inputs(**{arg: idx}), side)
    assert status is not None and status[0]
    err = status_error("site", int(status[0]), int(status[2]), int(status[3]))
    assert isinstance(err, RlxIndexError) and f"index {value} is out of range" in str(err)
    with pytest.raises(IndexError, match=f"index {value} is out of range"):
        indexed.run(*_indexed_inputs(**{arg: idx}))
    good, _ = guarded_run(indexed, _indexed_inputs(), side)
    np.testing.assert_array_equal(good[0], indexed.run(*_indexed_inputs())[0])
