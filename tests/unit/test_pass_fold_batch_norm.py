"""fold-batch-norm, compiled: conv2d + inference batch norm (the ONNX importer's form)
compiled before and after the pass gives the reference interpreter's outputs on the
original graph, over strides, padding, dilation, groups, odd sizes, batch > 1 and
f32 / f16 / bf16; in the default pipeline the fold happens on bound weights and on
params hoisted into @prepare."""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np
import pytest
from graphgen import apply, op_names
from xdsl.dialects.builtin import ModuleOp

import rlx
from rlx.interpreter import run
from rlx.transforms.fold_batch_norm import FoldBatchNorm

BARE = rlx.CompileOptions(dce=False, constant_folding=False, fusion_target="none")
TOL = {"f32": 1e-4, "f16": 1e-2, "bf16": 6e-2}
"""Max error relative to the output's magnitude (f16/bf16: one rounding of w·s per weight,
on top of the per-op roundings the reference does in that type)."""
NP = {"f32": np.float32, "f16": np.float16, "bf16": ml_dtypes.bfloat16}

CASES = {
    # (n, c, h, w), f, (kh, kw), strides, padding, dilations, groups, conv bias
    "plain": ((1, 3, 7, 9), 5, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1, True),
    "strided-odd": ((2, 4, 11, 8), 6, (3, 2), (2, 3), (0, 1, 2, 0), (1, 1), 2, False),
    "dilated": ((1, 2, 9, 9), 4, (3, 3), (1, 2), (2, 2, 2, 2), (2, 1), 1, True),
    "depthwise": ((3, 6, 5, 7), 6, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 6, False),
}


def bn_graph(case: str, dtype: str) -> tuple[ModuleOp, dict[str, np.ndarray], np.ndarray]:
    (n, c, h, w), f, k, st, pad, dil, groups, has_bias = CASES[case]
    rng = np.random.default_rng(sorted(CASES).index(case))
    g = rlx.Graph()
    x = g.input("x", (n, c, h, w), dtype)
    wt = g.param("w", (f, c // groups, *k), dtype)
    ops = [x, wt] + ([g.param("b", (f,), dtype)] if has_bias else [])
    y = g.op(
        "conv2d", *ops, strides=list(st), padding=list(pad), dilations=list(dil), groups=groups
    )
    stats = {
        nm: g.reshape(g.param(nm, (f,), dtype), (f, 1, 1))
        for nm in ("mean", "var", "gamma", "beta")
    }
    eps = g.constant(np.full((f, 1, 1), 1e-5), dtype)
    s = g.op("mul", g.op("rsqrt", g.op("add", stats["var"], eps)), stats["gamma"])
    y = g.op("add", g.op("mul", g.op("sub", y, stats["mean"]), s), stats["beta"])
    g.output(y)
    cast = NP[dtype]
    params = {
        "w": rng.standard_normal((f, c // groups, *k)),
        "b": rng.standard_normal(f),
        "mean": rng.standard_normal(f),
        "var": rng.uniform(0.2, 2.0, f),
        "gamma": rng.standard_normal(f),
        "beta": rng.standard_normal(f),
    }
    params = {nm: v.astype(cast) for nm, v in params.items() if nm != "b" or has_bias}
    return g.module, params, rng.standard_normal((n, c, h, w)).astype(cast)


def _err(got: np.ndarray, want: np.ndarray) -> float:
    got, want = got.astype(np.float64), want.astype(np.float64)
    return float(np.abs(got - want).max() / max(1.0, np.abs(want).max()))


def _compiled(module: ModuleOp, params: dict[str, Any], x: np.ndarray) -> np.ndarray:
    c = rlx.compile(module, BARE)
    c.set_params({k: v for k, v in params.items() if k in c.params})
    return c.run(x=x)[0]


@pytest.mark.parametrize("dtype", sorted(TOL))
@pytest.mark.parametrize("case", sorted(CASES))
def test_fold_matches_reference(case: str, dtype: str) -> None:
    module, params, x = bn_graph(case, dtype)
    want = run(module, {"x": x}, params)[0]
    folded = apply(FoldBatchNorm(), module.clone())
    names = op_names(folded)
    assert names.count("rlx.conv2d") == 1 and "rlx.sub" not in names[names.index("rlx.conv2d") :]
    for m in (module, folded):
        assert _err(_compiled(m.clone(), params, x), want) < TOL[dtype]


def test_default_pipeline_folds_bound_and_hoisted_weights() -> None:
    module, params, x = bn_graph("strided-odd", "f32")
    want = run(module, {"x": x}, params)[0]
    bound = rlx.compile(module.clone(), rlx.CompileOptions(param_bindings=params))
    assert "fold-batch-norm" in str(bound.pipeline_report())
    assert _err(bound.run(x=x)[0], want) < 1e-4
    hoisted = rlx.compile(module.clone(), rlx.CompileOptions(cache_param_invariant=True))
    hoisted.set_params(params)
    assert _err(hoisted.run(x=x)[0], want) < 1e-4


def test_constant_folding_off_keeps_the_batch_norm() -> None:
    module, params, x = bn_graph("plain", "f32")
    c = rlx.compile(module, rlx.CompileOptions(constant_folding=False, param_bindings=params))
    assert "no fold-batch-norm pass needed" in str(c.pipeline_report())
    assert _err(c.run(x=x)[0], run(module, {"x": x}, params)[0]) < 1e-4


@pytest.mark.parametrize("bound", [True, False])
def test_onnx_conv_batch_norm_is_folded(bound: bool) -> None:
    """An ONNX Conv (grouped, strided, padded) + BatchNormalization + Relu, imported and
    compiled with the default pipeline: no batch-norm op is left in @main and the output
    matches onnx.reference."""
    from onnx import TensorProto, helper, numpy_helper
    from onnx.reference import ReferenceEvaluator

    from rlx.frontends.onnx import import_model

    r = np.random.default_rng(5)
    inits = {
        "w": r.standard_normal((6, 2, 3, 3)),
        "b": r.standard_normal(6),
        "g": r.uniform(0.5, 1.5, 6),
        "be": r.standard_normal(6),
        "m": r.standard_normal(6),
        "v": r.uniform(0.5, 2.0, 6),
    }
    nodes = [
        helper.make_node(
            "Conv", ["x", "w", "b"], ["c"], group=2, strides=[2, 1], pads=[1, 0, 1, 2]
        ),
        helper.make_node("BatchNormalization", ["c", "g", "be", "m", "v"], ["n"], epsilon=1e-3),
        helper.make_node("Relu", ["n"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4, 9, 7])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        initializer=[numpy_helper.from_array(v.astype(np.float32), k) for k, v in inits.items()],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    x = r.standard_normal((2, 4, 9, 7)).astype(np.float32)
    want = ReferenceEvaluator(model).run(None, {"x": x})[0]
    module, params = import_model(model)
    if bound:
        c = rlx.compile(module, rlx.CompileOptions(param_bindings=params))
    else:
        c = rlx.compile(module, rlx.CompileOptions(cache_param_invariant=True))
        c.set_params(params)
    text = c.ir("rlx")
    main = text[text.index("func.func @main") :]
    assert "rlx.sub" not in main and "rlx.rsqrt" not in main and 'activation = "relu"' in main
    assert _err(c.run(x=x)[0], want) < 1e-5
