"""The spelling of LLVM IR for `rlx.lowering.llvm_ir`: types, exact literals, dense global
initialisers, fast-math flags, argument attributes, and the tables of llvm-dialect ops that
are one instruction (or intrinsic) name each.

Why a module of its own: these are pure functions of one attribute or op, which the
emitter (`llvm_ir`, the structure of modules, functions, blocks and instructions) only
looks up; tests check the literals directly (`float_literal`).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from xdsl.dialects import llvm
from xdsl.dialects.builtin import (
    BFloat16Type,
    DenseIntOrFPElementsAttr,
    DictionaryAttr,
    Float16Type,
    Float32Type,
    Float64Type,
    Float80Type,
    Float128Type,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    UnitAttr,
    VectorType,
)
from xdsl.ir import Attribute, Operation

from rlx.dtypes import ml_dtype
from rlx.interpreter.ops._core import convert

# ----------------------------------------------------------------------------------------
# Types and literals

_TYPE_CACHE: dict[Attribute, str] = {}


_SCALAR_TYPES: dict[type[Attribute], str] = {
    IndexType: "i64",
    Float32Type: "float",
    Float64Type: "double",
    Float16Type: "half",
    BFloat16Type: "bfloat",
    Float80Type: "x86_fp80",
    Float128Type: "fp128",
    llvm.LLVMVoidType: "void",
}
"""LLVM IR spelling of the types without parameters."""


def type_text(t: Attribute) -> str:
    """LLVM IR spelling of a type."""
    s = _TYPE_CACHE.get(t)
    if s is not None:
        return s
    if isinstance(t, IntegerType):
        s = f"i{t.width.data}"
    elif type(t) in _SCALAR_TYPES:
        s = _SCALAR_TYPES[type(t)]
    elif isinstance(t, llvm.LLVMPointerType):
        space = t.addr_space
        n = getattr(space, "data", 0)
        s = "ptr" if not n else f"ptr addrspace({n})"
    elif isinstance(t, llvm.LLVMArrayType):
        s = f"[{t.size.data} x {type_text(t.type)}]"
    elif isinstance(t, llvm.LLVMStructType):
        s = "{ " + ", ".join(type_text(e) for e in t.types.data) + " }"
    elif isinstance(t, VectorType):
        n = 1
        for d in t.get_shape():
            n *= d
        s = f"<{n} x {type_text(t.element_type)}>"
    else:
        raise ValueError(f"to_llvm_ir: unsupported type {t}")
    _TYPE_CACHE[t] = s
    return s


def float_literal(value: float, t: Attribute) -> str:
    """Exact hexadecimal LLVM float literal of ``value`` rounded to type ``t``."""
    if isinstance(t, Float64Type):
        return f"0x{np.float64(value).view(np.uint64):016X}"
    if isinstance(t, Float32Type):
        with np.errstate(over="ignore"):
            widened = np.float64(np.float32(value))
        return f"0x{widened.view(np.uint64):016X}"
    if isinstance(t, Float16Type):
        with np.errstate(over="ignore"):
            return f"0xH{np.float16(value).view(np.uint16):04X}"
    if isinstance(t, BFloat16Type):
        if value != value:  # NaN
            return "0xR7FC0"
        # f64 -> bf16 rounded once, to nearest even (as the interpreter converts)
        bf16 = ml_dtype("bfloat16")
        return f"0xR{int(convert(np.array(value), bf16).view(np.uint16)):04X}"
    raise ValueError(f"to_llvm_ir: unsupported float type {t}")


def scalar_literal(attr: Attribute, t: Attribute) -> str:
    if isinstance(attr, IntegerAttr):
        v = attr.value.data
        if isinstance(t, IntegerType) and t.width.data == 1:
            return "true" if v & 1 else "false"
        return str(v)
    if isinstance(attr, FloatAttr):
        return float_literal(attr.value.data, t)
    raise ValueError(f"to_llvm_ir: unsupported constant {attr}")


_BYTE_ESCAPES = np.array([f"\\{i:02X}".encode() for i in range(256)], dtype="S3")


def dense_bytes(attr: DenseIntOrFPElementsAttr) -> bytes:
    """Raw little-endian bytes of a dense attribute (splats expanded)."""
    data = attr.data.data
    numel = 1
    for d in attr.get_shape():
        numel *= d
    if numel > 1 and len(attr) == 1:
        data = data * numel
    return data


def c_string(data: bytes) -> str:
    return _BYTE_ESCAPES[np.frombuffer(data, np.uint8)].tobytes().decode("ascii")


_FASTMATH_ORDER = ("reassoc", "nnan", "ninf", "nsz", "arcp", "contract", "afn")


def fastmath_flags(op: Operation) -> str:
    """`` fast`` / `` nnan ninf`` / empty: the fast-math flags of an op, with a leading space."""
    attr = op.properties.get("fastmathFlags")
    if attr is None:
        return ""
    flags = {f.value for f in attr.data}  # pyright: ignore[reportAttributeAccessIssue]
    if not flags:
        return ""
    if len(flags) == len(_FASTMATH_ORDER):
        return " fast"
    return " " + " ".join(f for f in _FASTMATH_ORDER if f in flags)


def arg_attrs_text(attrs: DictionaryAttr | None) -> str:
    if attrs is None:
        return ""
    out: list[str] = []
    for key, value in attrs.data.items():
        match key:
            case (
                "llvm.noalias"
                | "llvm.nonnull"
                | "llvm.noundef"
                | "llvm.readonly"
                | ("llvm.writeonly")
                | "llvm.readnone"
                | "llvm.nofree"
            ):
                out.append(key[5:])
            case "llvm.nocapture":
                out.append("captures(none)")
            case "llvm.align" if isinstance(value, IntegerAttr):
                out.append(f"align {value.value.data}")
            case "llvm.dereferenceable" if isinstance(value, IntegerAttr):
                out.append(f"dereferenceable({value.value.data})")
            case "llvm.dereferenceable_or_null" if isinstance(value, IntegerAttr):
                out.append(f"dereferenceable_or_null({value.value.data})")
            case _:
                pass
    return (" " + " ".join(out)) if out else ""


def global_text(op: llvm.GlobalOp) -> str:
    """The definition (or external declaration) of a global, its initialiser spelt exactly."""
    linkage = op.linkage.linkage.data
    name = op.sym_name.data
    kind = "constant" if op.constant is not None else "global"
    align = f", align {op.alignment.value.data}" if op.alignment is not None else ""
    gtype = type_text(op.global_type)
    value = op.value
    if op.body.blocks:
        raise ValueError(f"to_llvm_ir: global @{name} with an initializer region")
    if value is None and linkage == "external":
        return f"@{name} = external {kind} {gtype}{align}"
    prefix = "" if linkage == "external" else f"{linkage} "
    if isinstance(value, DenseIntOrFPElementsAttr):
        data = dense_bytes(value)
        init = f'[{len(data)} x i8] c"{c_string(data)}"' if data else f"{gtype} zeroinitializer"
    elif isinstance(value, IntegerAttr | FloatAttr):
        init = f"{gtype} {scalar_literal(value, op.global_type)}"
    elif value is None or isinstance(value, UnitAttr):
        init = f"{gtype} zeroinitializer"
    else:
        raise ValueError(f"to_llvm_ir: unsupported initializer of @{name}: {value}")
    return f"@{name} = {prefix}{kind} {init}{align}"


# ----------------------------------------------------------------------------------------
# Operation tables


def _overflow_flags(op: Operation) -> str:
    """`` nuw`` / `` nsw`` of an integer add, sub, mul or shl (its `overflowFlags` bits)."""
    ovf = op.properties.get("overflowFlags")
    if not isinstance(ovf, IntegerAttr):
        return ""
    bits = ovf.value.data
    return (" nuw" if bits & 2 else "") + (" nsw" if bits & 1 else "")


def _exact_flag(op: Operation) -> str:
    return " exact" if op.properties.get("isExact") is not None else ""


def _disjoint_flag(op: Operation) -> str:
    return " disjoint" if op.properties.get("isDisjoint") is not None else ""


def cast_flags(op: Operation) -> str:
    """`` nneg`` (zext of a non-negative value) or `` nuw`` / `` nsw`` (trunc) of a cast."""
    flags = " nneg" if op.properties.get("nonNeg") is not None else ""
    ovf = op.properties.get("overflowFlags")
    if isinstance(ovf, llvm.OverflowAttr):
        names = {f.value for f in ovf.data}
        flags = (" nuw" if "nuw" in names else "") + (" nsw" if "nsw" in names else "")
    return flags


Flags = Callable[[Operation], str]
"""The flags of an op as its instruction spells them, with a leading space (or empty)."""

BINOPS: dict[type[Operation], tuple[str, Flags]] = {
    llvm.AddOp: ("add", _overflow_flags),
    llvm.SubOp: ("sub", _overflow_flags),
    llvm.MulOp: ("mul", _overflow_flags),
    llvm.ShlOp: ("shl", _overflow_flags),
    llvm.UDivOp: ("udiv", _exact_flag),
    llvm.SDivOp: ("sdiv", _exact_flag),
    llvm.LShrOp: ("lshr", _exact_flag),
    llvm.AShrOp: ("ashr", _exact_flag),
    llvm.URemOp: ("urem", _disjoint_flag),
    llvm.SRemOp: ("srem", _disjoint_flag),
    llvm.AndOp: ("and", _disjoint_flag),
    llvm.XOrOp: ("xor", _disjoint_flag),
    llvm.OrOp: ("or", _disjoint_flag),
    llvm.FAddOp: ("fadd", fastmath_flags),
    llvm.FSubOp: ("fsub", fastmath_flags),
    llvm.FMulOp: ("fmul", fastmath_flags),
    llvm.FDivOp: ("fdiv", fastmath_flags),
    llvm.FRemOp: ("frem", fastmath_flags),
}
"""Two-operand instructions: op class -> (opcode, the op's flags with a leading space)."""


CASTS: dict[type[Operation], str] = {
    llvm.TruncOp: "trunc",
    llvm.ZExtOp: "zext",
    llvm.SExtOp: "sext",
    llvm.FPExtOp: "fpext",
    llvm.FPTruncOp: "fptrunc",
    llvm.SIToFPOp: "sitofp",
    llvm.BitcastOp: "bitcast",
    llvm.PtrToIntOp: "ptrtoint",
    llvm.IntToPtrOp: "inttoptr",
}
INTRINSIC_OPS: dict[type[Operation], str] = {
    llvm.FAbsOp: "llvm.fabs",
    llvm.FCeilOp: "llvm.ceil",
    llvm.FFloorOp: "llvm.floor",
    llvm.FSqrtOp: "llvm.sqrt",
    llvm.FExpOp: "llvm.exp",
    llvm.FExp2Op: "llvm.exp2",
    llvm.FLogOp: "llvm.log",
    llvm.FLog2Op: "llvm.log2",
    llvm.FSinOp: "llvm.sin",
    llvm.FCosOp: "llvm.cos",
    llvm.FPowOp: "llvm.pow",
    llvm.FCopySignOp: "llvm.copysign",
    llvm.FMAOp: "llvm.fma",
    llvm.VectorFMaxOp: "llvm.maxnum",
    llvm.VectorFMinOp: "llvm.minnum",
}
LITERAL_OPS = (llvm.ConstantOp, llvm.AddressOfOp, llvm.ZeroOp, llvm.UndefOp)
