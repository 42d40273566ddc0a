"""The one mapping between rlx element types, their short names and NumPy dtypes
(bf16 and the fp8 types come from ml_dtypes).

ml_dtypes is imported on first use, not with this module: importing it costs ~0.7 s of
CPU (ml_dtypes 0.7 registers its NumPy casts and ufunc loops at import), which every
`rlx-opt` run whose passes only name element types (precision, legalize, ...) would
pay otherwise. No NumPy dtype of an ml_dtypes type can exist before ml_dtypes is
imported, so a lookup by NumPy dtype needs it only once it is loaded.
"""

from __future__ import annotations

import functools
import sys
from typing import Any

import numpy as np
from xdsl.dialects.builtin import (
    BFloat16Type,
    Float4E2M1FNType,
    Float6E2M3FNType,
    Float6E3M2FNType,
    Float8E3M4Type,
    Float8E4M3B11FNUZType,
    Float8E4M3FNType,
    Float8E4M3FNUZType,
    Float8E4M3Type,
    Float8E5M2FNUZType,
    Float8E5M2Type,
    Float8E8M0FNUType,
    Float16Type,
    Float32Type,
    Float64Type,
    IntegerType,
    Signedness,
)
from xdsl.ir import Attribute

_TABLE: list[tuple[str, Attribute, Any]] = [  # NumPy dtype, or the name of an ml_dtypes type
    ("f64", Float64Type(), np.dtype(np.float64)),
    ("f32", Float32Type(), np.dtype(np.float32)),
    ("f16", Float16Type(), np.dtype(np.float16)),
    ("bf16", BFloat16Type(), "bfloat16"),
    ("f8e4m3fn", Float8E4M3FNType(), "float8_e4m3fn"),
    ("f8e5m2", Float8E5M2Type(), "float8_e5m2"),
    ("f8e4m3fnuz", Float8E4M3FNUZType(), "float8_e4m3fnuz"),
    ("f8e5m2fnuz", Float8E5M2FNUZType(), "float8_e5m2fnuz"),
    ("i64", IntegerType(64), np.dtype(np.int64)),
    ("i32", IntegerType(32), np.dtype(np.int32)),
    ("i8", IntegerType(8), np.dtype(np.int8)),
    ("i1", IntegerType(1), np.dtype(np.bool_)),
    ("ui8", IntegerType(8, Signedness.UNSIGNED), np.dtype(np.uint8)),
]
_ALIASES = {
    "float64": "f64", "double": "f64", "float32": "f32", "float": "f32", "float16": "f16",
    "half": "f16", "bfloat16": "bf16", "int64": "i64", "int32": "i32", "int8": "i8",
    "bool": "i1", "uint8": "ui8", "f8e4m3": "f8e4m3fn",
}  # fmt: skip

NAMES = tuple(n for n, _, _ in _TABLE)


def _import_ml_dtypes() -> Any:
    import ml_dtypes

    return ml_dtypes


def ml_dtype(name: str) -> np.dtype:
    """The NumPy dtype of ml_dtypes type `name` ("bfloat16", "float8_e4m3fn", ...),
    importing ml_dtypes on first use."""
    return np.dtype(getattr(_import_ml_dtypes(), name))


@functools.cache
def ml_float_dtypes() -> frozenset[np.dtype]:
    """Every float dtype ml_dtypes defines (bfloat16, float8_*, float6_*, float4_*)."""
    m = _import_ml_dtypes()
    return frozenset(
        np.dtype(getattr(m, n))
        for n in dir(m)
        if n.startswith(("float8", "bfloat16", "float6", "float4"))
        and isinstance(getattr(m, n), type)
    )


def is_ml_float(dtype: np.dtype) -> bool:
    """Whether `dtype` is one of `ml_float_dtypes()` (without importing ml_dtypes when no
    ml_dtypes dtype can exist yet)."""
    return "ml_dtypes" in sys.modules and dtype in ml_float_dtypes()


@functools.cache
def _full_table() -> tuple[tuple[str, Attribute, np.dtype], ...]:
    """`_TABLE` with every NumPy dtype resolved (imports ml_dtypes)."""
    return tuple((n, t, ml_dtype(d) if isinstance(d, str) else d) for n, t, d in _TABLE)


