"""Types, sizes and affine maps shared by the kernel emitters.

Element types: memrefs are signless (`ui8` data is stored as `i8`); the signedness of the
original tensor type is passed to the helpers that need it. f16/bf16/f8 compute in f32.
"""

from __future__ import annotations

from collections.abc import Sequence
from math import prod

from xdsl.dialects import arith
from xdsl.dialects.builtin import (
    AnyFloat,
    Float16Type,
    Float32Type,
    Float64Type,
    IndexType,
    IntegerType,
    MemRefType,
    TensorType,
    f32,
)
from xdsl.dialects.utils.fast_math import FastMathFlag
from xdsl.ir import Attribute, SSAValue
from xdsl.ir.affine import AffineExpr, AffineMap

FM_NONE = arith.FastMathFlagsAttr("none")
FM_CONTRACT = arith.FastMathFlagsAttr([FastMathFlag.ALLOW_CONTRACT])
FM_RED = arith.FastMathFlagsAttr([FastMathFlag.REASSOC, FastMathFlag.ALLOW_CONTRACT])
"""Reductions: reassociation lets LLVM vectorize; no nnan/ninf so -inf/NaN stay exact."""

SCRATCH_ALLOCA_BYTES = 1 << 14
"""Scratch buffers up to this size live on the stack (memref.alloca), larger ones on the heap."""

INDEX = IndexType()


# ----------------------------------------------------------------------------- types


def signless(e: Attribute) -> Attribute:
    """Storage type of an element: integers lose their signedness (ui8 -> i8)."""
    if isinstance(e, IntegerType):
        return IntegerType(e.width.data)
    return e


def memref_of(t: Attribute) -> MemRefType:
    """The buffer type of a static tensor type."""
    assert isinstance(t, TensorType)
    return MemRefType(signless(t.element_type), t.get_shape())


def shape(v: SSAValue | Attribute) -> tuple[int, ...]:
    t = v.type if isinstance(v, SSAValue) else v
    assert isinstance(t, TensorType | MemRefType)
    return tuple(t.get_shape())


def elem(v: SSAValue | Attribute) -> Attribute:
    t = v.type if isinstance(v, SSAValue) else v
    assert isinstance(t, TensorType | MemRefType)
    return t.element_type


def is_float_t(t: Attribute) -> bool:
    return isinstance(t, AnyFloat)


def compute_type(e: Attribute) -> Attribute:
    """Arithmetic type of an element type: f64 and f32 as is, narrower floats as f32."""
    if isinstance(e, AnyFloat) and not isinstance(e, Float32Type | Float64Type):
        return f32
    return signless(e)


def byte_size(e: Attribute) -> int:
    """Storage bytes of one element (i1 takes a byte)."""
    if isinstance(e, IndexType):
        return 8
    if isinstance(e, IntegerType):
        return max(1, (e.width.data + 7) // 8)
    if isinstance(e, Float16Type) or e.name == "bf16":
        return 2
    if isinstance(e, Float32Type):
        return 4
    if isinstance(e, Float64Type):
        return 8
    return 1  # f8 and narrower


def nbytes(t: MemRefType) -> int:
    return prod(t.get_shape()) * byte_size(t.element_type)


# ----------------------------------------------------------------------------- affine maps


def dim(i: int) -> AffineExpr:
    return AffineExpr.dimension(i)


def amap(n: int, exprs: Sequence[AffineExpr | int]) -> AffineMap:
    """A map from n iteration dims to the given results (ints become constants)."""
    return AffineMap(
        n, 0, tuple(AffineExpr.constant(e) if isinstance(e, int) else e for e in exprs)
    )


def identity(n: int) -> AffineMap:
    return AffineMap.identity(n)


def bcast_exprs(
    in_shape: Sequence[int], out_shape: Sequence[int], first: int = 0
) -> list[AffineExpr | int]:
    """NumPy broadcasting as map results: operand dims align right with the iteration dims
    `first..first+len(out_shape)`; a size-1 dim broadcast against a larger one is 0."""
    off = len(out_shape) - len(in_shape)
    return [
        0 if d == 1 and out_shape[off + i] != 1 else dim(first + off + i)
        for i, d in enumerate(in_shape)
    ]


def bcast_map(in_shape: Sequence[int], out_shape: Sequence[int]) -> AffineMap:
    return amap(len(out_shape), bcast_exprs(in_shape, out_shape))


PARALLEL = "parallel"
REDUCTION = "reduction"


def _fwidth(t: Attribute) -> int:
    if isinstance(t, Float64Type):
        return 64
    if isinstance(t, Float32Type):
        return 32
    if isinstance(t, Float16Type) or t.name == "bf16":
        return 16
    return 8


def int_limits(t: Attribute, unsigned: bool) -> tuple[int, int]:
    assert isinstance(t, IntegerType)
    w = t.width.data
    if unsigned or w == 1:
        return 0, (1 << w) - 1
    return -(1 << (w - 1)), (1 << (w - 1)) - 1
