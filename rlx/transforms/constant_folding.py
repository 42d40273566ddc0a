"""`constant-folding`: evaluate rlx ops whose operands are all constants, plus the rlx
algebraic simplifications (RLX `ConstantFolding` + `AlgebraicSimplify`)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
)
from xdsl.utils.exceptions import PassFailedException

from rlx.dialects.rlx.base import DYN, shape_of
from rlx.dialects.rlx.control import YieldOp
from rlx.dialects.rlx.leaves import ConstantOp, ParamOp, RngOp
from rlx.interpreter import InterpreterError, eval_op, to_numpy
from rlx.interpreter.formula import evaluate
from rlx.transforms.canonicalize import simplify_patterns
from rlx.transforms.dce import RemoveDeadOp
from rlx.transforms.expansion import dense


def foldable(op: Operation, max_elements: int) -> bool:
    """An rlx op (not a leaf, rng or terminator) with constant operands and small static results."""
    if not op.name.startswith("rlx.") or isinstance(op, ConstantOp | ParamOp | RngOp | YieldOp):
        return False
    if not op.operands or not all(isinstance(o.owner, ConstantOp) for o in op.operands):
        return False
    for r in op.results:
        t = r.type
        if not isinstance(t, TensorType) or DYN in shape_of(t):
            return False
        if math.prod(shape_of(t)) > max_elements:
            return False
    return True


@dataclass
class FoldConstantOp(RewritePattern):
    """Replace an op on constants by the constants of its evaluated results."""

    max_elements: int

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if not foldable(op, self.max_elements):
            return
        args = [to_numpy(o.owner.value) for o in op.operands]  # type: ignore[union-attr]
        try:
            # Elementwise ops fold by their formula (the one the compiled code runs),
            # everything else by the reference interpreter.
            outs = [evaluate(op, args)] if hasattr(op, "formula") else eval_op(op, args)
        except (InterpreterError, ValueError, ArithmeticError):
            return  # the op would fail at run time too: leave it there
        new = [
            ConstantOp(dense(np.asarray(v), r.type)) for v, r in zip(outs, op.results, strict=True)
        ]  # type: ignore[arg-type]
        producers = {o.owner for o in op.operands}
        rewriter.replace(op, new, [c.result for c in new])
        for p in producers:
            if isinstance(p, ConstantOp) and not p.result.uses and p.parent is not None:
                rewriter.erase(p)


@dataclass(frozen=True)
class ConstantFoldingPass(ModulePass):
    """Evaluate rlx ops on constants (reference semantics) and apply algebraic simplifications.

    Params are never constants (run `bind-params` first); rng ops are never folded;
    results with more than `max_elements` elements are left unfolded. Dead constants and
    compute ops (those the rewrites orphan) are erased; params and rng ops never are.
    """

    name = "constant-folding"

    max_elements: int = 1 << 20

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.max_elements < 0:
            raise PassFailedException(
                f"constant-folding: max-elements must be >= 0, got {self.max_elements}"
            )
        pattern = GreedyRewritePatternApplier(
            [FoldConstantOp(self.max_elements), *simplify_patterns()], dce_enabled=False
        )
        PatternRewriteWalker(pattern).rewrite_module(op)
        cleanup = GreedyRewritePatternApplier([RemoveDeadOp(keep_leaves=True)], dce_enabled=False)
        PatternRewriteWalker(cleanup, walk_reverse=True).rewrite_module(op)
