"""The kernel registry's keys and tables (`rlx_to_linalg.kernels`): a region op's key
ignores SSA name hints and leaves them as they were; the geometry tables' fast packing
gives the attribute `DenseIntOrFPElementsAttr.from_list` gives."""

from __future__ import annotations

import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    IntegerType,
    Signedness,
    TensorType,
    f32,
    i32,
    i64,
)

from rlx.builder import Graph
from rlx.lowering.rlx_to_linalg.kernels import _dense_1d, op_key
from rlx.transforms.fusion import FusionPass


def _region_op(hint: str | None):  # type: ignore[no-untyped-def]
    g = Graph()
    x, y = g.input("x", (4, 8)), g.input("y", (4, 8))
    g.output(g.tanh(g.mul(g.add(x, y), g.sigmoid(x))))
    m = g.module
    FusionPass().apply(Context(), m)
    (op,) = [o for o in m.walk() if o.name == "rlx.elementwise_region"]
    for o in op.body.walk():
        for r in o.results:
            r.name_hint = hint
    for a in op.body.block.args:
        a.name_hint = hint
    return m, op


def test_region_key_ignores_and_keeps_name_hints() -> None:
    _, named = _region_op("v")
    _, plain = _region_op(None)
    assert op_key(named) == op_key(plain)
    assert "%v" not in op_key(named)[3] and "^bb0(%0: f32" in op_key(named)[3]
    assert all(r.name_hint == "v" for o in named.body.walk() for r in o.results)
    assert all(a.name_hint == "v" for a in named.body.block.args)


def test_region_key_tells_bodies_apart() -> None:
    _, a = _region_op(None)
    _, b = _region_op(None)
    add = next(o for o in b.body.walk() if o.name == "arith.addf")
    add.operands = [add.operands[1], add.operands[0]]  # y + x, not x + y
    assert op_key(a) != op_key(b)


@pytest.mark.parametrize(
    "typ, lo, hi",
    [(i64, -(2**40), 2**40), (i64, -(2**63), 2**64 - 1), (i32, -(2**31), 2**31 - 1),
     (IntegerType(64, Signedness.UNSIGNED), 0, 2**40), (f32, -4, 4)],
)  # fmt: skip
def test_table_attribute_is_from_lists(typ, lo: int, hi: int) -> None:  # type: ignore[no-untyped-def]
    vals = tuple(lo + (hi - lo) * k // 7 for k in range(8))
    if typ == f32:
        vals = tuple(float(v) / 3 for v in vals)
    for n in (0, 1, 8):
        want = DenseIntOrFPElementsAttr.from_list(TensorType(typ, [n]), list(vals[:n]))
        assert _dense_1d(typ, vals[:n]) == want
