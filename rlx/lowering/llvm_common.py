"""Shared helpers of the ``convert-*-to-llvm`` passes: type conversion and cast bridging.

The passes work like MLIR's partial dialect conversions: an op is replaced by llvm ops on
LLVM-typed values, and wherever a value of a not-yet-converted type (``index``, ``memref``)
meets a converted one, a ``builtin.unrealized_conversion_cast`` bridges the two.
``reconcile-unrealized-casts`` removes the bridges once every pass has run. Operands are
looked up *through* an existing bridge (``cast(i64 -> index)`` feeding an op gives back the
``i64``), so a full ``convert-to-llvm`` leaves only dead bridges behind.

Type mapping: ``index`` -> ``i64``; every ``memref`` -> ``!llvm.ptr`` (bare pointer to the
base of the buffer; static offset and strides stay in the memref type and are applied when
indexing); every other scalar type is unchanged.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import NoReturn, TypeVar

from xdsl.dialects import llvm
from xdsl.dialects.builtin import (
    AnyFloat,
    BFloat16Type,
    DenseArrayBase,
    Float16Type,
    Float32Type,
    Float64Type,
    FloatAttr,
    FunctionType,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
    StringAttr,
    UnitAttr,
    UnrankedMemRefType,
    UnrealizedConversionCastOp,
    VectorType,
    i32,
    i64,
)
from xdsl.dialects.utils import FastMathFlag
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
)
from xdsl.rewriter import InsertPoint
from xdsl.utils.exceptions import PassFailedException

from rlx.diagnostics import OpError

_OpT = TypeVar("_OpT", bound=Operation)

INDEX_TYPE = i64
"""The integer type ``index`` lowers to (64-bit hosts only)."""

PTR = llvm.LLVMPointerType()
"""The opaque pointer every memref lowers to."""


def fail(op: Operation | None, message: str) -> NoReturn:
    """Fail the running pass: an error located at ``op`` (``OpError``) when there is one."""
    if op is None:
        raise PassFailedException(message)
    raise OpError(op, message)


def convert_type(t: Attribute) -> Attribute:
    """The LLVM-compatible type of ``t`` (``index`` -> i64, memref -> ptr, else ``t``)."""
    if isinstance(t, IndexType):
        return INDEX_TYPE
    if isinstance(t, MemRefType | UnrankedMemRefType):
        return PTR
    if isinstance(t, VectorType) and isinstance(t.element_type, IndexType):
        return VectorType(INDEX_TYPE, t.get_shape())
    return t


def convert_function_type(ft: FunctionType) -> llvm.LLVMFunctionType:
    """Lower a func type; several results are packed into an ``!llvm.struct``."""
    inputs = [convert_type(t) for t in ft.inputs.data]
    outputs = [convert_type(t) for t in ft.outputs.data]
    if not outputs:
        return llvm.LLVMFunctionType(inputs, llvm.LLVMVoidType())
    if len(outputs) == 1:
        return llvm.LLVMFunctionType(inputs, outputs[0])
    return llvm.LLVMFunctionType(inputs, llvm.LLVMStructType.from_type_list(outputs))


# ---------------------------------------------------------------------------------------
# Fast construction. xDSL's generated ``__init__``s re-derive and re-check the operand and
# property layout on every call, and attribute constructors verify their parameters; the
# lowering builds tens of thousands of ops, so the hot ones are made with ``Op.create`` and
# cached attributes (3-5x cheaper).


@functools.cache
def int_attr(value: int, t: Attribute) -> IntegerAttr:
    """A cached ``IntegerAttr`` (``truncate_bits``: wraps like LLVM)."""
    return IntegerAttr(value, t, truncate_bits=True)  # pyright: ignore[reportArgumentType]


@functools.cache
def _float_attr(value: float, t: Attribute) -> Attribute:
    return FloatAttr(value, t)  # pyright: ignore[reportArgumentType]


@functools.cache
def index_array(values: tuple[int, ...]) -> DenseArrayBase:
    """A cached ``array<i32: ...>`` (GEP constant indices)."""
    return DenseArrayBase.from_list(i32, values)


@functools.cache
def fastmath(flags: frozenset[str]) -> llvm.FastMathAttr:
    """A cached ``#llvm.fastmath`` with the given flag names."""
    return llvm.FastMathAttr([FastMathFlag(f) for f in flags] or None)


NO_FASTMATH = fastmath(frozenset())
NO_OVERFLOW = IntegerAttr(0, i32)
NSW = IntegerAttr(1, i32)


def make(
    cls: type[_OpT],
    operands: Sequence[SSAValue],
    result_types: Sequence[Attribute],
    properties: dict[str, Attribute] | None = None,
) -> _OpT:
    """``cls.create`` (no re-derivation of the op layout); every property must be given."""
    return cls.create(operands=operands, result_types=result_types, properties=properties or {})


