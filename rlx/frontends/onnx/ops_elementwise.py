"""Elementwise ONNX ops: arithmetic, activations, comparisons, logic, Cast, Clip, Where."""

from __future__ import annotations

from functools import reduce

import ml_dtypes
import numpy as np
from xdsl.ir import Attribute, SSAValue

from rlx.dialects.rlx.base import is_float
from rlx.dtypes import numpy_dtype
from rlx.frontends.onnx.importer import onnx_elem
from rlx.frontends.onnx.node import Node, elem, shape
from rlx.frontends.onnx.registry import converter

_UNARY = {
    "Relu": "relu", "Sigmoid": "sigmoid", "Tanh": "tanh", "Exp": "exp", "Log": "log",
    "Sqrt": "sqrt", "Neg": "neg", "Abs": "abs", "Erf": "erf", "Floor": "floor",
    "Ceil": "ceil", "Round": "round", "Sin": "sin", "Cos": "cos", "HardSwish": "hard_swish",
}  # fmt: skip
_BINARY = {"Add": "add", "Sub": "sub", "Mul": "mul", "Div": "div", "Max": "max", "Min": "min"}
_COMPARE = {
    "Equal": "eq", "Less": "lt", "Greater": "gt", "LessOrEqual": "le", "GreaterOrEqual": "ge",
}  # fmt: skip


@converter(*_UNARY, attrs=())
def unary(n: Node) -> list[SSAValue]:
    return [n.emit(_UNARY[n.op_type], n.input(0))]


@converter(*_BINARY, attrs=())
def binary(n: Node) -> list[SSAValue]:
    return [reduce(lambda a, b: n.emit(_BINARY[n.op_type], a, b), n.inputs())]


@converter("Sum", attrs=())
def sum_(n: Node) -> list[SSAValue]:
    return [reduce(lambda a, b: n.emit("add", a, b), n.inputs())]


@converter("Mean", attrs=())
def mean(n: Node) -> list[SSAValue]:
    xs = n.inputs()
    s = reduce(lambda a, b: n.emit("add", a, b), xs)
    return [n.emit("div", s, n.constant(len(xs), s))]


@converter("Pow", attrs=())
def pow_(n: Node) -> list[SSAValue]:
    """x ** y in x's type. An integer base with a float exponent is computed in f64 and
    truncated, as onnx.reference and onnxruntime do (the exponent was truncated first:
    2 ** -0.7 gave 1, not 0); a NaN (a negative base, a fractional exponent) becomes 0."""
    x, y = n.input(0), n.input(1)
    if not is_float(elem(x)) and is_float(elem(y)):
        return [n.cast(n.emit("pow", n.cast(x, "f64"), n.cast(y, "f64")), elem(x))]
    return [n.emit("pow", x, n.cast(y, elem(x)))]


def _float_mod(n: Node, a: SSAValue, b: SSAValue, floored: bool) -> SSAValue:
    """Float Mod as onnx.reference computes it: `np.fmod` (fmod=1) or `np.mod` (fmod=0,
    which the ONNX spec does not allow for floats; onnx.reference runs np.mod).

    The remainder `a - trunc(a/b)·b` is computed in f64, where for f16/bf16/f32 operands
    and |a/b| < 2^29 the product is exact; a quotient rounded up to the next integer shows
    as a remainder of the wrong sign and is corrected by one `b`, so the result is the
    exact C remainder (f64 operands: exact while the product is, else within a rounding).
    Zeros take `a`'s sign (fmod) or `b`'s (np.mod); np.mod adds `b` to a non-zero
    remainder whose sign differs from `b`'s, and the single rounding to the operand type
    equals NumPy's (f16: via f32) and ml_dtypes' (bf16: via f32)."""
    et = elem(a)
    # f16/bf16 go through f32 both ways (exact), avoiding direct f16 <-> f64 conversions
    small = numpy_dtype(et).itemsize < 4
    a, b = (n.cast(n.cast(v, "f32") if small else v, "f64") for v in (a, b))
    zero = n.constant(0.0, a)

    def lt0(v: SSAValue) -> SSAValue:
        return n.emit("compare", v, zero, predicate="lt")

    def ne(u: SSAValue, v: SSAValue) -> SSAValue:
        return n.emit("compare", u, v, predicate="ne")

    q = n.emit("div", a, b)
    q = n.emit("where", lt0(q), n.emit("ceil", q), n.emit("floor", q))
    r = n.emit("sub", a, n.emit("mul", q, b))
    nonzero = ne(r, zero)
    wrong = n.emit("where", nonzero, ne(lt0(r), lt0(a)), n.constant(False, "bool"))
    step = n.emit("where", ne(lt0(a), lt0(b)), n.emit("neg", b), b)
    r = n.emit("where", wrong, n.emit("add", r, step), r)
    inf = n.emit("compare", n.emit("abs", b), n.constant(np.inf, b), predicate="eq")
    r = n.emit("where", inf, a, r)  # fmod(a, ±inf) = a
    r = n.emit("where", n.emit("compare", r, zero, predicate="eq"), n.emit("mul", a, zero), r)
    if floored:
        fix = n.emit("where", ne(r, zero), ne(lt0(r), lt0(b)), n.constant(False, "bool"))
        r = n.emit("where", fix, n.emit("add", r, b), r)
        signed_zero = n.emit("div", zero, b)  # ±0 with b's sign (r is NaN where b is 0)
        r = n.emit("where", n.emit("compare", r, zero, predicate="eq"), signed_zero, r)
    return n.cast(n.cast(r, "f32") if small else r, et)


