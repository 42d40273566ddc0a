"""`KernelBuilder`: emits the body of one kernel function: constants and scratch buffers
hoisted to the entry block, numeric conversions, loops and `linalg.generic`.

Floats narrower than f32 are widened on load (`to_compute`) and narrowed on store
(`convert`). The type and affine-map helpers live in `types` and are re-exported here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING

import xdsl.dialects.linalg.ops as linalg
from xdsl.dialects import arith, memref, scf
from xdsl.dialects.builtin import (
    AffineMapAttr,
    AnyFloat,
    Float64Type,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    f32,
    f64,
    i64,
)
from xdsl.dialects.linalg.attrs import IteratorTypeAttr
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.ir.affine import AffineMap
from xdsl.rewriter import InsertPoint, Rewriter

from rlx.lowering.rlx_to_linalg.static_ops import static_memref
from rlx.lowering.rlx_to_linalg.types import (
    FM_CONTRACT,
    FM_NONE,
    FM_RED,
    INDEX,
    PARALLEL,
    REDUCTION,
    SCRATCH_ALLOCA_BYTES,
    _fwidth,
    amap,
    bcast_exprs,
    bcast_map,
    byte_size,
    compute_type,
    dim,
    elem,
    identity,
    int_limits,
    is_float_t,
    memref_of,
    nbytes,
    shape,
    signless,
)

if TYPE_CHECKING:  # kernels.py imports this module
    from rlx.lowering.rlx_to_linalg.kernels import Kernels

__all__ = [
    "Emitter",
    "FM_CONTRACT",
    "FM_NONE",
    "FM_RED",
    "INDEX",
    "PARALLEL",
    "REDUCTION",
    "KernelBuilder",
    "amap",
    "bcast_exprs",
    "bcast_map",
    "byte_size",
    "compute_type",
    "dim",
    "elem",
    "identity",
    "int_limits",
    "is_float_t",
    "memref_of",
    "nbytes",
    "shape",
    "signless",
]


# ----------------------------------------------------------------------------- builder


class KernelBuilder:
    """Inserts ops into a kernel body; constants and scratch buffers go to the entry block."""

    def __init__(
        self, block: Block, globals_: Callable[[Attribute, object], str] | None = None
    ) -> None:
        self.entry = block
        self.ip = InsertPoint.at_end(block)
        self._consts: dict[tuple[str, Attribute], SSAValue] = {}
        self._last_hoisted: Operation | None = None
        self._frees: list[SSAValue] = []
        self._globals = globals_
        self.rng_seed = 42
        self.rng_backend = "philox"
        """Global seed and generator of rlx.rng_* ops (set by the pass)."""
        self.status: SSAValue | None = None
        """The status record of a checked kernel (`traps`), else None."""
        self.kernels: Kernels | None = None
        """The module's kernel registry building this kernel (`Kernels.kernel` sets it),
        for kernels that call other kernels (the GEMM, conv and attention workers)."""
        self.stream_stores = False
        """Store this kernel's (large) result with non-temporal stores where the emitter
        can (`streaming`): set per op by the pass."""
        self.flat_views: dict[SSAValue, SSAValue] = {}
        """Flat `memref<FLAT x T>` views of this kernel's buffers (`strided`), made once
        each: a concat passes its output to one worker call per operand."""

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

    def finish(self) -> None:
        """Free heap scratch and terminate the kernel."""
        from xdsl.dialects import func

        for buf in self._frees:
            self.add(memref.DeallocOp.get(buf))
        self.add(func.ReturnOp())

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

    def table(self, values: object, typ: Attribute) -> SSAValue:
        """A constant lookup table (1-D) as a memref.global, read with memref.get_global."""
        assert self._globals is not None, "kernel built without a global-table registry"
        name = self._globals(typ, values)
        n = len(values)  # type: ignore[arg-type]
        return self.hoist(memref.GetGlobalOp(name, static_memref(typ, (n,))))

    def count_below(self, table: SSAValue, n: int, a: SSAValue) -> SSAValue:
        """How many of the `n` ascending entries of 1-D `table` are < `a` (an index): an
        unrolled branchless binary search, ceil(log2(n + 1)) loads and selects."""
        pos = self.idx(0)
        step = 1 << (n.bit_length() - 1)
        while step:
            nxt = self.iadd(pos, step)
            probe = self.load(table, [self.imin(self.iadd(nxt, -1), self.idx(n - 1))])
            ok = self.v(
                arith.AndIOp(self.cmpi("sle", nxt, self.idx(n)), self.cmpf("olt", probe, a))
            )
            pos = self.select(ok, nxt, pos)
            step //= 2
        return pos

    # -- memory ----------------------------------------------------------------------

    def scratch(self, shp: Sequence[int], e: Attribute) -> SSAValue:
        """A kernel-local buffer: alloca when small, alloc + dealloc at kernel end otherwise."""
        t = MemRefType(e, list(shp))
        if nbytes(t) <= SCRATCH_ALLOCA_BYTES:
            return self.hoist(memref.AllocaOp.get(e, 64, list(shp)))
        buf = self.hoist(memref.AllocOp.get(e, 64, list(shp)))
        self._frees.append(buf)
        return buf

    def subview(
        self,
        mem: SSAValue,
        offsets: Sequence[int],
        sizes: Sequence[int],
        strides: Sequence[int] | None = None,
    ) -> SSAValue:
        """A static strided window of a kernel argument (free: only the type changes)."""
        t = mem.type
        assert isinstance(t, MemRefType)
        if (
            list(offsets) == [0] * len(sizes)
            and tuple(sizes) == tuple(t.get_shape())
            and not strides
        ):
            return mem
        st = list(strides) if strides is not None else [1] * len(sizes)
        return self.hoist(
            memref.SubviewOp.from_static_parameters(mem, t, list(offsets), list(sizes), st)
        )

    def load(self, mem: SSAValue, idxs: Sequence[SSAValue | int]) -> SSAValue:
        return self.v(memref.LoadOp.get(mem, [self.idx(i) for i in idxs]))

    def store(self, val: SSAValue, mem: SSAValue, idxs: Sequence[SSAValue | int]) -> None:
        self.add(memref.StoreOp.get(val, mem, [self.idx(i) for i in idxs]))

    def load_c(self, mem: SSAValue, idxs: Sequence[SSAValue | int]) -> SSAValue:
        """Load and widen to the compute type."""
        return self.to_compute(self.load(mem, idxs))

    def store_c(self, val: SSAValue, mem: SSAValue, idxs: Sequence[SSAValue | int]) -> None:
        """Narrow from the compute type and store."""
        self.store(self.convert(val, elem(mem)), mem, idxs)

    def fill(self, mem: SSAValue, value: float | int | SSAValue) -> None:
        v = value if isinstance(value, SSAValue) else self.const(value, elem(mem))
        self.add(linalg.FillOp([v], [mem], res=()))

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
                v = self._f64_to_f32_odd(v)
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

    def _f64_to_f32_odd(self, x: SSAValue) -> SSAValue:
        """f64 -> f32 rounding to odd (`f64_to_f32_odd`)."""
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

    # -- control flow ----------------------------------------------------------------

    @contextmanager
    def loop(self, ub: int | SSAValue, lb: int | SSAValue = 0, step: int = 1) -> Iterator[SSAValue]:
        """`scf.for %iv = lb to ub step step` with the body built inside the `with`."""
        body = Block(arg_types=[INDEX])
        self.add(scf.ForOp(self.idx(lb), self.idx(ub), self.idx(step), [], body))
        with self.at(body):
            yield body.args[0]
            self.add(scf.YieldOp())

    @contextmanager
    def nest(self, bounds: Sequence[int | SSAValue]) -> Iterator[list[SSAValue]]:
        """Perfect loop nest over `bounds` (outermost first)."""
        ivs: list[SSAValue] = []
        with _nest(self, list(bounds), ivs):
            yield ivs

    def loop_carry(
        self,
        ub: int | SSAValue,
        inits: Sequence[SSAValue],
        body: Callable[[SSAValue, list[SSAValue]], Sequence[SSAValue]],
        lb: int | SSAValue = 0,
    ) -> list[SSAValue]:
        """`scf.for` with iter_args; `body(iv, carried)` returns the next carried values."""
        blk = Block(arg_types=[INDEX, *(v.type for v in inits)])
        op = scf.ForOp(self.idx(lb), self.idx(ub), self.idx(1), list(inits), blk)
        self.add(op)
        with self.at(blk):
            res = body(blk.args[0], list(blk.args[1:]))
            self.add(scf.YieldOp(*res))
        return list(op.results)

    def generic(
        self,
        ins: Sequence[SSAValue],
        outs: Sequence[SSAValue],
        maps: Sequence[AffineMap],
        iters: Sequence[str],
        body: Callable[..., Sequence[SSAValue]],
        compute: bool = True,
    ) -> None:
        """A `linalg.generic`; `body` gets the block args (widened to the compute type
        when `compute`) and returns one value per output (narrowed on yield)."""
        blk = Block(arg_types=[elem(v) for v in (*ins, *outs)])
        with self.at(blk):
            args = [self.to_compute(a) if compute else a for a in blk.args]
            res = body(*args)
            res = [self.convert(r, elem(o)) for r, o in zip(res, outs, strict=True)]
            self.add(linalg.YieldOp(*res))
        its = [
            IteratorTypeAttr.parallel() if t == PARALLEL else IteratorTypeAttr.reduction()
            for t in iters
        ]
        self.add(
            linalg.GenericOp(
                list(ins), list(outs), Region(blk), [AffineMapAttr(m) for m in maps], its
            )
        )


@contextmanager
def _nest(kb: KernelBuilder, bounds: list[int | SSAValue], ivs: list[SSAValue]) -> Iterator[None]:
    if not bounds:
        yield
        return
    with kb.loop(bounds[0]) as iv:
        ivs.append(iv)
        with _nest(kb, bounds[1:], ivs):
            yield


Emitter = Callable[[KernelBuilder, Operation, Sequence[SSAValue], Sequence[SSAValue]], None]
"""A kernel-body emitter of one op family: (builder, op, input buffers, output buffers)."""


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
