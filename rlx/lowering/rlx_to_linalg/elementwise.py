"""Elementwise ops: unary math, binary arithmetic (NumPy broadcasting as indexing maps with
constant-0 results), compare, where, cast and `rlx.elementwise_region`.

Each op is one `linalg.generic` whose iteration space is the result shape. Floats compute in
f32 (f64 for f64) with only the `contract` fast-math flag; integer division truncates
toward zero and is guarded so that x/0 and INT_MIN/-1 cannot trap.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from xdsl.dialects import arith
from xdsl.dialects import math as mathd
from xdsl.dialects.builtin import IntegerType
from xdsl.ir import Attribute, Operation, SSAValue

from rlx.dialects.rlx.base import is_unsigned
from rlx.lowering.rlx_to_linalg.kernel_builder import (
    FM_CONTRACT,
    PARALLEL,
    KernelBuilder,
    bcast_map,
    elem,
    identity,
    is_float_t,
    shape,
)

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
    "abs": mathd.AbsFOp,
}


def sigmoid(kb: KernelBuilder, x: SSAValue) -> SSAValue:
    """1 / (1 + exp(-x))."""
    one = kb.const(1.0, x.type)
    e = kb.unary(mathd.ExpOp, kb.mulf(x, kb.const(-1.0, x.type)))
    return kb.divf(one, kb.addf(one, e))


def float_unary(kb: KernelBuilder, kind: str, x: SSAValue) -> SSAValue:
    """One float unary op (or activation) in x's compute type, as the reference computes it."""
    t = x.type
    c = lambda v: kb.const(v, t)  # noqa: E731
    if kind == "none":
        return x
    if kind in _MATH:
        return kb.unary(_MATH[kind], x)
    if kind == "neg":
        return kb.mulf(x, c(-1.0), arith.FastMathFlagsAttr("none"))
    if kind == "rsqrt":
        return kb.divf(c(1.0), kb.unary(mathd.SqrtOp, x))
    if kind == "relu":
        return kb.maxf(x, c(0.0))
    if kind == "sigmoid":
        return sigmoid(kb, x)
    if kind == "silu":
        return kb.mulf(x, sigmoid(kb, x))
    if kind == "gelu":
        e = kb.unary(mathd.ErfOp, kb.divf(x, c(math.sqrt(2.0))))
        return kb.mulf(kb.mulf(c(0.5), x), kb.addf(c(1.0), e))
    if kind == "gelu_tanh":
        cube = kb.mulf(kb.mulf(kb.mulf(c(0.044715), x), x), x)
        inner = kb.mulf(c(math.sqrt(2.0 / math.pi)), kb.addf(x, cube))
        return kb.mulf(kb.mulf(c(0.5), x), kb.addf(c(1.0), kb.unary(mathd.TanhOp, inner)))
    raise AssertionError(f"no float lowering for {kind}")


def int_unary(kb: KernelBuilder, kind: str, x: SSAValue, unsigned: bool) -> SSAValue:
    zero = kb.const(0, x.type)
    if kind == "neg":
        return kb.subi(zero, x)
    if kind == "abs":
        return x if unsigned else kb.v(mathd.AbsIOp(x))
    if kind == "relu":
        return x if unsigned else kb.imax(x, zero)
    raise AssertionError(f"no integer lowering for {kind}")


def int_div(kb: KernelBuilder, a: SSAValue, b: SSAValue, unsigned: bool) -> SSAValue:
    """a / b truncating toward zero; b == 0 gives 0 and INT_MIN / -1 wraps (no trap)."""
    t = a.type
    zero, one = kb.const(0, t), kb.const(1, t)
    if unsigned:
        bz = kb.cmpi("eq", b, zero)
        return kb.select(bz, zero, kb.v(arith.DivUIOp(a, kb.select(bz, one, b))))
    m1 = kb.const(-1, t)
    bz, bm1 = kb.cmpi("eq", b, zero), kb.cmpi("eq", b, m1)
    safe = kb.select(kb.v(arith.OrIOp(bz, bm1)), one, b)
    q = kb.v(arith.DivSIOp(a, safe))
    q = kb.select(bm1, kb.subi(zero, a), q)
    return kb.select(bz, zero, q)


def int_pow(kb: KernelBuilder, a: SSAValue, b: SSAValue) -> SSAValue:
    """Wrapping a ** b by square-and-multiply over the exponent bits (b < 0 gives 0)."""
    t = a.type
    assert isinstance(t, IntegerType)
    one, zero = kb.const(1, t), kb.const(0, t)

    def step(_: SSAValue, c: list[SSAValue]) -> list[SSAValue]:
        res, base, e = c
        odd = kb.cmpi("ne", kb.v(arith.AndIOp(e, one)), zero)
        res = kb.select(odd, kb.muli(res, base), res)
        return [res, kb.muli(base, base), kb.v(arith.ShRUIOp(e, one))]

    res, _, _ = kb.loop_carry(t.width.data, [one, a, b], step)
    return kb.select(kb.cmpi("slt", b, zero), zero, res)


def binary_scalar(
    kb: KernelBuilder, kind: str, a: SSAValue, b: SSAValue, unsigned: bool
) -> SSAValue:
    if is_float_t(a.type):
        ops = {
            "add": kb.addf,
            "sub": kb.subf,
            "mul": kb.mulf,
            "div": kb.divf,
            "max": kb.maxf,
            "min": kb.minf,
        }
        if kind in ops:
            return ops[kind](a, b)
        assert kind == "pow"
        return kb.bin(mathd.PowFOp, a, b, FM_CONTRACT)
    if kind in ("add", "sub", "mul"):
        return {"add": kb.addi, "sub": kb.subi, "mul": kb.muli}[kind](a, b)
    if kind == "div":
        return int_div(kb, a, b, unsigned)
    if kind in ("max", "min"):
        cls = {("max", False): arith.MaxSIOp, ("max", True): arith.MaxUIOp,
               ("min", False): arith.MinSIOp, ("min", True): arith.MinUIOp}[(kind, unsigned)]  # fmt: skip
        return kb.v(cls(a, b))
    assert kind == "pow"
    return int_pow(kb, a, b)