@converter("Mod", attrs=("fmod",))
def mod(n: Node) -> list[SSAValue]:
    a, b = n.input(0), n.input(1)
    if is_float(elem(a)):
        return [_float_mod(n, a, b, floored=not n.attr("fmod", 0))]
    r = n.emit("sub", a, n.emit("mul", n.emit("div", a, b), b))  # truncated remainder
    if n.attr("fmod", 0):
        return [r]
    zero = n.constant(0, a)
    fix = n.emit(
        "where",
        n.emit(
            "compare",
            n.emit("compare", r, zero, predicate="lt"),
            n.emit("compare", b, zero, predicate="lt"),
            predicate="ne",
        ),
        n.emit("compare", r, zero, predicate="ne"),
        n.constant(False, "bool"),
    )
    return [n.emit("where", fix, n.emit("add", r, b), r)]


@converter(*_COMPARE, attrs=())
def compare(n: Node) -> list[SSAValue]:
    return [n.emit("compare", n.input(0), n.input(1), predicate=_COMPARE[n.op_type])]


@converter("Not", attrs=())
def not_(n: Node) -> list[SSAValue]:
    return [n.emit("compare", n.input(0), n.constant(False, "bool"), predicate="eq")]


@converter("And", "Or", "Xor", attrs=())
def logic(n: Node) -> list[SSAValue]:
    a, b = n.input(0), n.input(1)
    if n.op_type == "Xor":
        return [n.emit("compare", a, b, predicate="ne")]
    if n.op_type == "And":
        return [n.emit("where", a, b, n.constant(False, "bool"))]
    return [n.emit("where", a, n.constant(True, "bool"), b)]


@converter("IsNaN", attrs=())
def isnan(n: Node) -> list[SSAValue]:
    x = n.input(0)
    return [n.emit("compare", x, x, predicate="ne")]


@converter("IsInf", attrs=("detect_negative", "detect_positive"))
def isinf(n: Node) -> list[SSAValue]:
    x = n.input(0)
    pos = n.emit("compare", x, n.constant(np.inf, x), predicate="eq")
    neg = n.emit("compare", x, n.constant(-np.inf, x), predicate="eq")
    p, m = n.attr("detect_positive", 1), n.attr("detect_negative", 1)
    if p and m:
        return [n.emit("where", pos, n.constant(True, "bool"), neg)]
    if p:
        return [pos]
    return [neg if m else n.typed("broadcast_to", n.constant(False, "bool"), shape(x))]


@converter("Where", attrs=())
def where(n: Node) -> list[SSAValue]:
    return [n.emit("where", n.input(0), n.input(1), n.input(2))]


def _cast(n: Node, x: SSAValue, to: Attribute) -> SSAValue:
    """Cast; to an 8-bit float with saturate=1 (the default), clamp to the finite range."""
    if n.attr("round_mode", "up") != "up":
        raise n.error(f"round_mode={n.attr('round_mode')} is not supported")
    dt = numpy_dtype(to)
    if "float8" in dt.name and is_float(elem(x)) and n.attr("saturate", 1):
        big = float(ml_dtypes.finfo(dt).max)
        x = n.emit("min", n.emit("max", x, n.constant(-big, x)), n.constant(big, x))
    return n.cast(x, to)


