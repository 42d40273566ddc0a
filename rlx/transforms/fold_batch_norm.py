"""`fold-batch-norm`: fold the per-channel affine that follows an `rlx.conv2d` (an
inference BatchNormalization, `(y - mean) * s + beta`, or any `y * s + t`) into the
convolution's weights and bias.

Starting at a float `rlx.conv2d` without an activation whose result has one user, the
pass follows a chain of `rlx.add` / `rlx.sub` / `rlx.mul` / `rlx.div` ops in which the
running value has one user and the other operand is

* *param-invariant*: computed from `rlx.param` / `rlx.constant` ops only (no function
  argument, no random op: the same test as `hoist-param-invariant`), and
* *per-channel*: it broadcasts against the `[N, F, OH, OW]` result along the channel axis
  only (`[F, 1, 1]`, `[1, F, 1, 1]`, a scalar or a one-element tensor), so the chain's
  result keeps the convolution's type.

`sub` and `div` must have the running value on the left. The chain `c ∘ op_1 ∘ ... ∘ op_k`
is replaced by one convolution with weights `w ⊙ m` (per output channel, `m` the product
of the multipliers, broadcast as `[F, 1, 1, 1]`) and bias `b` run through the same chain
(`(b - mean) · s + beta` for a batch norm). Groups and depthwise convolutions need nothing
special: every filter is one output channel.

The new weight and bias expressions are rlx ops on the old operands, so a later
`hoist-param-invariant` moves them into `@prepare` when the weights are params; with
`fold-constants` (default on) those reading only constants are evaluated at once (the
reference semantics of `constant-folding`, whatever their size: the folded weights
replace the old ones). Exactness: `conv(x, w·s)` rounds differently from `conv(x, w)·s`
(the multiplier moves inside the sum): f32 outputs move by ~2e-7 of their magnitude; f16 /
bf16 convolutions store the folded weights in their own type, one more rounding per weight
(measured 9e-4 / 5.5e-3). Hence `equivalence_tolerance` 2e-2 (relative to the output's
magnitude; the f32 tests check 1e-4). Bit-exact only when every multiplier is a power of
two.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
)
from xdsl.rewriter import InsertPoint, Rewriter

from rlx.dialects.rlx.base import DYN, RlxOp, is_float, shape_of, tensor
from rlx.dialects.rlx.elementwise import AddOp, DivOp, MulOp, NegOp, SubOp
from rlx.dialects.rlx.shape import BroadcastToOp, ReshapeOp
from rlx.dialects.rlx.window import Conv2dOp
from rlx.ir_checks import graph_block
from rlx.transforms.constant_folding import FoldConstantOp
from rlx.transforms.dce import RemoveDeadOp
from rlx.transforms.hoist_param_invariant import _dynamic_ops

_AFFINE = (AddOp, SubOp, MulOp, DivOp)


def _per_channel(v: SSAValue, f: int) -> bool:
    """`v` broadcasts against [N, f, H, W] along the channel axis only."""
    t = v.type
    if not isinstance(t, TensorType):
        return False
    s = shape_of(t)
    if len(s) > 4 or DYN in s:
        return False
    if math.prod(s) == 1:
        return True
    full = (1,) * (4 - len(s)) + tuple(s)
    return full[1] == f and all(d == 1 for i, d in enumerate(full) if i != 1)


def _only_user(v: SSAValue) -> Operation | None:
    uses = list(v.uses)
    return uses[0].operation if len(uses) == 1 else None


@dataclass
class _Chain:
    """The affine ops after one convolution: (op, per-channel operand) in order."""

    conv: Conv2dOp
    steps: list[tuple[Operation, SSAValue]]


def _chain(conv: Conv2dOp, invariant: set[SSAValue]) -> _Chain | None:
    if conv.activation != "none" or not is_float(conv.result.type.element_type):
        return None
    f = shape_of(conv.w.type)[0]
    if f == DYN:
        return None
    steps: list[tuple[Operation, SSAValue]] = []
    cur: SSAValue = conv.result
    while (user := _only_user(cur)) is not None and isinstance(user, _AFFINE):
        lhs, rhs = user.operands
        if lhs is rhs:
            break
        other = rhs if lhs is cur else lhs
        if isinstance(user, SubOp | DivOp) and lhs is not cur:
            break
        if other not in invariant or not _per_channel(other, f):
            break
        if user.results[0].type != conv.result.type:
            break
        steps.append((user, other))
        cur = user.results[0]
    return _Chain(conv, steps) if steps else None


class _Builder:
    """Inserts typed rlx ops before an anchor op and remembers them."""

    def __init__(self, anchor: Operation, created: set[Operation]) -> None:
        self.ip = InsertPoint.before(anchor)
        self.created = created

    def op(
        self, cls: type[RlxOp], *operands: SSAValue, result: Attribute | None = None
    ) -> SSAValue:
        new = cls(*operands, result_types=None if result is None else [result])
        Rewriter.insert_op(new, self.ip)
        self.created.add(new)
        return new.results[0]

    def shaped(self, v: SSAValue, shp: list[int]) -> SSAValue:
        """`v` (one or `prod(shp)` elements) as a tensor of shape `shp`."""
        t = v.type
        assert isinstance(t, TensorType)
        e = t.element_type
        if math.prod(shape_of(t)) == 1 and math.prod(shp) != 1:
            one = self.op(ReshapeOp, v, result=tensor([1] * len(shp), e))
            return self.op(BroadcastToOp, one, result=tensor(shp, e))
        if tuple(shape_of(t)) == tuple(shp):
            return v
        return self.op(ReshapeOp, v, result=tensor(shp, e))


def _fold(chain: _Chain, created: set[Operation]) -> None:
    conv = chain.conv
    last = chain.steps[-1][0]
    b = _Builder(last, created)  # every operand of the chain is defined before `last`
    f = shape_of(conv.w.type)[0]
    w: SSAValue = conv.w
    bias: SSAValue | None = conv.bias
    for op, k in chain.steps:
        kv = b.shaped(k, [f])
        if isinstance(op, AddOp):
            bias = kv if bias is None else b.op(AddOp, bias, kv)
        elif isinstance(op, SubOp):
            bias = b.op(NegOp, kv) if bias is None else b.op(SubOp, bias, kv)
        else:
            cls = MulOp if isinstance(op, MulOp) else DivOp
            w = b.op(cls, w, b.shaped(k, [f, 1, 1, 1]))
            bias = None if bias is None else b.op(cls, bias, kv)
    new = Conv2dOp.create(
        operands=[conv.x, w, *([bias] if bias is not None else [])],
        result_types=[conv.result.type],
        attributes=dict(conv.attributes),
        properties=dict(conv.properties),
    )
    new.location = conv.location
    Rewriter.insert_op(new, InsertPoint.before(last))
    last.results[0].replace_all_uses_with(new.result)
    for op, _ in reversed(chain.steps):
        Rewriter.erase_op(op)
    Rewriter.erase_op(conv)


def _invariant_values(block: Block) -> set[SSAValue]:
    dynamic = _dynamic_ops(block)
    return {r for op in block.ops if op not in dynamic for r in op.results}


@dataclass
class _FoldCreated(FoldConstantOp):
    """`constant-folding`'s op evaluation, restricted to the ops this pass created."""

    created: set[Operation]

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if op in self.created:
            super().match_and_rewrite(op, rewriter)


