"""canonicalize: rlx identity/simplification patterns, xDSL's generic canonicalization,
dead-op removal; x - x and float x * 0 are left alone; random graphs keep their outputs
(exactly: every pattern is value-preserving; only +0.0 vs -0.0 may differ)."""

from __future__ import annotations

import numpy as np
import pytest
from graphgen import apply, op_names, parse, random_graph

from rlx.interpreter import run
from rlx.transforms.canonicalize import RlxCanonicalizePass


def canon(text: str) -> list[str]:
    return op_names(apply(RlxCanonicalizePass(), parse(text)))


def test_identity_data_movement_removed() -> None:
    names = canon("""
    func.func @main(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
      %a = rlx.transpose %x {permutation = array<i64: 0, 1>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
      %b = rlx.reshape %a : (tensor<2x3xf32>) -> tensor<2x3xf32>
      %c = rlx.broadcast_to %b : (tensor<2x3xf32>) -> tensor<2x3xf32>
      %d = rlx.slice %c {starts = array<i64: 0, 0>, limits = array<i64: 2, 3>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
      %e = rlx.concat %d {axis = 0} : (tensor<2x3xf32>) -> tensor<2x3xf32>
      %f = rlx.relu %e : (tensor<2x3xf32>) -> tensor<2x3xf32>
      %g = rlx.relu %f : (tensor<2x3xf32>) -> tensor<2x3xf32>
      func.return %g : tensor<2x3xf32>
    }""")
    assert names == ["rlx.relu"]


def test_non_identities_kept() -> None:
    names = canon("""
    func.func @main(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<1x3xf32>, tensor<2x3xf32>, tensor<3x2xf32>) {
      %a = rlx.sub %x, %x : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
      %s = rlx.slice %x {starts = array<i64: 1, 0>, limits = array<i64: 2, 3>} : (tensor<2x3xf32>) -> tensor<1x3xf32>
      %z = rlx.constant dense<0.0> : tensor<f32>
      %m = rlx.mul %x, %z : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
      %t = rlx.transpose %x {permutation = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
      %p = rlx.param "unused" : tensor<3xf32>
      %r = rlx.rng_uniform : tensor<3xf32>
      func.return %a, %s, %m, %t : tensor<2x3xf32>, tensor<1x3xf32>, tensor<2x3xf32>, tensor<3x2xf32>
    }""")
    assert names == ["rlx.sub", "rlx.slice", "rlx.constant", "rlx.mul", "rlx.transpose"]


def test_transpose_composition() -> None:
    m = apply(
        RlxCanonicalizePass(),
        parse("""
    func.func @main(%x: tensor<2x3x4xf32>) -> tensor<4x2x3xf32> {
      %a = rlx.transpose %x {permutation = array<i64: 1, 2, 0>} : (tensor<2x3x4xf32>) -> tensor<3x4x2xf32>
      %b = rlx.transpose %a {permutation = array<i64: 1, 2, 0>} : (tensor<3x4x2xf32>) -> tensor<4x2x3xf32>
      func.return %b : tensor<4x2x3xf32>
    }"""),
    )
    assert op_names(m) == ["rlx.transpose"]
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    np.testing.assert_array_equal(run(m, [x])[0], x.transpose(1, 2, 0).transpose(1, 2, 0))


def test_generic_xdsl_canonicalization_applies() -> None:
    m = apply(
        RlxCanonicalizePass(),
        parse("""
    func.func @f(%a: i32) -> i32 {
      %c0 = arith.constant 0 : i32
      %r = arith.addi %a, %c0 : i32
      func.return %r : i32
    }"""),
    )
    assert "arith.addi" not in str(m)


@pytest.mark.parametrize("seed", range(12))
def test_random_graphs_unchanged_outputs(seed: int) -> None:
    rg = random_graph(seed)
    ref = rg.run()
    apply(RlxCanonicalizePass(), rg.module)
    for a, b in zip(ref, rg.run(), strict=True):
        np.testing.assert_array_equal(b, a)
