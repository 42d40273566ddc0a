"""constant-folding: ops on constants are evaluated with the reference semantics, rng and
params are never folded, the size threshold holds, algebraic identities are exact, and
random graphs keep their outputs (rtol=1e-6: folding evaluates with the same reference
ops, the only difference is the order in which algebraic identities drop exact no-ops)."""

from __future__ import annotations

import numpy as np
import pytest
from graphgen import apply, op_names, parse, random_graph

from rlx.interpreter import run, to_numpy
from rlx.transforms.constant_folding import ConstantFoldingPass


def fold(text: str, **opts: int) -> list[str]:
    return op_names(apply(ConstantFoldingPass(**opts), parse(text)))


def test_folds_two_plus_three() -> None:
    m = apply(
        ConstantFoldingPass(),
        parse("""
    func.func @main() -> tensor<2xf32> {
      %a = rlx.constant dense<2.0> : tensor<2xf32>
      %b = rlx.constant dense<3.0> : tensor<f32>
      %c = rlx.add %a, %b : (tensor<2xf32>, tensor<f32>) -> tensor<2xf32>
      %d = rlx.gelu %c : (tensor<2xf32>) -> tensor<2xf32>
      func.return %d : tensor<2xf32>
    }"""),
    )
    assert op_names(m) == ["rlx.constant"]
    const = next(o for o in m.walk() if o.name == "rlx.constant")
    np.testing.assert_allclose(to_numpy(const.value), [5.0, 5.0], rtol=1e-6)  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("elem", "np_elem"), [("i32", np.int32), ("bf16", None), ("ui8", np.uint8), ("i1", np.bool_)]
)
def test_folded_constant_has_exact_result_type(elem: str, np_elem: object) -> None:
    op = "rlx.max" if elem in ("ui8", "i32") else ("rlx.compare" if elem == "i1" else "rlx.add")
    src = "i32" if elem == "i1" else elem
    attrs = ' {predicate = "lt"}' if elem == "i1" else ""
    m = apply(
        ConstantFoldingPass(),
        parse(f"""
    func.func @main() -> tensor<2x{elem}> {{
      %a = rlx.constant dense<[1, 5]> : tensor<2x{src}>
      %b = rlx.constant dense<[3, 2]> : tensor<2x{src}>
      %c = {op} %a, %b{attrs} : (tensor<2x{src}>, tensor<2x{src}>) -> tensor<2x{elem}>
      func.return %c : tensor<2x{elem}>
    }}"""),
    )
    assert op_names(m) == ["rlx.constant"]
    assert str(m.body.block.first_op.function_type.outputs.data[0]) == f"tensor<2x{elem}>"  # type: ignore[union-attr]
    expected = {"i32": [3, 5], "ui8": [3, 5], "bf16": [4, 7], "i1": [True, False]}[elem]
    np.testing.assert_array_equal(run(m)[0].astype(np.float64), np.asarray(expected, np.float64))


def test_never_folds_params_or_rng() -> None:
    names = fold("""
    func.func @main() -> (tensor<2xf32>, tensor<2xf32>) {
      %p = rlx.param "w" : tensor<2xf32>
      %c = rlx.constant dense<1.5> : tensor<2xf32>
      %a = rlx.add %p, %c : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
      %r = rlx.rng_uniform : tensor<2xf32>
      %b = rlx.mul %r, %c : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
      func.return %a, %b : tensor<2xf32>, tensor<2xf32>
    }""")
    assert names == ["rlx.param", "rlx.constant", "rlx.add", "rlx.rng_uniform", "rlx.mul"]


def test_max_elements_threshold() -> None:
    text = """
    func.func @main() -> tensor<4x4xf32> {
      %a = rlx.constant dense<1.0> : tensor<4xf32>
      %b = rlx.broadcast_to %a : (tensor<4xf32>) -> tensor<4x4xf32>
      %c = rlx.exp %b : (tensor<4x4xf32>) -> tensor<4x4xf32>
      func.return %c : tensor<4x4xf32>
    }"""
    assert fold(text, max_elements=8) == ["rlx.constant", "rlx.broadcast_to", "rlx.exp"]
    assert fold(text, max_elements=16) == ["rlx.constant"]


