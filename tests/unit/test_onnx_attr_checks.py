"""Hostile attribute values and computed sizes an ONNX node must not get past the importer
(session 7, docs/fuzzing.md): an OnnxImportError naming the node, never a silent value.

* 0/1 integer attributes (`schema_checks.BOOL_ATTRS`) other than 0 or 1: converters read
  them as booleans, where onnxruntime refuses some (MaxPool storage_order=3) and
  onnx.reference and onnxruntime disagree on others (Mod fmod=3);
* a size a converter computes as negative (a Tile by -1, a Reshape to -2, a Pad cropping
  past the axis): -1 reads as a `?` dim, other negatives made types like `tensor<2x-3xf32>`;
* an emitted (not only declared) value of a type the schema does not allow there.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

import rlx
from rlx.frontends.onnx import OnnxImportError, import_model

X = h.make_tensor_value_info("x", T.FLOAT, [2, 3])
X1 = h.make_tensor_value_info("x", T.FLOAT, [1, 3])
IMG = h.make_tensor_value_info("x", T.FLOAT, [1, 1, 4, 4])
ANY = h.make_tensor_value_info("y", T.FLOAT, None)


def model(nodes, inputs, inits=(), outputs=(ANY,)):  # type: ignore[no-untyped-def]
    m = h.make_model(h.make_graph(nodes, "g", inputs, list(outputs), list(inits)),
                     opset_imports=[h.make_opsetid("", 18)])  # fmt: skip
    m.ir_version = 8
    return m


def const(name: str, v: object) -> object:
    return nh.from_array(np.asarray(v), name)


BOOLS = {
    "ReduceSum keepdims 3": (h.make_node("ReduceSum", ["x"], ["y"], keepdims=3), X, "keepdims", 3),
    "Gemm transA 2": (h.make_node("Gemm", ["x", "x"], ["y"], transA=2), X, "transA", 2),
    "MaxPool storage_order 3": (
        h.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2], storage_order=3), IMG,
        "storage_order", 3,
    ),
    "CumSum exclusive -1": (
        h.make_node("CumSum", ["x", "a"], ["y"], exclusive=-1), X, "exclusive", -1,
    ),
    "ArgMax select_last_index 7": (
        h.make_node("ArgMax", ["x"], ["y"], select_last_index=7), X, "select_last_index", 7,
    ),
    "Mod fmod 2^31": (h.make_node("Mod", ["x", "x"], ["y"], fmod=2**31), X, "fmod", 2**31),
    "Trilu upper 2": (h.make_node("Trilu", ["x"], ["y"], upper=2), X, "upper", 2),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(BOOLS))
def test_boolean_attribute_other_than_0_or_1(case: str) -> None:
    node, x, name, value = BOOLS[case]
    m = model([node], [x], [const("a", np.int64(1))] if node.op_type == "CumSum" else [])
    want = f"node 'y' ({node.op_type}): {name} must be 0 or 1, got {value}"
    with pytest.raises(OnnxImportError, match=re.escape(want)):
        import_model(m)


def test_boolean_attributes_0_and_1_still_import() -> None:
    for keep in (0, 1):
        m = model([h.make_node("ReduceSum", ["x"], ["y"], keepdims=keep)], [X])
        x = np.arange(6, dtype=np.float32).reshape(2, 3)
        got = rlx.compile(import_model(m)[0]).run(x)[0]
        np.testing.assert_array_equal(got, np.sum(x, keepdims=bool(keep)))


NEGATIVE = {
    "Tile by -1 on a size-1 axis (a `?` dim)": (
        model([h.make_node("Tile", ["x", "r"], ["y"])], [X1], [const("r", np.array([-1, 1]))]),
        "node 'y' (Tile): computed a negative size: rlx.broadcast_to result of shape",
    ),
    "Tile by -1": (
        model([h.make_node("Tile", ["x", "r"], ["y"])], [X], [const("r", np.array([1, -1]))]),
        "node 'y' (Tile): computed a negative size",
    ),
    "Reshape to -2 x -3": (
        model([h.make_node("Reshape", ["x", "s"], ["y"])], [X], [const("s", np.array([-2, -3]))]),
        "node 'y' (Reshape): computed a negative size: rlx.reshape result of shape [-2, -3]",
    ),
    "Pad cropping past the axis": (  # was a size of 0; onnxruntime refuses it
        model([h.make_node("Pad", ["x", "p"], ["y"])], [X], [const("p", np.array([0, -2, 0, -2]))]),
        "node 'y' (Pad): pads [0, -2, 0, -2] make axis 1 (size 3) -1",
    ),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(NEGATIVE))
def test_negative_computed_size_is_refused(case: str) -> None:
    m, message = NEGATIVE[case]
    with pytest.raises(OnnxImportError, match=re.escape(message)):
        import_model(m)


def test_emitted_value_of_a_type_the_schema_refuses() -> None:
    """A float target reaching NegativeLogLikelihoodLoss through a Relu (the declared-type
    check saw only graph inputs and initializers): refused as for a declared input."""
    m = model(
        [h.make_node("Relu", ["t"], ["r"]),
         h.make_node("NegativeLogLikelihoodLoss", ["x", "r"], ["y"])],
        [X, h.make_tensor_value_info("t", T.FLOAT, [2])],
    )  # fmt: skip
    want = "node 'y' (NegativeLogLikelihoodLoss): input #1 ('r') is float; "
    with pytest.raises(OnnxImportError, match=re.escape(want)):
        import_model(m)


@pytest.mark.parametrize(
    ("m", "message"),
    [
        (model([h.make_node("DequantizeLinear", ["q", "s"], ["y"], axis=7)],
               [h.make_tensor_value_info("q", T.INT8, [2, 3])], [const("s", np.ones(3, np.float32))]),
         "node 'y' (DequantizeLinear): axis 7 is out of range for a rank-2 input"),
        (model([h.make_node("Resize", ["x", "", "sc"], ["y"], axes=[7])], [X],
               [const("sc", np.array([2.0], np.float32))]),
         "node 'y' (Resize): axes entry 7 is out of range for a rank-2 input"),
        (model([h.make_node("Hardmax", ["x"], ["y"], axis=5)], [X]),
         "node 'y' (Hardmax): axis 5 is out of range for a rank-2 input"),
    ],
)  # fmt: skip
def test_out_of_range_axes_are_refused(m, message: str) -> None:  # noqa: ANN001
    """Dequantize's and Resize's were taken `% rank` (axis 7 of a rank-2 input as axis 1:
    a silent value); Hardmax's was an IndexError inside the converter."""
    with pytest.raises(OnnxImportError, match=re.escape(message)):
        import_model(m)


