"""Malformed ONNX models (onnx.helper-built, the ones a hostile-model sweep broke): each is
an OnnxImportError naming the node or initializer, never a raw ZeroDivisionError /
AttributeError / MemoryError, a terabyte allocation or a silently wrong shape
(docs/fuzzing.md)."""

from __future__ import annotations

import re

import numpy as np
import pytest
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

from rlx.frontends.onnx import OnnxImportError, import_model
from rlx.frontends.onnx.schema_checks import first_opset

X = h.make_tensor_value_info("x", T.FLOAT, [2, 3])
Y = h.make_tensor_value_info("y", T.FLOAT, [2, 3])
ANY = h.make_tensor_value_info("y", T.FLOAT, None)
IMG = h.make_tensor_value_info("a", T.FLOAT, [1, 4, 2, 2])


def model(nodes, inputs, outputs, inits=()):  # type: ignore[no-untyped-def]
    """Opset 17, or the first opset with every op of `nodes` (Attention: 23)."""
    opset = max([17, *(first_opset(n.op_type) for n in nodes)])
    m = h.make_model(h.make_graph(nodes, "g", inputs, outputs, list(inits)),
                     opset_imports=[h.make_opsetid("", opset)])  # fmt: skip
    m.ir_version = 8
    return m


def const(name: str, v: object) -> object:
    return nh.from_array(np.asarray(v), name)


def _bad_dims(dims: list[int], values: int = 9) -> object:
    t = nh.from_array(np.ones(values, np.float32), "w")
    t.dims[:] = dims
    return model([h.make_node("MatMul", ["x", "w"], ["y"])], [X], [Y], [t])


