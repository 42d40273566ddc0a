"""The `example` dialect: one op, `example.identity`, whose result is its operand."""

from typing import ClassVar

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Dialect
from xdsl.irdl import (
    IRDLOperation,
    VarConstraint,
    base,
    irdl_op_definition,
    operand_def,
    result_def,
    traits_def,
)
from xdsl.traits import Pure


@irdl_op_definition
class IdentityOp(IRDLOperation):
    """`%y = example.identity %x : tensor<...>`: y = x (a marker a frontend might leave)."""

    name = "example.identity"
    T: ClassVar = VarConstraint("T", base(TensorType))
    input = operand_def(T)
    output = result_def(T)
    traits = traits_def(Pure())
    assembly_format = "$input attr-dict `:` type($input)"

    def __init__(self, value):
        super().__init__(operands=[value], result_types=[value.type])


Example = Dialect("example", [IdentityOp])
