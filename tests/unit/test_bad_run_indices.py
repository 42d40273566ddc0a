"""Bad run-time indices of compiled ONNX graphs (docs/fuzzing.md, session 9).

* A run-time IndexError names the input the bad index comes from (`[from input 'idx']`,
  `traps.find_sites`), not only the node: it named the node only.
* Ops whose spec has no negative indices (MaxUnpool, RotaryEmbedding's position_ids,
  TensorScatter's write_indices, ReverseSequence's and RNN / GRU / LSTM's
  sequence_lens) refuse -1 as onnxruntime does (`wrap_index(negative=False)`); -1
  wrapped to the last element (or, the lengths, was taken as 0 steps, and a length past
  seq_length as all of them): a silent wrong value.
* The same holds on guard pages: no bad index reads or writes out of bounds.
* A scatter with no updates (0 index rows) returns its data: it raised "index 0 is out
  of range for an axis of size 0" (row 0 of the empty updates was gathered).
"""

from __future__ import annotations

import numpy as np
import pytest
from guarded_memory import guarded_run
from onnx import TensorProto, helper

import rlx
from rlx.frontends.onnx import import_model

F = TensorProto.FLOAT
I64 = TensorProto.INT64


def _model(op: str, ins: list[tuple[str, int, list[int]]], opset: int = 24, **attrs):  # noqa: ANN202
    g = helper.make_graph(
        [helper.make_node(op, [n for n, _, _ in ins], ["y"], name="n", **attrs)], "g",
        [helper.make_tensor_value_info(n, t, s) for n, t, s in ins],
        [helper.make_empty_tensor_value_info("y")],
    )  # fmt: skip
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def _data(*shape: int) -> np.ndarray:
    return np.arange(np.prod(shape), dtype=np.float32).reshape(shape) + 1


# name -> (model, the index input, inputs in order with a good index, bad indices, their value)
CASES = {
    "gather": (_model("Gather", [("d", F, [4, 3]), ("idx", I64, [2])], axis=0), "idx",
               [_data(4, 3), np.array([3, -4])], [(np.array([0, 4]), 4), (np.array([-5, 0]), -5)]),
    "max_unpool": (_model("MaxUnpool", [("x", F, [1, 1, 2, 2]), ("i", I64, [1, 1, 2, 2])],
                          kernel_shape=[2, 2], strides=[2, 2]), "i",
                   [_data(1, 1, 2, 2), np.array([0, 3, 8, 15]).reshape(1, 1, 2, 2)],
                   [(np.array([0, 3, 8, -1]).reshape(1, 1, 2, 2), -1),
                    (np.array([0, 3, 8, 16]).reshape(1, 1, 2, 2), 16)]),
    "reverse_sequence": (_model("ReverseSequence", [("x", F, [4, 2]), ("lens", I64, [2])],
                                batch_axis=1, time_axis=0), "lens",
                         [_data(4, 2), np.array([0, 4])], [(np.array([1, -1]), -1), (np.array([5, 1]), 5)]),
    "rotary": (_model("RotaryEmbedding", [("x", F, [1, 2, 2, 4]), ("c", F, [4, 2]), ("s", F, [4, 2]),
                                          ("pos", I64, [1, 2])], opset=23), "pos",
               [_data(1, 2, 2, 4), _data(4, 2) / 8, _data(4, 2) / 9, np.array([[0, 3]])],
               [(np.array([[0, -1]]), -1), (np.array([[4, 0]]), 4)]),
    "lstm": (_model("LSTM", [("x", F, [3, 2, 2]), ("W", F, [1, 12, 2]), ("R", F, [1, 12, 3]),
                             ("B", F, [1, 24]), ("lens", TensorProto.INT32, [2])], hidden_size=3), "lens",
             [_data(3, 2, 2) / 12, _data(1, 12, 2) / 24, -_data(1, 12, 3) / 36, _data(1, 24) / 24,
              np.array([3, 1], np.int32)],
             [(np.array([4, 1], np.int32), 4), (np.array([-1, 1], np.int32), -1)]),
    "tensor_scatter": (_model("TensorScatter", [("c", F, [2, 4, 3]), ("u", F, [2, 1, 3]),
                                                ("w", I64, [2])]), "w",
                       [_data(2, 4, 3), -_data(2, 1, 3), np.array([0, 3])],
                       [(np.array([0, -1]), -1), (np.array([4, 0]), 4)]),
}  # fmt: skip


@pytest.fixture(scope="module", params=sorted(CASES))
def case(request: pytest.FixtureRequest):  # noqa: ANN201
    model, name, good, bad = CASES[request.param]
    module, params = import_model(model)
    compiled = rlx.compile(module)
    compiled.set_params(params)
    return model, compiled, name, good, bad


