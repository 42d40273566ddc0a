"""Hostile ONNX graphs of session 8 (hand-written, and `tools/fuzz/fuzz_onnx.py`): values
defined twice, graph inputs listed twice, declared negative dims, opset imports beyond
the installed `onnx` or missing, Slice lists of different lengths, Reshape shapes the
spec forbids, Einsum labels of different sizes, SwiGLU inputs of different shapes,
initializers holding two copies of their data,
Constants of several values, Squeeze of a wide axis, Pad of too few pads. Each is an OnnxImportError naming the
node, value or opset (docs/fuzzing.md), where the importer took the last definition, a
`?` dim, the newest op meaning, a "malformed node" zip error or (Einsum `...ii->...i` of
a [3, 1, 5] input) a silently wrong diagonal, a broadcast SwiGLU."""

from __future__ import annotations

import re

import numpy as np
import onnx
import pytest
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh
from onnx.reference import ReferenceEvaluator

import rlx
from rlx.frontends.onnx import OnnxImportError, import_model

X = h.make_tensor_value_info("x", T.FLOAT, [2, 3])
ANY = h.make_tensor_value_info("y", T.FLOAT, None)


def model(nodes, inputs, outputs, inits=(), opsets=None):  # type: ignore[no-untyped-def]
    opsets = [h.make_opsetid("", 17)] if opsets is None else opsets
    m = h.make_model(h.make_graph(nodes, "g", inputs, outputs, list(inits)), opset_imports=opsets)
    m.ir_version = 8
    return m


def const(name: str, v: object) -> onnx.TensorProto:
    return nh.from_array(np.asarray(v), name)


def relu(opsets=None, inputs=(X,)):  # type: ignore[no-untyped-def]
    return model([h.make_node("Relu", ["x"], ["y"])], list(inputs), [ANY], opsets=opsets)


def einsum(eq: str, *shapes: list[int]) -> onnx.ModelProto:
    ins = [h.make_tensor_value_info(f"i{k}", T.FLOAT, s) for k, s in enumerate(shapes)]
    node = h.make_node("Einsum", [vi.name for vi in ins], ["y"], equation=eq)
    return model([node], ins, [ANY], opsets=[h.make_opsetid("", 12)])


def reshape(target: list[int], allowzero: int = 0) -> onnx.ModelProto:
    node = h.make_node("Reshape", ["x", "s"], ["y"], allowzero=allowzero)
    return model([node], [X], [ANY], [const("s", np.array(target))])


def slice_(starts: list[int], ends: list[int], axes: list[int]) -> onnx.ModelProto:
    inits = [const("a", np.array(starts)), const("b", np.array(ends)), const("ax", np.array(axes))]
    return model([h.make_node("Slice", ["x", "a", "b", "ax"], ["y"])], [X], [ANY], inits)


def swiglu(a: list, b: list) -> onnx.ModelProto:  # type: ignore[type-arg]
    ins = [h.make_tensor_value_info("a", T.FLOAT, a), h.make_tensor_value_info("b", T.FLOAT, b)]
    node = h.make_node("SwiGLU", ["a", "b"], ["y"], alpha=1.5)
    return model([node], ins, [ANY], opsets=[h.make_opsetid("", 28)])


def _both_data() -> onnx.TensorProto:
    t = h.make_tensor("w", T.FLOAT, [3], [1.0, 2.0, 3.0])
    t.raw_data = np.zeros(3, np.float32).tobytes()
    return t


