"""dce: dead pure ops, unused params and unused rng ops go; used rng ops, outputs and
(by default) the signature stay; outputs are unchanged on random graphs (exactly)."""

from __future__ import annotations

import numpy as np
import pytest
from graphgen import apply, op_names, parse, random_graph

from rlx.transforms.dce import DeadCodeEliminationPass

TEXT = """
func.func @main(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<2xf32>) {
  %w = rlx.param "w" : tensor<4xf32>
  %unused = rlx.param "unused" : tensor<8xf32>
  %dead = rlx.exp %x : (tensor<4xf32>) -> tensor<4xf32>
  %dead2 = rlx.neg %dead : (tensor<4xf32>) -> tensor<4xf32>
  %r0 = rlx.rng_uniform : tensor<3xf32>
  %r1 = rlx.rng_normal : tensor<4xf32>
  %c = rlx.constant dense<1.0> : tensor<2xf32>
  %y = rlx.mul %x, %w : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %y, %r1, %c : tensor<4xf32>, tensor<4xf32>, tensor<2xf32>
}
"""


def test_removes_dead_ops_and_params_keeps_used_rng() -> None:
    m = apply(DeadCodeEliminationPass(), parse(TEXT))
    assert op_names(m) == ["rlx.param", "rlx.rng_normal", "rlx.constant", "rlx.mul"]
    assert len(m.body.block.first_op.function_type.outputs.data) == 3  # type: ignore[union-attr]


def test_remove_unused_results_drops_constant_results() -> None:
    m = apply(DeadCodeEliminationPass(remove_unused_results=True), parse(TEXT))
    assert op_names(m) == ["rlx.param", "rlx.rng_normal", "rlx.mul"]
    f = m.body.block.first_op
    assert [str(t) for t in f.function_type.outputs.data] == ["tensor<4xf32>", "tensor<4xf32>"]  # type: ignore[union-attr]


def test_called_function_keeps_its_results() -> None:
    text = """
    func.func private @f() -> tensor<2xf32> {
      %c = rlx.constant dense<1.0> : tensor<2xf32>
      func.return %c : tensor<2xf32>
    }
    func.func @main() -> tensor<2xf32> {
      %r = func.call @f() : () -> tensor<2xf32>
      func.return %r : tensor<2xf32>
    }
    """
    m = apply(DeadCodeEliminationPass(remove_unused_results=True), parse(text))
    assert op_names(m) == ["rlx.constant"]


@pytest.mark.parametrize("seed", range(10))
def test_random_graphs_unchanged_outputs(seed: int) -> None:
    rg = random_graph(seed)
    ref = rg.run()
    n = len(op_names(rg.module))
    apply(DeadCodeEliminationPass(), rg.module)
    assert len(op_names(rg.module)) <= n
    for a, b in zip(ref, rg.run(), strict=True):
        np.testing.assert_array_equal(b, a)