RANGE = ["a", "b", "c"]
CASES = {
    "range of 1e12 elements": (
        model([h.make_node("Range", RANGE, ["y"])], [], [ANY],
              [const("a", np.float32(0)), const("b", np.float32(1e12)), const("c", np.float32(1))]),
        "node 'y' (Range): a constant of shape [999999995904]",
    ),
    "range with delta 0": (
        model([h.make_node("Range", RANGE, ["y"])], [], [ANY],
              [const("a", np.float32(0)), const("b", np.float32(5)), const("c", np.float32(0))]),
        "delta nonzero",
    ),
    "constant of shape 2^62": (
        model([h.make_node("ConstantOfShape", ["s"], ["y"])], [], [ANY],
              [const("s", np.array([2**31, 2**31], np.int64))]),
        "node 'y' (ConstantOfShape): a constant of shape [2147483648, 2147483648]",
    ),
    "depth_to_space blocksize 0": (
        model([h.make_node("DepthToSpace", ["a"], ["y"], blocksize=0)], [IMG], [ANY]),
        "blocksize must be a positive integer, got 0",
    ),
    "LRN size 0": (
        model([h.make_node("LRN", ["a"], ["y"], size=0)], [IMG], [ANY]),
        "node 'y' (LRN): size must be positive, got 0",  # was a ZeroDivisionError
    ),
    "If without branches": (
        model([h.make_node("If", ["c"], ["y"])], [h.make_tensor_value_info("c", T.BOOL, [])], [Y]),
        "node 'y' (If): malformed node (AttributeError",
    ),
    "Loop without body": (
        model([h.make_node("Loop", ["m", "c"], ["y"])],
              [h.make_tensor_value_info("m", T.INT64, []), h.make_tensor_value_info("c", T.BOOL, [])], [Y]),
        "node 'y' (Loop): malformed node (AttributeError",
    ),
    "Expand to a shape that does not broadcast": (
        model([h.make_node("Expand", ["x", "s"], ["y"])], [X], [Y], [const("s", np.array([5, 3]))]),
        "shapes [2, 3] and [5, 3] do not broadcast",
    ),
    "Split sizes not adding up": (
        model([h.make_node("Split", ["x", "sp"], ["y", "z"], axis=1)], [X], [Y],
              [const("sp", np.array([1, 1]))]),
        "split sizes [1, 1] must be 2 non-negative sizes adding up to the axis length 3",
    ),
    "OneHot of a negative depth": (
        model([h.make_node("OneHot", ["i", "d", "v"], ["y"])],
              [h.make_tensor_value_info("i", T.INT64, [3])], [ANY],
              [const("d", np.int64(-3)), const("v", np.array([0, 1], np.float32))]),
        "node 'y' (OneHot): depth must be non-negative, got -3",
    ),
    "initializer dims larger than its data": (_bad_dims([4, 4]), "initializer 'w' (dims [4, 4])"),
    "initializer with a negative dim": (_bad_dims([3, -3]), "initializer 'w' has negative dims"),
    # session 6 (tools/fuzz/fuzz_onnx.py): a Sub of one input was imported as that input
    "Sub of one input": (
        model([h.make_node("Sub", ["x"], ["y"])], [X], [Y]), "node 'y' (Sub): takes 2 inputs, got 1",
    ),
    "Concat of no input": (
        model([h.make_node("Concat", [], ["y"], axis=0)], [X], [Y]),
        "node 'y' (Concat): takes 1 to 2147483647 inputs, got 0",
    ),
    "required input left empty": (
        model([h.make_node("Gemm", ["x", "", "x"], ["y"])], [X], [Y]),
        "node 'y' (Gemm): required input #1 ('B') is missing",
    ),
    "LayerNormalization axis -2^31": (  # range(axis, rank) took all memory
        model([h.make_node("LayerNormalization", ["x", "s"], ["y"], axis=-(2**31))], [X], [Y],
              [const("s", np.ones(3, np.float32))]),
        "axis -2147483648 is out of range for a rank-2 input",
    ),
    "Split num_outputs 2^31": (  # a list of 2^31 sizes: minutes and gigabytes
        model([h.make_node("Split", ["x"], ["y", "z"], axis=1, num_outputs=2**31)], [X], [Y]),
        "num_outputs 2147483648 differs from the 2 outputs",
    ),
    "NegativeLogLikelihoodLoss of a float target": (  # was cast to class indices
        model([h.make_node("NegativeLogLikelihoodLoss", ["x", "t"], ["y"])],
              [X, h.make_tensor_value_info("t", T.FLOAT, [2])], [ANY]),
        "input #1 ('t') is float; NegativeLogLikelihoodLoss takes int32, int64 there",
    ),
    "LRN of an int32 input": (
        model([h.make_node("LRN", ["a"], ["y"], size=3)],
              [h.make_tensor_value_info("a", T.INT32, [1, 4, 2, 2])], [ANY]),
        "input #0 ('a') is int32; LRN takes bfloat16, double, float, float16 there",
    ),
    "MaxPool with a negative pad": (  # a pad of -1 made a `?` dim, then a fold crashed
        model([h.make_node("MaxPool", ["a"], ["y"], kernel_shape=[2, 2], pads=[0, 0, 0, -1])],
              [IMG], [ANY]),
        "pads [0, 0, 0, -1] must be 4 non-negative sizes",
    ),
    "MaxPool kernel 2^31": (  # 2^31 window slices took all memory
        model([h.make_node("MaxPool", ["a"], ["y"], kernel_shape=[2**31, 1])], [IMG], [ANY]),
        "window of size 2147483648 does not fit input of size 2 with padding 0",
    ),
    "MaxPool with indices, kernel 2^31": (  # the general pool: 2^31 slices, all memory
        model([h.make_node("MaxPool", ["a"], ["y", "i"], kernel_shape=[2**31, 1])], [IMG],
              [ANY, h.make_tensor_value_info("i", T.INT64, None)]),
        "kernel 2147483648 (dilation 1) does not fit the padded input (2) on spatial axis 0",
    ),
    "Mod fmod 3": (
        model([h.make_node("Mod", ["x", "x"], ["y"], fmod=3)], [X], [Y]),
        "fmod must be 0 or 1, got 3",
    ),
    "ArgMax over an empty axis": (  # was INT64_MAX for every index
        model([h.make_node("ArgMax", ["e"], ["y"], axis=0)],
              [h.make_tensor_value_info("e", T.FLOAT, [0, 4])], [ANY]),
        "node 'y' (ArgMax): ArgMax over an empty axis (0) has no index",
    ),
    # session 7 (tools/fuzz/fuzz_onnx.py: run where onnx.reference and onnxruntime refuse)
    "SoftmaxCrossEntropyLoss target of another batch": (  # a [1] target was broadcast
        model([h.make_node("SoftmaxCrossEntropyLoss", ["x", "t"], ["y"])],
              [h.make_tensor_value_info("x", T.FLOAT, [3, 5]),
               h.make_tensor_value_info("t", T.INT64, [1])], [ANY]),
        "node 'y' (SoftmaxCrossEntropyLoss): target of shape [1] does not fit input [3, 5] "
        "(needs [3])",
    ),
    "TensorScatter update wider than the cache": (
        model([h.make_node("TensorScatter", ["c", "u"], ["y"])],
              [h.make_tensor_value_info("c", T.FLOAT, [2, 1, 4, 3]),
               h.make_tensor_value_info("u", T.FLOAT, [2, 1, 2, 5])], [ANY]),
        "update of shape [2, 1, 2, 5] does not fit past_cache [2, 1, 4, 3] (axis 2)",
    ),
    "QuantizeLinear blocked scale of another shape": (  # a [1, 2] scale was broadcast
        model([h.make_node("QuantizeLinear", ["x", "s"], ["y"], axis=1, block_size=2)],
              [X, h.make_tensor_value_info("s", T.FLOAT, [1, 2])], [ANY]),
        "blocked scale / zero point of shape [1, 2] must be [2, 2] (input [2, 3], axis 1, "
        "block_size 2)",
    ),
    "DequantizeLinear axis 7": (  # 7 % 2 picked axis 1
        model([h.make_node("DequantizeLinear", ["q", "s"], ["y"], axis=7)],
              [h.make_tensor_value_info("q", T.INT8, [2, 3]),
               h.make_tensor_value_info("s", T.FLOAT, [3])], [ANY]),
        "node 'y' (DequantizeLinear): axis 7 is out of range for a rank-2 input",
    ),
    "BitShift of uint64 and uint8": (
        model([h.make_node("BitShift", ["a", "b"], ["y"], direction="LEFT")],
              [h.make_tensor_value_info("a", T.UINT64, [3]),
               h.make_tensor_value_info("b", T.UINT8, [3])], [ANY]),
        "input #1 ('b') is uint8 but input #0 ('a') is uint64; BitShift takes one type T",
    ),
    "RNN weights of 5 directions": (  # W[0] was used as the reverse direction's
        model([h.make_node("RNN", ["xs", "w", "r"], ["", "y"], direction="reverse", hidden_size=4)],
              [h.make_tensor_value_info("xs", T.FLOAT, [3, 1, 2]),
               h.make_tensor_value_info("w", T.FLOAT, [5, 4, 2]),
               h.make_tensor_value_info("r", T.FLOAT, [1, 4, 4])], [ANY]),
        "node 'y' (RNN): W of shape [5, 4, 2] must be [1, 4, 2] (reverse)",
    ),
    "GridSample grid of 5 coordinates": (
        model([h.make_node("GridSample", ["a", "g"], ["y"])],
              [IMG, h.make_tensor_value_info("g", T.FLOAT, [1, 3, 3, 5])], [ANY]),
        "Grid of shape [1, 3, 3, 5] must be [1, <2 output sizes>, 2]",
    ),
    "GlobalMaxPool over an empty extent": (  # was -inf
        model([h.make_node("GlobalMaxPool", ["e"], ["y"])],
              [h.make_tensor_value_info("e", T.FLOAT, [1, 3, 0, 5])], [ANY]),
        "node 'y' (GlobalMaxPool): GlobalMaxPool over an empty spatial extent [1, 3, 0, 5]",
    ),
    "AveragePool SAME_LOWER kernel 2^62": (  # pads grew with it; the run hung
        model([h.make_node("AveragePool", ["a"], ["y"], auto_pad="SAME_LOWER",
                           kernel_shape=[2, 2**62])], [IMG], [ANY]),
        "kernel_shape [2, 4611686018427387904]: windows of more than 16777216 cells",
    ),
    "Gemm with a C larger than the product": (  # a [5, 4] C made a [1, 4] product [5, 4]
        model([h.make_node("Gemm", ["a", "b", "c"], ["y"])],
              [h.make_tensor_value_info("a", T.FLOAT, [1, 7]),
               h.make_tensor_value_info("b", T.FLOAT, [7, 4]),
               h.make_tensor_value_info("c", T.FLOAT, [5, 4])], [ANY]),
        "node 'y' (Gemm): C of shape [5, 4] does not broadcast to the product [1, 4]",
    ),
    "ConvTranspose output_padding 7 with stride 2": (
        model([h.make_node("ConvTranspose", ["a", "w"], ["y"], strides=[3, 2],
                           output_padding=[1, 7])],
              [IMG, h.make_tensor_value_info("w", T.FLOAT, [4, 2, 3, 3])], [ANY]),
        "output_padding [1, 7] must be below the strides [3, 2] (or dilations)",
    ),
    "Conv kernel_shape other than the weight's": (  # was ignored
        model([h.make_node("Conv", ["a", "w"], ["y"], kernel_shape=[-(2**31), 2])],
              [IMG, h.make_tensor_value_info("w", T.FLOAT, [2, 4, 2, 2])], [ANY]),
        "node 'y' (Conv): kernel_shape [-2147483648, 2] differs from the weight's [2, 2]",
    ),
    "Scan num_scan_inputs 2^31": (  # lists of 2^31 axes: a hang
        model([h.make_node("Scan", ["x", "x"], ["y", "z"], num_scan_inputs=2**31,
                           body=h.make_graph([], "b", [], []))], [X], [ANY]),
        "node 'y' (Scan): num_scan_inputs 2147483648 must be 1 to the 2 inputs",
    ),
    "ScatterElements axis 7": (  # 7 % 2 took axis 1
        model([h.make_node("ScatterElements", ["x", "i", "x"], ["y"], axis=7)],
              [X, h.make_tensor_value_info("i", T.INT64, [2, 3])], [ANY]),
        "node 'y' (ScatterElements): axis 7 is out of range for a rank-2 input",
    ),
    "Flatten axis 2^31": (
        model([h.make_node("Flatten", ["x"], ["y"], axis=2**31)], [X], [ANY]),
        "node 'y' (Flatten): axis 2147483648 is out of range for a rank-2 input",
    ),
    "LSTM hidden_size 0": (  # R's size was used instead
        model([h.make_node("LSTM", ["xs", "w", "r"], ["", "y"], hidden_size=0)],
              [h.make_tensor_value_info("xs", T.FLOAT, [3, 1, 2]),
               h.make_tensor_value_info("w", T.FLOAT, [1, 16, 2]),
               h.make_tensor_value_info("r", T.FLOAT, [1, 16, 4])], [ANY]),
        "node 'y' (LSTM): W of shape [1, 16, 2] must be [1, 0, 2] (forward)",
    ),
    "Attention mask of more query rows": (
        model([h.make_node("Attention", ["q", "k", "k", "m"], ["y"])],
              [h.make_tensor_value_info("q", T.FLOAT, [2, 3, 1, 8]),
               h.make_tensor_value_info("k", T.FLOAT, [2, 3, 6, 8]),
               h.make_tensor_value_info("m", T.FLOAT, [2, 3, 4, 4])], [ANY]),
        "node 'y' (Attention): attn_mask of shape [2, 3, 4, 4] does not broadcast to [2, 3, 1, 6]",
    ),
    "Attention left_window_size -2^31": (
        model([h.make_node("Attention", ["q", "q", "q"], ["y"], left_window_size=-(2**31))],
              [h.make_tensor_value_info("q", T.FLOAT, [1, 2, 4, 8])], [ANY]),
        "left / right_window_size -2147483648, -1 must be -1 or sizes >= 0",
    ),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(CASES))
