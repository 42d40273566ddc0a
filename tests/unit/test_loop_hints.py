"""`loop_hints.EXPANDED` names exactly the f32 math ops `convert-math-to-llvm` expands
into inline helpers (the bodies whose constants need the interleave hint): each lowers to
an `@__rlx_*` helper call, and every other unary float math op does not."""

from __future__ import annotations

import inspect

import pytest
from xdsl.context import Context
from xdsl.dialects import arith, func, math, scf
from xdsl.dialects.builtin import ModuleOp, f32
from xdsl.ir import Block, Region

from rlx.lowering.convert_math_to_llvm import ConvertMathToLLVMPass
from rlx.lowering.loop_hints import EXPANDED, hint, interleave_of

UNARY_FLOAT = [
    c for _, c in inspect.getmembers(math, inspect.isclass)
    if c.__module__ == math.__name__ and c.__name__.endswith("Op")
    and getattr(c, "name", "").startswith("math.") and "operand" in getattr(c, "__dict__", {})
]  # fmt: skip


def _lowers_to_helper(cls: type) -> bool:
    block = Block(arg_types=[f32])
    try:
        op = cls(block.args[0])
    except Exception:  # noqa: BLE001 - not a one-operand float op
        pytest.skip(f"{cls.__name__} is not built from one operand")
    block.add_ops([op, func.ReturnOp(op.results[0])])
    module = ModuleOp([func.FuncOp("f", ([f32], [f32]), Region(block))])
    ConvertMathToLLVMPass().apply(Context(), module)
    return "@__rlx_" in str(module)


@pytest.mark.parametrize("cls", UNARY_FLOAT, ids=lambda c: c.__name__)
def test_expanded_is_what_the_math_lowering_expands(cls: type) -> None:
    assert _lowers_to_helper(cls) == (cls in EXPANDED)


def test_every_expanded_op_is_a_unary_float_op() -> None:
    assert set(EXPANDED) <= set(UNARY_FLOAT)


def test_hint_counts_must_be_positive() -> None:
    lb = arith.ConstantOp.from_int_and_width(0, 64)
    body = Block(arg_types=[lb.result.type])
    body.add_op(scf.YieldOp())
    for_op = scf.ForOp(lb.result, lb.result, lb.result, [], body)
    with pytest.raises(ValueError, match="must be an integer >= 1, got 0"):
        hint(for_op, 0)
    assert interleave_of(for_op) is None
    hint(for_op, 3)
    assert interleave_of(for_op) == 3