def _with(good: list[np.ndarray], compiled: rlx.CompiledGraph, name: str, idx: np.ndarray):  # noqa: ANN202
    names = [n for n, _, _ in compiled.inputs]
    return [idx if n == name else a for n, a in zip(names, good, strict=True)]


def test_good_indices_match_onnxruntime(case) -> None:  # noqa: ANN001
    model, compiled, _, good, _ = case
    ort = pytest.importorskip("onnxruntime")
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    names = [n for n, _, _ in compiled.inputs]
    (want,) = sess.run(None, dict(zip(names, good, strict=True)))
    np.testing.assert_allclose(compiled.run(*good)[0], want, rtol=1e-6)


def test_bad_index_is_an_index_error_naming_the_input(case) -> None:  # noqa: ANN001
    _, compiled, name, good, bad = case
    for idx, value in bad:
        with pytest.raises(IndexError, match=rf"index {value} is out of range.*input '{name}'\]$"):
            compiled.run(*_with(good, compiled, name, idx))
    compiled.run(*good)  # the graph still works


@pytest.mark.parametrize("side", ["end", "start"])
def test_bad_indices_touch_nothing_out_of_bounds(case, side: str) -> None:  # noqa: ANN001
    _, compiled, name, good, bad = case
    for idx, _ in bad:
        _, status = guarded_run(compiled, _with(good, compiled, name, idx), side)
        assert status is not None and status[0] == 1  # INDEX_OUT_OF_RANGE recorded


def test_direct_and_computed_indices_are_told_apart() -> None:
    src = """func.func @main(%x: tensor<4xf32>, %i: tensor<2xi64>, %j: tensor<2xi64>)
    -> (tensor<2xf32>, tensor<2xf32>) {
  %a = rlx.gather %x, %i : (tensor<4xf32>, tensor<2xi64>) -> tensor<2xf32>
  %k = rlx.add %i, %j : (tensor<2xi64>, tensor<2xi64>) -> tensor<2xi64>
  %b = rlx.gather %x, %k : (tensor<4xf32>, tensor<2xi64>) -> tensor<2xf32>
  func.return %a, %b : tensor<2xf32>, tensor<2xf32>
}"""
    g = rlx.compile(src)
    x = np.arange(4, dtype=np.float32)
    with pytest.raises(
        IndexError, match=r"<string>:3:3: rlx.gather: index 9 .* \[from input 'arg1'\]$"
    ):
        g.run(x, np.array([9, 0]), np.array([0, 0]))
    with pytest.raises(
        IndexError, match=r":5:3: rlx.gather: index 6 .*\[computed from inputs 'arg1', 'arg2'\]$"
    ):
        g.run(x, np.array([3, 0]), np.array([3, 0]))


@pytest.mark.parametrize(
    ("op", "ishape", "ushape"),
    [("ScatterND", [0, 1], [0, 2]), ("ScatterElements", [0, 2], [0, 2])],
)
def test_scatter_without_updates_returns_the_data(op: str, ishape: list, ushape: list) -> None:
    model = _model(op, [("d", F, [4, 2]), ("i", I64, ishape), ("u", F, ushape)], opset=18)
    g = rlx.compile(import_model(model)[0])
    d = _data(4, 2)
    out = g.run(d, np.zeros(ishape, np.int64), np.zeros(ushape, np.float32))[0]
    np.testing.assert_array_equal(out, d)


@pytest.mark.parametrize(
    "index_name",
    ["i' [from input 'x", "q\"'] [from input", "n" * 80, "line\nbreak"],
)
def test_input_names_are_quoted_whatever_they_hold(index_name: str) -> None:
    """Input names are listed as Python `repr`s (`traps.quote_name`): a name or a node
    name holding `[from input` or quotes moved part of the site behind the error text
    (`errors.status_error` split at the last ` [from input`); a name past 64 characters
    is cut with a `...` mark (it was cut silently)."""
    node = "n [from input 'z']"
    g = helper.make_graph(
        [helper.make_node("Gather", ["d", index_name], ["y"], name=node)], "g",
        [helper.make_tensor_value_info("d", F, [4]),
         helper.make_tensor_value_info(index_name, I64, [2])],
        [helper.make_empty_tensor_value_info("y")],
    )  # fmt: skip
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])
    compiled = rlx.compile(import_model(model)[0])
    with pytest.raises(IndexError) as e:
        compiled.run(_data(4), np.array([0, 9]))
    cut = index_name[:64]
    listed = repr(cut) + ("..." if cut != index_name else "")
    assert str(e.value).startswith(f"node '{node}' (Gather): rlx.gather: index 9 ")
    assert str(e.value).endswith(f" [from input {listed}]")