def _rows(npd: np.dtype | None = None) -> tuple[tuple[str, Attribute, np.dtype], ...]:
    """The table rows whose NumPy dtype can equal `npd` (all rows when `npd` is None):
    the native rows only while ml_dtypes is not imported, so no lookup imports it."""
    if npd is None or "ml_dtypes" in sys.modules:
        return _full_table()
    return _NATIVE_ROWS


_NATIVE_ROWS = tuple((n, t, d) for n, t, d in _TABLE if not isinstance(d, str))

_EXTRA_FLOATS = {
    Float8E4M3Type: "float8_e4m3",
    Float8E4M3B11FNUZType: "float8_e4m3b11fnuz",
    Float8E3M4Type: "float8_e3m4",
    Float8E8M0FNUType: "float8_e8m0fnu",
    Float6E2M3FNType: "float6_e2m3fn",
    Float6E3M2FNType: "float6_e3m2fn",
    Float4E2M1FNType: "float4_e2m1fn",
}
"""Element types xDSL knows that rlx ops do not take, but NumPy (ml_dtypes) can hold."""


def element_type(dtype: Any) -> Attribute:
    """xDSL element type from a short name ("f32", "bf16", "i1"...), a NumPy dtype or a type.

    NumPy integers map to signless integers (unsigned ones to `ui<N>`), bool to i1.
    """
    if isinstance(dtype, Attribute):
        return dtype
    if isinstance(dtype, str):
        key = _ALIASES.get(dtype.lower(), dtype.lower())
        for n, t, _ in _TABLE:
            if n == key:
                return t
        _import_ml_dtypes()  # np.dtype() knows ml_dtypes' type names once it is imported
        try:
            npd = np.dtype(dtype)
        except TypeError:
            raise ValueError(
                f"unknown element type '{dtype}'; expected one of {', '.join(NAMES)}"
            ) from None
    else:
        npd = np.dtype(dtype)
    for _, t, d in _rows(npd):
        if d == npd:
            return t
    if npd.kind in "iu":
        return IntegerType(
            npd.itemsize * 8, Signedness.UNSIGNED if npd.kind == "u" else Signedness.SIGNLESS
        )
    raise ValueError(f"NumPy dtype {npd} has no rlx element type")


def numpy_dtype(elem: Attribute | str) -> np.dtype:
    """NumPy dtype of an element type (or short name, or a shaped type's element type).

    f64/f32/f16 are native, bf16 and the f8 types come from ml_dtypes; signless and signed
    integers are signed, unsigned ones unsigned; i1 is bool; index is int64.
    """
    from xdsl.dialects.builtin import ContainerType, DenseArrayBase, IndexType

    t = element_type(elem) if isinstance(elem, str) else elem
    if isinstance(t, ContainerType) and not isinstance(t, DenseArrayBase):
        t = t.get_element_type()
    for _, tt, d in _TABLE:
        if tt == t:
            return ml_dtype(d) if isinstance(d, str) else d
    extra = _EXTRA_FLOATS.get(type(t))
    if extra is not None:
        return ml_dtype(extra)
    if isinstance(t, IndexType):
        return np.dtype(np.int64)
    if isinstance(t, IntegerType) and t.width.data in (8, 16, 32, 64):
        unsigned = t.signedness.data == Signedness.UNSIGNED
        return np.dtype(f"{'u' if unsigned else 'i'}{t.width.data // 8}")
    raise ValueError(f"element type {t} has no NumPy dtype")


def type_name(elem: Attribute) -> str:
    """Short name of an element type ("f32", "bf16", ...)."""
    for n, t, _ in _TABLE:
        if t == elem:
            return n
    return str(elem)


def to_dense_attr(value: Any, t: Attribute) -> Any:
    """A `dense<...>` attribute of tensor type `t` holding `value` (converted to t's dtype),
    built from raw bytes so large weights cost no per-element Python work."""
    from xdsl.dialects.builtin import BytesAttr, DenseIntOrFPElementsAttr, TensorType

    assert isinstance(t, TensorType)
    arr = np.ascontiguousarray(np.asarray(value).astype(numpy_dtype(t.element_type), copy=False))
    return DenseIntOrFPElementsAttr(t, BytesAttr(arr.tobytes()))
