"""`constant-folding`: evaluate rlx ops whose operands are all constants, plus the rlx
algebraic simplifications (RLX `ConstantFolding` + `AlgebraicSimplify`)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
)
from xdsl.utils.exceptions import PassFailedException

from rlx.dialects.rlx.base import DYN, shape_of
from rlx.dialects.rlx.compute import AttentionOp, MatmulOp
from rlx.dialects.rlx.control import ElementwiseRegionOp, ScanOp, YieldOp
from rlx.dialects.rlx.fused import FusedConv2dResidualOp, FusedMatmulBiasActOp, FusedSwigluOp
from rlx.dialects.rlx.gemm import PackedMatmulOp
from rlx.dialects.rlx.leaves import ConstantOp, ParamOp, RngOp
from rlx.dialects.rlx.quant import DequantMatmulOp, ScaledMatmulOp
from rlx.dialects.rlx.window import Conv2dOp, Pool2dOp
from rlx.interpreter import InterpreterError, eval_op, to_numpy
from rlx.interpreter.formula import evaluate
from rlx.transforms.canonicalize import simplify_patterns
from rlx.transforms.dce import RemoveDeadOp
from rlx.transforms.expansion import dense

WORK_PER_ELEMENT_FACTOR = 16
"""`fold_work` may be this many times `max-elements` (16M multiply-adds by default)."""


def _elements(v: SSAValue) -> int:
    """Elements of a value's type (1 for a scalar, 0 for an unknown size)."""
    t = v.type
    if not isinstance(t, TensorType):
        return 1
    s = shape_of(t)
    return 0 if DYN in s else math.prod(s)


ROW_CONTRACTIONS = (
    MatmulOp, FusedMatmulBiasActOp, PackedMatmulOp, ScaledMatmulOp, DequantMatmulOp,
    FusedSwigluOp,
)  # fmt: skip
"""Ops whose result element reads a row of K, their first operand's last dim."""

FILTER_CONTRACTIONS = (Conv2dOp, FusedConv2dResidualOp)
"""Ops whose result element reads a whole filter, their second operand but its first dim."""


def _contraction(op: Operation) -> int:
    """Work per result element of the ops that contract: a matmul-like op reads a row of K
    (`ROW_CONTRACTIONS`), a conv a whole filter (`FILTER_CONTRACTIONS`), attention (at
    most) every key and value of its heads, a pool its window; every other op 1."""
    ins = [shape_of(o.type) if isinstance(o.type, TensorType) else [] for o in op.operands]
    if isinstance(op, ROW_CONTRACTIONS):
        return max(ins[0][-1:] or [1], default=1)
    if isinstance(op, FILTER_CONTRACTIONS) and len(ins) > 1:
        return math.prod(ins[1][1:])
    if isinstance(op, AttentionOp):
        return 2 * math.prod(ins[1][1:-1])
    if isinstance(op, Pool2dOp):
        return math.prod(op.kernel)
    return 1


def fold_work(op: Operation) -> int:
    """An upper bound of the elements the reference interpreter touches to evaluate `op`:
    its operands, its results times their contraction, and its regions' ops as often as
    they run (a scan's length, an elementwise region's result elements). A scan of 2^40
    steps or a conv of two 1000x1000 planes would hang the pass; their fold is skipped."""
    work = sum(_elements(o) for o in op.operands)
    work += sum(_elements(r) for r in op.results) * max(_contraction(op), 1)
    body = sum(fold_work(o) for region in op.regions for block in region.blocks for o in block.ops)
    if isinstance(op, ScanOp):
        body *= max(op.length, 1)
    elif isinstance(op, ElementwiseRegionOp):
        body *= max((_elements(r) for r in op.results), default=1)
    return work + body


def foldable(op: Operation, max_elements: int) -> bool:
    """An rlx op (not a leaf, rng or terminator) with constant operands, small static
    results and at most `WORK_PER_ELEMENT_FACTOR * max_elements` of `fold_work`."""
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
    return fold_work(op) <= WORK_PER_ELEMENT_FACTOR * max_elements


@dataclass
class FoldConstantOp(RewritePattern):
    """Replace an op on constants by the constants of its evaluated results."""

    max_elements: int

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if not foldable(op, self.max_elements):
            return
        try:
            args = [to_numpy(o.owner.value) for o in op.operands]  # type: ignore[union-attr]
            # Elementwise ops fold by their formula (the one the compiled code runs),
            # everything else by the reference interpreter.
            outs = [evaluate(op, args)] if hasattr(op, "formula") else eval_op(op, args)
            new = [
                ConstantOp(dense(np.asarray(v), r.type))  # type: ignore[arg-type]
                for v, r in zip(outs, op.results, strict=True)
            ]
        except (InterpreterError, ValueError, ArithmeticError, IndexError, MemoryError):
            return  # the op would fail at run time too (or is too large to fold): leave it
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
