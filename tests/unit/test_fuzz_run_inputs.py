"""Hostile run-time inputs (the sweep of docs/fuzzing.md as a table): each is either a
ValueError naming the input, or runs and matches the reference interpreter on the same
values; never another exception, a crash or a wrong result. One compile for all rows."""

from __future__ import annotations

import numpy as np
import pytest

import rlx
from rlx.interpreter import parse_module, run

SRC = """func.func @main(%x: tensor<2x3xf32>, %i: tensor<2xi64>, %b: tensor<3xi1>) -> (tensor<2x3xf32>, tensor<2x3xf32>) {
  %g = rlx.gather %x, %i : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<2x3xf32>
  %z = rlx.constant dense<0.0> : tensor<2x3xf32>
  %w = rlx.where %b, %x, %z : (tensor<3xi1>, tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %g, %w : tensor<2x3xf32>, tensor<2x3xf32>
}
"""
X = np.arange(6, dtype=np.float32).reshape(2, 3)
IDX = np.array([1, 0])
B = np.array([True, False, True])


class ArrayLike:
    def __array__(self, dtype: object = None, copy: object = None) -> np.ndarray:
        return X


def _unaligned() -> np.ndarray:
    raw = np.zeros(X.nbytes + 1, np.uint8)
    a = np.ndarray(X.shape, np.float32, raw.data, 1)
    a[...] = X
    return a


RUNS = {
    "negative strides": (X[::-1, ::-1], IDX[::-1], B[::-1]),
    "non-contiguous": (np.arange(12, dtype=np.float32).reshape(2, 6)[:, ::2], IDX, B),
    "read-only": (np.frombuffer(X.tobytes(), np.float32).reshape(2, 3), IDX, B),
    "unaligned": (_unaligned(), IDX, B),
    "broadcast view": (np.lib.stride_tricks.as_strided(X, (2, 3), (0, 4)), IDX, B),
    "__array__ object": (ArrayLike(), IDX, B),
    "bool view of uint8": (X, IDX, np.array([0, 2, 255], np.uint8).view(np.bool_)),
    "nan and inf": (np.array([[np.nan, np.inf, -np.inf], [0.0, -0.0, 1e38]], np.float32), IDX, B),
}
REFUSED = {
    "0-d": ((np.float32(1), IDX, B), "input 'arg0': expected float32 array of shape (2, 3)"),
    "python lists": ((X.tolist(), IDX, B), "input 'arg0': expected float32 array"),
    "float64": ((X.astype(np.float64), IDX, B), "got float64 array"),
    "big-endian": ((X.astype(">f4"), IDX, B), "got >f4 array"),
    "int32 indices": ((X, IDX.astype(np.int32), B), "input 'arg1': expected int64 array"),
    "None": ((None, IDX, B), "got object array of shape ()"),
    "string": (("abc", IDX, B), "input 'arg0'"),
    "object array": ((np.array([[object()] * 3] * 2), IDX, B), "got object array of shape (2, 3)"),
    "structured": ((np.zeros((2, 3), [("a", np.float32)]), IDX, B), "input 'arg0'"),
    "transposed shape": ((X.T, IDX, B), "got float32 array of shape (3, 2)"),
    "too many": ((X, IDX, B, X), "@main takes 3 input(s) (arg0, arg1, arg2), got 4 positional"),
}


@pytest.fixture(scope="module")
def graph() -> rlx.CompiledGraph:
    return rlx.compile(SRC)


@pytest.mark.parametrize("case", sorted(RUNS))
def test_accepted_inputs_match_the_reference(graph, case) -> None:
    args = RUNS[case]
    want = run(parse_module(SRC), [np.asarray(a) for a in args])
    for g, w in zip(graph.run(*args), want, strict=True):
        np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_refused_inputs_name_the_input(graph, case) -> None:
    args, message = REFUSED[case]
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        graph.run(*args)
    np.testing.assert_array_equal(graph.run(X, IDX, B)[0], X[IDX])  # the graph still works
