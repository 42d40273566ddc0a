"""Region ops: `rlx.scan` (jax.lax.scan), `rlx.if` (a run-time conditional),
`rlx.elementwise_region` (a fused scalar body) and their terminator `rlx.yield`."""

from __future__ import annotations

from collections.abc import Sequence
from math import prod
from typing import ClassVar

from xdsl.dialects.builtin import IntegerType, TensorType
from xdsl.ir import Attribute, Region, SSAValue
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    ParsePropInAttrDict,
    irdl_op_definition,
    operand_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.traits import HasParent, IsTerminator, Pure, RecursiveMemoryEffect
from xdsl.utils.exceptions import VerifyException

from rlx.dialects.rlx.base import (
    DYN,
    RlxOp,
    broadcast_shapes,
    fmt_shape,
    require,
    shape_of,
    tensor,
    types_compatible,
)
from rlx.dialects.rlx.fields import AttrValues, int_def
from rlx.dialects.rlx.traits import Elementwise, Pinned

Types = Sequence[TensorType]
Attrs = AttrValues
Given = Sequence[Attribute] | None


@irdl_op_definition
class ScanOp(RlxOp):
    """jax.lax.scan: the body maps (carries, xs[t]) to (next carries, per-step outputs);
    the results are the final carries and the per-step outputs stacked on a new axis 0."""

    name = "rlx.scan"
    inits = var_operand_def(TensorType)
    xs = var_operand_def(TensorType)
    outs = var_result_def(TensorType)
    body = region_def("single_block")
    traits = traits_def(RecursiveMemoryEffect(), Pinned)
    irdl_options = (AttrSizedOperandSegments(as_property=True), ParsePropInAttrDict())
    ASSEMBLY_FORMAT: ClassVar[str | None] = (
        "`(` $inits `)` `over` `(` $xs `)` attr-dict `:` `(` type($inits) `)` `,` `(` type($xs) `)`"
        " `->` `(` type($outs) `)` $body"
    )
    length = int_def(doc="The number of steps (the leading dim of every xs).")

    def __init__(
        self,
        inits: Sequence,
        xs: Sequence,
        result_types: Sequence[Attribute],
        body: Region,
        length: int,
    ):
        IRDLOperation.__init__(
            self,
            operands=[inits, xs],
            result_types=[result_types],
            regions=[body],
            attributes=self.encode_attrs({"length": length}),
        )

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs, given: Given = None) -> list[TensorType]:
        raise AssertionError("scan results are checked against its body in verify_")

    def verify_(self) -> None:
        length = self.length
        require(length >= 0, "attribute 'length' must be a non-negative integer")
        inits = [o.type for o in self.inits]
        xs = [o.type for o in self.xs]
        block = self.body.block
        for t in xs:
            s = shape_of(t)
            require(
                len(s) >= 1 and s[0] == length,
                f"each xs must have leading dim length={length}, got {t}",
            )
        want_args = [*inits, *(tensor(shape_of(t)[1:], t.element_type) for t in xs)]  # type: ignore[arg-type]
        got_args = [a.type for a in block.args]
        require(
            len(got_args) == len(want_args)
            and all(types_compatible(w, g) for w, g in zip(want_args, got_args, strict=True)),
            "body arguments must be the carries followed by one slice of each xs: expected ("
            + ", ".join(map(str, want_args))
            + "), got ("
            + ", ".join(map(str, got_args))
            + ")",
        )
        term = block.last_op
        require(isinstance(term, YieldOp), "scan body must end with rlx.yield")
        assert term is not None
        ys = [o.type for o in term.operands]
        require(len(ys) >= len(inits), f"rlx.yield must return the {len(inits)} next carries first")
        for i, (c, y) in enumerate(zip(inits, ys, strict=False)):
            require(
                types_compatible(c, y), f"yielded carry #{i} has type {y}, the carry has type {c}"
            )
        want = [*inits, *(tensor((length, *shape_of(y)), y.element_type) for y in ys[len(inits) :])]  # type: ignore[arg-type]
        got = [r.type for r in self.results]
        require(
            len(got) == len(want)
            and all(types_compatible(w, g) for w, g in zip(want, got, strict=True)),
            "results must be the final carries then the stacked per-step outputs: expected ("
            + ", ".join(map(str, want))
            + "), got ("
            + ", ".join(map(str, got))
            + ")",
        )


