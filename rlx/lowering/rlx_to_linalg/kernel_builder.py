"""`KernelBuilder`: emits the body of one kernel function: scratch buffers hoisted to the
entry block, lookup tables, loads and stores, loops and `linalg.generic`, on top of the
scalar constants, conversions and arithmetic of `ScalarBuilder` (`scalar_builder`).

Floats narrower than f32 are widened on load (`load_c`) and narrowed on store (`store_c`).
The type and affine-map helpers live in `types` and are re-exported here (the kernel
emitters import them with the builder).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Literal

import xdsl.dialects.linalg.ops as linalg
from xdsl.dialects import arith, memref, scf
from xdsl.dialects.builtin import (
    AffineMapAttr,
    MemRefType,
)
from xdsl.dialects.linalg.attrs import IteratorTypeAttr
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.ir.affine import AffineMap

from rlx.lowering import loop_hints
from rlx.lowering.rlx_to_linalg.scalar_builder import ScalarBuilder
from rlx.lowering.rlx_to_linalg.static_ops import static_memref
from rlx.lowering.rlx_to_linalg.types import (
    FM_CONTRACT,
    FM_NONE,
    FM_RED,
    INDEX,
    PARALLEL,
    REDUCTION,
    SCRATCH_ALLOCA_BYTES,
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


class KernelBuilder(ScalarBuilder):
    """Inserts ops into a kernel body (the scalar ones: `ScalarBuilder`); constants and
    scratch buffers go to the entry block."""

    def __init__(
        self, block: Block, globals_: Callable[[Attribute, object], str] | None = None
    ) -> None:
        super().__init__(block)
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

    # -- lifetime --------------------------------------------------------------------

    def finish(self) -> None:
        """Free heap scratch and terminate the kernel."""
        from xdsl.dialects import func

        for buf in self._frees:
            self.add(memref.DeallocOp.get(buf))
        self.add(func.ReturnOp())

    # -- tables ----------------------------------------------------------------------

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

    # -- control flow ----------------------------------------------------------------

    @contextmanager
    def loop(
        self,
        ub: int | SSAValue,
        lb: int | SSAValue = 0,
        step: int = 1,
        interleave: int | Literal["auto"] | None = None,
    ) -> Iterator[SSAValue]:
        """`scf.for %iv = lb to ub step step` with the body built inside the `with`;
        `interleave`: the loop vectorizer's interleave count (`loop_hints`; "auto": 2
        where the body computes an expanded math function, decided once it is built)."""
        body = Block(arg_types=[INDEX])
        op = scf.ForOp(self.idx(lb), self.idx(ub), self.idx(step), [], body)
        if isinstance(interleave, int):
            loop_hints.hint(op, interleave)
        self.add(op)
        with self.at(body):
            yield body.args[0]
            self.add(scf.YieldOp())
        if interleave == "auto":
            loop_hints.auto(op)

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
