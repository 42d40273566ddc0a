"""Memory modes: `compact` stores weight bytes only in the table (the module gets
`rlx.param "__rlx_weight.<name>"` placeholders, bound to the memory-mapped table bytes at
load, or filled back as constants by `materialize`); `duplex` keeps them in the module's
constants too (the stored code is compiled from the placeholder form); `runtime` stores no
weight bytes at all: the module keeps its params, set at run time with `set_params`."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from xdsl.dialects.builtin import (
    BytesAttr,
    DenseIntOrFPElementsAttr,
    ModuleOp,
    StringAttr,
    TensorType,
)
from xdsl.rewriter import Rewriter

from rlx.bake.artifact import PLACEHOLDER_PREFIX
from rlx.bake.rewrites import const_name, constants, raw_bytes, set_name
from rlx.dialects.rlx.base import shape_of
from rlx.dialects.rlx.leaves import ConstantOp, ParamOp
from rlx.dtypes import numpy_dtype


def strip_weights(module: ModuleOp, live: set[str]) -> int:
    """Replace each constant named in `live` (the live table entries) by
    `rlx.param "__rlx_weight.<name>"`. Returns the bytes removed from the module."""
    stripped = 0
    for op in constants(module):
        name = const_name(op)
        if name is None or name not in live:
            continue
        stripped += len(raw_bytes(op))
        p = ParamOp.create(
            attributes={"name": StringAttr(PLACEHOLDER_PREFIX + name)},
            result_types=[op.result.type],
        )
        p.result.name_hint = op.result.name_hint
        Rewriter.replace_op(op, p)
    return stripped


def materialize(module: ModuleOp, blobs: Mapping[str, np.ndarray | bytes]) -> int:
    """Replace each `__rlx_weight.<name>` placeholder by a constant holding the table bytes
    (byte-for-byte). Returns the number of placeholders filled; a missing entry or a size
    mismatch raises ValueError."""
    filled = 0
    for op in list(module.walk()):
        if not isinstance(op, ParamOp) or not op.param_name.startswith(PLACEHOLDER_PREFIX):
            continue
        name = op.param_name[len(PLACEHOLDER_PREFIX) :]
        if name not in blobs:
            raise ValueError(f"weight '{name}' is referenced by the graph but not in the table")
        t = op.result.type
        assert isinstance(t, TensorType)
        blob = blobs[name]
        data = blob if isinstance(blob, bytes) else np.asarray(blob, np.uint8).tobytes()
        want = int(np.prod(shape_of(t))) * numpy_dtype(t.element_type).itemsize
        if len(data) != want:
            raise ValueError(f"weight '{name}' has {len(data)} bytes, {t} needs {want}")
        const = ConstantOp(DenseIntOrFPElementsAttr(t, BytesAttr(data)))  # type: ignore[arg-type]
        set_name(const, name)
        const.result.name_hint = op.result.name_hint
        Rewriter.replace_op(op, const)
        filled += 1
    return filled


def placeholders(module: ModuleOp) -> list[str]:
    return [
        op.param_name
        for op in module.walk()
        if isinstance(op, ParamOp) and op.param_name.startswith(PLACEHOLDER_PREFIX)
    ]
