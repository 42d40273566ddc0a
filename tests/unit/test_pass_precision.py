"""precision / precision-policy: the rewritten graph (run by the reference interpreter,
which computes f16/bf16 ops in f32 and rounds per op) stays close to the f32 graph;
boundaries keep f32; casts are shared; integer tensors are never relabelled."""

from __future__ import annotations

import numpy as np
import pytest
from graphgen import apply, op_names, parse, random_graph
from xdsl.utils.exceptions import PassFailedException

from rlx.builder import Graph
from rlx.interpreter import run
from rlx.transforms.precision import OP_CLASS, Precision, PrecisionPolicy, widens_exactly

# Max |rewritten - f32| observed on the MLP below (seed 0): 4.4e-4 (f16, auto-mixed),
# 1.6e-4 (auto-mixed-conservative), 3.0e-3 (bf16); the bounds leave a ~4x margin.
TOL = {"f16": 2e-3, "bf16": 1.2e-2}


def _mlp() -> tuple[Graph, dict[str, np.ndarray], dict[str, np.ndarray]]:
    rng = np.random.default_rng(0)
    g = Graph()
    x = g.input("x", (4, 16))
    w1, b1 = g.param("w1", (16, 32)), g.param("b1", (32,))
    gamma, beta = g.param("gamma", (32,)), g.param("beta", (32,))
    w2 = g.param("w2", (32, 8))
    h = g.gelu(g.add(g.matmul(x, w1), b1))
    h = g.layer_norm(h, gamma, beta)
    y = g.softmax(g.matmul(h, w2), axis=-1)
    g.output(y, g.reduce(h, kind="mean", axes=[1]))
    params = {
        "w1": rng.uniform(-0.5, 0.5, (16, 32)).astype(np.float32),
        "b1": rng.uniform(-0.1, 0.1, (32,)).astype(np.float32),
        "gamma": rng.uniform(0.5, 1.5, (32,)).astype(np.float32),
        "beta": rng.uniform(-0.1, 0.1, (32,)).astype(np.float32),
        "w2": rng.uniform(-0.5, 0.5, (32, 8)).astype(np.float32),
    }
    return g, {"x": rng.uniform(-1, 1, (4, 16)).astype(np.float32)}, params


@pytest.mark.parametrize(
    ("pass_", "dtype"),
    [
        (Precision(precision="f16"), "f16"),
        (Precision(precision="bf16"), "bf16"),
        (PrecisionPolicy(policy="auto-mixed"), "f16"),
        (PrecisionPolicy(policy="auto-mixed-conservative"), "f16"),
        (PrecisionPolicy(policy="auto-mixed-bf16"), "bf16"),
        (Precision(policy="custom", custom="matmul=f16,softmax=bf16"), "bf16"),
    ],
)
def test_mlp_close_to_f32(pass_: Precision | PrecisionPolicy, dtype: str) -> None:
    g, inputs, params = _mlp()
    want = run(g.module, inputs, params)
    m = apply(pass_, g.module.clone())
    got = run(m, inputs, params)
    assert "rlx.cast" in op_names(m)
    for a, b in zip(got, want, strict=True):
        assert a.dtype == np.float32 and a.shape == b.shape
        err = float(np.max(np.abs(a - b)))
        print(f"{pass_.name} {dtype}: max error vs f32 = {err:.3g}")
        assert err <= TOL[dtype]


def test_always_f32_and_default_are_noops() -> None:
    g, _, _ = _mlp()
    text = str(g.module)
    for p in (Precision(), PrecisionPolicy(policy="always-f32")):
        assert str(apply(p, g.module.clone())) == text


def test_auto_mixed_matmul_shape_of_graph() -> None:
    """RLX's reference example: x, w -> cast, cast, matmul(f16), cast(-> f32) output."""
    g = Graph()
    x, w = g.input("x", (2, 4)), g.param("w", (4, 3))
    g.output(g.matmul(x, w))
    m = apply(PrecisionPolicy(policy="auto-mixed"), g.module)
    assert op_names(m) == ["rlx.cast", "rlx.param", "rlx.cast", "rlx.matmul", "rlx.cast"]
    f = m.body.block.first_op
    assert str(f.function_type) == "(tensor<2x4xf32>) -> tensor<2x3xf32>"  # type: ignore[union-attr]


