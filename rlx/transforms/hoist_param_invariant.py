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
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, StringAttr
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.utils.exceptions import PassFailedException

from rlx.dialects.rlx.base import RlxOp
from rlx.dialects.rlx.leaves import ConstantOp, ParamOp, RngOp
from rlx.ir_checks import graph_block

PREP_PREFIX = "__rlx_prep_"
"""`rlx.name` of the i-th prepared argument of `@main`: `__rlx_prep_<i>`."""
KIND_ATTR, PREPARED = "rlx.kind", "prepared"
LINK_ATTR = "rlx.prepare_for"
"""Attribute of `@prepare`: the name of the function whose prepared arguments it computes."""


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

    # @prepare: every non-dynamic op, cloned in order, then dead-code eliminated.
    prep_block = Block()
    mapping: dict[SSAValue, SSAValue] = {}
    for op in block.ops:
        if op not in dynamic:
            new = op.clone(value_mapper=mapping)
            prep_block.add_op(new)
            mapping.update(zip(op.results, new.results, strict=True))
    ret = func.ReturnOp(*(mapping[v] for v in boundary))
    prep_block.add_op(ret)
    _dce(prep_block, {ret})
    prepare = func.FuncOp(
        "prepare",
        func.FunctionType.from_lists([], [v.type for v in boundary]),
        Region(prep_block),
    )
    prepare.attributes[LINK_ATTR] = StringAttr(entry)
    Rewriter.insert_op(prepare, InsertPoint.before(main))

    # @main: boundary values become trailing arguments; the static part left dead goes.
    n_args = len(block.args)
    for i, v in enumerate(boundary):
        arg = block.insert_arg(v.type, len(block.args))
        arg.name_hint = f"prep{i}"
        for use in list(v.uses):
            if _top(use.operation, block) in dynamic:
                use.operation.operands[use.index] = arg
    _dce(block, dynamic)
    old = main.arg_attrs.data if main.arg_attrs is not None else [DictionaryAttr({})] * n_args
    main.arg_attrs = ArrayAttr(
        [
            *old,
            *(
                DictionaryAttr(
                    {KIND_ATTR: StringAttr(PREPARED), "rlx.name": StringAttr(f"{PREP_PREFIX}{i}")}
                )
                for i in range(len(boundary))
            ),
        ]
    )
    main.function_type = func.FunctionType.from_lists(
        [a.type for a in block.args], list(main.function_type.outputs.data)
    )
    return prepare


@dataclass(frozen=True)
class HoistParamInvariant(ModulePass):
    """Move param/constant-only computation of @main into @prepare (run once, cached)."""

    name = "hoist-param-invariant"

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        hoist(op)
