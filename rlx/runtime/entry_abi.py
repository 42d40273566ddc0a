"""The ABI of a graph function as `rlx.compile` checks and records it: the entry lookup,
the tensor-level dtypes and params before lowering, the lowered signature (argument kinds
and order, arena, status record, error sites) and the limits checked before code
generation (memory). Split out of `rlx.runtime.compiler` (the pipeline)."""

from __future__ import annotations

import os
from typing import Any

from xdsl.dialects import func
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    StringAttr,
    TensorType,
)

from rlx.dialects.rlx.leaves import ParamOp
from rlx.dtypes import numpy_dtype
from rlx.runtime.abi import ArgSpec, Signature, np_dtype


class CompileError(ValueError):
    """The input cannot be compiled: parse/verify errors or a pass rejecting the graph."""


def find_entry(module: ModuleOp, entry: str) -> func.FuncOp:
    """The graph function `entry`: looked up among the module's top-level functions (its
    symbol table: a lowered CNN has ~10^5 ops inside them), then nested ones."""
    top = [op for op in module.ops if isinstance(op, func.FuncOp)]
    funcs = top if any(f.sym_name.data == entry for f in top) else [
        op for op in module.walk() if isinstance(op, func.FuncOp)
    ]  # fmt: skip
    for f in funcs:
        if f.sym_name.data == entry:
            if f.is_declaration:
                raise CompileError(f"@{entry} is a declaration (no body): nothing to compile")
            if f.sym_visibility is not None and f.sym_visibility.data == "private":
                raise CompileError(f"@{entry} is private: the entry function must be public")
            if len(f.body.blocks) != 1:
                raise CompileError(
                    f"@{entry} has {len(f.body.blocks)} blocks: a graph function is one block "
                    "(no cf branches; rlx.if and rlx.scan hold regions)"
                )
            return f
    names = ", ".join("@" + f.sym_name.data for f in funcs) or "none"
    raise CompileError(f"no function @{entry} in the module (functions: {names})")


# ----------------------------------------------------------------------------- signature


def _dtype_name(elem: Any) -> str:

    return numpy_dtype(elem).name


def source_params(module: ModuleOp) -> dict[str, ArgSpec]:

    out: dict[str, ArgSpec] = {}
    for op in module.walk():
        if isinstance(op, ParamOp) and op.param_name not in out:
            t = op.result.type
            out[op.param_name] = ArgSpec(
                op.param_name, "param", tuple(t.get_shape()), _dtype_name(t.element_type)
            )  # type: ignore[attr-defined]
    return out


def rlx_dtypes(
    module: ModuleOp, entry: str, params: dict[str, ArgSpec]
) -> dict[tuple[str, str | int], str]:
    """Tensor-level dtypes of the entry's I/O and of `params` (`source_params` of the
    graph before lowering): the memref ABI is signless."""
    f = find_entry(module, entry)
    out: dict[tuple[str, str | int], str] = {}
    for kind, types in (
        ("input", f.function_type.inputs.data),
        ("output", f.function_type.outputs.data),
    ):
        for i, t in enumerate(types):
            if isinstance(t, TensorType):
                out[kind, i] = _dtype_name(t.element_type)
    out.update({("param", n): a.dtype for n, a in params.items()})
    return out


def _arg_dicts(f: func.FuncOp) -> list[dict[str, Any]]:
    attrs = f.arg_attrs.data if isinstance(f.arg_attrs, ArrayAttr) else ()
    n = len(f.function_type.inputs.data)
    return [
        dict(attrs[i].data) if i < len(attrs) and isinstance(attrs[i], DictionaryAttr) else {}
        for i in range(n)
    ]


def find_prepare(module: ModuleOp, entry: str) -> func.FuncOp | None:
    """The function with `rlx.prepare_for = "<entry>"` (hoist-param-invariant), if any."""
    for op in module.ops:
        if isinstance(op, func.FuncOp):
            a = op.attributes.get("rlx.prepare_for")
            if isinstance(a, StringAttr) and a.data == entry:
                return op
    return None


