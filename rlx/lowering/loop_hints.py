"""Loop hints: an interleave count for LLVM's loop vectorizer, set on `scf.for` by the
kernel emitters and carried to the LLVM IR as `!llvm.loop` metadata.

Why: LLVM picks the interleave count (independent vector iterations per loop trip) from
an estimate that counts every loop-invariant value as a register held across the loop.
An elementwise body with a math expansion (gelu_tanh: ~17 polynomial and range-reduction
constants) exceeds AVX2's 16 vector registers by that count, so LLVM interleaves once,
reloads the constants every trip anyway, and leaves one dependency chain per trip (issue
17: the gelu chain 4096x4096 ran at 1.2-1.6 ns per element on one Zen 3 core, 0.9-1.1
with two). The kernel knows better than the estimate: `KernelBuilder.loop(...,
interleave=2)` sets `rlx.interleave` on the loop; the lowering keeps it through
`convert-scf-to-cf` (`HintedForLowering`: on the back edge) and `convert-cf-to-llvm` (on
`llvm.br`), and `to_llvm_ir` prints it as `llvm.loop.interleave.count`. The hint is
visible in the `loops` and `llvm` stages; an unhinted loop is lowered as before.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import builtin, cf, math, scf
from xdsl.dialects.builtin import IntegerAttr, i64
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    op_type_rewrite_pattern,
)
from xdsl.transforms.convert_scf_to_cf import ForLowering, IfLowering, SwitchLowering

from rlx.lowering.llvm_common import fail

INTERLEAVE = "rlx.interleave"
"""Discardable attribute (i64) naming the interleave count of the loop it is on."""


def _bad(value: object) -> str:
    return f"{INTERLEAVE} must be an integer >= 1, got {value}"


def hint(op: scf.ForOp, interleave: int) -> None:
    """Ask LLVM to interleave the loop `op` `interleave` times (see the module docstring)."""
    if interleave < 1:
        raise ValueError(_bad(interleave))
    op.attributes[INTERLEAVE] = IntegerAttr(interleave, i64)


EXPANDED = (math.ExpOp, math.TanhOp, math.ErfOp, math.ExpM1Op, math.Log1pOp)
"""Math ops `convert-math-to-llvm` expands inline into polynomials with many constants."""

AUTO_INTERLEAVE = 2
"""The count `auto` hints on a loop whose body holds an `EXPANDED` op."""


def auto(op: scf.ForOp) -> None:
    """Hint `AUTO_INTERLEAVE` on `op` if its body (at any depth) computes an expanded
    math function: the bodies whose constants LLVM's estimate counts as too many."""
    if any(isinstance(o, EXPANDED) for o in op.body.walk()):
        hint(op, AUTO_INTERLEAVE)


def interleave_of(op: builtin.Operation) -> int | None:
    """The interleave count hinted on `op` (an `scf.for`, `cf.br` or `llvm.br`), None
    without a hint; ValueError for a hint that is not an integer >= 1."""
    attr = op.attributes.get(INTERLEAVE)
    if attr is None:
        return None
    if not (isinstance(attr, IntegerAttr) and attr.value.data >= 1):
        raise ValueError(_bad(attr))
    return attr.value.data


class HintedForLowering(ForLowering):
    """xDSL's `scf.for` lowering, the loop's hint moved onto its back edge (the `cf.br`
    that ends the body and returns to the condition block)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, for_op: scf.ForOp, rewriter: PatternRewriter) -> None:
        try:
            interleave_of(for_op)
        except ValueError as e:
            fail(for_op, f"convert-scf-to-cf: {e}")
        attr = for_op.attributes.get(INTERLEAVE)
        entry, header = for_op.parent_block(), for_op.body.first_block
        super().match_and_rewrite(for_op, rewriter)
        if attr is None or header is None:
            return
        # the header (the condition block) has two predecessors: the entry branch at the
        # end of the block the loop was in, and the back edge
        back = [u.operation for u in header.uses if u.operation.parent_block() is not entry]
        assert len(back) == 1 and isinstance(back[0], cf.BranchOp), back
        back[0].attributes[INTERLEAVE] = attr


@dataclass(frozen=True)
class ConvertScfToCfPass(ModulePass):
    """Lower `scf.for` and `scf.if` to unstructured control flow, loop hints kept.

    xDSL's patterns; an `scf.for`'s `rlx.interleave` moves to its back edge."""

    name = "convert-scf-to-cf"

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        del ctx
        patterns = [SwitchLowering(), IfLowering(), HintedForLowering()]
        PatternRewriteWalker(GreedyRewritePatternApplier(patterns)).rewrite_module(op)