_FPRED = {"eq": "oeq", "ne": "une", "lt": "olt", "le": "ole", "gt": "ogt", "ge": "oge"}
_IPRED = {"eq": "eq", "ne": "ne", "lt": "slt", "le": "sle", "gt": "sgt", "ge": "sge"}
_UPRED = {"eq": "eq", "ne": "ne", "lt": "ult", "le": "ule", "gt": "ugt", "ge": "uge"}


def _maps(op: Operation) -> tuple[list, list[str]]:
    out = shape(op.results[0])
    maps = [bcast_map(shape(o), out) for o in op.operands] + [identity(len(out))]
    return maps, [PARALLEL] * len(out)


def _unsigned(v: SSAValue) -> bool:
    e = elem(v)
    return is_unsigned(e) or (isinstance(e, IntegerType) and e.width.data == 1)


def emit_unary(
    kb: KernelBuilder, op: Operation, ins: Sequence[SSAValue], outs: Sequence[SSAValue]
) -> None:
    kind = op.name.removeprefix("rlx.")
    unsigned = _unsigned(op.operands[0])
    maps, iters = _maps(op)

    def body(x: SSAValue, _o: SSAValue) -> list[SSAValue]:
        if is_float_t(x.type):
            return [float_unary(kb, kind, x)]
        return [int_unary(kb, kind, x, unsigned)]

    kb.generic(ins, outs, maps, iters, body)


def emit_binary(
    kb: KernelBuilder, op: Operation, ins: Sequence[SSAValue], outs: Sequence[SSAValue]
) -> None:
    kind = op.name.removeprefix("rlx.")
    unsigned = _unsigned(op.operands[0])
    maps, iters = _maps(op)
    kb.generic(ins, outs, maps, iters, lambda a, b, _o: [binary_scalar(kb, kind, a, b, unsigned)])


def emit_compare(
    kb: KernelBuilder, op: Operation, ins: Sequence[SSAValue], outs: Sequence[SSAValue]
) -> None:
    pred = op.predicate
    assert pred is not None
    unsigned = _unsigned(op.operands[0])
    maps, iters = _maps(op)

    def body(a: SSAValue, b: SSAValue, _o: SSAValue) -> list[SSAValue]:
        if is_float_t(a.type):
            return [kb.cmpf(_FPRED[pred], a, b)]
        return [kb.cmpi((_UPRED if unsigned else _IPRED)[pred], a, b)]

    kb.generic(ins, outs, maps, iters, body)


def emit_where(
    kb: KernelBuilder, op: Operation, ins: Sequence[SSAValue], outs: Sequence[SSAValue]
) -> None:
    maps, iters = _maps(op)
    kb.generic(ins, outs, maps, iters, lambda c, a, b, _o: [kb.select(c, a, b)], compute=False)


def emit_cast(
    kb: KernelBuilder, op: Operation, ins: Sequence[SSAValue], outs: Sequence[SSAValue]
) -> None:
    src_unsigned = _unsigned(op.operands[0])
    dst: Attribute = elem(op.results[0])
    dst_unsigned = is_unsigned(dst)
    maps, iters = _maps(op)

    def body(x: SSAValue, _o: SSAValue) -> list[SSAValue]:
        return [kb.convert(x, dst, signed=not src_unsigned, to_signed=not dst_unsigned)]

    kb.generic(ins, outs, maps, iters, body)


def emit_region(
    kb: KernelBuilder, op: Operation, ins: Sequence[SSAValue], outs: Sequence[SSAValue]
) -> None:
    """The region body becomes the generic body (its rlx.yield a linalg.yield)."""
    import xdsl.dialects.linalg.ops as linalg
    from xdsl.dialects.builtin import AffineMapAttr
    from xdsl.dialects.linalg.attrs import IteratorTypeAttr

    maps, iters = _maps(op)
    region = op.regions[0].clone()
    blk = region.block
    blk.insert_arg(elem(outs[0]), len(blk.args))
    term = blk.last_op
    assert term is not None
    vals = list(term.operands)
    term.detach()
    term.erase()
    with kb.at(blk):
        vals = [kb.convert(v, elem(outs[0])) for v in vals]
        kb.add(linalg.YieldOp(*vals))
    kb.add(
        linalg.GenericOp(
            list(ins), list(outs), region, [AffineMapAttr(m) for m in maps],
            [IteratorTypeAttr.parallel() for _ in iters],
        )
    )  # fmt: skip


UNARY_NAMES = (
    "neg", "abs", "exp", "log", "sqrt", "rsqrt", "sin", "cos", "tanh", "sigmoid", "relu",
    "gelu", "gelu_tanh", "silu", "erf", "floor", "ceil", "round",
)  # fmt: skip
BINARY_NAMES = ("add", "sub", "mul", "div", "max", "min", "pow")

LOWERINGS = {
    **{f"rlx.{n}": emit_unary for n in UNARY_NAMES},
    **{f"rlx.{n}": emit_binary for n in BINARY_NAMES},
    "rlx.compare": emit_compare,
    "rlx.where": emit_where,
    "rlx.cast": emit_cast,
    "rlx.elementwise_region": emit_region,
}
