"""`bind-params`: replace `rlx.param` ops by constants holding given weights, so that
constant folding and DCE can act on weight-only compute."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from xdsl.context import Context
from xdsl.dialects import builtin
from xdsl.dialects.builtin import TensorType
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter
from xdsl.utils.exceptions import PassFailedException

from rlx.dialects.rlx.base import shape_of
from rlx.dialects.rlx.leaves import ConstantOp, ParamOp
from rlx.dtypes import numpy_dtype, to_dense_attr, type_name
from rlx.weights import PackedWeight, load


def bind_params(module: builtin.ModuleOp, values: Mapping[str, object]) -> list[str]:
    """Replace each param named in `values` by a constant; returns the bound names.

    Shapes must match exactly; floats are converted to the param's float type, integers must
    match the param's type. Errors name the param.
    """

    bound: list[str] = []
    for op in list(module.walk()):
        if not isinstance(op, ParamOp) or op.param_name not in values:
            continue
        name = op.param_name
        v = values[name]
        if isinstance(v, PackedWeight):
            raise PassFailedException(
                f"param '{name}' is bound to a packed {v.scheme} tensor: use bind-quant-params"
            )
        arr = np.asarray(v)
        t = op.result.type
        assert isinstance(t, TensorType)
        want = shape_of(t)
        if arr.shape != want:
            raise PassFailedException(
                f"param '{name}' has shape {list(want)}, the binding has shape {list(arr.shape)}"
            )
        dt = numpy_dtype(t.element_type)
        if arr.dtype != dt and not (arr.dtype.kind == "f" and np.dtype(dt).kind in "fV"):
            raise PassFailedException(
                f"param '{name}' is {type_name(t.element_type)}, the binding is {arr.dtype}"
            )
        const = ConstantOp(to_dense_attr(arr, t))
        const.result.name_hint = op.result.name_hint
        Rewriter.replace_op(op, const)
        bound.append(name)
    return bound


@dataclass(frozen=True)
class BindParams(ModulePass):
    """Replace rlx.param ops by constants from a weight file (.npz, .safetensors, .gguf)."""

    name = "bind-params"
    main_option: ClassVar[str] = "path"

    path: str = ""
    """The weight file; params not in it stay params."""

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:

        if not self.path:
            raise PassFailedException(
                "bind-params needs a weight file: --param-bindings=weights.npz"
            )
        try:
            values = load(self.path)
        except ValueError as e:
            raise PassFailedException(str(e)) from None
        bind_params(op, values)