CASES = {
    "a value defined twice": (  # the second node's value silently replaced the first's
        model([h.make_node("Relu", ["x"], ["y"]), h.make_node("Neg", ["x"], ["y"], name="n")],
              [X], [ANY]),
        "node 'n' (Neg): output 'y' is already defined",
    ),
    "a node writing a graph input": (
        model([h.make_node("Neg", ["x"], ["x"], name="n"), h.make_node("Relu", ["x"], ["y"])],
              [X], [ANY]),
        "node 'n' (Neg): output 'x' is already defined",
    ),
    "a graph input listed twice": (relu(inputs=(X, X)), "graph input 'x' is listed twice"),
    "an initializer listed twice": (
        model([h.make_node("Add", ["x", "w"], ["y"])], [X], [ANY],
              [const("w", np.ones(3, np.float32)), const("w", np.zeros(3, np.float32))]),
        "initializer 'w' is listed twice",
    ),
    "a declared negative dim": (  # was a `?` dim named x_0
        relu(inputs=(h.make_tensor_value_info("x", T.FLOAT, [-3, 3]),)),
        "graph input 'x' has a negative dim: [-3, 3]",
    ),
    "opset 99": (  # imported with the newest meaning of each op
        relu([h.make_opsetid("", 99)]),
        f"model uses opset 99; the importer knows opsets up to {onnx.defs.onnx_opset_version()}",
    ),
    "no default-domain opset": (
        relu([]), "the model's opset_import has no entry for the default domain ('')",
    ),
    "Slice starts longer than ends": (  # a "malformed node" zip error
        slice_([0, 0], [2], [0, 1]),
        "node 'y' (Slice): starts, ends, axes and steps must have one length, got 2, 1, 2, 2",
    ),
    "Reshape allowzero with 0 and -1": (  # the spec forbids it: was a size of -2^63
        reshape([0, -1], allowzero=1), "shape [0, -1] has both 0 and -1 with allowzero=1",
    ),
    "Reshape copying an axis past the rank": (  # an IndexError in the converter
        reshape([6, 1, 0]), "shape [6, 1, 0] copies (0) an axis the rank-2 input lacks",
    ),
    "Einsum diagonal of a 1 x 5 operand": (  # fuzz_onnx: the identity mask broadcast
        einsum("...ii->...i", [3, 1, 5]), "label 'i' repeated on axes of sizes 1 and 5",
    ),
    "Einsum label of two sizes": (
        einsum("ij,jk->ik", [2, 3], [5, 4]), "label 'j' has sizes 5 and 3 (only 1 broadcasts)",
    ),
    # the spec: "broadcasting is not applied"; the function body broadcast (both refuse)
    "SwiGLU of a [2, 1] gate and a [2, 4] value": (
        swiglu([2, 1], [2, 4]),
        "node 'y' (SwiGLU): inputs must have identical shapes (no broadcasting), got "
        "'a' [2, 1], 'b' [2, 4]",
    ),
    "SwiGLU of dims n and m": (swiglu(["n", 4], ["m", 4]), "got 'a' [n, 4], 'b' [m, 4]"),
    "an initializer with raw_data and float_data": (  # raw_data was taken silently
        model([h.make_node("Add", ["x", "w"], ["y"])], [X], [ANY], [_both_data()]),
        "initializer 'w' holds both raw_data and float_data",
    ),
    "Constant of two values": (  # the first one was taken
        model([h.make_node("Constant", [], ["y"], value_float=1.0, value_int=2)], [], [ANY]),
        "node 'y' (Constant): needs exactly one value attribute, got ['value_float', 'value_int']",
    ),
    "Constant of no value": (  # a "malformed node" unpacking error
        model([h.make_node("Constant", [], ["y"])], [], [ANY]),
        "node 'y' (Constant): needs exactly one value attribute, got none",
    ),
    "Squeeze of a size-2 axis": (  # a reshape error naming element counts
        model([h.make_node("Squeeze", ["x", "a"], ["y"])], [X], [ANY], [const("a", [0])]),
        "node 'y' (Squeeze): axis 0 of [2, 3] has size 2, not 1",
    ),
    "Pad of 3 pads for rank 2": (  # a "malformed node" zip error
        model([h.make_node("Pad", ["x", "p"], ["y"])], [X], [ANY], [const("p", [1, 1, 1])]),
        "node 'y' (Pad): pads [1, 1, 1] must hold 2 x 2 sizes",
    ),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(CASES))
def test_hostile_graph_is_an_import_error(case: str) -> None:
    m, message = CASES[case]
    with pytest.raises(OnnxImportError, match=re.escape(message)):
        import_model(m)


@pytest.mark.parametrize(
    ("eq", "shapes"),
    [("ii->i", [[4, 4]]), ("...ii->...i", [[2, 3, 3]]), ("ij,jk->ik", [[2, 1], [3, 4]]),
     ("bij,bjk->bik", [[1, 2, 3], [2, 3, 4]])],
)  # fmt: skip
def test_einsum_diagonals_and_size_one_labels_still_match(eq: str, shapes: list) -> None:
    """A size-1 label broadcasts across operands (as in NumPy and onnx.reference)."""
    m = einsum(eq, *shapes)
    rng = np.random.default_rng(0)
    xs = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    module, _ = import_model(m)
    (got,) = rlx.compile(module).run(*xs)
    (want,) = ReferenceEvaluator(m).run(None, {f"i{k}": x for k, x in enumerate(xs)})
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_swiglu_of_one_shape_matches_onnx_reference() -> None:
    m = swiglu([2, 4], [2, 4])
    a, b = np.random.default_rng(1).standard_normal((2, 2, 4)).astype(np.float32)
    module, _ = import_model(m)
    (got,) = rlx.compile(module).run(a, b)
    (want,) = ReferenceEvaluator(m).run(None, {"a": a, "b": b})
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    import_model(swiglu(["n", 4], ["n", 4]))  # one named dim: accepted


