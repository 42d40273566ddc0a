"""Shared machinery of the reference interpreter: dtypes, attribute decoding, op registry.

Implementations are keyed by op class (`@register(SoftmaxOp)`; xDSL ops by name) and read
attributes through the op's typed accessors (`ctx.op.axis`). An rlx op parsed without the
dialect (an `UnregisteredOp`) is read through a typed view: an instance of its class with
the same attributes and operand types (`typed_view`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from xdsl.dialects.builtin import (
    ArrayAttr,
    BoolAttr,
    BytesAttr,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    DictionaryAttr,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    StringAttr,
    TensorType,
    UnitAttr,
    UnregisteredOp,
)
from xdsl.ir import Attribute, Block, Operation

from rlx import dtypes as _dtypes
from rlx import errors as _errors
from rlx.dialects.rlx import OPS_BY_NAME

__all__ = [
    "InterpreterError",
    "UnsupportedOpError",
    "InterpreterIndexError",
    "InterpreterDivisionError",
    "InterpreterPowError",
    "run_error",
    "OpContext",
    "REGISTRY",
    "register",
    "typed_view",
    "implementation",
    "registered_names",
    "numpy_dtype",
    "element_type",
    "to_python",
    "to_numpy",
    "dense_attr",
    "op_name",
    "is_float",
    "convert",
    "fcompute",
    "wide",
]


class InterpreterError(ValueError):
    """Raised for invalid programs, inputs or params met while interpreting."""


class UnsupportedOpError(InterpreterError, NotImplementedError):
    """Raised for an operation the reference interpreter has no implementation for."""


class InterpreterIndexError(InterpreterError, _errors.RlxIndexError):
    """An index out of range (the same kind of error a compiled run raises)."""


class InterpreterDivisionError(InterpreterError, _errors.IntegerDivisionError):
    """An integer division or remainder by zero, `INT_MIN / -1`, an integer mean of nothing."""


class InterpreterPowError(InterpreterError, _errors.IntegerPowError):
    """An integer pow with a negative exponent."""


_RUN_ERRORS: tuple[tuple[type[_errors.RlxRunError], type[InterpreterError]], ...] = (
    (_errors.RlxIndexError, InterpreterIndexError),
    (_errors.IntegerDivisionError, InterpreterDivisionError),
    (_errors.IntegerPowError, InterpreterPowError),
)


def run_error(name: str, e: _errors.RlxRunError) -> InterpreterError:
    """A data-dependent error raised by op `name`'s implementation (an `rlx.errors` class,
    message without the op) as the interpreter's error of the same kind, naming the op."""
    if isinstance(e, InterpreterError):
        return e
    for base, cls in _RUN_ERRORS:
        if isinstance(e, base):
            return cls(f"{name}: {e}")
    return InterpreterError(f"{name}: {e}")


# ----------------------------------------------------------------------------- dtypes


def numpy_dtype(elem_type: Attribute) -> np.dtype:
    """The NumPy dtype of an MLIR element type (`rlx.dtypes.numpy_dtype`, the one table)."""
    try:
        return _dtypes.numpy_dtype(elem_type)
    except ValueError as e:
        raise InterpreterError(f"unsupported element type {elem_type}") from e


def element_type(dtype: Any) -> Attribute:
    """The MLIR element type of a NumPy dtype (inverse of `numpy_dtype`; ints are signless)."""
    try:
        return _dtypes.element_type(np.dtype(dtype))
    except ValueError as e:
        raise InterpreterError(f"no MLIR element type for NumPy dtype {np.dtype(dtype)}") from e


def is_float(dtype: Any) -> bool:
    """Whether a dtype is a floating-point one (native or ml_dtypes)."""
    dt = np.dtype(dtype)
    return dt.kind == "f" or _dtypes.is_ml_float(dt)


def fcompute(x: np.ndarray) -> np.ndarray:
    """A float array in its compute type: f64 and f32 as they are, lower precision as f32."""
    return x if x.dtype in (np.float64, np.float32) else x.astype(np.float32)


def wide(x: np.ndarray) -> np.ndarray:
    """An array in its accumulation type: f64 for floats, int64/uint64 for integers."""
    if is_float(x.dtype):
        return x.astype(np.float64)
    if x.dtype.kind == "u":
        return x.astype(np.uint64)
    if x.dtype.kind == "i":
        return x.astype(np.int64)
    return x


