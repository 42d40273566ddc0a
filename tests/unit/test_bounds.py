"""Gather indices are checked in generated code: a bad index makes `run` raise IndexError
naming the op (source location) and the value, as the reference interpreter does; nothing
is read out of bounds and the next good run is clean. One compile serves all cases."""

from __future__ import annotations

import numpy as np
import pytest

import rlx
from rlx.errors import RlxIndexError
from rlx.interpreter import parse_module, run

SRC = """
func.func @main(%x: tensor<6x3xf32>, %i: tensor<4xi32>, %j: tensor<2x2xi64>, %u: tensor<3xui8>) -> (tensor<4x3xf32>, tensor<6x2x2xf32>, tensor<6x3xf32>) {
  %0 = rlx.gather %x, %i : (tensor<6x3xf32>, tensor<4xi32>) -> tensor<4x3xf32>
  %1 = rlx.gather %x, %j {axis = 1 : i64} : (tensor<6x3xf32>, tensor<2x2xi64>) -> tensor<6x2x2xf32>
  %2 = rlx.gather %x, %u {axis = -1 : i64} : (tensor<6x3xf32>, tensor<3xui8>) -> tensor<6x3xf32>
  func.return %0, %1, %2 : tensor<4x3xf32>, tensor<6x2x2xf32>, tensor<6x3xf32>
}
"""

X = np.arange(18, dtype=np.float32).reshape(6, 3)
GOOD = (
    np.array([0, 5, -1, -6], np.int32),
    np.array([[0, -3], [2, -1]]),
    np.array([2, 0, 1], np.uint8),
)


@pytest.fixture(scope="module")
def graph() -> rlx.CompiledGraph:
    return rlx.compile(SRC)


def _inputs(**bad: np.ndarray) -> list[np.ndarray]:
    i, j, u = GOOD
    return [X, bad.get("i", i), bad.get("j", j), bad.get("u", u)]


def test_good_indices_match_reference(graph: rlx.CompiledGraph) -> None:
    got = graph.run(*_inputs())
    want = run(parse_module(SRC), _inputs())
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)
    np.testing.assert_array_equal(got[0], np.take(X, GOOD[0], axis=0))


CASES = [
    ("i", np.array([0, 6, 1, 2], np.int32), 6, "3:3"),  # index == size
    ("i", np.array([0, 1, -7, 2], np.int32), -7, "3:3"),
    ("i", np.array([2**31 - 1, 0, 0, 0], np.int32), 2**31 - 1, "3:3"),
    ("i", np.array([0, 0, 0, -(2**31)], np.int32), -(2**31), "3:3"),
    ("j", np.array([[0, 0], [2**40, 0]]), 2**40, "4:3"),
    ("j", np.array([[0, 3], [0, 0]]), 3, "4:3"),
    ("j", np.array([[-(2**63), 0], [0, 0]]), -(2**63), "4:3"),
    ("j", np.array([[2**63 - 1, 0], [0, 0]]), 2**63 - 1, "4:3"),
    ("u", np.array([0, 255, 1], np.uint8), 255, "5:3"),
    ("u", np.array([3, 0, 1], np.uint8), 3, "5:3"),
]


@pytest.mark.parametrize(("arg", "idx", "value", "where"), CASES)
def test_bad_index_raises_index_error(
    graph: rlx.CompiledGraph, arg: str, idx: np.ndarray, value: int, where: str
) -> None:
    ins = _inputs(**{arg: idx})
    with pytest.raises(IndexError, match=rf":{where}: rlx.gather: index {value} is out of range"):
        graph.run(*ins)
    with pytest.raises(RlxIndexError, match=rf"rlx.gather: index {value} is out of range"):
        run(parse_module(SRC), ins)
    # the status record is cleared: the next good run succeeds and is exact
    np.testing.assert_array_equal(graph.run(*_inputs())[0], np.take(X, GOOD[0], axis=0))