@converter("Cast", attrs=("to", "saturate", "round_mode"))
def cast(n: Node) -> list[SSAValue]:
    return [_cast(n, n.input(0), onnx_elem(n.attr("to")))]


@converter("CastLike", attrs=("saturate", "round_mode"))
def cast_like(n: Node) -> list[SSAValue | np.ndarray]:
    known = n.ctx.known.get(n.proto.input[0])
    to = numpy_dtype(elem(n.input(1)))
    ok = to.kind in "fb" or to.name == "bfloat16"
    if known is not None and known.dtype.kind in "fb" and ok and "float8" not in to.name:
        return [known.astype(to)]  # a constant (e.g. -inf) cast like a run-time value
    return [_cast(n, n.input(0), elem(n.input(1)))]


@converter("Identity", attrs=())
def identity(n: Node) -> list[SSAValue]:
    return [n.input(0)]


@converter("Clip", attrs=())
def clip(n: Node) -> list[SSAValue]:
    x = n.input(0)
    if n.has(1):
        x = n.emit("max", x, n.input(1))
    if n.has(2):
        x = n.emit("min", x, n.input(2))
    return [x]


def _relu_like(n: Node, x: SSAValue, neg: SSAValue) -> SSAValue:
    """`x if x > 0 else neg`."""
    return n.emit("where", n.emit("compare", x, n.constant(0, x), predicate="gt"), x, neg)


@converter("LeakyRelu", attrs=("alpha",))
def leaky_relu(n: Node) -> list[SSAValue]:
    x = n.input(0)
    return [_relu_like(n, x, n.emit("mul", x, n.constant(n.attr("alpha", 0.01), x)))]


@converter("PRelu", attrs=())
def prelu(n: Node) -> list[SSAValue]:
    x = n.input(0)
    return [_relu_like(n, x, n.emit("mul", x, n.input(1)))]


@converter("ThresholdedRelu", attrs=("alpha",))
def thresholded_relu(n: Node) -> list[SSAValue]:
    x = n.input(0)
    gt = n.emit("compare", x, n.constant(n.attr("alpha", 1.0), x), predicate="gt")
    return [n.emit("where", gt, x, n.constant(0, x))]


def _expm1(n: Node, x: SSAValue) -> SSAValue:
    return n.emit("sub", n.emit("exp", x), n.constant(1, x))


@converter("Elu", attrs=("alpha",))
def elu(n: Node) -> list[SSAValue]:
    x = n.input(0)
    return [_relu_like(n, x, n.emit("mul", _expm1(n, x), n.constant(n.attr("alpha", 1.0), x)))]


@converter("Selu", attrs=("alpha", "gamma"))
def selu(n: Node) -> list[SSAValue]:
    x = n.input(0)
    alpha, gamma = (
        n.attr("alpha", 1.67326319217681884765625),
        n.attr("gamma", 1.05070102214813232421875),
    )
    y = _relu_like(n, x, n.emit("mul", _expm1(n, x), n.constant(alpha, x)))
    return [n.emit("mul", y, n.constant(gamma, x))]


@converter("Celu", attrs=("alpha",))
def celu(n: Node) -> list[SSAValue]:
    x = n.input(0)
    a = n.constant(n.attr("alpha", 1.0), x)
    neg = n.emit("mul", a, _expm1(n, n.emit("div", x, a)))
    return [n.emit("add", n.emit("relu", x), n.emit("min", n.constant(0, x), neg))]


def _hard_sigmoid(n: Node, x: SSAValue, alpha: float, beta: float) -> SSAValue:
    y = n.emit("add", n.emit("mul", x, n.constant(alpha, x)), n.constant(beta, x))
    return n.emit("min", n.emit("max", y, n.constant(0, x)), n.constant(1, x))


@converter("HardSigmoid", attrs=("alpha", "beta"))
def hard_sigmoid(n: Node) -> list[SSAValue]:
    return [_hard_sigmoid(n, n.input(0), n.attr("alpha", 0.2), n.attr("beta", 0.5))]


