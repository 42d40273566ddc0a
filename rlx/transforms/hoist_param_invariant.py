"""`hoist-param-invariant`: split `@main` into a weight-only `@prepare` and the
input-dependent rest, so the runtime can compute param/constant-only values once (and again
only when a param it reads changes) instead of at every run.

An op is *dynamic* if it is (or contains) a random op or a call, is not an rlx op, or reads (directly or from a nested
region) a function argument or a dynamic value. The *boundary* is the set of results of
non-dynamic computed ops (not `rlx.param` / `rlx.constant`) that a dynamic op or the
`func.return` uses. `@prepare()` computes the boundary values from params and constants
and returns them; `@main` takes them as extra trailing arguments (`rlx.kind = "prepared"`,
`rlx.name = "__rlx_prep_<i>"`) and keeps only what still needs them. `@prepare` carries
`rlx.prepare_for = "main"`. With an empty boundary the module is left unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import builtin, func
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter
from xdsl.utils.exceptions import PassFailedException

from rlx.dialects.rlx.base import RlxOp
from rlx.dialects.rlx.leaves import ConstantOp, ParamOp, RngOp
from rlx.ir_checks import graph_block
from rlx.transforms.prepare_func import KIND_ATTR as KIND_ATTR
from rlx.transforms.prepare_func import LINK_ATTR as LINK_ATTR
from rlx.transforms.prepare_func import PREP_PREFIX as PREP_PREFIX
from rlx.transforms.prepare_func import PREPARED as PREPARED
from rlx.transforms.prepare_func import PrepareFunc


def _top(op: Operation, block: Block) -> Operation:
    """The ancestor of `op` that sits directly in `block`."""
    while op.parent is not block:
        parent = op.parent_op()
        assert parent is not None
        op = parent
    return op


def _is_dynamic_root(op: Operation) -> bool:
    if not isinstance(op, RlxOp):
        return True
    return any(isinstance(o, RngOp | func.CallOp) for o in op.walk())


def _dynamic_ops(block: Block) -> set[Operation]:
    """Top-level ops of `block` that depend on an argument, a random op or a non-rlx op."""
    dynamic: set[Operation] = set()
    for op in block.ops:
        if _is_dynamic_root(op):
            dynamic.add(op)
            continue
        for inner in op.walk():
            for v in inner.operands:
                owner = v.owner
                if owner is block or (
                    isinstance(owner, Operation) and owner.parent is block and owner in dynamic
                ):
                    dynamic.add(op)
                    break
            if op in dynamic:
                break
    return dynamic


def _boundary(block: Block, dynamic: set[Operation]) -> list[SSAValue]:
    out: list[SSAValue] = []
    for op in block.ops:
        if op in dynamic or isinstance(op, ParamOp | ConstantOp):
            continue
        for r in op.results:
            if any(_top(u.operation, block) in dynamic for u in r.uses):
                out.append(r)
    return out


def _dce(block: Block, keep: set[Operation]) -> None:
    """Erase unused ops of `block` (reverse order), except those in `keep`."""
    for op in reversed(list(block.ops)):
        if op not in keep and op.results and all(not r.uses for r in op.results):
            Rewriter.erase_op(op)


def hoist(module: builtin.ModuleOp, entry: str = "main") -> func.FuncOp | None:
    """Split `@entry` as described in the module docstring; returns `@prepare` or None."""
    main = next(
        (f for f in module.ops if isinstance(f, func.FuncOp) and f.sym_name.data == entry), None
    )
    if main is None or main.is_declaration:
        return None
    block = graph_block(main, "hoist-param-invariant")
    dynamic = _dynamic_ops(block)
    boundary = _boundary(block, dynamic)
    if not boundary:
        return None
    if any(isinstance(f, func.FuncOp) and f.sym_name.data == "prepare" for f in module.ops):
        raise PassFailedException(
            "hoist-param-invariant: the module already has a function @prepare"
        )

    # @prepare: every non-dynamic op, cloned in order, returning the boundary; @main: the
    # boundary values become trailing prepared arguments. Then both are dead-code eliminated.
    prep = PrepareFunc(module, main, "hoist-param-invariant")
    mapping: dict[SSAValue, SSAValue] = {}
    for op in block.ops:
        if op not in dynamic:
            new = prep.insert(op.clone(value_mapper=mapping))
            mapping.update(zip(op.results, new.results, strict=True))
    for i, v in enumerate(boundary):
        arg = prep.add_output(mapping[v], f"prep{i}")
        for use in list(v.uses):
            if _top(use.operation, block) in dynamic:
                use.operation.operands[use.index] = arg
    prepare = prep.ensure()
    _dce(prepare.body.block, set())  # its return has no results: never erased
    _dce(block, dynamic)
    return prepare


@dataclass(frozen=True)
class HoistParamInvariant(ModulePass):
    """Move param/constant-only computation of @main into @prepare (run once, cached)."""

    name = "hoist-param-invariant"

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        hoist(op)