IDENT = """
func.func @main(%x: tensor<2x3xf32>, %i: tensor<3xi32>) -> (tensor<2x3xf32>, tensor<3xi32>) {
  %z = rlx.constant dense<0.0> : tensor<3xf32>
  %o = rlx.constant dense<1.0> : tensor<f32>
  %zi = rlx.constant dense<0> : tensor<i32>
  %a = rlx.add %z, %x : (tensor<3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %b = rlx.sub %a, %z : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %c = rlx.mul %o, %b : (tensor<f32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %d = rlx.div %c, %o : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  %e = rlx.neg %d : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %f = rlx.neg %e : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %t1 = rlx.transpose %f {permutation = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %t2 = rlx.transpose %t1 {permutation = array<i64: 1, 0>} : (tensor<3x2xf32>) -> tensor<2x3xf32>
  %r1 = rlx.reshape %t2 : (tensor<2x3xf32>) -> tensor<6xf32>
  %r2 = rlx.reshape %r1 : (tensor<6xf32>) -> tensor<2x3xf32>
  %g = rlx.cast %r2 : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %im = rlx.mul %i, %zi : (tensor<3xi32>, tensor<i32>) -> tensor<3xi32>
  func.return %g, %im : tensor<2x3xf32>, tensor<3xi32>
}
"""


def test_algebraic_identities_collapse_to_inputs() -> None:
    m = apply(ConstantFoldingPass(), parse(IDENT))
    assert op_names(m) == ["rlx.constant"]
    x = np.arange(6, dtype=np.float32).reshape(2, 3) - 2.5
    i = np.array([1, -2, 3], np.int32)
    out = run(m, [x, i])
    np.testing.assert_array_equal(out[0], x)
    np.testing.assert_array_equal(out[1], [0, 0, 0])


def test_float_mul_by_zero_and_broadcasting_identity_kept() -> None:
    names = fold("""
    func.func @main(%x: tensor<3xf32>) -> (tensor<3xf32>, tensor<2x3xf32>) {
      %z = rlx.constant dense<0.0> : tensor<f32>
      %a = rlx.mul %x, %z : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
      %o = rlx.constant dense<1.0> : tensor<2x3xf32>
      %b = rlx.mul %x, %o : (tensor<3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
      func.return %a, %b : tensor<3xf32>, tensor<2x3xf32>
    }""")
    assert names == ["rlx.constant", "rlx.mul", "rlx.constant", "rlx.mul"]


def test_broadcast_of_scalar_constant_becomes_splat() -> None:
    m = apply(
        ConstantFoldingPass(max_elements=0),
        parse("""
    func.func @main() -> tensor<64x64xf32> {
      %a = rlx.constant dense<7.0> : tensor<1xf32>
      %b = rlx.broadcast_to %a : (tensor<1xf32>) -> tensor<64x64xf32>
      func.return %b : tensor<64x64xf32>
    }"""),
    )
    assert op_names(m) == ["rlx.constant"]
    assert "dense<7.000000e+00> : tensor<64x64xf32>" in str(m)


@pytest.mark.parametrize("seed", range(12))
def test_random_graphs_unchanged_outputs(seed: int) -> None:
    rg = random_graph(seed)
    ref = rg.run()
    apply(ConstantFoldingPass(), rg.module)
    for a, b in zip(ref, rg.run(), strict=True):
        np.testing.assert_allclose(b, a, rtol=1e-6, atol=1e-7)


def test_every_contracting_op_class_has_its_work() -> None:
    """`fold_work` finds contractions by op class (`ROW_CONTRACTIONS`,
    `FILTER_CONTRACTIONS`), not by name: every rlx op named like a matmul or a conv is
    in one of them, so a new one cannot fold unbounded (a 2^30-long K hung the pass)."""
    from rlx.dialects.rlx import RLX_OPS
    from rlx.transforms.constant_folding import FILTER_CONTRACTIONS, ROW_CONTRACTIONS

    classes = set(ROW_CONTRACTIONS) | set(FILTER_CONTRACTIONS)
    named = {op for op in RLX_OPS if "matmul" in op.name or "conv2d" in op.name}
    assert named <= classes, sorted(op.name for op in named - classes)
    assert "rlx.fused_swiglu" in {op.name for op in ROW_CONTRACTIONS}