def test_output_declared_of_another_type_warns() -> None:
    """onnxruntime refuses it; the importer warns (hand-built models often declare every
    output float) and the value keeps its own type."""
    m = model([h.make_node("Relu", ["x"], ["y"])], [X],
              [h.make_tensor_value_info("y", T.INT64, [2, 3])])  # fmt: skip
    with pytest.warns(UserWarning, match="graph output 'y' is declared int64 but its value is f32"):
        module, _ = import_model(m)
    assert rlx.compile(module).run(np.ones((2, 3), np.float32))[0].dtype == np.float32


def test_initializer_named_like_an_input_is_its_value() -> None:
    """An initializer with a graph input's name (ONNX: its default) is imported as the
    initializer (a param), and the input is no argument: models of IR version < 4 list
    every weight as an input. Passing it is a ValueError naming the argument count."""
    m = model([h.make_node("Relu", ["x"], ["y"])], [X], [ANY],
              [const("x", -np.ones((2, 3), np.float32))])  # fmt: skip
    module, params = import_model(m)
    g = rlx.compile(module, rlx.CompileOptions(param_bindings=params))
    np.testing.assert_array_equal(g.run()[0], np.zeros((2, 3), np.float32))
    with pytest.raises(ValueError, match=r"@main takes 0 input\(s\)"):
        g.run(np.ones((2, 3), np.float32))


def test_a_file_that_is_no_onnx_model_is_an_import_error(tmp_path) -> None:  # noqa: ANN001
    """protobuf's DecodeError (no ValueError) escaped `import_model(path)`."""
    path = tmp_path / "garbage.onnx"
    path.write_bytes(bytes(range(7, 107)))
    with pytest.raises(OnnxImportError, match="garbage.onnx' is not an ONNX model"):
        import_model(path)


def test_loop_carrying_values_of_two_types_matches_onnx_reference() -> None:
    """Loop's carried values `V` are heterogeneous: one float and one int64 carry must import
    (the one-type-per-parameter check binds homogeneous parameters only)."""
    vi = h.make_tensor_value_info
    body = h.make_graph(
        [h.make_node("Identity", ["cond_in"], ["cond_out"]),
         h.make_node("Add", ["a_in", "a_in"], ["a_out"]),
         h.make_node("Add", ["b_in", "b_in"], ["b_out"])],
        "body",
        [vi("i", T.INT64, []), vi("cond_in", T.BOOL, []), vi("a_in", T.FLOAT, [2]),
         vi("b_in", T.INT64, [2])],
        [vi("cond_out", T.BOOL, []), vi("a_out", T.FLOAT, [2]), vi("b_out", T.INT64, [2])],
    )  # fmt: skip
    g = h.make_graph(
        [h.make_node("Loop", ["M", "c", "a", "b"], ["ao", "bo"], body=body)], "g",
        [vi("a", T.FLOAT, [2]), vi("b", T.INT64, [2])],
        [vi("ao", T.FLOAT, [2]), vi("bo", T.INT64, [2])],
        [nh.from_array(np.array(3, np.int64), "M"), nh.from_array(np.array(True), "c")],
    )  # fmt: skip
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
    onnx.checker.check_model(m)
    module, params = import_model(m)
    a, b = np.array([1.5, -2.0], np.float32), np.array([3, -4], np.int64)
    got = rlx.compile(module, rlx.CompileOptions(param_bindings=params)).run(a, b)
    want = ReferenceEvaluator(m).run(None, {"a": a, "b": b})
    for x, y in zip(got, want, strict=True):
        np.testing.assert_array_equal(x, y)


def test_nodes_of_the_ai_onnx_domain_spelling_import() -> None:
    """`domain="ai.onnx"` names the default domain: its nodes are checked against the same
    schemas (it was refused as "Relu does not exist in opset 17")."""
    node = h.make_node("Relu", ["x"], ["y"], domain="ai.onnx")
    g = h.make_graph([node], "g", [h.make_tensor_value_info("x", T.FLOAT, [2, 3])],
                     [h.make_tensor_value_info("y", T.FLOAT, [2, 3])])  # fmt: skip
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
    module, _ = import_model(m)
    x = np.array([[-1, 2, -3], [4, -5, 6]], np.float32)
    np.testing.assert_array_equal(rlx.compile(module).run(x)[0], np.maximum(x, 0))