@pytest.mark.parametrize("seed", range(12))
def test_random_graphs_auto_mixed(seed: int) -> None:
    rg = random_graph(seed)
    want = rg.run()
    m = apply(PrecisionPolicy(policy="auto-mixed"), rg.module.clone())
    got = rg.run(m)
    for a, b in zip(got, want, strict=True):
        assert a.dtype == b.dtype
        np.testing.assert_allclose(a, b, rtol=2e-2, atol=2e-2)


def test_integer_tensors_never_relabelled() -> None:
    m = parse(
        """
func.func @main(%x: tensor<4xf32>, %i: tensor<4xi32>) -> (tensor<4xi32>, tensor<4xi1>) {
  %j = rlx.mul %i, %i : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  %c = rlx.compare %x, %x {predicate = "le"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
  func.return %j, %c : tensor<4xi32>, tensor<4xi1>
}
"""
    )
    apply(Precision(precision="f16"), m)
    ints = [str(o.results[0].type) for o in m.walk() if o.name in ("rlx.mul", "rlx.compare")]
    assert ints == ["tensor<4xi32>", "tensor<4xi1>"]


def test_custom_keys_accept_dashes_and_classes() -> None:
    from rlx.transforms.precision import parse_custom

    assert parse_custom("layer-norm=f16,rlx.softmax=bf16,data_movement=f16") == {
        "rlx.layer_norm": "f16",
        "rlx.softmax": "bf16",
        "data-movement": "f16",
    }


def test_exact_widening_table() -> None:
    from xdsl.dialects.builtin import bf16, f16, f32, f64

    assert widens_exactly(f16, f32) and widens_exactly(bf16, f32) and widens_exactly(f32, f64)
    assert not widens_exactly(f32, f16) and not widens_exactly(f16, bf16)
    assert not widens_exactly(bf16, f16)


def test_every_classified_op_exists() -> None:
    from rlx.dialects.rlx import OPS_BY_NAME

    assert set(OP_CLASS) <= set(OPS_BY_NAME)


@pytest.mark.parametrize(
    ("pass_", "match"),
    [
        (Precision(precision="fp16"), "unknown precision 'fp16'"),
        (Precision(policy="auto"), "unknown precision policy 'auto'"),
        (PrecisionPolicy(), "needs a policy name"),
        (Precision(policy="custom", custom="matmul"), "malformed custom precision entry"),
        (Precision(policy="custom", custom="frobnicate=f16"), "'frobnicate' is not a retypable"),
        (Precision(policy="auto-mixed", custom="matmul=f16"), "needs policy=custom"),
    ],
)
def test_bad_options(pass_: Precision | PrecisionPolicy, match: str) -> None:
    g, _, _ = _mlp()
    with pytest.raises(PassFailedException, match=match):
        apply(pass_, g.module)


@pytest.mark.parametrize(
    ("pass_", "kept"),
    [
        (Precision(precision="f16"), set()),
        (Precision(precision="bf16"), set()),
        (
            PrecisionPolicy(policy="auto-mixed-conservative"),
            {o for o, c in OP_CLASS.items() if c == "reduction"},
        ),
    ],
)
def test_every_op_of_the_dialect(pass_: Precision | PrecisionPolicy, kept: set[str]) -> None:
    """Op by op: the examples of every rlx op (tests/filecheck/dialects/rlx/ops.mlir) are
    retyped per their class, still verify, and keep their function signatures."""
    from pathlib import Path

    from xdsl.dialects import func

    text = (Path(__file__).parents[1] / "filecheck/dialects/rlx/ops.mlir").read_text()
    m = parse(text)
    sigs = [str(f.function_type) for f in m.ops if isinstance(f, func.FuncOp)]
    apply(pass_, m)
    assert [str(f.function_type) for f in m.ops if isinstance(f, func.FuncOp)] == sigs
    low = {
        o.name
        for o in m.walk()
        if any(t in str(r.type) for r in o.results for t in ("xf16>", "xbf16>", "<f16>"))
    }
    retypable = {o for o, c in OP_CLASS.items() if c not in ("boundary", "pinned")}
    int_results = {"rlx.compare", "rlx.quantize", "rlx.cast"}
    assert low - {"rlx.cast"} == retypable - int_results - kept  # user casts keep their type