def _round_f64_to(x: np.ndarray, dt: np.dtype) -> np.ndarray:
    """Round f64 to an ml_dtypes float once (ml_dtypes itself would round via f32 twice).

    Rounds to f32 with round-to-odd first (truncate, then set the sticky bit if inexact):
    f32 keeps > 2 more bits than any ml_dtypes float, so the final RNE step is exact.
    """
    with np.errstate(all="ignore"):
        r = x.astype(np.float32)
        back = r.astype(np.float64)
        inexact = (back != x) & np.isfinite(x)
        overshoot = inexact & (np.abs(back) > np.abs(x))
        r = np.where(overshoot, np.nextafter(r, np.float32(0)), r)
        bits = r.view(np.uint32) | inexact.astype(np.uint32)
        return bits.view(np.float32).astype(dt)


def convert(x: Any, dtype: Any) -> np.ndarray:
    """`x` as an array of `dtype`, rounding floats to nearest even exactly once.

    float -> int truncates toward zero, saturating to the integer range (NaN -> 0);
    -> bool is x != 0; bool -> number is 0/1; int -> int wraps (two's complement).
    """
    x = np.asarray(x)
    dt = np.dtype(dtype)
    if x.dtype == dt:
        return x
    if dt == np.bool_:
        return x != 0
    if x.dtype == np.bool_:
        return x.astype(np.uint8).astype(dt)
    with np.errstate(all="ignore"):
        if is_float(dt):
            if _dtypes.is_ml_float(dt):
                if _dtypes.is_ml_float(x.dtype) or x.dtype == np.float32 or x.dtype == np.float16:
                    return x.astype(dt)
                return _round_f64_to(x.astype(np.float64), dt)
            if not is_float(x.dtype) and dt == np.float16:
                return x.astype(np.float64).astype(dt)
            return x.astype(dt)
        if is_float(x.dtype):
            info = np.iinfo(dt)
            t = np.trunc(x.astype(np.float64))
            t = np.nan_to_num(t, nan=0.0, posinf=float(info.max), neginf=float(info.min))
            lo = t < info.min
            hi = t >= float(info.max)  # float(max) may round up past max for 64-bit ints
            out = np.where(lo | hi, 0, t).astype(dt)
            out = np.where(lo, info.min, out)
            return np.where(hi, info.max, out).astype(dt)
        return x.astype(dt)


# ------------------------------------------------------------------------- attributes


def to_numpy(attr: DenseIntOrFPElementsAttr) -> np.ndarray:
    """A dense elements attribute as an array of its element type and shape."""
    dt = numpy_dtype(attr.get_element_type())
    raw = attr.data.data
    shape = tuple(attr.get_shape())
    if dt == np.bool_:
        flat = np.frombuffer(raw, dtype=np.uint8) != 0
    else:
        flat = np.frombuffer(raw, dtype=dt.newbyteorder("<") if dt.kind in "iuf" else dt)
        flat = flat.astype(dt)
    size = int(np.prod(shape, dtype=np.int64))
    if flat.size == 1 and size != 1:
        return np.full(shape, flat[0], dtype=dt)
    if flat.size != size:
        raise InterpreterError(
            f"dense attribute holds {flat.size} elements, its type {attr.type} needs {size}"
        )
    return flat.reshape(shape).copy()


def dense_attr(array: Any) -> DenseIntOrFPElementsAttr:
    """A `dense<...> : tensor<...>` attribute holding `array` (inverse of `to_numpy`)."""
    a = np.asarray(array)
    if a.dtype == np.bool_:
        raw = np.where(a, np.uint8(0xFF), np.uint8(0)).tobytes()
    else:
        raw = a.astype(a.dtype.newbyteorder("<") if a.dtype.kind in "iuf" else a.dtype).tobytes()
    return DenseIntOrFPElementsAttr(TensorType(element_type(a.dtype), a.shape), BytesAttr(raw))


