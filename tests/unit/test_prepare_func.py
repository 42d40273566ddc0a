"""`rlx.transforms.prepare_func.PrepareFunc`, the @prepare mechanism of hoist-param-invariant,
pack-weights and blocked-layout: a weight-only layout chain moves with its weight, a chain
that reads an input leaves the module unchanged (no half-cloned weights, no empty @prepare),
a prepared argument maps back to the value @prepare returns, and another function's
@prepare is a clear error naming the pass."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.utils.exceptions import PassFailedException

from rlx.interpreter import parse_module, run
from rlx.transforms.prepare_func import PrepareFunc, erase_dead

T, T2 = "tensor<4x6xf32>", "tensor<6x4xf32>"
GRAPH = f"""
func.func @main(%x: {T} {{rlx.name = "x"}}) -> {T2} {{
  %w = rlx.param "w" : {T}
  %c = rlx.concat %w, %x {{axis = 0 : i64}} : ({T}, {T}) -> tensor<8x6xf32>
  %t = rlx.transpose %w {{permutation = array<i64: 1, 0>}} : ({T}) -> {T2}
  func.return %t : {T2}
}}
"""


def _main(m: ModuleOp) -> func.FuncOp:
    return next(f for f in m.ops if isinstance(f, func.FuncOp) and f.sym_name.data == "main")


def _op(m: ModuleOp, name: str) -> Operation:
    return next(o for o in _main(m).body.block.ops if o.name == name)


def test_input_dependent_chain_leaves_module_unchanged() -> None:
    m = parse_module(GRAPH)
    before = str(m)
    assert PrepareFunc(m, _main(m), "test").source(_op(m, "rlx.concat").results[0]) is None
    assert str(m) == before


def test_weight_only_chain_moves_and_maps_back() -> None:
    m = parse_module(GRAPH)
    w = {"w": np.arange(24, dtype=np.float32).reshape(4, 6)}
    x = {"x": np.ones((4, 6), np.float32)}
    ref = run(m, x, w)[0]
    prep = PrepareFunc(m, _main(m), "test")
    t = _op(m, "rlx.transpose").results[0]
    src = prep.source(t)
    assert src is not None
    arg = prep.add_output(src, f"moved{prep.n_outputs()}")
    t.replace_all_uses_with(arg)
    erase_dead(t)
    prep.module.verify()
    assert prep.n_prepared() == 1 and not any(o.name == "rlx.transpose" for o in _main(m).walk())
    ret = prep.ensure().body.block.last_op
    assert ret is not None and prep.source(arg) is ret.operands[0]  # mapped back
    prepared = run(m, (), w, entry="prepare")
    got = run(m, x | {"__rlx_prep_0": prepared[0]}, w)[0]
    np.testing.assert_array_equal(got, ref)


def test_prepare_of_another_function_names_the_pass() -> None:
    m = parse_module(GRAPH.replace("@main", "@prepare", 1) + GRAPH)
    main = [f for f in m.ops if isinstance(f, func.FuncOp)][1]
    with pytest.raises(PassFailedException, match="my-pass: the module has a @prepare of another"):
        PrepareFunc(m, main, "my-pass").ensure()
