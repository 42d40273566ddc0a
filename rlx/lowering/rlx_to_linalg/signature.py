"""The ABI of a function `convert-rlx-to-linalg` converts (the runtime codes against it),
and the checks that a function can have one.

  (inputs..., params..., outputs...) -> ()
  * inputs: the original tensor arguments as memrefs, same order
    (`rlx.kind = "input"`, `rlx.name` = the argument's `rlx.name` or `arg<i>`);
  * params: one memref per distinct `rlx.param` name, in order of first appearance
    (`rlx.kind = "param"`, `rlx.name` = the param name);
  * outputs: one memref per original result, written by the function
    (`rlx.kind = "output"`, `rlx.name` = the result's `rlx.name` result attribute when every
    result has a distinct plain one, as ONNX imports do, else `"out<i>"`);
  * status (only when an op checks its data at run time, `traps.needs_status`): the
    status record `memref<5xi64>` (`rlx.kind = "status"`); the function attribute
    `rlx.error_sites` names each checked op (its location and name), by site number.
Integer buffers are signless (ui8 data is stored as i8). Values hoisted into `@prepare`
(`hoist-param-invariant`) keep `rlx.kind = "prepared"`.

Why apart from `bufferize` (which builds the new body): the signature is the contract with
`rlx.runtime.entry_abi`, read by itself.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, FunctionType, StringAttr, TensorType
from xdsl.ir import Attribute, Block, BlockArgument, OpResult, SSAValue
from xdsl.utils.exceptions import PassFailedException

from rlx.dialects.rlx.base import DYN
from rlx.dialects.rlx.leaves import ParamOp
from rlx.lowering.rlx_to_linalg import traps

PASS = "convert-rlx-to-linalg"
"""The pass whose name prefixes the errors."""


def describe(v: SSAValue) -> str:
    """How an error names a value: its name, else the op or argument it is."""
    if v.name_hint:
        return f"%{v.name_hint}"
    if isinstance(v, OpResult):
        return f"result #{v.index} of {v.op.name}"
    assert isinstance(v, BlockArgument)
    return f"argument #{v.index}"


def check_static(f: func.FuncOp) -> None:
    """Every tensor in the function must have a static shape."""
    values: list[SSAValue] = [a for b in f.body.blocks for a in b.args]
    for o in f.body.walk():
        values.extend(o.results)
        for r in o.regions:
            for b in r.blocks:
                values.extend(b.args)
    for v in values:
        if isinstance(v.type, TensorType) and DYN in v.type.get_shape():
            raise PassFailedException(
                f"{PASS}: {describe(v)} in @{f.sym_name.data} has dynamic shape {v.type}; run `bind-dims` "
                "(dim_binding) to give every dimension a static size first"
            )


def _arg_dict(old: DictionaryAttr | None, kind: str, name: str) -> DictionaryAttr:
    entries: dict[str, Attribute] = {"rlx.kind": StringAttr(kind), "rlx.name": StringAttr(name)}
    if old is not None:
        entries.update((k, v) for k, v in old.data.items() if k not in entries)
    return DictionaryAttr(entries)


def collect_params(block: Block) -> dict[str, Attribute]:
    """The type of every `rlx.param` name in `block`, in order of first appearance (the
    params' ABI arguments); PassFailedException when one name has two types."""
    params: dict[str, Attribute] = {}
    for o in block.walk():
        if not isinstance(o, ParamOp):
            continue
        name = StringAttr(o.param_name)
        t = o.results[0].type
        if name.data in params and params[name.data] != t:
            raise PassFailedException(
                f"{PASS}: param '{name.data}' is used with two types: {params[name.data]} and {t}"
            )
        params[name.data] = t
    return params


def install(
    f: func.FuncOp, new: Block, params: dict[str, Attribute], n_out: int, sites: Sequence[str]
) -> None:
    """Replace `f`'s body by `new` (its memref arguments) and give `f` the ABI's signature
    and argument attributes; `sites` describes the checked ops, by site number."""
    old = f.body.block
    n_in = len(old.args)
    old_attrs = list(f.arg_attrs.data) if f.arg_attrs is not None else [None] * n_in
    attrs = []
    for i, d in enumerate(old_attrs):
        name = d.data.get("rlx.name") if d is not None else None
        # values hoisted into @prepare (`hoist-param-invariant`) stay "prepared"
        kind = (
            "prepared"
            if d is not None and d.data.get("rlx.kind") == StringAttr("prepared")
            else "input"
        )
        attrs.append(_arg_dict(d, kind, name.data if isinstance(name, StringAttr) else f"arg{i}"))
    attrs += [_arg_dict(None, "param", p) for p in params]
    attrs += [_arg_dict(None, "output", o) for o in output_names(f, n_out)]
    if sites:
        attrs.append(_arg_dict(None, "status", "status"))
        f.attributes[traps.SITES_ATTR] = ArrayAttr([StringAttr(s) for s in sites])
    f.body.detach_block(old)
    for o in reversed(list(old.walk())):
        o.drop_all_references()
    f.body.add_block(new)
    f.function_type = FunctionType.from_lists([a.type for a in new.args], [])
    f.arg_attrs = ArrayAttr(attrs)
    f.res_attrs = None


def _hint(name: str) -> str | None:
    h = re.sub(r"[^A-Za-z0-9_]", "_", name)
    return h if h and not h[0].isdigit() else None


_OUTPUT_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,63}")


def output_names(f: func.FuncOp, n_out: int) -> list[str]:
    """The names of a function's results: their `rlx.name` result attributes (the ONNX
    importer keeps the model's output names there) when every one is a distinct, plain
    name, else `out<i>`."""
    default = [f"out{i}" for i in range(n_out)]
    if f.res_attrs is None or len(f.res_attrs.data) != n_out:
        return default
    names = []
    for d in f.res_attrs.data:
        a = d.data.get("rlx.name") if isinstance(d, DictionaryAttr) else None
        if not isinstance(a, StringAttr) or not _OUTPUT_NAME.fullmatch(a.data):
            return default
        names.append(a.data)
    return names if len(set(names)) == n_out else default


def name_args(
    old: Block, new: Block, params: Sequence[str], n_out: int, status: bool = False
) -> None:
    """Readable SSA names: the original argument names, the param names, out<i>, status."""
    names = (
        [a.name_hint for a in old.args]
        + [_hint(p) for p in params]
        + [f"out{i}" for i in range(n_out)]
        + (["status"] if status else [])
    )
    for a, n in zip(new.args, names, strict=True):
        a.name_hint = n
