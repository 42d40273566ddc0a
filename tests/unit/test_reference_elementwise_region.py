"""Reference interpreter: rlx.elementwise_region with arith / math bodies (broadcasting, low
precision, float / int binary and unary ops, comparisons, conversions, division by zero)
and the scalar arith / math table on function arguments."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import ml_dtypes
import numpy as np
import pytest
from reference_helpers import run_both

from rlx.interpreter import (
    InterpreterError,
    element_type,
    mlir_type,
    parse_module,
    run,
)

BF16 = np.dtype(ml_dtypes.bfloat16)
RNG = np.random.default_rng(3)


# --------------------------------------------------------------- elementwise_region


def regions(
    bodies: Sequence[str], inputs: Sequence[np.ndarray], out_dts: Sequence, out_shape=None,
    with_rlx: bool = True,
) -> list[np.ndarray]:  # fmt: skip
    """One function with an elementwise_region per body (block args %x0, %x1, ...)."""
    shape = np.broadcast_shapes(*(x.shape for x in inputs)) if out_shape is None else out_shape
    bargs = ", ".join(f"%x{i}: {element_type(x.dtype)}" for i, x in enumerate(inputs))
    sig = ", ".join(f"%a{i}: {mlir_type(x)}" for i, x in enumerate(inputs))
    ins = ", ".join(f"%a{i}" for i in range(len(inputs)))
    tys = ", ".join(mlir_type(x) for x in inputs)
    res = [mlir_type((shape, dt)) for dt in out_dts]
    ops = [
        f'  %out{n} = "rlx.elementwise_region"({ins}) ({{\n  ^bb0({bargs}):\n{body}\n  }})'
        f" : ({tys}) -> {res[n]}"
        for n, body in enumerate(bodies)
    ]
    uses = ", ".join(f"%out{n}" for n in range(len(bodies)))
    text = (
        f"func.func @main({sig}) -> ({', '.join(res)}) {{\n" + "\n".join(ops)
        + f"\n  func.return {uses} : {', '.join(res)}\n}}"
    )  # fmt: skip
    if with_rlx:
        return run_both(text, inputs)
    return run(parse_module(text, with_rlx=False), list(inputs))


def region(
    body: str, inputs: Sequence[np.ndarray], out_dt, out_shape=None, with_rlx: bool = True
) -> np.ndarray:
    """Run one elementwise_region whose block args are %x0, %x1, ... (scalars)."""
    return regions([body], inputs, [out_dt], out_shape, with_rlx)[0]


def test_elementwise_region_broadcasts_and_computes() -> None:
    a = RNG.standard_normal((2, 3)).astype(np.float32)
    b = RNG.standard_normal(3).astype(np.float32)
    body = """
    %c = arith.constant 2.0 : f32
    %m = arith.mulf %x0, %c : f32
    %s = arith.addf %m, %x1 : f32
    %e = math.exp %s : f32
    %lt = arith.cmpf olt, %x0, %x1 : f32
    %r = arith.select %lt, %e, %x0 : f32
    "rlx.yield"(%r) : (f32) -> ()"""
    got = region(body, [a, b], np.float32)
    want = np.where(a < b, np.exp(np.float32(2) * a + b), a)
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_elementwise_region_low_precision_and_constant_body() -> None:
    a = RNG.standard_normal(5).astype(np.float16)
    body = """
    %t = arith.extf %x0 : f16 to f32
    %s = math.sqrt %t : f32
    %h = arith.truncf %s : f32 to f16
    "rlx.yield"(%h) : (f16) -> ()"""
    got = region(body, [np.abs(a)], np.float16)
    np.testing.assert_array_equal(got, np.sqrt(np.abs(a).astype(np.float64)).astype(np.float16))
    body = """
    %k = arith.constant 7 : i32
    "rlx.yield"(%k) : (i32) -> ()"""
    got = region(body, [np.zeros((2, 2), np.float32)], np.int32)
    np.testing.assert_array_equal(got, np.full((2, 2), 7))


FLOAT_BIN: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "arith.addf": lambda a, b: a + b,
    "arith.subf": lambda a, b: a - b,
    "arith.mulf": lambda a, b: a * b,
    "arith.divf": lambda a, b: a / b,
    "arith.remf": lambda a, b: np.array([math.fmod(x, y) for x, y in zip(a, b, strict=True)]),
    "arith.maximumf": lambda a, b: np.where(a > b, a, b),
    "arith.minimumf": lambda a, b: np.where(a < b, a, b),
    "arith.maxnumf": lambda a, b: np.where(a > b, a, b),
    "arith.minnumf": lambda a, b: np.where(a < b, a, b),
    "math.powf": lambda a, b: np.abs(a) ** b,
    "math.atan2": lambda a, b: np.array([math.atan2(x, y) for x, y in zip(a, b, strict=True)]),
    "math.copysign": lambda a, b: np.array(
        [math.copysign(x, y) for x, y in zip(a, b, strict=True)]
    ),
}


@pytest.mark.parametrize("dt", [np.float32, np.float64, np.float16], ids=str)
def test_region_float_binary(dt) -> None:
    a = RNG.uniform(-3, 3, 8).astype(dt)
    b = RNG.uniform(0.5, 2, 8).astype(dt) * np.where(RNG.random(8) < 0.5, 1, -1).astype(dt)
    t = element_type(np.dtype(dt))
    bodies = []
    for op in FLOAT_BIN:
        generic = f'"{op}"(%x0, %x1) : ({t}, {t}) -> {t}'
        line = generic if op == "arith.remf" else f"{op} %x0, %x1 : {t}"
        if op == "math.powf":  # positive base: |x0|
            line = f"math.absf %x0 : {t}\n    %r = {op} %p, %x1 : {t}"
        lhs = "%p" if op == "math.powf" else "%r"
        bodies.append(f'    {lhs} = {line}\n    "rlx.yield"(%r) : ({t}) -> ()')
    outs = regions(bodies, [a, b], [dt] * len(bodies))
    eps = float(ml_dtypes.finfo(dt).eps)
    for op, got in zip(FLOAT_BIN, outs, strict=True):
        want = FLOAT_BIN[op](a.astype(np.float64), b.astype(np.float64))
        np.testing.assert_allclose(
            got.astype(np.float64), want, rtol=4 * eps, atol=4 * eps, err_msg=op
        )


FLOAT_UN: dict[str, Callable[[float], float]] = {
    "math.absf": abs, "math.exp": math.exp, "math.exp2": lambda x: 2.0**x,
    "math.expm1": math.expm1, "math.log": math.log, "math.log2": math.log2,
    "math.log10": math.log10, "math.log1p": math.log1p, "math.sqrt": math.sqrt,
    "math.rsqrt": lambda x: 1 / math.sqrt(x), "math.cbrt": lambda x: x ** (1 / 3),
    "math.tanh": math.tanh, "math.erf": math.erf, "math.sin": math.sin, "math.cos": math.cos,
    "math.tan": math.tan, "math.atan": math.atan, "math.sinh": math.sinh,
    "math.cosh": math.cosh, "math.asinh": math.asinh, "math.floor": math.floor,
    "math.ceil": math.ceil, "math.trunc": math.trunc, "arith.negf": lambda x: -x,
    "math.asin": lambda x: math.asin(x / 4), "math.acos": lambda x: math.acos(x / 4),
    "math.atanh": lambda x: math.atanh(x / 4), "math.acosh": lambda x: math.acosh(x + 1),
}  # fmt: skip


def test_region_float_unary() -> None:
    x = RNG.uniform(0.1, 3.5, 10).astype(np.float32)
    bodies = []
    for op in FLOAT_UN:
        pre = {"math.asin": "%x = arith.divf %x0, %four : f32",
               "math.acos": "%x = arith.divf %x0, %four : f32",
               "math.atanh": "%x = arith.divf %x0, %four : f32",
               "math.acosh": "%x = arith.addf %x0, %one : f32"}.get(op, "%x = arith.addf %x0, %zero : f32")  # fmt: skip
        bodies.append(f"""
    %zero = arith.constant 0.0 : f32
    %one = arith.constant 1.0 : f32
    %four = arith.constant 4.0 : f32
    {pre}
    %r = {op} %x : f32
    "rlx.yield"(%r) : (f32) -> ()""")
    outs = regions(bodies, [x], [np.float32] * len(bodies))
    for op, got in zip(FLOAT_UN, outs, strict=True):
        want = np.array([FLOAT_UN[op](float(v)) for v in x])
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6, err_msg=op)


def test_math_round_variants_and_fma_fpowi() -> None:
    x = np.array([0.5, 1.5, 2.5, -0.5, -2.5, 0.49999997, 3.7], np.float32)
    got = region(
        '    %r = math.round %x0 : f32\n    "rlx.yield"(%r) : (f32) -> ()', [x], np.float32
    )
    np.testing.assert_array_equal(got, [1, 2, 3, -1, -3, 0, 4])
    got = region(
        '    %r = math.roundeven %x0 : f32\n    "rlx.yield"(%r) : (f32) -> ()', [x], np.float32
    )
    np.testing.assert_array_equal(got, [0, 2, 2, -0.0, -2, 0, 4])
    a, b, c = (RNG.standard_normal(4).astype(np.float32) for _ in range(3))
    body = '    %r = math.fma %x0, %x1, %x2 : f32\n    "rlx.yield"(%r) : (f32) -> ()'
    np.testing.assert_array_equal(
        region(body, [a, b, c], np.float32),
        (a.astype(np.float64) * b + c).astype(np.float32),
    )
    n = np.array([0, 1, 3, -2], np.int32)
    body = '    %r = math.fpowi %x0, %x1 : f32, i32\n    "rlx.yield"(%r) : (f32) -> ()'
    base = np.array([3.0, 3.0, 2.0, 2.0], np.float32)
    np.testing.assert_array_equal(region(body, [base, n], np.float32), [1, 3, 8, 0.25])


CMPF = ["false", "oeq", "ogt", "oge", "olt", "ole", "one", "ord",
        "ueq", "ugt", "uge", "ult", "ule", "une", "uno", "true"]  # fmt: skip


def test_region_cmpf() -> None:
    a = np.array([1.0, 2.0, np.nan, 1.0, np.nan], np.float32)
    b = np.array([1.0, 1.0, 1.0, 2.0, np.nan], np.float32)
    bodies = [
        f'    %r = arith.cmpf {pred}, %x0, %x1 : f32\n    "rlx.yield"(%r) : (i1) -> ()'
        for pred in CMPF
    ]
    outs = regions(bodies, [a, b], [np.bool_] * len(CMPF))
    base = {"eq": a == b, "gt": a > b, "ge": a >= b, "lt": a < b, "le": a <= b,
            "ne": (a < b) | (a > b)}  # fmt: skip
    unordered = np.isnan(a) | np.isnan(b)
    for pred, got in zip(CMPF, outs, strict=True):
        if pred == "false":
            want = np.zeros(5, bool)
        elif pred == "true":
            want = np.ones(5, bool)
        elif pred == "ord":
            want = ~unordered
        elif pred == "uno":
            want = unordered
        elif pred[0] == "o":
            want = base[pred[1:]] & ~unordered
        else:
            want = base[pred[1:]] | unordered
        np.testing.assert_array_equal(got, want, err_msg=pred)


INT_BIN: dict[str, Callable[[int, int, int], int]] = {
    # (a, b, bits) -> exact result as an unbounded Python int (wrapped afterwards)
    "arith.addi": lambda a, b, w: a + b,
    "arith.subi": lambda a, b, w: a - b,
    "arith.muli": lambda a, b, w: a * b,
    "arith.divsi": lambda a, b, w: int(a / b),
    "arith.remsi": lambda a, b, w: a - int(a / b) * b,
    "arith.floordivsi": lambda a, b, w: a // b,
    "arith.ceildivsi": lambda a, b, w: -((-a) // b),
    "arith.divui": lambda a, b, w: (a % 2**w) // (b % 2**w),
    "arith.remui": lambda a, b, w: (a % 2**w) % (b % 2**w),
    "arith.ceildivui": lambda a, b, w: -(-(a % 2**w) // (b % 2**w)),
    "arith.maxsi": lambda a, b, w: max(a, b),
    "arith.minsi": lambda a, b, w: min(a, b),
    "arith.maxui": lambda a, b, w: max(a % 2**w, b % 2**w),
    "arith.minui": lambda a, b, w: min(a % 2**w, b % 2**w),
    "arith.andi": lambda a, b, w: a & b,
    "arith.ori": lambda a, b, w: a | b,
    "arith.xori": lambda a, b, w: a ^ b,
    "arith.shli": lambda a, b, w: (a << b) if b < w else 0,
    "arith.shrsi": lambda a, b, w: (a >> b) if b < w else (-1 if a < 0 else 0),
    "arith.shrui": lambda a, b, w: ((a % 2**w) >> b) if b < w else 0,
}


def _wrap(v: int, w: int) -> int:
    v %= 2**w
    return v - 2**w if v >= 2 ** (w - 1) else v


@pytest.mark.parametrize("dt", [np.int8, np.int32, np.int64], ids=str)
def test_region_int_binary(dt) -> None:
    w = np.dtype(dt).itemsize * 8
    a = np.array([7, -7, 100, -128, 5, -1, 0, 3], dtype=dt)
    b = np.array([2, 2, -3, 3, 9, 1, 4, 1], dtype=dt)
    sh = np.array([1, 3, 0, 2, w - 1, w, w + 3, 0], dtype=dt)
    t = element_type(np.dtype(dt))
    bodies = [
        f"    %r = {op} %x0, %x{2 if op.startswith('arith.sh') else 1} : {t}\n"
        f'    "rlx.yield"(%r) : ({t}) -> ()'
        for op in INT_BIN
    ]
    outs = regions(bodies, [a, b, sh], [dt] * len(bodies))
    for op, got in zip(INT_BIN, outs, strict=True):
        rhs = sh if op.startswith("arith.sh") else b
        want = [_wrap(INT_BIN[op](int(x), int(y), w), w) for x, y in zip(a, rhs, strict=True)]
        np.testing.assert_array_equal(got, want, err_msg=op)


def test_region_int_division_by_zero_and_i1() -> None:
    a = np.array([1, 2], np.int32)
    with pytest.raises(InterpreterError, match="division by zero"):
        region('    %r = arith.divsi %x0, %x1 : i32\n    "rlx.yield"(%r) : (i32) -> ()',
               [a, np.array([1, 0], np.int32)], np.int32)  # fmt: skip
    p = np.array([True, True, False, False])
    q = np.array([True, False, True, False])
    got = region(
        '    %r = arith.addi %x0, %x1 : i1\n    "rlx.yield"(%r) : (i1) -> ()', [p, q], np.bool_
    )
    np.testing.assert_array_equal(got, p ^ q)


CMPI = {
    "eq": lambda a, b: a == b, "ne": lambda a, b: a != b, "slt": lambda a, b: a < b,
    "sle": lambda a, b: a <= b, "sgt": lambda a, b: a > b, "sge": lambda a, b: a >= b,
    "ult": lambda a, b: a % 256 < b % 256, "ule": lambda a, b: a % 256 <= b % 256,
    "ugt": lambda a, b: a % 256 > b % 256, "uge": lambda a, b: a % 256 >= b % 256,
}  # fmt: skip


def test_region_cmpi() -> None:
    a = np.array([1, -1, 5, -128, 0], np.int8)
    b = np.array([1, 1, -5, 127, 0], np.int8)
    bodies = [
        f'    %r = arith.cmpi {pred}, %x0, %x1 : i8\n    "rlx.yield"(%r) : (i1) -> ()'
        for pred in CMPI
    ]
    outs = regions(bodies, [a, b], [np.bool_] * len(CMPI))
    for (pred, fn), got in zip(CMPI.items(), outs, strict=True):
        want = [fn(int(x), int(y)) for x, y in zip(a, b, strict=True)]
        np.testing.assert_array_equal(got, want, err_msg=pred)


def test_region_conversions() -> None:
    x = np.array([-2.7, -0.5, 0.0, 2.9, 300.0, -300.0], np.float32)
    cases = [
        ("%r = arith.fptosi %x0 : f32 to i8", "i8", np.int8, [-2, 0, 0, 2, 127, -128]),
        ("%r = arith.fptoui %x0 : f32 to i8", "i8", np.int8, [0, 0, 0, 2, -1, 0]),
        ("%r = arith.truncf %x0 : f32 to bf16", "bf16", BF16, x.astype(BF16)),
    ]
    for line, t, dt, want in cases:
        got = region(f'    {line}\n    "rlx.yield"(%r) : ({t}) -> ()', [x], dt)
        np.testing.assert_array_equal(got.astype(np.float64), np.asarray(want, np.float64))
    i = np.array([-1, 0, 5, 200], np.int32)
    cases = [
        ("%r = arith.sitofp %x0 : i32 to f32", "f32", np.float32, [-1.0, 0.0, 5.0, 200.0]),
        ("%r = arith.uitofp %x0 : i32 to f64", "f64", np.float64, [2.0**32 - 1, 0, 5, 200]),
        ("%r = arith.trunci %x0 : i32 to i8", "i8", np.int8, [-1, 0, 5, -56]),
        ("%r = arith.extsi %x0 : i32 to i64", "i64", np.int64, [-1, 0, 5, 200]),
        ("%r = arith.extui %x0 : i32 to i64", "i64", np.int64, [2**32 - 1, 0, 5, 200]),
        ("%r = arith.trunci %x0 : i32 to i1", "i1", np.bool_, [True, False, True, False]),
        ("%r = arith.index_cast %x0 : i32 to index", "index", np.int64, [-1, 0, 5, 200]),
        ("%r = arith.bitcast %x0 : i32 to f32", "f32", np.float32, i.view(np.float32)),
    ]
    for line, t, dt, want in cases:
        got = region(
            f'    {line}\n    "rlx.yield"(%r) : ({t}) -> ()', [i], dt, with_rlx=t != "index"
        )
        np.testing.assert_array_equal(got, np.asarray(want).astype(dt))
    b = np.array([True, False])
    got = region(
        '    %r = arith.extsi %x0 : i1 to i32\n    "rlx.yield"(%r) : (i32) -> ()', [b], np.int32
    )
    np.testing.assert_array_equal(got, [-1, 0])
    got = region(
        '    %r = arith.extui %x0 : i1 to i32\n    "rlx.yield"(%r) : (i32) -> ()', [b], np.int32
    )
    np.testing.assert_array_equal(got, [1, 0])


def test_region_int_unary_bit_counts() -> None:
    x = np.array([0, 1, 6, -1, -128, 64], np.int8)
    for op, fn in (
        ("math.absi", lambda v: _wrap(abs(v), 8)),
        ("math.ctpop", lambda v: bin(v % 256).count("1")),
        ("math.ctlz", lambda v: 8 - (v % 256).bit_length()),
        ("math.cttz", lambda v: 8 if v % 256 == 0 else ((v % 256) & -(v % 256)).bit_length() - 1),
    ):
        got = region(f'    %r = {op} %x0 : i8\n    "rlx.yield"(%r) : (i8) -> ()', [x], np.int8)
        np.testing.assert_array_equal(got, [fn(int(v)) for v in x], err_msg=op)


def test_scalar_function_arguments_and_tensor_arith() -> None:
    text = """
    func.func @main(%x: f32, %t: tensor<3xf32>) -> (f32, tensor<3xf32>) {
      %c = arith.constant 1.5 : f32
      %y = arith.mulf %x, %c : f32
      %d = arith.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
      %u = arith.addf %t, %d : tensor<3xf32>
      func.return %y, %u : f32, tensor<3xf32>
    }"""
    y, u = run(text, [np.float32(2.0), np.zeros(3, np.float32)])
    assert y.shape == () and y == 3.0 and y.dtype == np.float32
    np.testing.assert_array_equal(u, [1, 2, 3])
