"""The `@prepare` function of an entry, and how passes move weight-only work into it.

`@prepare()` computes values from params and constants only; the runtime runs it when a
param changes, not at every run, and passes its i-th result to `@main`'s argument with
`rlx.kind = "prepared"`, `rlx.name = "__rlx_prep_<i>"`. `@prepare` names its function in
`rlx.prepare_for`. `hoist-param-invariant` creates it; `pack-weights` and `blocked-layout`
(`prepare-weights`) grow it by one result per value they move. `PrepareFunc` is the one
place that keeps this convention, so the three passes cannot drift apart.
"""

from __future__ import annotations

from xdsl.dialects import builtin, func
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, StringAttr
from xdsl.ir import Block, BlockArgument, Operation, Region, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.utils.exceptions import PassFailedException

from rlx.dialects.rlx.leaves import ConstantOp, ParamOp

PREP_PREFIX = "__rlx_prep_"
"""`rlx.name` of the i-th prepared argument of `@main`: `__rlx_prep_<i>`."""
KIND_ATTR, PREPARED = "rlx.kind", "prepared"
LINK_ATTR = "rlx.prepare_for"
"""Attribute of `@prepare`: the name of the function whose prepared arguments it computes."""

LAYOUT_OPS = ("rlx.concat", "rlx.transpose", "rlx.reshape")
"""Ops that only move weight values (a concatenated q/k/v weight, a conv weight reorder):
over weights only, `PrepareFunc.source` clones them into `@prepare`."""


def arg_attr(fn: func.FuncOp, i: int, key: str) -> str | None:
    """The string attribute `key` of argument `i` of `fn`, or None."""
    if fn.arg_attrs is None:
        return None
    a = fn.arg_attrs.data[i].data.get(key)
    return a.data if isinstance(a, StringAttr) else None


def _link(f: func.FuncOp) -> str | None:
    a = f.attributes.get(LINK_ATTR)
    return a.data if isinstance(a, StringAttr) else None


def _named(module: builtin.ModuleOp, name: str) -> func.FuncOp | None:
    return next(
        (f for f in module.ops if isinstance(f, func.FuncOp) and f.sym_name.data == name), None
    )


def erase_dead(w: SSAValue) -> None:
    """Erase the producer of weight `w` in `@main` once unused, and so on up its chain of
    layout ops, params and constants (what `PrepareFunc.source` moved is left dead)."""
    owner = w.owner
    if not isinstance(owner, ParamOp | ConstantOp) and not (
        isinstance(owner, Operation) and owner.name in LAYOUT_OPS
    ):
        return
    if any(r.uses for r in owner.results):
        return
    operands = list(owner.operands)
    Rewriter.erase_op(owner)
    for v in operands:
        erase_dead(v)


