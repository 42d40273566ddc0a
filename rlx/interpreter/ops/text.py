"""MLIR text builders for small test programs in generic op form."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from rlx.interpreter.ops._core import element_type

TypeSpec = str | np.ndarray | tuple[tuple[int, ...], Any]


def mlir_type(spec: TypeSpec) -> str:
    """MLIR type text for an array (its tensor type), a (shape, dtype) pair, or type text."""
    if isinstance(spec, str):
        return spec
    if isinstance(spec, np.ndarray):
        shape, dtype = spec.shape, spec.dtype
    else:
        shape, dtype = spec
    return "tensor<" + "".join(f"{d}x" for d in shape) + f"{element_type(dtype)}>"


def single_op_module(
    name: str,
    operands: Sequence[TypeSpec],
    results: Sequence[TypeSpec],
    attributes: str = "",
    *,
    properties: str = "",
    region: str = "",
    arg_names: Sequence[str] | None = None,
) -> str:
    """MLIR text of `func.func @main` applying one generic-form op to its arguments.

    E.g. `single_op_module("rlx.softmax", [x], [x], "{axis = -1 : i64}")`; `attributes`
    / `properties` are the `{...}` / `<{...}>` texts, `region` a `({...})` text.
    """
    ins = [mlir_type(t) for t in operands]
    outs = [mlir_type(t) for t in results]
    names = list(arg_names) if arg_names is not None else None
    args = ", ".join(
        f"%a{i}: {t}" + (f' {{rlx.name = "{names[i]}"}}' if names else "")
        for i, t in enumerate(ins)
    )
    res = "%r" if len(outs) == 1 else f"%r:{len(outs)}"
    uses = ["%r"] if len(outs) == 1 else [f"%r#{i}" for i in range(len(outs))]
    operand_list = ", ".join(f"%a{i}" for i in range(len(ins)))
    props = f" <{properties}>" if properties else ""
    reg = f" {region}" if region else ""
    attrs = f" {attributes}" if attributes else ""
    sig = f"({', '.join(ins)}) -> ({', '.join(outs)})"
    return (
        f"func.func @main({args}) -> ({', '.join(outs)}) {{\n"
        f'  {res} = "{name}"({operand_list}){props}{reg}{attrs} : {sig}\n'
        f"  func.return {', '.join(uses)} : {', '.join(outs)}\n"
        "}\n"
    )


def multi_op_module(
    inputs: Sequence[TypeSpec],
    calls: Sequence[tuple[str, Sequence[int], TypeSpec, str]],
) -> str:
    """MLIR text of `func.func @main(inputs...)` applying each call `(op name, argument
    indices, result type, attributes text)` to its arguments and returning every result
    (many ops for the price of one parse)."""
    ins = [mlir_type(t) for t in inputs]
    outs = [mlir_type(r) for _, _, r, _ in calls]
    lines = []
    for n, (name, idx, _, attributes) in enumerate(calls):
        operands = ", ".join(f"%a{i}" for i in idx)
        types = ", ".join(ins[i] for i in idx)
        attrs = f" {attributes}" if attributes else ""
        lines.append(f'  %r{n} = "{name}"({operands}){attrs} : ({types}) -> {outs[n]}\n')
    args = ", ".join(f"%a{i}: {t}" for i, t in enumerate(ins))
    uses = ", ".join(f"%r{n}" for n in range(len(calls)))
    return (
        f"func.func @main({args}) -> ({', '.join(outs)}) {{\n"
        + "".join(lines)
        + f"  func.return {uses} : {', '.join(outs)}\n}}\n"
    )
