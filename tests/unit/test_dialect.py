"""Dialect meta-tests: every op is registered, round-trips, has FileCheck coverage for both its
valid form and a verifier error, and shape inference agrees with the written types."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from xdsl.context import Context
from xdsl.parser import Parser
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.test_value import create_ssa_value

from rlx.dialects import get_all_dialects
from rlx.dialects.rlx import OPS_BY_NAME, RLX_OPS, Rlx

FILECHECK = Path(__file__).parents[1] / "filecheck" / "dialects" / "rlx"


def _ctx() -> Context:
    ctx = Context()
    for name, factory in get_all_dialects().items():
        ctx.register_dialect(name, factory)
    return ctx


def test_every_factory_loads() -> None:
    for name, factory in get_all_dialects().items():
        assert factory().name == name


def test_op_class_names_and_dialect() -> None:
    assert (
        len(RLX_OPS) == len(OPS_BY_NAME) == 69
    )  # 62 + rlx.hard_swish (issue 12) + rlx.pack_rhs, rlx.packed_matmul (issue 17)
    for op in RLX_OPS:
        assert op.__name__.endswith("Op"), op.__name__
        assert op.name.startswith("rlx.")
    assert {o.name for o in Rlx.operations} == set(OPS_BY_NAME)


@pytest.mark.parametrize("op_name", sorted(OPS_BY_NAME))
def test_every_op_has_roundtrip_and_negative_filecheck(op_name: str) -> None:
    ops_text = (FILECHECK / "ops.mlir").read_text()
    invalid = (FILECHECK / "invalid.mlir").read_text()
    pattern = re.compile(rf"\b{re.escape(op_name)}\b")
    assert pattern.search(ops_text), f"{op_name} missing from ops.mlir"
    if op_name != "rlx.yield":  # its errors are its parents' (scan/elementwise_region)
        assert pattern.search(invalid), f"{op_name} has no verifier test in invalid.mlir"


def test_generic_form_parses_with_attributes() -> None:
    text = """
    func.func @main(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
      %y = "rlx.softmax"(%x) {axis = -1 : i64} : (tensor<2x8xf32>) -> tensor<2x8xf32>
      func.return %y : tensor<2x8xf32>
    }"""
    m = Parser(_ctx(), text).parse_module()
    m.verify()
    assert "rlx.softmax %x {axis = -1 : i64}" in str(m)


def test_verifier_reports_inferred_type() -> None:
    text = """
    func.func @main(%x: tensor<2x8xf32>, %w: tensor<8x4xf32>) {
      %y = rlx.matmul %x, %w : (tensor<2x8xf32>, tensor<8x4xf32>) -> tensor<2x8xf32>
      func.return
    }"""
    m = Parser(_ctx(), text).parse_module()
    with pytest.raises(VerifyException, match=r"operands and attributes give tensor<2x4xf32>"):
        m.verify()


def test_negative_sizes_are_refused() -> None:
    """The parser refuses `tensor<2x-3xf32>`; a type built in Python is checked by the
    verifier (only the dynamic marker may be negative)."""
    from xdsl.dialects.builtin import TensorType, f32

    from rlx.dialects.rlx.elementwise import ExpOp

    x = create_ssa_value(TensorType(f32, [2, -3]))
    op = ExpOp.create(operands=[x], result_types=[TensorType(f32, [2, -3])])
    with pytest.raises(VerifyException, match=r"operand #0 has a negative size"):
        op.verify()


def test_rng_ops_are_not_merged_by_cse() -> None:
    from xdsl.transforms.common_subexpression_elimination import CommonSubexpressionElimination

    text = """
    func.func @main() -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
      %a = rlx.rng_uniform : tensor<4xf32>
      %b = rlx.rng_uniform : tensor<4xf32>
      %c = rlx.param "w" : tensor<4xf32>
      %d = rlx.param "w" : tensor<4xf32>
      func.return %a, %b, %c, %d : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
    }"""
    ctx = _ctx()
    m = Parser(ctx, text).parse_module()
    CommonSubexpressionElimination().apply(ctx, m)
    out = str(m)
    assert out.count("rlx.rng_uniform") == 2
    assert out.count("rlx.param") == 1


@pytest.mark.parametrize("op_name", sorted(OPS_BY_NAME))
def test_every_op_is_run_by_the_reference_interpreter_tests(op_name: str) -> None:
    unit = Path(__file__).parent
    text = "".join(p.read_text() for p in unit.glob("test_reference_*.py"))
    short = op_name.removeprefix("rlx.")
    assert re.search(rf"\b{re.escape(op_name)}\b", text) or f'"{short}"' in text, op_name


def test_every_op_has_an_interpreter_implementation() -> None:
    from rlx.interpreter import supported_ops

    # rlx.param is bound by the interpreter's walker from `params`, not by an op function
    assert set(OPS_BY_NAME) - {"rlx.param"} <= set(supported_ops())
