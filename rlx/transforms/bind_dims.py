"""`bind-dims`: give named dynamic dims (`?`) their sizes and re-infer every type."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects import builtin, func
from xdsl.dialects.builtin import ArrayAttr, IntegerAttr, StringAttr, TensorType
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter
from xdsl.utils.exceptions import PassFailedException, VerifyException

from rlx.dialects.rlx.base import DYN, shape_of, tensor
from rlx.ir_checks import graph_block
from rlx.transforms.shape_inference import reinfer_function

DIMS_ATTR = "rlx.dims"
"""Argument attribute naming each dim: `rlx.dims = ["batch", "seq", 384]` (names or sizes)."""


def parse_binding(text: str) -> dict[str, int]:
    """`batch=1,seq=128` -> {"batch": 1, "seq": 128}; raises ValueError on malformed input."""
    out: dict[str, int] = {}
    for item in filter(None, (p.strip() for p in text.split(","))):
        name, eq, value = item.partition("=")
        if not eq or not name.strip() or not value.strip().isdigit() or int(value) < 1:
            raise ValueError(
                f"malformed dim binding '{item}': expected NAME=SIZE with SIZE >= 1, e.g. batch=1,seq=128"
            )
        out[name.strip()] = int(value)
    return out


def arg_dim_names(f: func.FuncOp) -> list[list[str | int] | None]:
    """The `rlx.dims` attribute of each argument (names for dynamic dims, ints for static)."""
    names: list[list[str | int] | None] = []
    attrs = (
        f.arg_attrs.data
        if f.arg_attrs is not None
        else [None] * len(graph_block(f, "bind-dims").args)
    )
    for a in attrs:
        dims = a.data.get(DIMS_ATTR) if a is not None else None
        if isinstance(dims, ArrayAttr):
            names.append(
                [
                    d.data if isinstance(d, StringAttr) else d.value.data
                    for d in dims.data
                    if isinstance(d, StringAttr | IntegerAttr)
                ]
            )
        else:
            names.append(None)
    return names


def unbound_dims(module: builtin.ModuleOp) -> list[str]:
    """Names (or `arg<i>[<axis>]`) of dynamic argument dims still present in the module."""
    missing: list[str] = []
    for f in module.ops:
        if not isinstance(f, func.FuncOp) or f.is_declaration:
            continue
        for i, (arg, names) in enumerate(zip(f.body.blocks[0].args, arg_dim_names(f), strict=True)):
            if not isinstance(arg.type, TensorType):
                continue
            for axis, d in enumerate(shape_of(arg.type)):
                if d == DYN:
                    n = names[axis] if names and axis < len(names) else None
                    label = n if isinstance(n, str) else f"arg{i}[{axis}]"
                    if label not in missing:
                        missing.append(label)
    return missing


def bind_dims(module: builtin.ModuleOp, binding: dict[str, int]) -> None:
    """Substitute the sizes of named dims in every function and re-infer all types."""
    for f in list(module.ops):
        if not isinstance(f, func.FuncOp) or f.is_declaration:
            continue
        for arg, names in zip(graph_block(f, "bind-dims").args, arg_dim_names(f), strict=True):
            if not isinstance(arg.type, TensorType):
                continue
            shape = list(shape_of(arg.type))
            if names is not None and len(names) != len(shape):
                raise PassFailedException(
                    f"{DIMS_ATTR} of argument %{arg.name_hint or arg.index} names {len(names)} dims, its type has {len(shape)}"
                )
            for axis, d in enumerate(shape):
                n = names[axis] if names else None
                if isinstance(n, str) and n in binding:
                    if d not in (DYN, binding[n]):
                        raise PassFailedException(
                            f"dim '{n}' is bound to {binding[n]} but argument %{arg.name_hint or arg.index} has static size {d} there"
                        )
                    shape[axis] = binding[n]
            new_type = tensor(shape, arg.type.element_type)
            if new_type != arg.type:
                Rewriter.replace_value_with_new_type(arg, new_type)
        try:
            reinfer_function(f)
        except VerifyException as e:
            raise PassFailedException(f"after binding {binding}: {e}") from None


@dataclass(frozen=True)
class BindDims(ModulePass):
    """Bind named dynamic dims (`rlx.dims` arg attribute) to sizes and re-infer all types."""

    name = "bind-dims"
    main_option: ClassVar[str] = "dims"

    dims: str = ""
    """Comma-separated NAME=SIZE pairs, e.g. `batch=1,seq=128`."""

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        try:
            binding = parse_binding(self.dims)
        except ValueError as e:
            raise PassFailedException(str(e)) from None
        bind_dims(op, binding)