def test_malformed_model_is_an_import_error(case: str) -> None:
    m, message = CASES[case]
    with pytest.raises(OnnxImportError, match=re.escape(message)):
        import_model(m)


def test_external_data_outside_the_model_is_refused() -> None:
    t = h.make_tensor("w", T.FLOAT, [3, 3], [1.0] * 9)
    t.data_location = T.EXTERNAL
    e = t.external_data.add()
    e.key, e.value = "location", "/etc/passwd"
    m = model([h.make_node("MatMul", ["x", "w"], ["y"])], [X], [Y], [t])
    with pytest.raises(OnnxImportError, match="initializer 'w'.*should be a relative path"):
        import_model(m)


def test_range_still_folds_small_ranges() -> None:
    m = model([h.make_node("Range", RANGE, ["y"])], [], [ANY],
              [const("a", np.array([2], np.int64)), const("b", np.int64(9)), const("c", np.int64(3))])  # fmt: skip
    module, _ = import_model(m)
    assert "dense<[2, 5, 8]>" in str(module)


@pytest.mark.parametrize("dtype", [np.int64, np.int8, np.uint8])
def test_shrink_of_integers_compares_and_shifts_in_float(dtype: type) -> None:
    """Shrink's float lambd / bias applied to an integer input: computed in float and
    truncated, as onnxruntime and onnx.reference do (lambd 1.5 and bias 1.5 were integer
    constants 1 and 1: 2 became 1 instead of 0)."""
    from onnx.reference import ReferenceEvaluator

    import rlx

    et = h.np_dtype_to_tensor_dtype(np.dtype(dtype))
    m = model([h.make_node("Shrink", ["x"], ["y"], bias=1.5, lambd=1.5)],
              [h.make_tensor_value_info("x", et, [9])], [h.make_tensor_value_info("y", et, [9])])  # fmt: skip
    x = np.array(
        [3, 0, 7, 6, 100, 1, 1, 2, 2] if dtype == np.uint8 else [-3, 0, 7, 6, 7, 1, -1, 2, -2]
    )
    x = x.astype(dtype)
    (want,) = ReferenceEvaluator(m).run(None, {"x": x})
    np.testing.assert_array_equal(rlx.compile(import_model(m)[0]).run(x)[0], want)


