"""Import an ONNX model for the sizes of given inputs (`import_sized`).

Why: a model exported with dynamic dims (`dim_param`) imports with symbolic sizes, and
compiling it needs every dim name bound, including the names the importer derives
(e.g. `seq_len - 1`-shaped results get their own `rlx.dims` names on the entry's args).
Tools and benchmarks that run a model on sample inputs all need that binding; this is
the one place that reads it off the inputs."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from xdsl.dialects.builtin import ModuleOp

from rlx.frontends.onnx.importer import import_model
from rlx.transforms.bind_dims import arg_dim_names


def import_sized(
    model: onnx.ModelProto | str | Path,
    feeds: Mapping[str, np.ndarray],
    *,
    at_import: bool = False,
) -> tuple[ModuleOp, dict[str, np.ndarray], dict[str, int], list[str]]:
    """Import `model` and bind its dynamic dims to the shapes of `feeds` (input name ->
    array). `at_import` fixes the model's `dim_param` names during import (static shapes
    throughout); otherwise they stay symbolic and the binding also covers the names the
    entry's arguments carry. Returns (module, params, dim binding for
    `CompileOptions(dim_binding=...)` / `bind_dims`, the fed input names in argument
    order)."""
    if not isinstance(model, onnx.ModelProto):
        model = onnx.load(str(model))
    names = [vi.name for vi in model.graph.input if vi.name in feeds]
    binding: dict[str, int] = {}
    for vi in model.graph.input:
        for axis, d in enumerate(vi.type.tensor_type.shape.dim):
            if d.dim_param and vi.name in feeds:
                binding[d.dim_param] = int(feeds[vi.name].shape[axis])
    module, params = import_model(model, dims=binding if at_import else None)
    f: Any = module.body.block.first_op
    for nm, dn in zip(names, arg_dim_names(f), strict=False):
        for axis, d in enumerate(dn or []):
            if isinstance(d, str):
                binding[d] = int(feeds[nm].shape[axis])
    return module, params, binding, names
