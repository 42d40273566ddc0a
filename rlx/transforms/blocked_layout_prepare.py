"""Move the conv weight reorders of `blocked-layout` into `@prepare` (option
`prepare-weights`, set by `CompileOptions(cache_param_invariant=True)`).

`hoist-param-invariant` runs before fusion, so it never sees the `rlx.reshape` +
`rlx.transpose` that `blocked-layout` puts on a weight after fusion; left in `@main`
they would reorder every weight at every run. A reorder whose weight is an `rlx.param` /
`rlx.constant` of `@main`, or a value `@prepare` already computes (an argument of kind
`prepared`), is cloned into `@prepare` (created as `hoist-param-invariant` would when
there is none), returned from it, and read by `@main` as a new prepared argument --
the convention of `hoist-param-invariant` and `pack-weights`.
"""

from __future__ import annotations

from xdsl.dialects import builtin, func
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, StringAttr
from xdsl.ir import Block, BlockArgument, Operation, Region, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.utils.exceptions import PassFailedException

from rlx.dialects.rlx.leaves import ConstantOp, ParamOp
from rlx.transforms.hoist_param_invariant import KIND_ATTR, LINK_ATTR, PREP_PREFIX, PREPARED


def _attr(fn: func.FuncOp, i: int, key: str) -> str | None:
    if fn.arg_attrs is None:
        return None
    a = fn.arg_attrs.data[i].data.get(key)
    return a.data if isinstance(a, StringAttr) else None


def _prepare_of(module: builtin.ModuleOp, main: func.FuncOp) -> func.FuncOp | None:
    for f in module.ops:
        link = f.attributes.get(LINK_ATTR) if isinstance(f, func.FuncOp) else None
        if isinstance(link, StringAttr) and link.data == main.sym_name.data:
            return f  # type: ignore[return-value]
    return None


class PrepareWeights:
    """`@prepare` of one function, grown by one returned value per moved reorder."""

    def __init__(self, module: builtin.ModuleOp, main: func.FuncOp) -> None:
        self.module, self.main = module, main
        self.fn = _prepare_of(module, main)

    def _ensure(self) -> func.FuncOp:
        if self.fn is None:
            taken = any(
                isinstance(f, func.FuncOp) and f.sym_name.data == "prepare" for f in self.module.ops
            )
            if taken:
                raise PassFailedException(
                    "blocked-layout: the module has a @prepare of another function"
                )
            block = Block()
            block.add_op(func.ReturnOp())
            self.fn = func.FuncOp("prepare", func.FunctionType.from_lists([], []), Region(block))
            self.fn.attributes[LINK_ATTR] = StringAttr(self.main.sym_name.data)
            Rewriter.insert_op(self.fn, InsertPoint.before(self.main))
        return self.fn

    def _source(self, w: SSAValue) -> SSAValue | None:
        """The weight as a value of `@prepare`, or None when it is computed in `@main`."""
        owner, block = w.owner, self.main.body.block
        if isinstance(owner, ParamOp | ConstantOp) and owner.parent is block:
            ret = self._ensure().body.block.last_op
            assert ret is not None
            clone = owner.clone()
            Rewriter.insert_op(clone, InsertPoint.before(ret))
            return clone.results[0]
        if isinstance(w, BlockArgument) and w.owner is block and self.fn is not None:
            name = _attr(self.main, w.index, "rlx.name") or ""
            ret = self.fn.body.block.last_op
            if _attr(self.main, w.index, KIND_ATTR) == PREPARED and name.startswith(PREP_PREFIX):
                i = int(name[len(PREP_PREFIX) :])
                if isinstance(ret, func.ReturnOp) and i < len(ret.arguments):
                    return ret.arguments[i]
        return None

    def move(self, chain: list[Operation]) -> bool:
        """Move `chain` (ops in order, the first reading the weight) into `@prepare`;
        False (nothing changed) when its weight is computed in `@main`."""
        src = self._source(chain[0].operands[0])
        if src is None:
            return False
        prep = self._ensure()
        ret = prep.body.block.last_op
        assert isinstance(ret, func.ReturnOp)
        mapping = {chain[0].operands[0]: src}
        for op in chain:
            clone = op.clone(value_mapper=mapping)
            Rewriter.insert_op(clone, InsertPoint.before(ret))
            mapping.update(zip(op.results, clone.results, strict=True))
        value = mapping[chain[-1].results[0]]
        outs = [*ret.arguments, value]
        Rewriter.replace_op(ret, func.ReturnOp(*outs))
        prep.function_type = func.FunctionType.from_lists([], [v.type for v in outs])
        main, block = self.main, self.main.body.block
        old = (
            list(main.arg_attrs.data)
            if main.arg_attrs is not None
            else [DictionaryAttr({})] * len(block.args)
        )
        arg = block.insert_arg(value.type, len(block.args))
        arg.name_hint = f"blocked_w{len(outs) - 1}"
        name = StringAttr(f"{PREP_PREFIX}{len(outs) - 1}")
        attrs = {KIND_ATTR: StringAttr(PREPARED), "rlx.name": name}
        main.arg_attrs = ArrayAttr([*old, DictionaryAttr(attrs)])
        main.function_type = func.FunctionType.from_lists(
            [a.type for a in block.args], list(main.function_type.outputs.data)
        )
        weight = chain[0].operands[0]
        chain[-1].results[0].replace_all_uses_with(arg)
        for op in reversed(chain):
            Rewriter.erase_op(op)
        if isinstance(weight.owner, ParamOp | ConstantOp) and not weight.uses:
            Rewriter.erase_op(weight.owner)
        return True