def test_lrn_window_wider_than_the_channels() -> None:
    """LRN `size` 2^62 hung building 2^62 slices; the window is cut to the channels (what
    lies beyond adds zeros) and `alpha / size` keeps the given size (NumPy formula)."""
    import rlx

    size = 2**62
    m = model([h.make_node("LRN", ["a"], ["y"], size=size, alpha=1e18)], [IMG], [ANY])
    x = np.random.default_rng(0).standard_normal((1, 4, 2, 2)).astype(np.float32)
    want = x / (1.0 + 1e18 / size * (x.astype(np.float64) ** 2).sum(1, keepdims=True)) ** 0.75
    got = rlx.compile(import_model(m)[0]).run(x)[0]
    np.testing.assert_allclose(got, want, rtol=1e-5)


@pytest.mark.parametrize("dtype", [np.int64, np.int32])
def test_pow_of_integers_by_a_float_exponent(dtype: type) -> None:
    """Pow(int, float) is computed in f64 and truncated, as onnx.reference and onnxruntime
    do (session 7, fuzz_onnx.py: the exponent was truncated first, 2 ** -0.7 gave 1)."""
    from onnx.reference import ReferenceEvaluator

    import rlx

    et = h.np_dtype_to_tensor_dtype(np.dtype(dtype))
    m = model([h.make_node("Pow", ["x", "e"], ["y"])],
              [h.make_tensor_value_info("x", et, [6]), h.make_tensor_value_info("e", T.FLOAT, [6])],
              [h.make_tensor_value_info("y", et, [6])])  # fmt: skip
    x = np.array([2, 3, -3, 4, 0, 7], dtype)
    e = np.array([-0.7, 0.5, 2.0, 1.5, 2.5, 1.99], np.float32)
    (want,) = ReferenceEvaluator(m).run(None, {"x": x, "e": e})
    got = rlx.compile(import_model(m)[0]).run(x, e)[0]
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got, [0, 1, 9, 8, 0, 48])  # 7 ** 1.99 = 48.07
