"""Reference interpreter: API, dtypes, attribute decoding, input/param binding, errors."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from xdsl.dialects.builtin import (
    BFloat16Type,
    Float8E4M3FNType,
    Float8E4M3FNUZType,
    Float8E5M2FNUZType,
    Float8E5M2Type,
    Float16Type,
    Float32Type,
    Float64Type,
    IndexType,
    IntegerType,
    Signedness,
)

from rlx.interpreter import (
    InterpreterError,
    UnsupportedOpError,
    dense_attr,
    element_type,
    eval_op,
    numpy_dtype,
    op_name,
    parse_module,
    run,
    single_op_module,
    supported_ops,
    to_numpy,
    to_python,
)
from rlx.interpreter.ops._core import convert

TYPES = [
    (Float64Type(), np.float64),
    (Float32Type(), np.float32),
    (Float16Type(), np.float16),
    (BFloat16Type(), ml_dtypes.bfloat16),
    (Float8E4M3FNType(), ml_dtypes.float8_e4m3fn),
    (Float8E5M2Type(), ml_dtypes.float8_e5m2),
    (Float8E4M3FNUZType(), ml_dtypes.float8_e4m3fnuz),
    (Float8E5M2FNUZType(), ml_dtypes.float8_e5m2fnuz),
    (IntegerType(64), np.int64),
    (IntegerType(32), np.int32),
    (IntegerType(8), np.int8),
    (IntegerType(1), np.bool_),
    (IntegerType(8, Signedness.UNSIGNED), np.uint8),
]


@pytest.mark.parametrize(("attr", "dtype"), TYPES)
def test_dtype_mapping_round_trips(attr, dtype) -> None:
    assert numpy_dtype(attr) == np.dtype(dtype)
    assert element_type(dtype) == attr


def test_dtype_mapping_extras() -> None:
    assert numpy_dtype(IntegerType(32, Signedness.SIGNED)) == np.int32
    assert numpy_dtype(IndexType()) == np.int64
    with pytest.raises(ValueError, match="unsupported element type"):
        numpy_dtype(IntegerType(7))


def _attrs(text: str) -> dict:
    m = parse_module(
        f'func.func @main() {{\n  "test.op"() {text} : () -> ()\n  func.return\n}}',
        with_rlx=False,
    )
    op = m.body.block.ops.first.body.block.ops.first
    return {k: v for k, v in op.attributes.items() if k != "op_name__"}


def test_to_python_decodes_every_attribute_kind() -> None:
    a = _attrs(
        '{i = -3 : i64, f = 1.5e-05 : f64, s = "causal", t = true, u = false, unit,'
        " arr = array<i64: 1, -2>, farr = array<f64: 0.5, 2.0>, e = array<i64>,"
        " d = dense<[[1, 2], [3, 4]]> : tensor<2x2xi32>, list = [1 : i64, 2 : i64]}"
    )
    got = {k: to_python(v) for k, v in a.items()}
    assert got["i"] == -3 and isinstance(got["i"], int)
    assert got["f"] == 1.5e-05
    assert got["s"] == "causal"
    assert got["t"] is True and got["u"] is False
    assert got["unit"] is True
    assert got["arr"] == (1, -2) and got["farr"] == (0.5, 2.0) and got["e"] == ()
    assert got["list"] == (1, 2)
    assert got["d"].dtype == np.int32
    np.testing.assert_array_equal(got["d"], [[1, 2], [3, 4]])


@pytest.mark.parametrize(
    "value",
    [
        np.array([[1.5, -2.25]], dtype=np.float32),
        np.array([1.0, 3.140625, -0.0], dtype=ml_dtypes.bfloat16),
        np.array([0.5, -448.0], dtype=ml_dtypes.float8_e4m3fn),
        np.array([[True, False, True]]),
        np.array([255, 0, 7], dtype=np.uint8),
        np.array([-128, 127], dtype=np.int8),
        np.array(2.5, dtype=np.float16),
        np.zeros((0, 3), dtype=np.float64),
    ],
)
def test_dense_attr_round_trip(value: np.ndarray) -> None:
    back = to_numpy(dense_attr(value))
    assert back.dtype == value.dtype and back.shape == value.shape
    np.testing.assert_array_equal(back.astype(np.float64), value.astype(np.float64))
    # And through MLIR text (the printed attribute parses back to the same values).
    text = single_op_module("rlx.constant", [], [value], f"{{value = {dense_attr(value)}}}")
    (out,) = run(text)
    assert out.dtype == value.dtype
    np.testing.assert_array_equal(out.astype(np.float64), value.astype(np.float64))


def test_splat_constant_and_scalar_tensor() -> None:
    text = single_op_module(
        "rlx.constant", [], ["tensor<2x3xbf16>"], "{value = dense<1.5> : tensor<2x3xbf16>}"
    )
    (out,) = run(text)
    assert out.dtype == ml_dtypes.bfloat16 and out.shape == (2, 3)
    assert np.all(out.astype(np.float32) == 1.5)


MAIN = """
func.func @main(%x: tensor<2x3xf32> {rlx.name = "x"}, %y: tensor<3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>) {
  %w = "rlx.param"() {name = "w"} : () -> tensor<2x3xf32>
  %s = "rlx.add"(%x, %y) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %t = "rlx.mul"(%s, %w) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %t, %s : tensor<2x3xf32>, tensor<2x3xf32>
}
func.func @other(%a: tensor<2xi32>) -> tensor<2xi32> {
  %n = "rlx.neg"(%a) : (tensor<2xi32>) -> tensor<2xi32>
  func.return %n : tensor<2xi32>
}
func.func @caller(%a: tensor<2xi32>) -> tensor<2xi32> {
  %n = func.call @other(%a) : (tensor<2xi32>) -> tensor<2xi32>
  %m = func.call @other(%n) : (tensor<2xi32>) -> tensor<2xi32>
  %k = "rlx.add"(%m, %n) : (tensor<2xi32>, tensor<2xi32>) -> tensor<2xi32>
  func.return %k : tensor<2xi32>
}
"""


def _xyw() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3)).astype(np.float32)
    y = rng.standard_normal(3).astype(np.float32)
    w = rng.standard_normal((2, 3)).astype(np.float32)
    return x, y, w


def test_run_positional_and_named_inputs_and_params() -> None:
    x, y, w = _xyw()
    t, s = run(MAIN, [x, y], {"w": w})
    np.testing.assert_array_equal(s, x + y)
    np.testing.assert_array_equal(t, (x + y) * w)
    assert t.dtype == np.float32
    t2, _ = run(MAIN, {"x": x, "arg1": y}, {"w": w})
    np.testing.assert_array_equal(t, t2)
    # Results are fresh writable arrays.
    t2[0, 0] = 99.0


def test_run_other_entry_and_func_call() -> None:
    a = np.array([1, -5], dtype=np.int32)
    (n,) = run(MAIN, [a], entry="other")
    np.testing.assert_array_equal(n, -a)
    (k,) = run(MAIN, [a], entry="caller")
    np.testing.assert_array_equal(k, a - a)
    with pytest.raises(ValueError, match="nope"):
        run(MAIN, [a], entry="nope")


def test_run_input_errors_name_the_input() -> None:
    x, y, w = _xyw()
    with pytest.raises(ValueError, match="input 'arg1'.*shape"):
        run(MAIN, [x, np.zeros(4, np.float32)], {"w": w})
    with pytest.raises(ValueError, match="input 'x'.*shape"):
        run(MAIN, {"x": x.T, "arg1": y}, {"w": w})
    with pytest.raises(ValueError, match="takes 2 input"):
        run(MAIN, [x], {"w": w})
    with pytest.raises(ValueError, match="missing input.*arg1"):
        run(MAIN, {"x": x}, {"w": w})
    with pytest.raises(ValueError, match="unknown input.*zz"):
        run(MAIN, {"x": x, "arg1": y, "zz": y}, {"w": w})
    with pytest.raises(ValueError, match="input 'arg0'.*integers"):
        run(MAIN, [np.array([0.5, 1.0])], entry="other")
    with pytest.raises(ValueError, match="input 'arg0'.*fit"):
        run(MAIN, [np.array([2**40, 1])], entry="other")


def test_run_param_errors_name_the_param() -> None:
    x, y, w = _xyw()
    with pytest.raises(ValueError, match="missing param 'w'"):
        run(MAIN, [x, y])
    with pytest.raises(ValueError, match="missing param 'w'"):
        run(MAIN, [x, y], {"v": w})
    with pytest.raises(ValueError, match="param 'w'.*shape"):
        run(MAIN, [x, y], {"w": w[:1]})
    with pytest.raises(ValueError, match="param 'w'.*bool"):
        run(
            single_op_module("rlx.param", [], ["tensor<2xi1>"], '{name = "w"}'),
            params={"w": np.array([1, 0])},
        )


def test_inputs_are_converted_to_the_declared_type() -> None:
    x, y, w = _xyw()
    t, _ = run(MAIN, [x.astype(np.float64), y.tolist()], {"w": w.astype(np.float16)})
    expected = (x + y) * w.astype(np.float16).astype(np.float32)
    np.testing.assert_array_equal(t, expected)
    (n,) = run(MAIN, [np.array([3, 4], dtype=np.int8)], entry="other")
    assert n.dtype == np.int32


def test_dynamic_dims_accept_any_size() -> None:
    text = """
    func.func @main(%x: tensor<?x2xf32>) -> tensor<?x2xf32> {
      %y = "rlx.exp"(%x) : (tensor<?x2xf32>) -> tensor<?x2xf32>
      func.return %y : tensor<?x2xf32>
    }"""
    x = np.zeros((5, 2), np.float32)
    (y,) = run(text, [x])
    np.testing.assert_array_equal(y, np.ones((5, 2), np.float32))


def test_unsupported_op_is_named() -> None:
    text = single_op_module("rlx.frobnicate", ["tensor<2xf32>"], ["tensor<2xf32>"])
    with pytest.raises(UnsupportedOpError, match="rlx.frobnicate"):
        run(text, [np.zeros(2, np.float32)])
    with pytest.raises(NotImplementedError):
        run(text, [np.zeros(2, np.float32)])
    assert "rlx.softmax" in supported_ops() and "arith.addf" in supported_ops()


def test_result_shape_mismatch_is_an_interpreter_error() -> None:
    text = single_op_module("rlx.exp", ["tensor<2xf32>"], ["tensor<3xf32>"])
    with pytest.raises(InterpreterError, match="rlx.exp.*shape"):
        run(text, [np.zeros(2, np.float32)])


def test_wrong_operand_count_is_an_interpreter_error() -> None:
    text = single_op_module("rlx.add", ["tensor<2xf32>"], ["tensor<2xf32>"])
    with pytest.raises(InterpreterError, match="rlx.add: expected 2 operands"):
        run(text, [np.zeros(2, np.float32)])


def test_eval_op_on_a_parsed_op() -> None:
    text = single_op_module(
        "rlx.reduce", ["tensor<2x3xf32>"], ["tensor<2xf32>"], '{kind = "max", axes = array<i64: 1>}'
    )
    m = parse_module(text, with_rlx=False)
    op = m.body.block.ops.first.body.block.ops.first
    assert op_name(op) == "rlx.reduce"
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    (out,) = eval_op(op, [x])
    np.testing.assert_array_equal(out, [2, 5])
    with pytest.raises(InterpreterError):
        eval_op(op, [x, x])


def test_eval_op_param_and_rng_backend() -> None:
    m = parse_module(single_op_module("rlx.param", [], ["tensor<2xf32>"], '{name = "p"}'))
    op = m.body.block.ops.first.body.block.ops.first
    with pytest.raises(ValueError, match="missing param 'p'"):
        eval_op(op, [])
    (p,) = eval_op(op, [], params={"p": np.ones(2, np.float32)})
    np.testing.assert_array_equal(p, [1, 1])
    with pytest.raises(ValueError, match="rng_backend"):
        eval_op(op, [], rng_backend="mersenne")


def test_convert_rules() -> None:
    f = np.array([2.7, -2.7, np.nan, 1e10, -1e10, 0.0, np.inf])
    np.testing.assert_array_equal(
        convert(f, np.int32), [2, -2, 0, 2**31 - 1, -(2**31), 0, 2**31 - 1]
    )
    np.testing.assert_array_equal(convert(f, np.int8), [2, -2, 0, 127, -128, 0, 127])
    np.testing.assert_array_equal(convert(f, np.uint8), [2, 0, 0, 255, 0, 0, 255])
    assert convert(np.array([9.3e18]), np.int64)[0] == np.iinfo(np.int64).max
    np.testing.assert_array_equal(convert(f, np.bool_), [1, 1, 1, 1, 1, 0, 1])
    np.testing.assert_array_equal(convert(np.array([True, False]), np.float32), [1.0, 0.0])
    np.testing.assert_array_equal(convert(np.array([300, -1]), np.int8), [44, -1])
    np.testing.assert_array_equal(convert(np.array([300, -1]), np.uint8), [44, 255])


def test_f64_to_low_precision_rounds_once() -> None:
    # 1 + 2^-8 + 2^-40 is just above the bf16 midpoint between 1 and 1 + 2^-7: direct
    # rounding goes up, rounding through f32 first would tie to even (1.0).
    x = np.array([1 + 2**-8 + 2**-40, 1 + 2**-8, 1 + 3 * 2**-8, -(1 + 2**-8 + 2**-40)])
    got = convert(x, ml_dtypes.bfloat16).astype(np.float64)
    np.testing.assert_array_equal(got, [1 + 2**-7, 1.0, 1 + 2**-6, -(1 + 2**-7)])
    y = np.array([1 + 2**-4 + 2**-40, 1e6, np.nan, -np.inf])
    got8 = convert(y, ml_dtypes.float8_e4m3fn).astype(np.float64)
    assert got8[0] == 1 + 2**-3
    assert np.isnan(got8[1]) and np.isnan(got8[2]) and np.isnan(got8[3])  # e4m3fn: no inf
    got_e5 = convert(y, ml_dtypes.float8_e5m2).astype(np.float64)
    assert got_e5[1] == np.inf and got_e5[3] == -np.inf
    # Exhaustive-ish check against round-to-nearest-even computed from the bf16 grid.
    rng = np.random.default_rng(1)
    vals = rng.standard_normal(2000) * 10.0 ** rng.integers(-30, 30, 2000)
    got = convert(vals, ml_dtypes.bfloat16).astype(np.float64)
    lo = vals.astype(np.float32).astype(ml_dtypes.bfloat16).astype(np.float64)
    # The correct result is one of the two bf16 neighbours; the nearer one wins.
    for v, g in zip(vals, got, strict=True):
        up = np.nextafter(ml_dtypes.bfloat16(g), ml_dtypes.bfloat16(np.inf)).astype(np.float64)
        dn = np.nextafter(ml_dtypes.bfloat16(g), ml_dtypes.bfloat16(-np.inf)).astype(np.float64)
        assert abs(v - g) <= abs(v - up) and abs(v - g) <= abs(v - dn)
    assert lo.shape == got.shape


def test_parse_with_and_without_rlx_dialect() -> None:
    text = single_op_module("rlx.exp", ["tensor<2xf32>"], ["tensor<2xf32>"])
    x = np.array([0.0, 1.0], np.float32)
    (a,) = run(parse_module(text, with_rlx=False), [x])
    (b,) = run(parse_module(text), [x])
    np.testing.assert_array_equal(a, b)
