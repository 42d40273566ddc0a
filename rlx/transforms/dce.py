"""`dce`: dead code elimination for rlx graphs (RLX `DeadCodeElimination`)."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, ModuleOp, SymbolRefAttr
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
)
from xdsl.traits import IsTerminator
from xdsl.transforms.dead_code_elimination import would_be_trivially_dead

from rlx.dialects.rlx.leaves import ConstantOp, ParamOp, RngOp


def removable_when_unused(op: Operation) -> bool:
    """Pure ops (params included) and rng ops (allocation-like effect) die when unused."""
    if op.has_trait(IsTerminator, value_if_unregistered=False) or not op.results:
        return False
    return isinstance(op, RngOp) or would_be_trivially_dead(op)


@dataclass
class RemoveDeadOp(RewritePattern):
    """Erase an op whose results are all unused and that has no other effect
    (`keep_leaves`: never erase params and rng ops, whose removal changes the ABI/stream)."""

    keep_leaves: bool = False

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if op.parent is None or any(r.uses for r in op.results) or not removable_when_unused(op):
            return
        if self.keep_leaves and isinstance(op, ParamOp | RngOp):
            return
        rewriter.erase(op)


def _called_symbols(module: ModuleOp) -> set[str]:
    names: set[str] = set()
    for o in module.walk():
        for a in [*o.attributes.values(), *o.properties.values()]:
            if isinstance(a, SymbolRefAttr):
                names.add(a.root_reference.data)
    return names


def drop_constant_results(module: ModuleOp) -> None:
    """Remove func results whose returned value is an `rlx.constant` (funcs that are
    referenced by a symbol use, e.g. `func.call`, keep their signature)."""
    called = _called_symbols(module)
    for f in [o for o in module.body.ops if isinstance(o, func.FuncOp)]:
        if f.sym_name.data in called or f.is_declaration:
            continue
        if len(f.body.blocks) != 1:
            continue  # a CFG function: its returns are in other blocks (left as they are)
        ret = f.body.block.last_op
        if not isinstance(ret, func.ReturnOp):
            continue
        keep = [i for i, v in enumerate(ret.arguments) if not isinstance(v.owner, ConstantOp)]
        if len(keep) == len(ret.arguments):
            continue
        new_ret = func.ReturnOp(*(ret.arguments[i] for i in keep))
        f.body.block.insert_op_before(new_ret, ret)
        f.body.block.erase_op(ret)
        outs = [f.function_type.outputs.data[i] for i in keep]
        f.function_type = func.FunctionType.from_lists(list(f.function_type.inputs.data), outs)
        if f.res_attrs is not None:
            f.res_attrs = ArrayAttr([f.res_attrs.data[i] for i in keep])


@dataclass(frozen=True)
class DeadCodeEliminationPass(ModulePass):
    """Remove ops whose results are unused: pure ops, unused params and unused rng ops.

    Removing an unused `rlx.param` drops it from the graph's ABI (as RLX does). Function
    arguments (inputs) and results are kept; with `remove_unused_results=true` results
    that return an `rlx.constant` are dropped from funcs not referenced by a call.
    """

    name = "dce"

    remove_unused_results: bool = False

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.remove_unused_results:
            drop_constant_results(op)
        PatternRewriteWalker(
            GreedyRewritePatternApplier([RemoveDeadOp()], dce_enabled=False),
            walk_reverse=True,
        ).rewrite_module(op)