@dataclass(frozen=True)
class FoldBatchNorm(ModulePass):
    """Fold a per-channel affine after rlx.conv2d (inference batch norm) into its weights.

    See the module docstring for the matched chains, the exactness and `fold-constants`.
    """

    name = "fold-batch-norm"
    equivalence_tolerance: ClassVar[float] = 2e-2  # bf16: the folded weight's rounding

    fold_constants: bool = True
    """evaluate the new weight / bias expressions that read only constants"""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        created: set[Operation] = set()
        for f in [o for o in op.body.ops if isinstance(o, func.FuncOp)]:
            if f.is_declaration:
                continue
            block = graph_block(f, "fold-batch-norm")
            invariant = _invariant_values(block)
            for conv in [o for o in block.ops if isinstance(o, Conv2dOp)]:
                chain = _chain(conv, invariant)
                if chain is not None:
                    _fold(chain, created)
        if not created:
            return
        if self.fold_constants:
            fold = GreedyRewritePatternApplier(
                [_FoldCreated(max_elements=1 << 62, created=created)], dce_enabled=False
            )
            PatternRewriteWalker(fold).rewrite_module(op)
        cleanup = GreedyRewritePatternApplier([RemoveDeadOp(keep_leaves=True)], dce_enabled=False)
        PatternRewriteWalker(cleanup, walk_reverse=True).rewrite_module(op)