class PrepareFunc:
    """The `@prepare` linked to `main` (created on first use), grown one result at a time.

    `pass_name` prefixes the error raised when a `@prepare` of another function is in the
    way."""

    def __init__(self, module: builtin.ModuleOp, main: func.FuncOp, pass_name: str) -> None:
        self.module, self.main, self.pass_name = module, main, pass_name
        self.fn = next(
            (
                f
                for f in module.ops
                if isinstance(f, func.FuncOp) and _link(f) == main.sym_name.data
            ),
            None,
        )

    def ensure(self) -> func.FuncOp:
        """The linked `@prepare`, created empty (before `main`) when there is none."""
        if self.fn is None:
            if _named(self.module, "prepare") is not None:
                raise PassFailedException(
                    f"{self.pass_name}: the module has a @prepare of another function"
                )
            block = Block()
            block.add_op(func.ReturnOp())
            self.fn = func.FuncOp("prepare", func.FunctionType.from_lists([], []), Region(block))
            self.fn.attributes[LINK_ATTR] = StringAttr(self.main.sym_name.data)
            Rewriter.insert_op(self.fn, InsertPoint.before(self.main))
        return self.fn

    def _return(self) -> func.ReturnOp:
        ret = self.ensure().body.block.last_op
        assert isinstance(ret, func.ReturnOp)
        return ret

    def insert(self, op: Operation) -> Operation:
        """Insert `op` into `@prepare`, before its return; returns `op`."""
        Rewriter.insert_op(op, InsertPoint.before(self._return()))
        return op

    def _prepared(self, w: SSAValue) -> SSAValue | None:
        """The value `@prepare` returns for `w`, a prepared argument of `main`, or None."""
        block = self.main.body.block
        if not isinstance(w, BlockArgument) or w.owner is not block or self.fn is None:
            return None
        name = arg_attr(self.main, w.index, "rlx.name") or ""
        if arg_attr(self.main, w.index, KIND_ATTR) != PREPARED or not name.startswith(PREP_PREFIX):
            return None
        ret = self.fn.body.block.last_op
        idx = int(name[len(PREP_PREFIX) :])
        if isinstance(ret, func.ReturnOp) and idx < len(ret.arguments):
            return ret.arguments[idx]
        return None

    def movable(self, w: SSAValue) -> bool:
        """Whether `w` is a weight `source` can express in `@prepare` (no side effects)."""
        owner, block = w.owner, self.main.body.block
        if isinstance(owner, ParamOp | ConstantOp):
            return owner.parent is block
        if isinstance(owner, Operation):
            return (
                owner.parent is block
                and owner.name in LAYOUT_OPS
                and not owner.regions
                and all(self.movable(v) for v in owner.operands)
            )
        return self._prepared(w) is not None

    def source(self, w: SSAValue) -> SSAValue | None:
        """Value `w` of `main` as a value of `@prepare`, or None when `main` computes it
        from its inputs: a param / constant is cloned, a layout op over such weights cloned
        with them, a prepared argument mapped to the value `@prepare` returns for it."""
        if not self.movable(w):
            return None
        owner = w.owner
        if isinstance(owner, Operation):
            srcs = [self.source(v) for v in owner.operands]
            clone = owner.clone(value_mapper=dict(zip(owner.operands, srcs, strict=True)))
            return self.insert(clone).results[0]
        return self._prepared(w)

    def n_outputs(self) -> int:
        """How many values `@prepare` returns (0 when there is none yet)."""
        return 0 if self.fn is None else len(self._return().arguments)

    def n_prepared(self) -> int:
        """How many prepared arguments `main` has."""
        n = len(self.main.body.block.args)
        return sum(1 for i in range(n) if arg_attr(self.main, i, KIND_ATTR) == PREPARED)

    def add_output(self, value: SSAValue, name_hint: str) -> BlockArgument:
        """Return `value` (of `@prepare`) from `@prepare` and add the `main` argument that
        receives it (`name_hint`, the prepared-argument attributes); returns that argument."""
        prep, ret = self.ensure(), self._return()
        outs = [*ret.arguments, value]
        ret.operands = outs  # the same op with one more operand (a new ReturnOp per output
        # was quadratic: ~0.1 s for densenet121's ~250 prepared weights)
        prep.function_type = func.FunctionType.from_lists([], [v.type for v in outs])
        main, block = self.main, self.main.body.block
        old = (
            list(main.arg_attrs.data)
            if main.arg_attrs is not None
            else [DictionaryAttr({})] * len(block.args)
        )
        arg = block.insert_arg(value.type, len(block.args))
        arg.name_hint = name_hint
        attrs = {
            KIND_ATTR: StringAttr(PREPARED),
            "rlx.name": StringAttr(f"{PREP_PREFIX}{len(outs) - 1}"),
        }
        main.arg_attrs = ArrayAttr([*old, DictionaryAttr(attrs)])
        main.function_type = func.FunctionType.from_lists(
            [a.type for a in block.args], list(main.function_type.outputs.data)
        )
        return arg

    def move(self, w: SSAValue, name_hint: str) -> bool:
        """Compute `main`'s value `w` in `@prepare` instead (`source`), read it in `main` as
        a prepared argument (`add_output`) and erase what no longer has uses; False (and
        nothing changed) when `@prepare` cannot compute it."""
        src = self.source(w)
        if src is None:
            return False
        w.replace_all_uses_with(self.add_output(src, name_hint))
        erase_dead(w)
        return True