def to_python(attr: Attribute) -> Any:
    """Decode an attribute: IntegerAttr -> int (i1 -> bool), FloatAttr -> float,
    StringAttr -> str, UnitAttr -> True, DenseArrayBase / ArrayAttr -> tuple,
    DictionaryAttr -> dict, dense elements -> np.ndarray; anything else unchanged."""
    if isinstance(attr, IntegerAttr):
        v = attr.value.data
        if isinstance(attr.type, IntegerType) and attr.type.width.data == 1:
            return v != 0
        return int(v)
    if isinstance(attr, FloatAttr):
        return float(attr.value.data)
    if isinstance(attr, StringAttr):
        return attr.data
    if isinstance(attr, UnitAttr):
        return True
    if isinstance(attr, DenseArrayBase):
        vals = attr.get_values()
        elt = attr.get_element_type()
        if isinstance(elt, IntegerType) and elt.width.data == 1:
            return tuple(v != 0 for v in vals)
        return tuple(vals)
    if isinstance(attr, DenseIntOrFPElementsAttr):
        return to_numpy(attr)
    if isinstance(attr, ArrayAttr):
        return tuple(to_python(a) for a in attr.data)
    if isinstance(attr, DictionaryAttr):
        return {k: to_python(v) for k, v in attr.data.items()}
    return attr


_ = BoolAttr  # BoolAttr is IntegerAttr[i1]; decoded above


def op_name(op: Operation) -> str:
    """The name of an op, also for unregistered ops parsed with allow_unregistered."""
    if isinstance(op, UnregisteredOp):
        return op.op_name.data
    return op.name


# --------------------------------------------------------------------------- registry


@dataclass
class OpContext:
    """What an op implementation may look at besides its operand arrays.

    `op` is the typed op (its accessors decode attributes: `ctx.op.axis`); `source` is the
    op as it stands in the IR (the same op, or the unregistered op `op` is a view of), whose
    regions and properties region ops read."""

    op: Operation
    name: str
    rng_seed: int
    rng_backend: str
    run_block: Callable[[Block, Sequence[np.ndarray]], list[np.ndarray]]
    call: Callable[[str, Sequence[np.ndarray]], list[np.ndarray]] | None = None
    source: Operation | None = None

    def __post_init__(self) -> None:
        if self.source is None:
            self.source = self.op

    def error(self, msg: str) -> InterpreterError:
        """An InterpreterError whose message names this op."""
        return InterpreterError(f"{self.name}: {msg}")

    def result_type(self, i: int = 0) -> Attribute:
        """The type of result `i`."""
        return self.op.results[i].type

    def result_shape(self, i: int = 0) -> tuple[int, ...]:
        """The static shape of tensor result `i` (dynamic dims are an error here)."""
        t = self.result_type(i)
        if not isinstance(t, TensorType):
            raise self.error(f"result {i} is not a ranked tensor: {t}")
        shape = tuple(t.get_shape())
        if any(d < 0 for d in shape):
            raise self.error(f"result {i} needs a static shape, got {t}")
        return shape

    def result_dtype(self, i: int = 0) -> np.dtype:
        """The NumPy dtype of result `i`'s element type."""
        return numpy_dtype(self.result_type(i))


OpFn = Callable[..., Any]
OpKey = type[Operation] | str
REGISTRY: dict[OpKey, tuple[OpFn, tuple[int, int | None]]] = {}
"""Op class (rlx ops) or op name (xDSL's arith/math ops) -> (implementation, arity)."""


def register(*keys: OpKey, nargs: int | tuple[int, int | None] = 1) -> Callable[[OpFn], OpFn]:
    """Register `fn(ctx, *operands)` for op classes (or names); `nargs` is a count or
    (min, max|None)."""
    arity = (nargs, nargs) if isinstance(nargs, int) else nargs

    def deco(fn: OpFn) -> OpFn:
        for k in keys:
            REGISTRY[k] = (fn, arity)
        return fn

    return deco


def typed_view(op: Operation) -> Operation:
    """`op` itself, or for an unregistered rlx op an instance of its class with the same
    attributes, properties and operand/result types (detached: operands are arguments of
    a throwaway block), so implementations can use the typed accessors."""
    if not isinstance(op, UnregisteredOp):
        return op
    cls = OPS_BY_NAME.get(op.op_name.data)
    if cls is None:
        return op
    scratch = Block(arg_types=[o.type for o in op.operands])
    attrs = {k: v for k, v in op.attributes.items() if k != "op_name__"}
    return cls.create(
        operands=list(scratch.args),
        result_types=[r.type for r in op.results],
        attributes=attrs,
        properties=dict(op.properties),
    )


def implementation(op: Operation) -> tuple[OpFn, tuple[int, int | None]] | None:
    """The registered implementation of `op` (by class, else by name), or None."""
    entry = REGISTRY.get(type(op))
    return entry if entry is not None else REGISTRY.get(op_name(op))


def registered_names() -> frozenset[str]:
    """Names of every op with an implementation."""
    return frozenset(k if isinstance(k, str) else k.name for k in REGISTRY)
