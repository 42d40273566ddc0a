"""The plugin's passes: one correct, one deliberately wrong (for translation validation)."""

from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, PatternRewriteWalker, RewritePattern
from xdsl.utils.exceptions import PassFailedException


@dataclass
class _FoldPattern(RewritePattern):
    strict: bool

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if op.name == "example.identity":
            rewriter.replace(op, [], [op.operands[0]])
            return
        if op.name != "rlx.neg":
            return
        if not op.results[0].uses:  # left dead by an earlier fold
            rewriter.erase_op(op)
            return
        inner = op.operands[0].owner
        if isinstance(inner, Operation) and inner.name == "rlx.neg":
            rewriter.replace(op, [], [inner.operands[0]])
        elif self.strict:
            # Raised inside match_and_rewrite: rlx-opt reports it at this op.
            raise PassFailedException("lone rlx.neg: nothing to fold (strict=true)")


@dataclass(frozen=True)
class FoldDoubleNeg(ModulePass):
    """Fold rlx.neg(rlx.neg(x)) to x and remove example.identity ops."""

    name = "example-fold-double-neg"

    strict: bool = False
    """fail at an rlx.neg that cannot be folded"""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        # Users first, so the outer neg of a pair folds before the inner one is visited.
        PatternRewriteWalker(_FoldPattern(self.strict), walk_reverse=True).rewrite_module(op)


class _DropNegPattern(RewritePattern):
    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if op.name == "rlx.neg":
            rewriter.replace(op, [], [op.operands[0]])


@dataclass(frozen=True)
class DropNeg(ModulePass):
    """DELIBERATELY WRONG: replace rlx.neg(x) by x (rlx-opt --check-equivalence catches it)."""

    name = "example-drop-neg"
    equivalence_tolerance: ClassVar[float] = 0.0

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(_DropNegPattern()).rewrite_module(op)
