"""`shared_input_matmul`: matmuls sharing their lhs -> one matmul on concatenated weights."""

from __future__ import annotations

from xdsl.ir import Block, Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern
from xdsl.rewriter import InsertPoint

from rlx.dialects.rlx.base import i64_attr, ints_attr, shape_of
from rlx.dialects.rlx.compute import MatmulOp
from rlx.transforms.fusion.common import elem_type, make_op, static_shape


def shared_group(mm: MatmulOp) -> list[MatmulOp]:
    """The matmuls (block order) reading `mm`'s lhs, with rank-2 static rhs of the same K
    and the same element type, in `mm`'s block; `mm` itself included when eligible."""
    block = mm.parent_block()
    group: list[MatmulOp] = []
    seen: set[int] = set()
    for use in mm.a.uses:
        op = use.operation
        if not isinstance(op, MatmulOp) or id(op) in seen or op.parent_block() is not block:
            continue
        seen.add(id(op))
        w = static_shape(op.b)
        if op.a is not mm.a or w is None or len(w) != 2 or static_shape(op.result) is None:
            continue
        if elem_type(op.b) != elem_type(mm.b):
            continue
        if w[0] != shape_of(mm.a.type)[-1]:
            continue
        group.append(op)
    if block is None:
        return group
    order = {id(op): i for i, op in enumerate(block.ops)}
    return sorted(group, key=lambda op: order[id(op)])


def _available(value: SSAValue, first: Operation, block: Block, order: dict[int, int]) -> str:
    """'yes' when `value` dominates `first`, 'movable' for a later operand-free op of the
    same block (param/constant), else 'no'."""
    owner = value.owner
    if not isinstance(owner, Operation) or owner.parent_block() is not block:
        return "yes"
    if order[id(owner)] < order[id(first)]:
        return "yes"
    if not owner.operands and not owner.regions and owner.name in ("rlx.param", "rlx.constant"):
        return "movable"
    return "no"


class FuseSharedInputMatmul(RewritePattern):
    """x @ W1, x @ W2, ... (rank-2 W of equal K) -> slices of x @ concat(W1, W2, ...)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, mm: MatmulOp, rewriter: PatternRewriter) -> None:
        block = mm.parent_block()
        group = shared_group(mm)
        if block is None or len(group) < 2 or mm not in group:
            return
        order = {id(op): i for i, op in enumerate(block.ops)}
        first = group[0]
        avail = {id(op): _available(op.b, first, block, order) for op in group}
        group = [op for op in group if avail[id(op)] != "no"]
        if len(group) < 2:
            return
        first = group[0]
        concat = make_op("rlx.concat", [op.b for op in group], {"axis": i64_attr(-1)}, like=first)
        if concat is None:
            return
        big = make_op("rlx.matmul", [first.a, concat.results[0]], {}, like=first)
        if big is None:
            return
        for op in group:
            w = op.b.owner
            if avail[id(op)] == "movable" and isinstance(w, Operation):
                w.detach()
                rewriter.insert(w, InsertPoint.before(first))
        rewriter.insert([concat, big], InsertPoint.before(first))
        out = shape_of(big.results[0].type)
        offset = 0
        for op in group:
            n = shape_of(op.b.type)[1]
            starts = [0] * (len(out) - 1) + [offset]
            limits = [*out[:-1], offset + n]
            sl = make_op(
                "rlx.slice",
                [big.results[0]],
                {"starts": ints_attr(starts), "limits": ints_attr(limits)},
                like=op,
            )
            assert sl is not None
            rewriter.insert(sl, InsertPoint.before(first))
            sl.results[0].name_hint = op.result.name_hint
            rewriter.replace_all_uses_with(op.result, sl.results[0])
            offset += n
        for op in group:
            rewriter.erase(op)
