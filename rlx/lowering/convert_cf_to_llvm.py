"""``convert-cf-to-llvm``: cf.br / cf.cond_br -> llvm.br / llvm.cond_br.

Successor blocks get LLVM-typed arguments (``index`` -> i64, memref -> ptr) the first time
a branch to them is lowered; branch operands are bridged with unrealized casts when their
producers are not lowered yet. ``cf.switch`` and ``cf.assert`` are rejected.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import cf, llvm
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    RewritePattern,
    op_type_rewrite_pattern,
)

from rlx.lowering.llvm_common import (
    convert_block_signature,
    convert_module,
    index_array,
    llvm_operand,
    llvm_operands,
)
from rlx.lowering.loop_hints import INTERLEAVE


class BranchOpLowering(RewritePattern):
    """cf.br -> llvm.br."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: cf.BranchOp, rewriter: PatternRewriter, /) -> None:
        convert_block_signature(op.successor, rewriter)
        new_ops: list[Operation] = []
        args = llvm_operands(op.arguments, new_ops)
        hint = {INTERLEAVE: op.attributes[INTERLEAVE]} if INTERLEAVE in op.attributes else {}
        new_ops.append(llvm.BrOp.create(operands=args, successors=[op.successor], attributes=hint))
        rewriter.replace(op, new_ops)


class CondBranchOpLowering(RewritePattern):
    """cf.cond_br -> llvm.cond_br."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: cf.ConditionalBranchOp, rewriter: PatternRewriter, /) -> None:
        convert_block_signature(op.then_block, rewriter)
        convert_block_signature(op.else_block, rewriter)
        new_ops: list[Operation] = []
        cond = llvm_operand(op.cond, new_ops)
        then_args = llvm_operands(op.then_arguments, new_ops)
        else_args = llvm_operands(op.else_arguments, new_ops)
        sizes = index_array((1, len(then_args), len(else_args)))
        new_ops.append(
            llvm.CondBrOp.create(
                operands=[cond, *then_args, *else_args],
                properties={"operandSegmentSizes": sizes},
                successors=[op.then_block, op.else_block],
            )
        )
        rewriter.replace(op, new_ops)


def cf_to_llvm_patterns() -> list[RewritePattern]:
    """The patterns of this pass (also used by ``convert-to-llvm``)."""
    return [BranchOpLowering(), CondBranchOpLowering()]


DIALECTS: tuple[str, ...] = ("cf",)
"""The dialects this pass converts completely."""


@dataclass(frozen=True)
class ConvertCfToLLVMPass(ModulePass):
    """Lower cf.br and cf.cond_br to llvm.br and llvm.cond_br."""

    name = "convert-cf-to-llvm"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        convert_module(op, cf_to_llvm_patterns(), DIALECTS, self.name)