def extract_signature(module: ModuleOp, entry: str, alignment: int,
                      ref: dict[tuple[str, str | int], str] | None = None) -> Signature:  # fmt: skip
    """The ABI of the lowered `entry` (arg attrs `rlx.kind` / `rlx.name`, func attrs).

    `ref` (from `rlx_dtypes` before lowering) restores signedness lost by the signless ABI.
    """
    f = find_entry(module, entry)
    args: list[ArgSpec] = []
    counts = {"input": 0, "output": 0}
    for i, (t, d) in enumerate(zip(f.function_type.inputs.data, _arg_dicts(f), strict=True)):
        kind, name = d.get("rlx.kind"), d.get("rlx.name")
        if not (
            isinstance(kind, StringAttr)
            and isinstance(name, StringAttr)
            and isinstance(t, MemRefType)
        ):
            raise CompileError(
                f"lowered @{entry}: argument {i} lacks rlx.kind/rlx.name or is not a memref ({t})"
            )
        k = kind.data
        shape = tuple(t.get_shape())
        if any(s < 0 for s in shape):
            raise CompileError(
                f"{k} '{name.data}' has a dynamic shape {t}; bind its dims with dim_binding"
            )
        dtype = _dtype_name(t.element_type)
        key: tuple[str, str | int] = (k, name.data)
        if k in counts:
            key = (k, counts[k])
            counts[k] += 1
        want = (ref or {}).get(key)
        if want is not None and np_dtype(want).itemsize == np_dtype(dtype).itemsize:
            dtype = want
        args.append(ArgSpec(name.data, k, shape, dtype))
    letter = {
        "input": "i", "prepared": "r", "param": "p", "output": "o", "status": "s", "arena": "a"
    }  # fmt: skip
    order = "".join(letter.get(a.kind, "?") for a in args)
    if (
        "?" in order
        or order.count("a") != 1
        or order.count("s") > 1
        or order != "".join(sorted(order, key="irposa".index))
    ):
        raise CompileError(
            f"lowered @{entry}: unexpected argument kinds order {order!r} "
            "(want inputs, prepared, params, outputs, status (optional), arena)"
        )
    sites_attr = f.attributes.get("rlx.error_sites")
    sites = (
        [str(getattr(x, "data", x)) for x in sites_attr.data]
        if isinstance(sites_attr, ArrayAttr)
        else []
    )

    def i64(name: str) -> int:
        a = f.attributes.get(name) or f.properties.get(name)
        return a.value.data if isinstance(a, IntegerAttr) else 0

    arena_bytes = i64("rlx.arena_bytes")
    for a in args:  # the runtime sizes these buffers by the signature: they must agree
        if a.kind == "status" and (a.shape, a.dtype) != ((5,), "int64"):
            raise CompileError(f"lowered @{entry}: the status record must be memref<5xi64>")
        if a.kind == "arena" and a.nbytes > max(arena_bytes, 1):
            raise CompileError(
                f"lowered @{entry}: the arena argument holds {a.nbytes} bytes but "
                f"rlx.arena_bytes is {arena_bytes}"
            )
    return Signature(
        entry, args, arena_bytes, i64("rlx.unplanned_bytes"), alignment, error_sites=sites
    )


def _physical_memory() -> int | None:
    """Bytes of RAM of this machine (None where unknown)."""
    try:
        return int(os.sysconf("SC_PHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (AttributeError, ValueError, OSError):
        return None


def check_memory(sig: Signature, prep: Signature | None) -> None:
    """CompileError when one run needs more memory (arena, outputs, params, prepared
    values) than the machine has: an ONNX AveragePool with pads of 2^40 compiled to a
    12 TiB arena; a graph needing somewhat more than RAM would be allocated lazily and then
    thrash or be killed, far from its cause."""
    ram = _physical_memory()
    if ram is None:
        return
    need = sum(s.arena_bytes + sum(a.nbytes for a in s.args if a.kind != "arena")
               for s in (sig, prep) if s is not None)  # fmt: skip
    if need > ram:
        gib = 1 << 30
        raise CompileError(
            f"@{sig.entry} needs {need / gib:.1f} GiB per run (arena {sig.arena_bytes / gib:.1f} "
            f"GiB, inputs, outputs, params) but this machine has {ram / gib:.1f} GiB"
        )