def _softplus(n: Node, x: SSAValue) -> SSAValue:
    return n.emit("log", n.emit("add", n.emit("exp", x), n.constant(1, x)))


@converter("Softplus", attrs=())
def softplus(n: Node) -> list[SSAValue]:
    return [_softplus(n, n.input(0))]


@converter("Softsign", attrs=())
def softsign(n: Node) -> list[SSAValue]:
    x = n.input(0)
    return [n.emit("div", x, n.emit("add", n.emit("abs", x), n.constant(1, x)))]


@converter("Mish", attrs=())
def mish(n: Node) -> list[SSAValue]:
    x = n.input(0)
    return [n.emit("mul", x, n.emit("tanh", _softplus(n, x)))]


@converter("Gelu", attrs=("approximate",))
def gelu(n: Node) -> list[SSAValue]:
    approx = n.attr("approximate", "none")
    if approx not in ("none", "tanh"):
        raise n.error(f"approximate='{approx}' is not supported")
    return [n.emit("gelu" if approx == "none" else "gelu_tanh", n.input(0))]


@converter("Reciprocal", attrs=())
def reciprocal(n: Node) -> list[SSAValue]:
    x = n.input(0)
    return [n.emit("div", n.constant(1, x), x)]


@converter("Tan", attrs=())
def tan(n: Node) -> list[SSAValue]:
    x = n.input(0)
    return [n.emit("div", n.emit("sin", x), n.emit("cos", x))]


@converter("Sinh", "Cosh", attrs=())
def sinh_cosh(n: Node) -> list[SSAValue]:
    x = n.input(0)
    e, em = n.emit("exp", x), n.emit("exp", n.emit("neg", x))
    s = n.emit("sub" if n.op_type == "Sinh" else "add", e, em)
    return [n.emit("mul", s, n.constant(0.5, x))]


@converter("Asinh", "Acosh", attrs=())
def asinh_acosh(n: Node) -> list[SSAValue]:
    x = n.input(0)
    one = n.constant(1 if n.op_type == "Asinh" else -1, x)
    r = n.emit("sqrt", n.emit("add", n.emit("mul", x, x), one))
    return [n.emit("log", n.emit("add", x, r))]


@converter("Atanh", attrs=())
def atanh(n: Node) -> list[SSAValue]:
    x = n.input(0)
    one = n.constant(1, x)
    q = n.emit("div", n.emit("add", one, x), n.emit("sub", one, x))
    return [n.emit("mul", n.emit("log", q), n.constant(0.5, x))]


@converter("Sign", attrs=())
def sign(n: Node) -> list[SSAValue]:
    x = n.input(0)
    zero = n.constant(0, x)
    pos = n.emit("where", n.emit("compare", x, zero, predicate="gt"), n.constant(1, x), zero)
    return [n.emit("where", n.emit("compare", x, zero, predicate="lt"), n.constant(-1, x), pos)]


@converter("Shrink", attrs=("bias", "lambd"))
def shrink(n: Node) -> list[SSAValue]:
    x = n.input(0)
    lambd, bias = n.attr("lambd", 0.5), n.attr("bias", 0.0)
    if not is_float(elem(x)):  # lambd 1.5 / bias 1.5 as integer constants were 1 / 1
        return [n.cast(_shrink(n, n.cast(x, "f64"), lambd, bias), elem(x))]
    return [_shrink(n, x, lambd, bias)]


def _shrink(n: Node, x: SSAValue, lambd: float, bias: float) -> SSAValue:
    lo = n.emit("compare", x, n.constant(-lambd, x), predicate="lt")
    hi = n.emit("compare", x, n.constant(lambd, x), predicate="gt")
    zero = n.constant(0, x)
    y = n.emit("where", hi, n.emit("sub", x, n.constant(bias, x)), zero)
    return n.emit("where", lo, n.emit("add", x, n.constant(bias, x)), y)


@converter("Swish", attrs=("alpha",))
def swish(n: Node) -> list[SSAValue]:
    x = n.input(0)
    alpha = n.attr("alpha", 1.0)
    if alpha == 1.0:
        return [n.emit("silu", x)]
    return [n.emit("mul", x, n.emit("sigmoid", n.emit("mul", x, n.constant(alpha, x))))]
