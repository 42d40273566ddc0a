"""hoist-param-invariant: running @prepare and feeding its outputs to @main (as the
`__rlx_prep_<i>` inputs) gives exactly the original outputs (reference interpreter)."""

from __future__ import annotations

import numpy as np
import pytest
from graphgen import apply, parse, random_graph
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp

from rlx.interpreter import run
from rlx.transforms.hoist_param_invariant import HoistParamInvariant

TEXT = """
func.func @main(%x: tensor<2x4xf32> {rlx.name = "x"}) -> tensor<2x3xf32> {
  %w = rlx.param "w" : tensor<3x4xf32>
  %s = rlx.param "scale" : tensor<f32>
  %t = rlx.transpose %w {permutation = array<i64: 1, 0>} : (tensor<3x4xf32>) -> tensor<4x3xf32>
  %ws = rlx.mul %t, %s : (tensor<4x3xf32>, tensor<f32>) -> tensor<4x3xf32>
  %y = rlx.matmul %x, %ws : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
"""


def _funcs(m: ModuleOp) -> dict[str, func.FuncOp]:
    return {f.sym_name.data: f for f in m.ops if isinstance(f, func.FuncOp)}


def _run_split(
    m: ModuleOp, inputs: dict[str, np.ndarray], params: dict[str, np.ndarray]
) -> list[np.ndarray]:
    """The runtime contract: run @prepare once, then @main with the prepared values."""
    prepared = run(m, (), params, entry="prepare")
    feed = dict(inputs) | {f"__rlx_prep_{i}": v for i, v in enumerate(prepared)}
    return run(m, feed, params)


def test_matmul_of_scaled_transposed_weight() -> None:
    rng = np.random.default_rng(0)
    inputs = {"x": rng.standard_normal((2, 4)).astype(np.float32)}
    params = {
        "w": rng.standard_normal((3, 4)).astype(np.float32),
        "scale": np.float32(0.5),
    }
    want = run(parse(TEXT), inputs, params)
    m = apply(HoistParamInvariant(), parse(TEXT))
    f = _funcs(m)
    assert set(f) == {"prepare", "main"}
    assert [o.name for o in f["main"].body.block.ops] == ["rlx.matmul", "func.return"]
    for a, b in zip(_run_split(m, inputs, params), want, strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("seed", range(20))
def test_random_graphs(seed: int) -> None:
    rg = random_graph(seed, n_ops=10)
    want = rg.run()
    m = apply(HoistParamInvariant(), rg.module.clone())
    got = _run_split(m, rg.inputs, rg.params) if "prepare" in _funcs(m) else rg.run(m)
    for a, b in zip(got, want, strict=True):
        np.testing.assert_array_equal(a, b)


def test_nothing_to_hoist_leaves_module_unchanged() -> None:
    text = """
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %w = rlx.param "w" : tensor<4xf32>
  %c = rlx.constant dense<2.0> : tensor<4xf32>
  %r = rlx.rng_normal : tensor<4xf32>
  %e = rlx.mul %r, %c : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %a = rlx.add %x, %w : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %b = rlx.add %a, %e : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %b : tensor<4xf32>
}
"""
    before = str(parse(text))
    assert str(apply(HoistParamInvariant(), parse(text))) == before


def test_random_graphs_do_hoist() -> None:
    """Guard against a vacuous test_random_graphs: about half of them have a boundary."""
    hoisted = sum(
        "prepare" in _funcs(apply(HoistParamInvariant(), random_graph(s, n_ops=10).module))
        for s in range(20)
    )
    assert hoisted >= 5


SCANS = """
func.func @main(%x: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>) {
  %w = rlx.param "w" : tensor<3xf32>
  %ws = rlx.param "ws" : tensor<4x3xf32>
  %s = rlx.scan (%w) over (%ws) {length = 4 : i64} : (tensor<3xf32>), (tensor<4x3xf32>) -> (tensor<3xf32>) {
  ^bb0(%c: tensor<3xf32>, %r: tensor<3xf32>):
    %n = rlx.mul %c, %r : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    rlx.yield %n : tensor<3xf32>
  }
  %d = rlx.scan (%w) over (%ws) {length = 4 : i64} : (tensor<3xf32>), (tensor<4x3xf32>) -> (tensor<3xf32>) {
  ^bb0(%c: tensor<3xf32>, %r: tensor<3xf32>):
    %n = rlx.add %c, %x : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    rlx.yield %n : tensor<3xf32>
  }
  %y = rlx.add %x, %s : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  func.return %y, %d : tensor<3xf32>, tensor<3xf32>
}
"""


def test_scans_weight_only_hoisted_input_reading_kept() -> None:
    """A scan over params only is prepared; one whose body reads %x stays in @main."""
    rng = np.random.default_rng(1)
    inputs = {"arg0": rng.standard_normal(3).astype(np.float32)}
    params = {
        "w": rng.standard_normal(3).astype(np.float32),
        "ws": rng.standard_normal((4, 3)).astype(np.float32),
    }
    want = run(parse(SCANS), inputs, params)
    m = apply(HoistParamInvariant(), parse(SCANS))
    f = _funcs(m)
    assert [o.name for o in f["prepare"].body.block.ops].count("rlx.scan") == 1
    assert [o.name for o in f["main"].body.block.ops].count("rlx.scan") == 1
    for a, b in zip(_run_split(m, inputs, params), want, strict=True):
        np.testing.assert_array_equal(a, b)
