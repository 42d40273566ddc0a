"""`shared_input_matmul`: matmuls sharing their lhs -> one matmul on concatenated weights.

Plain `rlx.matmul`s group together, and so do `rlx.fused_matmul_bias_act`s of one
activation whose biases are rank-1 of their N (the q/k/v projections of an attention
block, which `matmul_bias_act` has fused first): x @ Wq + bq, x @ Wk + bk, x @ Wv + bv
becomes slices of act(x @ concat(Wq, Wk, Wv) + concat(bq, bk, bv)), one GEMM with N = 3h.
A weight (or bias) defined after the first matmul of the group is moved before it when it
is weight-only: a param or constant, or a chain of operand-only ops over them (the
`transpose(W)` of a torch-style linear layer, hoisted later by `hoist-param-invariant`).
"""

from __future__ import annotations

from xdsl.dialects.builtin import StringAttr
from xdsl.ir import Block, Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern
from xdsl.rewriter import InsertPoint

from rlx.dialects.rlx.base import i64_attr, ints_attr, shape_of
from rlx.dialects.rlx.compute import MatmulOp
from rlx.dialects.rlx.fused import FusedMatmulBiasActOp
from rlx.transforms.fusion.common import elem_type, make_op, static_shape

Shared = MatmulOp | FusedMatmulBiasActOp

_LEAVES = ("rlx.param", "rlx.constant")
_MOVABLE = ("rlx.transpose", "rlx.reshape", "rlx.cast")
"""Weight-only ops (over params / constants) that may move up with the weight they make."""


def _lhs(op: Shared) -> SSAValue:
    return op.a if isinstance(op, MatmulOp) else op.x


def _rhs(op: Shared) -> SSAValue:
    return op.b if isinstance(op, MatmulOp) else op.w


def _kind(op: Shared) -> str:
    """Ops group only with ops of the same kind: "matmul" or the fused op's activation."""
    return "matmul" if isinstance(op, MatmulOp) else f"fused:{op.activation}"


def shared_group(mm: Shared) -> list[Shared]:
    """The matmuls (block order) reading `mm`'s lhs, of `mm`'s kind, with rank-2 static rhs of
    the same K and element type (fused ones: a rank-1 bias of their N), in `mm`'s block;
    `mm` itself included when eligible."""
    block = mm.parent_block()
    x = _lhs(mm)
    group: list[Shared] = []
    seen: set[int] = set()
    for use in x.uses:
        op = use.operation
        if not isinstance(op, Shared) or id(op) in seen or op.parent_block() is not block:
            continue
        seen.add(id(op))
        w = static_shape(_rhs(op))
        if _lhs(op) is not x or w is None or len(w) != 2 or static_shape(op.result) is None:
            continue
        if _kind(op) != _kind(mm) or elem_type(_rhs(op)) != elem_type(_rhs(mm)):
            continue
        if w[0] != shape_of(x.type)[-1]:
            continue
        if isinstance(op, FusedMatmulBiasActOp):
            if static_shape(op.bias) != (w[1],) or elem_type(op.bias) != elem_type(op.w):
                continue
        group.append(op)
    if block is None:
        return group
    order = {id(op): i for i, op in enumerate(block.ops)}
    return sorted(group, key=lambda op: order[id(op)])


def _to_move(
    value: SSAValue, first: Operation, block: Block, order: dict[int, int], inner: bool = False
) -> list[Operation] | None:
    """The ops (block order) to move before `first` so that `value` dominates it: [] when
    it does already, None when it cannot (not weight-only: a chain that moves must start
    at params / constants, `inner` marks its operands). Moving an op up keeps every use
    of it valid."""
    owner = value.owner
    if not isinstance(owner, Operation) or owner.parent_block() is not block:
        return None if inner else []
    if order[id(owner)] < order[id(first)] and not inner:
        return []
    if owner.name in _LEAVES and not owner.operands and not owner.regions:
        return [] if order[id(owner)] < order[id(first)] else [owner]
    if owner.regions or owner.name not in _MOVABLE or order[id(owner)] < order[id(first)]:
        return None
    moved: list[Operation] = []
    for operand in owner.operands:
        sub = _to_move(operand, first, block, order, inner=True)
        if sub is None:
            return None
        moved += sub
    return [*moved, owner]


class FuseSharedInputMatmul(RewritePattern):
    """x @ W1, x @ W2, ... (rank-2 W of equal K) -> slices of x @ concat(W1, W2, ...); the
    same for fused_matmul_bias_act of one activation, with the biases concatenated."""

    def match_and_rewrite(self, mm: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(mm, Shared):
            return
        block = mm.parent_block()
        group = shared_group(mm)
        if block is None or len(group) < 2 or mm not in group:
            return
        order = {id(op): i for i, op in enumerate(block.ops)}
        first = group[0]
        moves: dict[int, list[Operation]] = {}
        for op in group:
            parts = [_rhs(op)] + ([op.bias] if isinstance(op, FusedMatmulBiasActOp) else [])
            found = [_to_move(v, first, block, order) for v in parts]
            if all(f is not None for f in found):
                moves[id(op)] = [o for f in found for o in (f or [])]
        group = [op for op in group if id(op) in moves]
        if len(group) < 2:
            return
        first = group[0]
        fused = isinstance(first, FusedMatmulBiasActOp)
        new: list[Operation] = []
        concat = make_op(
            "rlx.concat", [_rhs(op) for op in group], {"axis": i64_attr(-1)}, like=first
        )
        if concat is None:
            return
        new.append(concat)
        if fused:
            biases = [op.bias for op in group if isinstance(op, FusedMatmulBiasActOp)]
            bias = make_op("rlx.concat", biases, {"axis": i64_attr(0)}, like=first)
            if bias is None:
                return
            new.append(bias)
            attrs = {"activation": StringAttr(first.activation)}
            big = make_op("rlx.fused_matmul_bias_act", [first.x, concat.results[0], bias.results[0]],
                          attrs, like=first)  # fmt: skip
        else:
            big = make_op("rlx.matmul", [_lhs(first), concat.results[0]], {}, like=first)
        if big is None:
            return
        new.append(big)
        moving: dict[int, Operation] = {}
        for op in group:
            moving.update((id(w), w) for w in moves[id(op)])
        for w in sorted(moving.values(), key=lambda w: order[id(w)]):
            w.detach()
            rewriter.insert(w, InsertPoint.before(first))
        rewriter.insert(new, InsertPoint.before(first))
        out = shape_of(big.results[0].type)
        offset = 0
        for op in group:
            n = shape_of(_rhs(op).type)[1]
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
