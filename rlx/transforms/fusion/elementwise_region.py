"""`elementwise_region`: maximal single-consumer trees of elementwise rlx ops ->
one rlx.elementwise_region with a scalar arith/math body."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern
from xdsl.utils.exceptions import VerifyException

from rlx.dialects.rlx.base import broadcast_shapes, shape_of
from rlx.dialects.rlx.control import ElementwiseRegionOp, YieldOp
from rlx.dialects.rlx.elementwise import BINARY_OPS, UNARY_OPS, CastOp, CompareOp, WhereOp
from rlx.transforms.fusion.common import elem_type, scalar_constant, sole_user
from rlx.transforms.fusion.scalar_body import Emitter, Unsupported, build_scalar

ELEMENTWISE: tuple[type[Operation], ...] = (*UNARY_OPS, *BINARY_OPS, CompareOp, WhereOp, CastOp)


def fusable(op: Operation | None, memo: dict[Operation, bool] | None = None) -> bool:
    """An elementwise rlx op whose scalar form exists (e.g. not on unsigned integers).
    `memo` keeps the answer per op (it builds the scalar form: the pattern asks ~5 times
    per op)."""
    if not isinstance(op, ELEMENTWISE):
        return False
    if memo is not None and (known := memo.get(op)) is not None:
        return known
    block = Block(arg_types=[elem_type(o) for o in op.operands])
    try:
        build_scalar(Emitter(), op, block.args)
        ok = True
    except (Unsupported, KeyError, VerifyException, AssertionError):
        ok = False
    if memo is not None:
        memo[op] = ok
    return ok


def _absorbable(
    value: SSAValue, consumer: Operation, memo: dict[Operation, bool] | None = None
) -> Operation | None:
    """The producer of `value` when it can join `consumer`'s region: fusable, same block,
    and `value`'s only use is `consumer` (so it is not a graph output)."""
    p = value.owner
    if not isinstance(p, Operation) or p.parent_block() is not consumer.parent_block():
        return None
    if sole_user(value) is not consumer or not fusable(p, memo):
        return None
    return p


def external_inputs(members: list[Operation]) -> list[SSAValue]:
    """Values used by the members but defined outside them, in first-use order."""
    inside = {id(r) for op in members for r in op.results}
    seen: set[int] = set()
    out: list[SSAValue] = []
    for op in members:
        for v in op.operands:
            if id(v) not in inside and id(v) not in seen:
                seen.add(id(v))
                out.append(v)
    return out


@dataclass
class FuseElementwiseRegion(RewritePattern):
    """Anchor on a chain tail (an elementwise op not absorbed by its consumer) and grow the
    region upwards through single-use producers, within `max_steps`/`max_inputs` (0 = no
    limit). Regions of one op are left alone."""

    max_steps: int = 0
    max_inputs: int = 0
    _block: Block | None = field(default=None, repr=False, compare=False)
    _order: dict[Operation, int] = field(default_factory=dict, repr=False, compare=False)
    _fusable: dict[Operation, bool] = field(default_factory=dict, repr=False, compare=False)
    """`fusable` per op (an op's operand types, hence the answer, never change here)."""

    def match_and_rewrite(self, tail: Operation, rewriter: PatternRewriter) -> None:
        if not fusable(tail, self._fusable):
            return
        if not self._is_tail(tail):
            return
        members = self._grow(tail)
        if len(members) < 2:
            return
        members.sort(key=self._position_key(members))
        region_op = self._build(members, tail)
        if region_op is None:
            return
        self._order[region_op] = self._order[tail]
        rewriter.replace(tail, region_op)
        for op in reversed(members[:-1]):
            rewriter.erase(op)

    def _position_key(self, members: list[Operation]) -> Callable[[Operation], int]:
        """Sort key: position in the block. Positions are computed once per block and
        reused while the block only loses ops or has ops replaced in place (a new region
        op takes its tail's position); numbering the block per region would make the pass
        quadratic in the block length."""
        block = members[0].parent_block()
        assert block is not None
        if self._block is not block or any(op not in self._order for op in members):
            self._block = block
            self._order = {op: i for i, op in enumerate(block.ops)}
        return self._order.__getitem__

    def _absorbed_by(self, op: Operation) -> Operation | None:
        """The consumer that may absorb `op` (fusable, sole user, same block), if any."""
        consumer = sole_user(op.results[0])
        if (
            consumer is None
            or not fusable(consumer, self._fusable)
            or _absorbable(op.results[0], consumer, self._fusable) is not op
        ):
            return None
        return consumer

    def _is_tail(self, op: Operation) -> bool:
        """`op` roots a region: no consumer absorbs it. With limits, the region grown from
        the end of its consumer chain may leave `op` out; then `op` starts its own."""
        root = self._absorbed_by(op)
        if root is None:
            return True
        if self.max_steps == 0 and self.max_inputs == 0:
            return False
        while (nxt := self._absorbed_by(root)) is not None:
            root = nxt
        members = self._grow(root)
        return len(members) < 2 or op not in members

    def _within_limits(self, members: list[Operation]) -> bool:
        if self.max_steps > 0 and len(members) > self.max_steps:
            return False
        if (
            self.max_inputs > 0
            and len(self._split_inputs(members, members[0])[0]) > self.max_inputs
        ):
            return False
        return True

    def _grow(self, tail: Operation) -> list[Operation]:
        members = [tail]
        work = list(reversed(tail.operands))
        consumers = {id(v): tail for v in tail.operands}
        while work:
            v = work.pop()
            p = _absorbable(v, consumers[id(v)], self._fusable)
            if p is None or p in members:
                continue
            if not self._within_limits([*members, p]):
                continue
            members.append(p)
            for o in reversed(p.operands):
                consumers.setdefault(id(o), p)
                work.append(o)
        return members

    def _split_inputs(
        self, members: list[Operation], tail: Operation
    ) -> tuple[list[SSAValue], list[SSAValue]]:
        """(region inputs, scalar constants inlined into the body)."""
        inputs = external_inputs(members)
        target = shape_of(tail.results[0].type) if tail in members else None
        consts: list[SSAValue] = []
        for v in list(inputs):
            rest = [w for w in inputs if w is not v]
            if scalar_constant(v) is None or not rest:
                continue
            try:
                shape = broadcast_shapes(*(shape_of(w.type) for w in rest))
            except VerifyException:
                continue
            full = broadcast_shapes(*(shape_of(w.type) for w in inputs))
            if shape == full and (target is None or shape == target):
                inputs = rest
                consts.append(v)
        return inputs, consts

    def _build(self, members: list[Operation], tail: Operation) -> ElementwiseRegionOp | None:
        inputs, consts = self._split_inputs(members, tail)
        block = Block(arg_types=[elem_type(v) for v in inputs])
        e = Emitter()
        scalars: dict[int, SSAValue] = {id(v): a for v, a in zip(inputs, block.args, strict=True)}
        for c in consts:
            scalars[id(c)] = e.const(scalar_constant(c) or 0.0, elem_type(c))
        try:
            for op in members:
                scalars[id(op.results[0])] = build_scalar(
                    e, op, [scalars[id(o)] for o in op.operands]
                )
        except Unsupported:
            return None
        block.add_ops([*e.ops, YieldOp(scalars[id(tail.results[0])])])
        region_op = ElementwiseRegionOp(inputs, tail.results[0].type, Region(block))
        region_op.location = tail.location
        try:
            region_op.verify()
        except VerifyException:
            return None
        return region_op