W = const("w", np.ones((1, 1, 2, 2), np.float32))
WINDOWS = {
    "Conv strides 0 (auto_pad: was a ZeroDivisionError)": (
        model([h.make_node("Conv", ["x", "w"], ["y"], strides=[0, 1], auto_pad="SAME_UPPER")],
              [IMG], [W]),
        "node 'y' (Conv): strides [0, 1] must be 2 positive sizes (one per spatial axis)",
    ),
    "Conv 3-D strides 0 (was a ZeroDivisionError)": (
        model([h.make_node("Conv", ["x", "w"], ["y"], strides=[0, 1, 1])],
              [h.make_tensor_value_info("x", T.FLOAT, [1, 1, 3, 3, 3])],
              [const("w", np.ones((1, 1, 2, 2, 2), np.float32))]),
        "node 'y' (Conv): strides [0, 1, 1] must be 3 positive sizes",
    ),
    "Conv strides of the wrong rank": (
        model([h.make_node("Conv", ["x", "w"], ["y"], strides=[1], auto_pad="SAME_LOWER")],
              [IMG], [W]),
        "node 'y' (Conv): strides [1] must be 2 positive sizes",
    ),
    "Conv dilations 0": (
        model([h.make_node("Conv", ["x", "w"], ["y"], dilations=[1, 0])], [IMG], [W]),
        "node 'y' (Conv): dilations [1, 0] must be 2 positive sizes",
    ),
    "Conv of a dynamic kernel (was a result dim of 2^63)": (
        model([h.make_node("Conv", ["x", "w"], ["y"])],
              [IMG, h.make_tensor_value_info("w", T.FLOAT, [1, 1, "k", "k"])]),
        "node 'y' (Conv): kernel_shape [?, ?] must be 2 positive sizes",
    ),
    "ConvTranspose strides 0": (
        model([h.make_node("ConvTranspose", ["x", "w"], ["y"], strides=[1, 0])], [IMG], [W]),
        "node 'y' (ConvTranspose): strides [1, 0] must be 2 positive sizes",
    ),
    "MaxPool strides 0": (
        model([h.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2], strides=[0, 0])], [IMG]),
        "node 'y' (MaxPool): strides [0, 0] must be 2 positive sizes",
    ),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(WINDOWS))
def test_bad_window_attributes_name_the_attribute(case: str) -> None:
    """Conv, ConvTranspose and the pools check kernel / strides / dilations in one place
    (`spatial.check_window`): the attribute named, not a "malformed node"."""
    m, message = WINDOWS[case]
    with pytest.raises(OnnxImportError, match=re.escape(message)):
        import_model(m)
