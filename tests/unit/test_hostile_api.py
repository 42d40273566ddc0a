"""Hostile Python API arguments: clear TypeError/ValueError, never AttributeError or a
huge allocation."""

from __future__ import annotations

import numpy as np
import pytest

import rlx
from rlx.runtime.option_types import MAX_ARENA_ALIGNMENT

GRAPH = """func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %w = rlx.param "w" : tensor<4xf32>
  %y = rlx.add %x, %w : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}
"""


def test_set_params_needs_a_mapping() -> None:
    g = rlx.compile(GRAPH)
    with pytest.raises(TypeError, match=r"set_params: expected a mapping .* got list; params: w"):
        g.set_params([np.ones(4, np.float32)])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"param names are strings, got 0"):
        g.set_params({0: np.ones(4, np.float32)})  # type: ignore[dict-item]
    g.set_params({"w": np.full(4, 2, np.float32)})
    np.testing.assert_array_equal(g.run(np.ones(4, np.float32))[0], np.full(4, 3, np.float32))


@pytest.mark.parametrize("bad", [2**40, 8192, 0, 3, -64, True, 64.0])
def test_arena_alignment_is_bounded(bad) -> None:
    with pytest.raises(ValueError, match=r"CompileOptions.arena_alignment: invalid value"):
        rlx.CompileOptions(arena_alignment=bad)


def test_arena_alignment_at_the_bound_works() -> None:
    g = rlx.compile(GRAPH, rlx.CompileOptions(arena_alignment=MAX_ARENA_ALIGNMENT))
    g.set_params({"w": np.zeros(4, np.float32)})
    np.testing.assert_array_equal(g.run(np.ones(4, np.float32))[0], np.ones(4, np.float32))