def test_first_error_wins_and_names_the_right_op(graph: rlx.CompiledGraph) -> None:
    ins = _inputs(j=np.array([[9, 0], [0, 0]]), u=np.array([7, 0, 0], np.uint8))
    with pytest.raises(IndexError, match=r":4:3: rlx.gather: index 9 "):
        graph.run(*ins)


def test_builder_graph_names_op_position() -> None:
    """Ops without a source location are named by position in the function."""
    from rlx.builder import Graph

    g = Graph("main")
    x = g.input("x", (4, 2), "f32")
    i = g.input("i", (3,), "i64")
    y = g.op("gather", x, i)
    assert not isinstance(y, tuple)
    g.output(y)
    cg = rlx.compile(g)
    with pytest.raises(
        IndexError,
        match=r"rlx.gather \(op #\d+ of @main\): index 4 is out of range for an axis of size 4",
    ):
        cg.run(np.zeros((4, 2), np.float32), np.array([0, 4, 1]))


PREP = """
func.func @main(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %w = rlx.param "w" : tensor<5x4xf32>
  %i = rlx.constant dense<[1, 7]> : tensor<2xi32>
  %e = rlx.gather %w, %i : (tensor<5x4xf32>, tensor<2xi32>) -> tensor<2x4xf32>
  %0 = rlx.add %x, %e : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  func.return %0 : tensor<2x4xf32>
}
"""


def test_hoisted_prepare_function_reports_too() -> None:
    """With cache_param_invariant the gather runs in @prepare, which has its own status."""
    from rlx.runtime.options import CompileOptions

    g = rlx.compile(PREP, CompileOptions(cache_param_invariant=True))
    assert g.prepare_signature is not None
    assert [a.kind for a in g.prepare_signature.args].count("status") == 1
    g.set_param("w", np.ones((5, 4), np.float32))
    with pytest.raises(IndexError, match=r":5:3: rlx.gather: index 7 is out of range .* size 5"):
        g.run(np.zeros((2, 4), np.float32))


BAKED = """
func.func @main(%x: tensor<6x3xf32>, %i: tensor<4xi32>) -> tensor<4x3xf32> {
  %w = rlx.param "w" : tensor<6x3xf32>
  %a = rlx.add %x, %w : (tensor<6x3xf32>, tensor<6x3xf32>) -> tensor<6x3xf32>
  %0 = rlx.gather %a, %i : (tensor<6x3xf32>, tensor<4xi32>) -> tensor<4x3xf32>
  func.return %0 : tensor<4x3xf32>
}
"""


def test_baked_artifact_keeps_the_checks(tmp_path: object) -> None:
    """An .rlx artifact's stored code and signature carry the status record and sites."""
    from pathlib import Path

    import rlx.bake

    d = Path(str(tmp_path))
    (d / "g.mlir").write_text(BAKED)
    path = rlx.bake.bake(d / "g.mlir", {"w": np.ones((6, 3), np.float32)}, "exact", d / "g.rlx")
    g = rlx.load(path)
    x = np.zeros((6, 3), np.float32)
    np.testing.assert_array_equal(g.run(x, np.array([0, 1, 2, 5], np.int32))[0], np.ones((4, 3)))
    with pytest.raises(IndexError, match=r"g.mlir:5:3: rlx.gather: index 6 is out of range"):
        g.run(x, np.array([0, 1, 6, 5], np.int32))


EMPTY_AXIS = """
func.func @main(%x: tensor<0x3xf32>, %i: tensor<2xi64>) -> tensor<2x3xf32> {
  %0 = rlx.gather %x, %i : (tensor<0x3xf32>, tensor<2xi64>) -> tensor<2x3xf32>
  func.return %0 : tensor<2x3xf32>
}
"""


def test_gather_from_an_empty_axis_fails_every_index() -> None:
    g = rlx.compile(EMPTY_AXIS)
    x = np.zeros((0, 3), np.float32)
    with pytest.raises(IndexError, match="index 0 is out of range for an axis of size 0"):
        g.run(x, np.array([0, -1]))
    with pytest.raises(RlxIndexError, match="index 0 is out of range"):
        run(parse_module(EMPTY_AXIS), [x, np.array([0, -1])])
