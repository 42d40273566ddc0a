"""`bind-params`: replace `rlx.param` ops by constants holding given weights, so that
constant folding and DCE can act on weight-only compute."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from xdsl.context import Context
from xdsl.dialects import builtin
from xdsl.dialects.builtin import TensorType
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter
from xdsl.utils.exceptions import PassFailedException

from rlx.diagnostics import emit_warning
from rlx.dialects.rlx.base import shape_of
from rlx.dialects.rlx.leaves import ConstantOp, ParamOp
from rlx.dtypes import element_type, numpy_dtype, to_dense_attr, type_name
from rlx.weights import PackedWeight, load


class LossyBindingWarning(UserWarning):
    """A float binding converted to its param's float type changed values (an f64 weight
    bound to an f32 param, say): the graph's declared type wins, but never silently."""


def rounding_note(name: str, arr: np.ndarray, dt: np.dtype) -> str | None:
    """What converting the float binding `arr` of param `name` to `dt` changes, or None
    if every value survives it exactly (a widening, or f64 data that holds f32 values)."""
    if arr.dtype == dt or arr.size == 0:
        return None
    wide = arr.astype(np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        back = arr.astype(dt).astype(np.float64)
        changed = ~((back == wide) | (np.isnan(back) & np.isnan(wide)))
    k = int(np.count_nonzero(changed))
    if not k:
        return None
    finite = changed & np.isfinite(back)
    how = []
    if finite.any():
        how.append(f"by up to {float(np.max(np.abs(back - wide)[finite])):.3g}")
    if k > int(np.count_nonzero(finite)):
        how.append(f"{k - int(np.count_nonzero(finite))} overflowed to inf")
    have, want = type_name(element_type(arr.dtype)), type_name(element_type(dt))
    return (
        f"param '{name}' is {want}: its {have} weight was rounded to {want} ({k} of "
        f"{arr.size} values changed, {', '.join(how)}); give {want} data or declare the "
        f"param {have}"
    )


def bind_params(
    module: builtin.ModuleOp,
    values: Mapping[str, object],
    on_rounding: Callable[[ParamOp, str], None] | None = None,
) -> list[str]:
    """Replace each param named in `values` by a constant; returns the bound names.

    Shapes must match exactly; floats are converted to the param's float type (the graph
    declares the type), integers must match the param's type. Errors name the param. A
    conversion that changes values is reported: `on_rounding(param_op, rounding_note)`
    if given, else a `LossyBindingWarning`.
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
        note = rounding_note(name, arr, np.dtype(dt))
        if note is not None and on_rounding is not None:
            on_rounding(op, note)
        elif note is not None:
            warnings.warn(note, LossyBindingWarning, stacklevel=2)
        with np.errstate(over="ignore"):  # an overflow to inf is in the note
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
        bind_params(op, values, emit_warning)  # a located `warning:` diagnostic