@irdl_op_definition
class IfOp(RlxOp):
    """A run-time conditional: runs the `then` region when the one-element i1 condition is
    true, else the `else` region; the results are the values the taken region yields.
    Both regions see the enclosing values (like `rlx.scan`'s body) and take no arguments."""

    name = "rlx.if"
    cond = operand_def(TensorType)
    outs = var_result_def(TensorType)
    then_region = region_def("single_block")
    else_region = region_def("single_block")
    traits = traits_def(RecursiveMemoryEffect(), Pinned)
    ASSEMBLY_FORMAT: ClassVar[str | None] = (
        "$cond attr-dict `:` type($cond) `->` `(` type($outs) `)` $then_region `else` $else_region"
    )

    def __init__(
        self, cond: SSAValue, result_types: Sequence[Attribute], then_region: Region,
        else_region: Region,
    ):  # fmt: skip
        IRDLOperation.__init__(
            self, operands=[cond], result_types=[result_types], regions=[then_region, else_region]
        )

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs, given: Given = None) -> list[TensorType]:
        raise AssertionError("if results are checked against its regions in verify_")

    def verify_(self) -> None:
        c = self.cond.type
        require(
            isinstance(c, TensorType)
            and c.element_type == IntegerType(1)
            and DYN not in shape_of(c)
            and prod(shape_of(c)) == 1,
            f"condition must be a one-element tensor of i1, got {c}",
        )
        got = [r.type for r in self.results]
        for which, region in (("then", self.then_region), ("else", self.else_region)):
            block = region.block
            require(not block.args, f"the {which} region takes no arguments")
            term = block.last_op
            require(isinstance(term, YieldOp), f"the {which} region must end with rlx.yield")
            assert term is not None
            ys = [o.type for o in term.operands]
            require(
                len(ys) == len(got)
                and all(types_compatible(g, y) for g, y in zip(got, ys, strict=True)),
                f"the {which} region yields ("
                + ", ".join(map(str, ys))
                + "), the results are ("
                + ", ".join(map(str, got))
                + ")",
            )


@irdl_op_definition
class ElementwiseRegionOp(RlxOp):
    """A fused elementwise kernel: the body computes one output element from one
    (broadcast) element of each input with scalar arith/math ops."""

    name = "rlx.elementwise_region"
    inputs = var_operand_def(TensorType)
    result = result_def(TensorType)
    body = region_def("single_block")
    traits = traits_def(RecursiveMemoryEffect(), Elementwise)
    ASSEMBLY_FORMAT: ClassVar[str | None] = (
        "$inputs attr-dict `:` functional-type($inputs, $result) $body"
    )

    def __init__(self, inputs: Sequence, result_type: Attribute, body: Region):
        IRDLOperation.__init__(self, operands=[inputs], result_types=[result_type], regions=[body])

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs, given: Given = None) -> list[TensorType]:
        raise AssertionError("elementwise_region is checked against its body in verify_")

    def verify_(self) -> None:
        types = [o.type for o in self.inputs]
        require(len(types) >= 1, "elementwise_region needs at least one input")
        shape = broadcast_shapes(*(shape_of(t) for t in types), what="region inputs")
        block = self.body.block
        want = [t.element_type for t in types]  # type: ignore[union-attr]
        got = [a.type for a in block.args]
        if got != want:  # the message prints types: only built for a failure
            raise VerifyException(
                "body arguments must be the scalar element types of the inputs: expected ("
                + ", ".join(map(str, want))
                + "), got ("
                + ", ".join(map(str, got))
                + ")"
            )
        term = block.last_op
        require(
            isinstance(term, YieldOp) and len(term.operands) == 1,
            "body must end with rlx.yield of one scalar",
        )
        assert term is not None
        out = tensor(shape, term.operands[0].type)
        if not types_compatible(out, self.result.type):
            raise VerifyException(
                f"result must be {out} (broadcast tensor<{fmt_shape(shape)}> of the yielded "
                f"type), got {self.result.type}"
            )
        for op in block.ops:
            if op is not term and op.dialect_name() not in ("arith", "math"):
                raise VerifyException(f"body may only contain arith and math ops, found {op.name}")


@irdl_op_definition
class YieldOp(RlxOp):
    """Terminator of rlx region ops."""

    name = "rlx.yield"
    values = var_operand_def()
    traits = traits_def(
        Pure(), IsTerminator(), HasParent(ScanOp, IfOp, ElementwiseRegionOp), Pinned
    )
    ASSEMBLY_FORMAT: ClassVar[str | None] = "($values^ `:` type($values))? attr-dict"
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(self, *values: object):
        IRDLOperation.__init__(self, operands=[list(values)])

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs, given: Given = None) -> list[TensorType]:
        """No results; the yielded types are checked by the parent op's `verify_`."""
        return []

    def verify_(self) -> None:
        return
