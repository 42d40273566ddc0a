"""Imported ops carry their ONNX node as `loc("node 'n' (Op)")` (as MLIR importers name
ops), so run-time errors (`rlx.error_sites`) and compile-time diagnostics of unlocated
ops name the ONNX node, not only the rlx op (docs/onnx-coverage.md)."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto as T
from onnx import helper as h
from xdsl.dialects.builtin import NameLoc

import rlx
from rlx.diagnostics import OpError, diagnostic_from_exception
from rlx.frontends.onnx import import_model


def _model(nodes, inputs, outputs):  # type: ignore[no-untyped-def]
    g = h.make_graph(nodes, "g", inputs, outputs)
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def _gather_nd():  # type: ignore[no-untyped-def]
    return _model(
        [h.make_node("Abs", ["d"], ["a"], name="abs1"),
         h.make_node("GatherND", ["a", "i"], ["y"], name="pick")],
        [h.make_tensor_value_info("d", T.FLOAT, [2, 3]),
         h.make_tensor_value_info("i", T.INT64, [1, 2])],
        [h.make_tensor_value_info("y", T.FLOAT, None)],
    )  # fmt: skip


def test_every_imported_op_names_its_node() -> None:
    module, _ = import_model(_gather_nd())
    f = module.body.block.first_op
    ops = [o for o in f.walk() if o is not f and o.name != "func.return"]
    names = {o.location.desc.data for o in ops if isinstance(o.location, NameLoc)}
    assert all(isinstance(o.location, NameLoc) for o in ops), [o.name for o in ops]
    assert names == {"node 'abs1' (Abs)", "node 'pick' (GatherND)"}


def test_run_time_index_error_names_the_onnx_node() -> None:
    g = rlx.compile(import_model(_gather_nd())[0])
    d = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(g.run(d, np.array([[1, 2]]))[0], [5.0])
    with pytest.raises(IndexError, match=r"node 'pick' \(GatherND\): rlx.gather: index 5"):
        g.run(d, np.array([[0, 5]]))


def test_run_time_division_by_zero_names_the_onnx_node() -> None:
    m = _model(
        [h.make_node("Div", ["a", "b"], ["y"], name="ratio")],
        [h.make_tensor_value_info("a", T.INT32, [3]), h.make_tensor_value_info("b", T.INT32, [3])],
        [h.make_tensor_value_info("y", T.INT32, None)],
    )
    g = rlx.compile(import_model(m)[0])
    a = np.array([6, 7, 8], np.int32)
    np.testing.assert_array_equal(g.run(a, np.array([2, 7, -8], np.int32))[0], [3, 1, -1])
    with pytest.raises(ArithmeticError, match=r"node 'ratio' \(Div\)"):
        g.run(a, np.array([2, 0, 1], np.int32))


def test_diagnostic_at_an_imported_op_names_the_node() -> None:
    module, _ = import_model(_gather_nd())
    op = next(o for o in module.walk() if o.name == "rlx.gather")
    diag = diagnostic_from_exception(OpError(op, "cannot lower this"))
    assert diag.loc is None
    assert diag.message == "node 'pick' (GatherND): cannot lower this"