def bridge(value: SSAValue, t: Attribute) -> UnrealizedConversionCastOp:
    """``builtin.unrealized_conversion_cast value : ... to t``."""
    return UnrealizedConversionCastOp.create(operands=[value], result_types=[t])


def llvm_operand(value: SSAValue, new_ops: list[Operation]) -> SSAValue:
    """``value`` as an LLVM-typed value, appending a bridging cast to ``new_ops`` if needed."""
    target = convert_type(value.type)
    if target == value.type:
        return value
    owner = value.owner
    if (
        isinstance(owner, UnrealizedConversionCastOp)
        and len(owner.inputs) == 1
        and owner.inputs[0].type == target
    ):
        return owner.inputs[0]
    cast = bridge(value, target)
    new_ops.append(cast)
    return cast.results[0]


def llvm_operands(values: Sequence[SSAValue], new_ops: list[Operation]) -> list[SSAValue]:
    """:func:`llvm_operand` over a sequence."""
    seen: dict[SSAValue, SSAValue] = {}
    out: list[SSAValue] = []
    for v in values:
        lowered = seen.get(v)
        if lowered is None:
            lowered = seen[v] = llvm_operand(v, new_ops)
        out.append(lowered)
    return out


def replace_with_llvm(
    rewriter: PatternRewriter,
    op: Operation,
    new_ops: list[Operation],
    new_values: Sequence[SSAValue],
) -> None:
    """Replace ``op`` by ``new_ops``; results whose type changed are bridged back."""
    results: list[SSAValue] = []
    for old, new in zip(op.results, new_values, strict=True):
        if new.type == old.type or not old.uses:
            results.append(new)
            continue
        cast = bridge(new, old.type)
        new_ops.append(cast)
        results.append(cast.results[0])
    rewriter.replace(op, new_ops, results)


def convert_block_signature(block: Block, rewriter: PatternRewriter) -> None:
    """Give ``block``'s arguments LLVM types; old-typed uses go through a bridging cast."""
    for arg in block.args:
        target = convert_type(arg.type)
        if target == arg.type:
            continue
        old_type = arg.type
        new_arg = rewriter.replace_value_with_new_type(arg, target)
        if not new_arg.uses:
            continue
        cast = bridge(new_arg, old_type)
        rewriter.insert(cast, InsertPoint.at_start(block))
        new_arg.replace_uses_with_if(cast.results[0], lambda use, c=cast: use.operation is not c)


