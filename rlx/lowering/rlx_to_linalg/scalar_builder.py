"""`ScalarBuilder`: scalar IR at an insertion point, the base of `KernelBuilder`.

Constants (hoisted to the entry block and shared), numeric conversions between floats,
integers and `index` (floats narrower than f32 are widened to the compute type on load,
`to_compute`, and narrowed on store, `convert`; f64 -> f16 / bf16 / fp8 round once,
through f32 rounded to odd), and the float, integer and index arithmetic the kernel
emitters call. Why apart from `KernelBuilder`: these need only an insertion point and an
entry block, no buffers, loops or kernel registry.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from xdsl.dialects import arith
from xdsl.dialects.builtin import (
    AnyFloat,
    Float64Type,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    f32,
    f64,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from rlx.lowering.rlx_to_linalg.types import FM_CONTRACT, INDEX, _fwidth, compute_type, signless


class ScalarBuilder:
    """Inserts scalar ops at `ip`; constants go to the start of the entry block."""

    def __init__(self, block: Block) -> None:
        self.entry = block
        self.ip = InsertPoint.at_end(block)
        self._consts: dict[tuple[str, Attribute], SSAValue] = {}
        self._last_hoisted: Operation | None = None

    # -- insertion -------------------------------------------------------------------

    def add(self, op: Operation) -> Operation:
        Rewriter.insert_op(op, self.ip)
        return op

    def v(self, op: Operation) -> SSAValue:
        """Insert `op` and return its (first) result."""
        self.add(op)
        return op.results[0]

    def hoist(self, op: Operation) -> SSAValue:
        """Insert `op` at the start of the entry block (after earlier hoisted ops)."""
        where = (
            InsertPoint.at_start(self.entry)
            if self._last_hoisted is None
            else InsertPoint.after(self._last_hoisted)
        )
        Rewriter.insert_op(op, where)
        self._last_hoisted = op
        return op.results[0]

    @contextmanager
    def at(self, block: Block) -> Iterator[Block]:
        saved = self.ip
        self.ip = InsertPoint.at_end(block)
        try:
            yield block
        finally:
            self.ip = saved

    # -- constants -------------------------------------------------------------------

    def const(self, value: float | int | bool, typ: Attribute) -> SSAValue:
        key = (repr(value), typ)
        if key not in self._consts:
            if isinstance(typ, AnyFloat):
                attr: Attribute = FloatAttr(float(value), typ)
            elif isinstance(typ, IntegerType):
                w = typ.width.data
                iv = int(value) & ((1 << w) - 1)
                if iv >= 1 << (w - 1) and w > 1:
                    iv -= 1 << w
                attr = IntegerAttr(iv, typ)
            else:
                attr = IntegerAttr(int(value), typ)
            self._consts[key] = self.hoist(arith.ConstantOp(attr))
        return self._consts[key]

    def idx(self, n: int | SSAValue) -> SSAValue:
        return n if isinstance(n, SSAValue) else self.const(n, INDEX)

    # -- conversions -----------------------------------------------------------------

    def to_compute(self, v: SSAValue) -> SSAValue:
        ct = compute_type(v.type)
        return v if ct == v.type else self.v(arith.ExtFOp(v, ct))

    def convert(
        self, v: SSAValue, to: Attribute, signed: bool = True, to_signed: bool = True
    ) -> SSAValue:
        """Numeric conversion (float<->float, int<->int, int<->float, index<->int).

        `signed` is the source's signedness, `to_signed` the target's (float -> int)."""
        src = v.type
        to = signless(to)
        if src == to:
            return v
        if isinstance(src, AnyFloat) and isinstance(to, AnyFloat):
            if _fwidth(to) > _fwidth(src):
                return self.v(arith.ExtFOp(v, to))
            if isinstance(src, Float64Type) and _fwidth(to) < 32:
                v = self.to_f32_odd(v)
            return self.v(arith.TruncFOp(v, to))
        if isinstance(src, AnyFloat):
            if isinstance(to, IntegerType) and to.width.data == 1:
                return self.cmpf("une", v, self.const(0.0, src))
            cls = arith.FPToSIOp if to_signed else arith.FPToUIOp
            return self.v(cls(v, to))
        if isinstance(to, AnyFloat):
            if isinstance(src, IndexType):
                v, src = self.v(arith.IndexCastOp(v, i64)), i64
            if isinstance(src, IntegerType) and src.width.data == 1:
                signed = False
            cls2 = arith.SIToFPOp if signed else arith.UIToFPOp
            return self.v(cls2(v, to))
        if isinstance(src, IndexType) or isinstance(to, IndexType):
            if isinstance(src, IntegerType) and not signed and src.width.data < 64:
                v = self.v(arith.ExtUIOp(v, i64))
            return self.v(arith.IndexCastOp(v, to))
        assert isinstance(src, IntegerType) and isinstance(to, IntegerType)
        if to.width.data == 1:
            return self.cmpi("ne", v, self.const(0, src))
        if to.width.data < src.width.data:
            return self.v(arith.TruncIOp(v, to))
        if src.width.data == 1:
            signed = False
        return self.v(arith.ExtSIOp(v, to) if signed else arith.ExtUIOp(v, to))

    def to_f32_odd(self, x: SSAValue) -> SSAValue:
        """f64 `x` rounded to f32 *to odd* (`f64_to_f32_odd`): a further rounding to a
        narrower float is then correctly rounded."""
        ops = f64_to_f32_odd(x)
        for o in ops:
            self.add(o)
        return ops[-1].results[0]

    # -- scalar ops ------------------------------------------------------------------

    def bin(
        self,
        cls: type[Operation],
        a: SSAValue,
        b: SSAValue,
        fm: arith.FastMathFlagsAttr | None = None,
    ) -> SSAValue:
        if fm is not None:
            return self.v(cls(a, b, fm))  # type: ignore[call-arg]
        return self.v(cls(a, b))  # type: ignore[call-arg]

    def addf(self, a: SSAValue, b: SSAValue, fm: arith.FastMathFlagsAttr = FM_CONTRACT) -> SSAValue:
        return self.bin(arith.AddfOp, a, b, fm)

    def subf(self, a: SSAValue, b: SSAValue, fm: arith.FastMathFlagsAttr = FM_CONTRACT) -> SSAValue:
        return self.bin(arith.SubfOp, a, b, fm)

    def mulf(self, a: SSAValue, b: SSAValue, fm: arith.FastMathFlagsAttr = FM_CONTRACT) -> SSAValue:
        return self.bin(arith.MulfOp, a, b, fm)

    def divf(self, a: SSAValue, b: SSAValue, fm: arith.FastMathFlagsAttr = FM_CONTRACT) -> SSAValue:
        return self.bin(arith.DivfOp, a, b, fm)

    def maxf(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.bin(arith.MaximumfOp, a, b)

    def minf(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.bin(arith.MinimumfOp, a, b)

    def addi(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.v(arith.AddiOp(a, b))

    def subi(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.v(arith.SubiOp(a, b))

    def muli(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.v(arith.MuliOp(a, b))

    def cmpf(self, pred: str, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.v(arith.CmpfOp(a, b, pred))

    def cmpi(self, pred: str, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.v(arith.CmpiOp(a, b, pred))

    def select(self, c: SSAValue, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.v(arith.SelectOp(c, a, b))

    def unary(self, cls: type[Operation], x: SSAValue) -> SSAValue:
        return self.v(cls(x))  # type: ignore[call-arg]

    def iadd(self, a: SSAValue | int, b: SSAValue | int) -> SSAValue:
        """Index addition (constants folded when both are ints)."""
        if isinstance(a, int) and isinstance(b, int):
            return self.idx(a + b)
        if isinstance(b, int) and b == 0:
            return self.idx(a)
        return self.addi(self.idx(a), self.idx(b))

    def imul(self, a: SSAValue, b: int) -> SSAValue:
        return a if b == 1 else self.muli(a, self.idx(b))

    def idiv(self, a: SSAValue, b: int) -> SSAValue:
        """Unsigned index division by a positive constant."""
        return a if b == 1 else self.v(arith.DivUIOp(a, self.idx(b)))

    def imax(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.v(arith.MaxSIOp(a, b))

    def imin(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.v(arith.MinSIOp(a, b))


def f64_to_f32_odd(x: SSAValue) -> list[Operation]:
    """arith ops rounding f64 `x` to f32 *to odd* (the last op's result), so that a further
    rounding to a narrower float (f16, bf16, fp8) is correctly rounded: no double rounding,
    and no f64 -> f16 libcall (`__truncdfhf2`, which a JIT process may not have).
    Inexact: truncate towards zero (one ulp down when LLVM's round-to-nearest went away
    from zero) and set the last bit. NaN and exact values pass unchanged."""
    i32 = IntegerType(32)
    r = arith.TruncFOp(x, f32)
    back = arith.ExtFOp(r, f64)
    inexact = arith.CmpfOp(back, x, "one")
    above = arith.CmpfOp(back, x, "ogt")
    zero = arith.ConstantOp(FloatAttr(0.0, f64))
    negative = arith.CmpfOp(x, zero, "olt")
    away = arith.XOrIOp(above, negative)  # |back| > |x| when inexact
    dec = arith.AndIOp(inexact, away)
    bits = arith.BitcastOp(r, i32)
    one = arith.ConstantOp(IntegerAttr(1, i32))
    down = arith.SubiOp(bits, one)
    picked = arith.SelectOp(dec, down, bits)
    sticky = arith.ExtUIOp(inexact, i32)
    odd = arith.OrIOp(picked, sticky)
    out = arith.BitcastOp(odd, f32)
    return [r, back, inexact, above, zero, negative, away, dec, bits, one, down, picked,
            sticky, odd, out]  # fmt: skip
