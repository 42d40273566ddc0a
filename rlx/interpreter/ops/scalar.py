"""The `arith` and `math` ops that appear inside rlx regions (or fold as constants).

They work on NumPy arrays of any shape (0-d for true scalars), so a region body runs
vectorised.  Signless integers are signed NumPy ints; the unsigned ops (divui, shrui,
uitofp, cmpi ult, ...) reinterpret their operands as unsigned of the same width.  i1
arithmetic is modulo 2.  Float ops compute in f32 for f16/bf16/f8 (f64 for f64) and
round to the result type once; integer division by zero raises.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from rlx.errors import IntegerPowError
from rlx.interpreter.ops._core import OpContext, convert, fcompute, register, to_python
from rlx.interpreter.ops.elementwise import check_divisor, erf, int_div_trunc


def _u(x: np.ndarray) -> np.ndarray:
    """x reinterpreted as unsigned of the same width (i1 -> uint8 0/1)."""
    if x.dtype == np.bool_:
        return x.astype(np.uint8)
    return x if x.dtype.kind == "u" else x.astype(f"u{x.dtype.itemsize}")


def _s(x: np.ndarray) -> np.ndarray:
    """x reinterpreted as signed of the same width (i1 -> int8 0/-1)."""
    if x.dtype == np.bool_:
        return -x.astype(np.int8)
    return x if x.dtype.kind == "i" else x.astype(f"i{x.dtype.itemsize}")


def _bits(x: np.ndarray) -> int:
    return 1 if x.dtype == np.bool_ else x.dtype.itemsize * 8


def _int_op(fn: Callable[..., np.ndarray]) -> Callable[..., np.ndarray]:
    """Lift an integer op so i1 operands compute in uint8 modulo 2."""

    def impl(ctx: OpContext, *xs: np.ndarray) -> np.ndarray:
        if xs and xs[0].dtype == np.bool_:
            return (fn(*(x.astype(np.uint8) for x in xs)) & 1).astype(bool)
        return fn(*xs)

    return impl


def _float_op(fn: Callable[..., np.ndarray]) -> Callable[..., np.ndarray]:
    def impl(ctx: OpContext, *xs: np.ndarray) -> np.ndarray:
        return fn(*(fcompute(x) for x in xs))

    return impl


def _nonzero(b: np.ndarray, a: np.ndarray | None = None) -> np.ndarray:
    """`b` checked as a divisor of `a` (`elementwise.check_divisor`: zero, INT_MIN / -1)."""
    return check_divisor(b if a is None else a, b)


def _shift(kind: str) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """shli / shrsi / shrui; shift amounts >= the bit width give 0 (sign fill for shrsi)."""

    def fn(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        w = _bits(a)
        amount = _u(b).astype(np.uint64)
        big = amount >= w
        sh = np.where(big, 0, amount).astype(a.dtype)
        if kind == "shli":
            r = np.left_shift(a, sh)
            return np.where(big, 0, r)
        if kind == "shrsi":
            s = _s(a)
            return np.where(big, np.where(s < 0, -1, 0), np.right_shift(s, sh.astype(s.dtype)))
        u = _u(a)
        return np.where(big, 0, np.right_shift(u, sh.astype(u.dtype)))

    return fn


def _ceildiv_s(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    q = np.floor_divide(a, _nonzero(b, a))
    return q + (np.remainder(a, b) != 0).astype(q.dtype)


def _count(kind: str) -> Callable[[np.ndarray], np.ndarray]:
    """ctpop / ctlz / cttz."""

    def fn(x: np.ndarray) -> np.ndarray:
        u = _u(x).astype(np.uint64)
        w = _bits(x)
        if kind == "ctpop":
            return np.bitwise_count(u)
        bits = [(u >> np.uint64(i)) & np.uint64(1) for i in range(w)]
        order = bits[::-1] if kind == "ctlz" else bits
        out = np.zeros(u.shape, dtype=np.int64)
        seen = np.zeros(u.shape, dtype=bool)
        for bit in order:
            seen |= bit.astype(bool)
            out += ~seen
        return out

    return fn


INT_BINARY: dict[str, Callable[..., np.ndarray]] = {
    "arith.addi": np.add,
    "arith.subi": np.subtract,
    "arith.muli": np.multiply,
    "arith.divsi": lambda a, b: int_div_trunc(_s(a), _s(b)),
    "arith.divui": lambda a, b: _u(a) // _nonzero(_u(b), _u(a)),
    "arith.remsi": lambda a, b: np.fmod(_s(a), _nonzero(_s(b), _s(a))),
    "arith.remui": lambda a, b: _u(a) % _nonzero(_u(b), _u(a)),
    "arith.floordivsi": lambda a, b: np.floor_divide(_s(a), _nonzero(_s(b), _s(a))),
    "arith.ceildivsi": lambda a, b: _ceildiv_s(_s(a), _s(b)),
    "arith.ceildivui": lambda a, b: _u(a) // _nonzero(_u(b), _u(a)) + (_u(a) % _u(b) != 0),
    "arith.maxsi": lambda a, b: np.maximum(_s(a), _s(b)),
    "arith.minsi": lambda a, b: np.minimum(_s(a), _s(b)),
    "arith.maxui": lambda a, b: np.maximum(_u(a), _u(b)),
    "arith.minui": lambda a, b: np.minimum(_u(a), _u(b)),
    "arith.andi": np.bitwise_and,
    "arith.ori": np.bitwise_or,
    "arith.xori": np.bitwise_xor,
    "arith.shli": _shift("shli"),
    "arith.shrsi": _shift("shrsi"),
    "arith.shrui": _shift("shrui"),
    "math.ipowi": lambda a, b: np.power(a, b) if not np.any(b < 0) else _neg_pow(),
    "math.absi": np.abs,
    "math.ctpop": _count("ctpop"),
    "math.ctlz": _count("ctlz"),
    "math.cttz": _count("cttz"),
}


def _neg_pow() -> np.ndarray:
    raise IntegerPowError("math.ipowi with a negative exponent")


def _round_half_away(x: np.ndarray) -> np.ndarray:
    """Round half away from zero (x - trunc(x) is exact, so no double rounding)."""
    t = np.trunc(x)
    return t + np.sign(x) * (np.abs(x - t) >= x.dtype.type(0.5))


FLOAT_OPS: dict[str, Callable[..., np.ndarray]] = {
    "arith.addf": np.add,
    "arith.subf": np.subtract,
    "arith.mulf": np.multiply,
    "arith.divf": np.divide,
    "arith.remf": np.fmod,
    "arith.negf": np.negative,
    "arith.maximumf": np.maximum,
    "arith.minimumf": np.minimum,
    "arith.maxnumf": np.fmax,
    "arith.minnumf": np.fmin,
    "math.absf": np.abs,
    "math.exp": np.exp,
    "math.exp2": np.exp2,
    "math.expm1": np.expm1,
    "math.log": np.log,
    "math.log2": np.log2,
    "math.log10": np.log10,
    "math.log1p": np.log1p,
    "math.sqrt": np.sqrt,
    "math.rsqrt": lambda x: x.dtype.type(1) / np.sqrt(x),
    "math.cbrt": np.cbrt,
    "math.tanh": np.tanh,
    "math.erf": erf,
    "math.sin": np.sin,
    "math.cos": np.cos,
    "math.tan": np.tan,
    "math.asin": np.arcsin,
    "math.acos": np.arccos,
    "math.atan": np.arctan,
    "math.atan2": np.arctan2,
    "math.sinh": np.sinh,
    "math.cosh": np.cosh,
    "math.asinh": np.arcsinh,
    "math.acosh": np.arccosh,
    "math.atanh": np.arctanh,
    "math.floor": np.floor,
    "math.ceil": np.ceil,
    "math.trunc": np.trunc,
    "math.round": _round_half_away,  # MLIR math.round: half away from zero
    "math.roundeven": np.rint,
    "math.powf": np.power,
    "math.copysign": np.copysign,
    "math.fma": lambda a, b, c: a.astype(np.float64) * b + c,
}

_UNARY_INT = frozenset({"math.absi", "math.ctpop", "math.ctlz", "math.cttz"})
_BINARY_FLOAT = frozenset(
    "arith." + n
    for n in ("addf", "subf", "mulf", "divf", "remf", "maximumf", "minimumf", "maxnumf", "minnumf")
) | {"math.atan2", "math.powf", "math.copysign"}
for _name, _fn in INT_BINARY.items():
    register(_name, nargs=1 if _name in _UNARY_INT else 2)(_int_op(_fn))
for _name, _fn in FLOAT_OPS.items():
    _n = 3 if _name == "math.fma" else 2 if _name in _BINARY_FLOAT else 1
    register(_name, nargs=_n)(_float_op(_fn))


@register("math.fpowi", nargs=2)
def fpowi(ctx: OpContext, x: np.ndarray, n: np.ndarray) -> np.ndarray:
    """math.fpowi: float base to an integer power."""
    xc = fcompute(x)
    return np.power(xc, n.astype(xc.dtype))


@register("arith.constant", nargs=0)
def arith_constant(ctx: OpContext) -> np.ndarray:
    """arith.constant: a scalar (IntegerAttr/FloatAttr) or dense value."""
    value = np.asarray(to_python(ctx.op.value))
    t = ctx.result_type()
    if hasattr(t, "get_shape") and value.shape != tuple(t.get_shape()):
        value = np.broadcast_to(value, ctx.result_shape())
    return value


@register("arith.select", nargs=3)
def select(ctx: OpContext, c: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """arith.select: a where c else b."""
    return np.where(c, a, b)


_CMPF: dict[int, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    1: np.equal, 2: np.greater, 3: np.greater_equal, 4: np.less, 5: np.less_equal,
    6: np.not_equal,
}  # fmt: skip


@register("arith.cmpf", nargs=2)
def cmpf(ctx: OpContext, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """arith.cmpf: ordered (o*) predicates are false on NaN, unordered (u*) true."""
    p = ctx.op.predicate.value.data
    a, b = fcompute(a), fcompute(b)
    nan = np.isnan(a) | np.isnan(b)
    if p == 0:
        return np.zeros(np.broadcast_shapes(a.shape, b.shape), dtype=bool)
    if p == 15:
        return np.ones(np.broadcast_shapes(a.shape, b.shape), dtype=bool)
    if p == 7:
        return ~nan
    if p == 14:
        return nan
    if 1 <= p <= 6:
        return _CMPF[p](a, b) & ~nan
    if 8 <= p <= 13:
        return _CMPF[p - 7](a, b) | nan
    raise ctx.error(f"unknown predicate {p}")


_CMPI: dict[int, tuple[Callable[[np.ndarray, np.ndarray], np.ndarray], Callable]] = {
    0: (np.equal, _s), 1: (np.not_equal, _s), 2: (np.less, _s), 3: (np.less_equal, _s),
    4: (np.greater, _s), 5: (np.greater_equal, _s), 6: (np.less, _u),
    7: (np.less_equal, _u), 8: (np.greater, _u), 9: (np.greater_equal, _u),
}  # fmt: skip


@register("arith.cmpi", nargs=2)
def cmpi(ctx: OpContext, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """arith.cmpi: eq ne slt sle sgt sge ult ule ugt uge."""
    p = ctx.op.predicate.value.data
    if p not in _CMPI:
        raise ctx.error(f"unknown predicate {p}")
    fn, view = _CMPI[p]
    return fn(view(a), view(b))


@register("arith.extf", "arith.truncf", "arith.sitofp", "arith.index_cast", "arith.index_castui")
def convert_op(ctx: OpContext, x: np.ndarray) -> np.ndarray:
    """Value conversions to the result type (sitofp reads its operand as signed)."""
    return convert(_s(x) if ctx.name == "arith.sitofp" else x, ctx.result_dtype())


@register("arith.uitofp", "arith.extui")
def convert_unsigned(ctx: OpContext, x: np.ndarray) -> np.ndarray:
    """uitofp / extui: the operand read as unsigned."""
    return convert(_u(x), ctx.result_dtype())


@register("arith.extsi")
def extsi(ctx: OpContext, x: np.ndarray) -> np.ndarray:
    """extsi: sign extension (i1 true -> -1)."""
    return convert(_s(x), ctx.result_dtype())


@register("arith.trunci")
def trunci(ctx: OpContext, x: np.ndarray) -> np.ndarray:
    """trunci: keep the low bits (two's complement wrap; to i1 keeps bit 0)."""
    dt = ctx.result_dtype()
    return (_u(x) & 1) != 0 if dt == np.bool_ else _u(x).astype(f"u{dt.itemsize}").astype(dt)


@register("arith.fptosi")
def fptosi(ctx: OpContext, x: np.ndarray) -> np.ndarray:
    """fptosi: truncate toward zero, saturating (NaN -> 0)."""
    dt = ctx.result_dtype()
    return convert(x, dt if dt.kind != "u" else f"i{dt.itemsize}")


@register("arith.fptoui")
def fptoui(ctx: OpContext, x: np.ndarray) -> np.ndarray:
    """fptoui: truncate toward zero into the unsigned range, saturating (NaN -> 0)."""
    dt = ctx.result_dtype()
    if dt == np.bool_:
        return convert(convert(x, np.uint8), np.bool_)
    return convert(x, f"u{dt.itemsize}")


@register("arith.bitcast")
def bitcast(ctx: OpContext, x: np.ndarray) -> np.ndarray:
    """bitcast: reinterpret the bits as the (same-width) result type."""
    dt = ctx.result_dtype()
    if dt.itemsize != x.dtype.itemsize:
        raise ctx.error(f"cannot bitcast {x.dtype} to {dt}")
    return x.copy().view(dt)
