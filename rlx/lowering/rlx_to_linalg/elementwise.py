"""Elementwise ops: unary math, binary arithmetic (NumPy broadcasting as indexing maps with
constant-0 results), compare, where, cast and `rlx.elementwise_region`.

Each op is a call of a shape-generic strided worker (`strided`) whose loop body is the op's
formula (`rlx.dialects.rlx.formula`) built by `KernelScalar`, or the region's body: one
worker per formula (or body), element types and broadcast pattern serves every shape. Floats compute in
f32 (f64 for f64) with only the `contract` fast-math flag; integer division truncates
toward zero; x/0, INT_MIN/-1 and a negative integer pow exponent are run-time errors
reported through the status record (`traps`), never a CPU trap.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import arith
from xdsl.dialects import math as mathd
from xdsl.dialects.builtin import IntegerType
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.rewriter import Rewriter

from rlx.dialects.rlx.base import is_unsigned
from rlx.dialects.rlx.control import ElementwiseRegionOp
from rlx.dialects.rlx.elementwise import BINARY_OPS, UNARY_OPS, CastOp, CompareOp, WhereOp
from rlx.dialects.rlx.formula import activation_formula
from rlx.lowering.rlx_to_linalg.kernel_builder import (
    FM_CONTRACT,
    Emitter,
    KernelBuilder,
    elem,
    is_float_t,
    shape,
)
from rlx.lowering.rlx_to_linalg.kernels import op_key
from rlx.lowering.rlx_to_linalg.strided import Layout, broadcast, row_major, strided_call
from rlx.lowering.rlx_to_linalg.traps import checked_div, checked_pow, guard_region_ops

_MATH = {
    "exp": mathd.ExpOp,
    "log": mathd.LogOp,
    "sqrt": mathd.SqrtOp,
    "sin": mathd.SinOp,
    "cos": mathd.CosOp,
    "tanh": mathd.TanhOp,
    "erf": mathd.ErfOp,
    "floor": mathd.FloorOp,
    "ceil": mathd.CeilOp,
    "round": mathd.RoundEvenOp,
}
_FPRED = {"eq": "oeq", "ne": "une", "lt": "olt", "le": "ole", "gt": "ogt", "ge": "oge"}
_IPRED = {"eq": "eq", "ne": "ne", "lt": "slt", "le": "sle", "gt": "sgt", "ge": "sge"}
_UPRED = {"eq": "eq", "ne": "ne", "lt": "ult", "le": "ule", "gt": "ugt", "ge": "uge"}


class KernelScalar:
    """The kernel builder as a `ScalarBuilder`: the ops' formulas become `linalg.generic`
    bodies. Floats compute in the compute type with the `contract` fast-math flag;
    integers follow the signedness of the op's operands (`unsigned`)."""

    def __init__(self, kb: KernelBuilder, unsigned: bool = False) -> None:
        self.kb = kb
        self.unsigned = unsigned

    def const(self, value: float, like: SSAValue) -> SSAValue:
        return self.kb.const(value, like.type)

    def add(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.kb.addf(a, b) if is_float_t(a.type) else self.kb.addi(a, b)

    def sub(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.kb.subf(a, b) if is_float_t(a.type) else self.kb.subi(a, b)

    def mul(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.kb.mulf(a, b) if is_float_t(a.type) else self.kb.muli(a, b)

    def div(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return (
            self.kb.divf(a, b)
            if is_float_t(a.type)
            else checked_div(
                self.kb, arith.DivUIOp if self.unsigned else arith.DivSIOp, a, b, self.unsigned
            )
        )

    def _minmax(self, kind: str, a: SSAValue, b: SSAValue) -> SSAValue:
        if is_float_t(a.type):
            return self.kb.maxf(a, b) if kind == "max" else self.kb.minf(a, b)
        cls = {("max", False): arith.MaxSIOp, ("max", True): arith.MaxUIOp,
               ("min", False): arith.MinSIOp, ("min", True): arith.MinUIOp}[(kind, self.unsigned)]  # fmt: skip
        return self.kb.v(cls(a, b))

    def max(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self._minmax("max", a, b)

    def min(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self._minmax("min", a, b)

    def pow(self, a: SSAValue, b: SSAValue) -> SSAValue:
        if is_float_t(a.type):
            return self.kb.bin(mathd.PowFOp, a, b, FM_CONTRACT)
        return checked_pow(self.kb, a, b, self.unsigned)

    def neg(self, x: SSAValue) -> SSAValue:
        if is_float_t(x.type):
            return self.kb.v(arith.NegfOp(x))
        return self.kb.subi(self.kb.const(0, x.type), x)

    def abs(self, x: SSAValue) -> SSAValue:
        if is_float_t(x.type):
            return self.kb.unary(mathd.AbsFOp, x)
        return x if self.unsigned else self.kb.v(mathd.AbsIOp(x))

    def math(self, fn: str, x: SSAValue) -> SSAValue:
        return self.kb.unary(_MATH[fn], x)

    def compare(self, predicate: str, a: SSAValue, b: SSAValue) -> SSAValue:
        if is_float_t(a.type):
            return self.kb.cmpf(_FPRED[predicate], a, b)
        return self.kb.cmpi((_UPRED if self.unsigned else _IPRED)[predicate], a, b)

    def select(self, cond: SSAValue, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.kb.select(cond, a, b)

    def cast(self, x: SSAValue, to: Attribute) -> SSAValue:
        return self.kb.convert(x, to, signed=not self.unsigned, to_signed=not is_unsigned(to))


def activation(kb: KernelBuilder, kind: str, x: SSAValue) -> SSAValue:
    """A fused op's activation (`none`, `relu`, `gelu`, ...) on one float scalar, by the
    activation's formula."""
    return activation_formula(kind)(KernelScalar(kb), x)


def _layouts(ins: Sequence[SSAValue], outs: Sequence[SSAValue]) -> tuple[tuple[int, ...], list]:
    """The iteration space (the result shape) and the buffers' layouts over it: inputs with
    NumPy broadcasting (stride 0 where broadcast), the output contiguous."""
    out = shape(outs[0])
    return out, [broadcast(shape(x), out) for x in ins] + [Layout(0, row_major(out))]


def _unsigned(v: SSAValue) -> bool:
    e = elem(v)
    return is_unsigned(e) or (isinstance(e, IntegerType) and e.width.data == 1)


def emit_formula(
    kb: KernelBuilder, op: Operation, ins: Sequence[SSAValue], outs: Sequence[SSAValue]
) -> None:
    """The op's formula (unary, binary, compare, cast) in the loop of the shape-generic
    strided worker: one per op kind, attributes, element types and broadcast pattern."""
    unsigned = _unsigned(op.operands[0])

    def body(wb: KernelBuilder, vals: list[SSAValue]) -> list[SSAValue]:
        b = KernelScalar(wb, unsigned)
        return [op.formula(b, *(wb.to_compute(v) for v in vals))]  # type: ignore[attr-defined]

    out, lays = _layouts(ins, outs)
    strided_call(kb, ("formula", *op_key(op)[:2], unsigned), body, ins, outs, out, lays, op.name)


def emit_where(
    kb: KernelBuilder, op: Operation, ins: Sequence[SSAValue], outs: Sequence[SSAValue]
) -> None:
    """`rlx.where` selects stored values (no widening to the compute type)."""

    def body(wb: KernelBuilder, vals: list[SSAValue]) -> list[SSAValue]:
        return [op.formula(KernelScalar(wb), *vals)]  # type: ignore[attr-defined]

    out, lays = _layouts(ins, outs)
    strided_call(kb, ("formula", *op_key(op)[:2]), body, ins, outs, out, lays, op.name)


def emit_region(
    kb: KernelBuilder, op: Operation, ins: Sequence[SSAValue], outs: Sequence[SSAValue]
) -> None:
    """The region body inlined into the loop of the shape-generic strided worker (one per
    body, element types and broadcast pattern: the sizes come from a table); its rlx.yield
    becomes the stored values. Float adds / subs / muls get `contract` (`_contract`)."""
    out, lays = _layouts(ins, outs)

    def body(wb: KernelBuilder, vals: list[SSAValue]) -> list[SSAValue]:
        blk = op.regions[0].clone().block
        term = blk.last_op
        assert term is not None
        args = list(blk.args)
        _contract(blk)
        if wb.status is not None:  # before reading the yield: guarding replaces values
            guard_region_ops(wb, blk)
        yielded = list(term.operands)
        term.detach()
        term.erase()
        Rewriter.inline_block(blk, wb.ip, vals)
        return [vals[args.index(v)] if v in args else v for v in yielded]

    strided_call(
        kb, ("region", op_key(op)[3]), body, ins, outs, out, lays, "rlx.elementwise_region"
    )


_CONTRACTIBLE = (arith.AddfOp, arith.SubfOp, arith.MulfOp)


def _contract(blk: Block) -> None:
    """Give the body's float adds / subs / muls without fast-math flags `contract`, the one
    flag the unfused ops' formulas carry (`KernelScalar`), so that a fused x * a + b or
    `x + 0.044715 x^3` is one FMA as it was before fusion (gelu_tanh(x * a + b): -6 % per
    element in cache on one znver4 core)."""
    for o in blk.walk():
        if isinstance(o, _CONTRACTIBLE) and not o.fastmath.data:
            o.properties["fastmath"] = FM_CONTRACT


LOWERINGS: dict[type[Operation], Emitter] = {
    **dict.fromkeys((*UNARY_OPS, *BINARY_OPS, CompareOp, CastOp), emit_formula),
    WhereOp: emit_where,
    ElementwiseRegionOp: emit_region,
}