def element_byte_size(t: Attribute, op: Operation | None = None) -> int:
    """Bytes one element of type ``t`` occupies in a buffer (i1 takes a byte)."""
    if isinstance(t, IndexType):
        return 8
    if isinstance(t, IntegerType):
        return max(1, (t.width.data + 7) // 8)
    if isinstance(t, AnyFloat):
        return max(1, t.bitwidth // 8)  # fp6 / fp4 are stored one per byte
    if isinstance(t, llvm.LLVMPointerType):
        return 8
    fail(op, f"convert-memref-to-llvm: unsupported memref element type {t}")


def static_layout(
    t: MemRefType, what: str, op: Operation | None = None
) -> tuple[tuple[int, ...], tuple[int, ...], int]:
    """(shape, strides, offset) of a fully static memref type; fails (at ``op``) otherwise."""
    shape = t.get_shape()
    strides = t.get_strides()
    offset = t.get_offset()
    if (
        any(d < 0 for d in shape)
        or strides is None
        or offset is None
        or any(s is None for s in strides)
    ):
        fail(
            op, f"{what}: only memrefs with static shape, strides and offset are supported, got {t}"
        )
    return shape, tuple(s for s in strides if s is not None), offset


def memref_extent_bytes(t: MemRefType) -> int:
    """Bytes from a memref's base pointer to one past its last element (0 if unknown/empty)."""
    try:
        shape, strides, offset = static_layout(t, "")
    except PassFailedException:
        return 0
    if any(d == 0 for d in shape):
        return 0
    last = offset + sum((d - 1) * s for d, s in zip(shape, strides, strict=True))
    return (last + 1) * element_byte_size(t.element_type)


def check_fully_converted(module: ModuleOp, dialects: tuple[str, ...], pass_name: str) -> None:
    """Raise PassFailedException naming the first op of ``dialects`` left in ``module``."""
    for op in module.walk():
        if op.dialect_name() in dialects:
            fail(op, f"{pass_name}: unsupported operation '{op.name}'")


def convert_module(
    module: ModuleOp,
    patterns: Sequence[RewritePattern],
    dialects: tuple[str, ...],
    pass_name: str,
    *,
    dce: bool = False,
) -> None:
    """Apply conversion `patterns` in one walk, then require that no op of `dialects` is
    left (the body of every `convert-*-to-llvm` pass)."""
    PatternRewriteWalker(
        GreedyRewritePatternApplier(list(patterns), dce_enabled=dce), apply_recursively=False
    ).rewrite_module(module)
    check_fully_converted(module, dialects, pass_name)


def constant(value: int | float, typ: Attribute) -> llvm.ConstantOp:
    """An ``llvm.mlir.constant`` of an int/float type."""
    if isinstance(typ, IntegerType):
        attr: Attribute = int_attr(int(value), typ)
    else:
        assert isinstance(typ, AnyFloat)
        attr = _float_attr(float(value), typ)
    return make(llvm.ConstantOp, (), (typ,), {"value": attr})


def intrinsic_suffix(t: Attribute) -> str:
    """LLVM's overload mangling of a type (``f32``, ``i64``, ``v8f32``, ``bf16``)."""
    if isinstance(t, VectorType):
        n = 1
        for d in t.get_shape():
            n *= d
        return f"v{n}{intrinsic_suffix(t.element_type)}"
    if isinstance(t, IntegerType):
        return f"i{t.width.data}"
    if isinstance(t, Float32Type):
        return "f32"
    if isinstance(t, Float64Type):
        return "f64"
    if isinstance(t, Float16Type):
        return "f16"
    if isinstance(t, BFloat16Type):
        return "bf16"
    if isinstance(t, llvm.LLVMPointerType):
        return "p0"
    raise PassFailedException(f"no LLVM intrinsic mangling for type {t}")


_NO_BUNDLES = DenseArrayBase.from_list(i32, ())


def call_intrinsic(
    name: str,
    args: Sequence[SSAValue],
    result_type: Attribute | None,
    fmf: llvm.FastMathAttr | None = None,
) -> llvm.CallIntrinsicOp:
    """An ``llvm.call_intrinsic`` of the fully mangled intrinsic ``name``."""
    props: dict[str, Attribute] = {
        "intrin": StringAttr(name),
        "fastmathFlags": fmf if fmf is not None else NO_FASTMATH,
        "op_bundle_sizes": _NO_BUNDLES,
        "operandSegmentSizes": index_array((len(args), 0)),
    }
    results = () if result_type is None else (result_type,)
    return make(llvm.CallIntrinsicOp, tuple(args), results, props)


def find_symbol(module: ModuleOp, name: str) -> Operation | None:
    """The top-level op of ``module`` whose ``sym_name`` is ``name``, if any."""
    for o in module.body.block.ops:
        sym = o.properties.get("sym_name")
        if sym is not None and getattr(sym, "data", None) == name:
            return o
    return None


def ensure_llvm_func(
    anchor: Operation,
    name: str,
    ftype: llvm.LLVMFunctionType,
    rewriter: PatternRewriter,
) -> None:
    """Declare external function ``name`` in ``anchor``'s module unless a symbol exists."""
    module = anchor.get_toplevel_object()
    if not isinstance(module, ModuleOp):
        fail(anchor, f"'{anchor.name}' is not nested in a builtin.module")
    if find_symbol(module, name) is not None:
        return
    decl = llvm.FuncOp(name, ftype, linkage=llvm.LinkageAttr("external"))
    rewriter.insert(decl, InsertPoint.at_end(module.body.block))


_GEP_DYNAMIC = (llvm.GEP_USE_SSA_VAL,)


def gep(ptr: SSAValue, index: SSAValue | int, elem_type: Attribute) -> llvm.GEPOp:
    """``getelementptr inbounds elem_type, ptr, index`` (one dynamic or constant index)."""
    props: dict[str, Attribute] = {
        "elem_type": elem_type,
        "noWrapFlags": NO_OVERFLOW,
        "inbounds": UnitAttr(),
    }
    if isinstance(index, int):
        props["rawConstantIndices"] = index_array((index,))
        return make(llvm.GEPOp, (ptr,), (PTR,), props)
    props["rawConstantIndices"] = index_array(_GEP_DYNAMIC)
    return make(llvm.GEPOp, (ptr, index), (PTR,), props)


def extract_value(agg: SSAValue, position: int, typ: Attribute) -> llvm.ExtractValueOp:
    """``llvm.extractvalue agg[position]``."""
    return llvm.ExtractValueOp(DenseArrayBase.from_list(i64, [position]), agg, typ)


def insert_value(agg: SSAValue, value: SSAValue, position: int) -> llvm.InsertValueOp:
    """``llvm.insertvalue value, agg[position]``."""
    return llvm.InsertValueOp(DenseArrayBase.from_list(i64, [position]), agg, value)
