"""`bind-quant-params`: bind GGML-packed weights (Q8_0, TQ2_0) to the packed operand of
`rlx.dequant_matmul` as ui8 constants."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects import builtin
from xdsl.dialects.builtin import TensorType
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter
from xdsl.utils.exceptions import PassFailedException

from rlx.dialects.rlx.leaves import ConstantOp, ParamOp
from rlx.dialects.rlx.quant import DequantMatmulOp
from rlx.dtypes import to_dense_attr
from rlx.weights import as_packed, load


def bind_quant_params(module: builtin.ModuleOp, values: Mapping[str, object]) -> list[str]:
    """Bind each param that feeds a dequant_matmul's packed operand (a PackedWeight or raw
    uint8 block bytes, see `rlx.weights.as_packed`); errors name the param."""

    bound: list[str] = []
    for op in list(module.walk()):
        if not isinstance(op, ParamOp) or op.param_name not in values:
            continue
        users = [u.operation for u in op.result.uses]
        dq = [u for u in users if isinstance(u, DequantMatmulOp) and u.packed == op.result]
        if not dq:
            continue
        name = op.param_name
        try:  # a PackedWeight, or raw uint8 block bytes in the op's scheme
            v = as_packed(name, values[name], dq[0].scheme, dq[0].n, dq[0].k)
            for u in dq[1:]:
                as_packed(name, v, u.scheme, u.n, u.k)
        except ValueError as e:
            raise PassFailedException(str(e)) from None
        t = op.result.type
        assert isinstance(t, TensorType)
        const = ConstantOp(to_dense_attr(v.data, t))
        const.result.name_hint = op.result.name_hint
        Rewriter.replace_op(op, const)
        bound.append(name)
    return bound


@dataclass(frozen=True)
class BindQuantParams(ModulePass):
    """Bind packed GGML weights from a .gguf file to rlx.dequant_matmul packed operands."""

    name = "bind-quant-params"
    main_option: ClassVar[str] = "path"

    path: str = ""
    """A .gguf file holding Q8_0 / TQ2_0 tensors named like the params (or an .npz written
    by `rlx.weights.save`, whose PackedWeights keep their scheme and shape)."""

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:

        if not self.path:
            raise PassFailedException(
                "bind-quant-params needs a .gguf file: --quant-param-bindings=model.gguf"
            )
        try:
            values = load(self.path)
        except ValueError as e:
            raise PassFailedException(str(e)) from None
        bind_quant_params(op, values)
