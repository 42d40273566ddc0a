"""ONNX importer features of issue 15: symbolic dynamic dims, fold-first, subgraph ops,
old-opset Softmax, output names, and rlx-run's index-aware random inputs. Numbers are
checked against onnx.reference or NumPy."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import rlx
from rlx.frontends.onnx import OnnxImportError, import_model
from rlx.interpreter import run
from rlx.tools.index_bounds import index_bounds
from rlx.transforms.bind_dims import bind_dims

RNG = np.random.default_rng(0)
c = helper.make_node


def _model(nodes, inputs, outputs, inits=(), opset: int = 17):  # noqa: ANN001,ANN202
    g = helper.make_graph(
        nodes, "g",
        [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
        [helper.make_tensor_value_info(n, t, s) for n, t, s in outputs],
        [numpy_helper.from_array(a, n) for n, a in inits],
    )  # fmt: skip
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def _ref(m, feeds):  # noqa: ANN001,ANN202
    return ReferenceEvaluator(m).run(None, feeds)


def _heads_model():  # noqa: ANN202
    """[batch, seq, 8] -> split into 2 heads from Shape arithmetic -> matmul -> merge."""
    i64 = lambda v: numpy_helper.from_array(np.array(v, np.int64))  # noqa: E731
    nodes = [
        c("Shape", ["x"], ["s"]),
        c("Constant", [], ["i0"], value=i64([0])),
        c("Constant", [], ["i1"], value=i64([1])),
        c("Gather", ["s", "i0"], ["b"], axis=0),
        c("Gather", ["s", "i1"], ["t"], axis=0),
        c("Constant", [], ["hd"], value=i64([2, 4])),
        c("Concat", ["b", "t", "hd"], ["shp"], axis=0),
        c("Reshape", ["x", "shp"], ["r"]),
        c("Transpose", ["r"], ["tr"], perm=[0, 2, 1, 3]),
        c("MatMul", ["tr", "w"], ["mm"]),
        c("Transpose", ["mm"], ["back"], perm=[0, 2, 1, 3]),
        c("Constant", [], ["m1"], value=i64([-1])),
        c("Concat", ["b", "t", "m1"], ["shp2"], axis=0),
        c("Reshape", ["back", "shp2"], ["y"]),
    ]
    w = RNG.standard_normal((4, 4)).astype(np.float32)
    return _model(nodes, [("x", TensorProto.FLOAT, ["batch", "seq", 8])],
                  [("y", TensorProto.FLOAT, None)], [("w", w)])  # fmt: skip


def test_symbolic_shapes_bind_later() -> None:
    m = _heads_model()
    module, params = import_model(m)  # no dims=
    text = str(module)
    assert 'rlx.dims = ["batch", "seq", 2 : i64, 4 : i64]' in text
    x = RNG.standard_normal((3, 5, 8)).astype(np.float32)
    (want,) = _ref(m, {"x": x})
    cg = rlx.compile(
        module, rlx.CompileOptions(dim_binding={"batch": 3, "seq": 5}, param_bindings=params)
    )
    np.testing.assert_allclose(cg.run(x)[0], want, rtol=1e-5, atol=1e-5)
    bind_dims(module, {"batch": 3, "seq": 5})
    np.testing.assert_allclose(run(module, [x], params)[0], want, rtol=1e-5, atol=1e-6)


def test_unnamed_dynamic_dims_get_distinct_reported_names() -> None:
    g = helper.make_graph(
        [c("Add", ["x", "y"], ["z"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["?", None]),
         helper.make_tensor_value_info("y", TensorProto.FLOAT, [-1, "?"])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, None)],
    )  # fmt: skip
    g.input[0].type.tensor_type.shape.dim[1].dim_value = -1
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        module, _ = import_model(m)
    assert any("x_0" in str(x.message) and "y_1" in str(x.message) for x in w)
    text = str(module)
    assert 'rlx.dims = ["x_0", "x_1"]' in text and 'rlx.dims = ["y_0", "y_1"]' in text
    assert "-1x" not in text


def test_split_of_static_axis_with_dynamic_dims() -> None:
    m = _model([c("Split", ["x"], ["a", "b"], axis=1, num_outputs=2)],
               [("x", TensorProto.FLOAT, ["n", 4])],
               [("a", TensorProto.FLOAT, None), ("b", TensorProto.FLOAT, None)], opset=18)  # fmt: skip
    module, _ = import_model(m)
    bind_dims(module, {"n": 3})
    x = RNG.standard_normal((3, 4)).astype(np.float32)
    got = run(module, [x])
    np.testing.assert_array_equal(got[0], x[:, :2])
    np.testing.assert_array_equal(got[1], x[:, 2:])


def test_fold_first_constant_scatter_of_float_initializer() -> None:
    data = np.zeros((4, 4), np.float32)
    m = _model(
        [c("ScatterND", ["d", "i", "u"], ["mask"]), c("Add", ["x", "mask"], ["y"])],
        [("x", TensorProto.FLOAT, [4, 4])], [("y", TensorProto.FLOAT, None)],
        [("d", data), ("i", np.array([[1], [3]], np.int64)), ("u", np.ones((2, 4), np.float32))],
    )  # fmt: skip
    module, params = import_model(m)
    assert "gather" not in str(module) and "compare" not in str(module)  # folded, no scatter
    x = RNG.standard_normal((4, 4)).astype(np.float32)
    np.testing.assert_array_equal(run(module, [x], params)[0], _ref(m, {"x": x})[0])


def _if_model():  # noqa: ANN202
    then = helper.make_graph([c("Relu", ["x"], ["t"])], "then", [],
                             [helper.make_tensor_value_info("t", TensorProto.FLOAT, [3])])  # fmt: skip
    els = helper.make_graph([c("Neg", ["x"], ["e"])], "else", [],
                            [helper.make_tensor_value_info("e", TensorProto.FLOAT, [3])])  # fmt: skip
    return _model([c("If", ["cond"], ["y"], then_branch=then, else_branch=els)],
                  [("cond", TensorProto.BOOL, []), ("x", TensorProto.FLOAT, [3])],
                  [("y", TensorProto.FLOAT, None)])  # fmt: skip


@pytest.mark.parametrize("flag", [True, False])
def test_if_constant_and_runtime_condition(flag: bool) -> None:
    m = _if_model()
    x = RNG.standard_normal(3).astype(np.float32)
    want = _ref(m, {"cond": np.array(flag), "x": x})[0]
    inl, _ = import_model(m, constants={"cond": np.array(flag)})
    assert "where" not in str(inl) and ("relu" in str(inl)) == flag
    np.testing.assert_array_equal(run(inl, [x])[0], want)
    dyn, _ = import_model(m)
    np.testing.assert_array_equal(run(dyn, [np.array(flag), x])[0], want)


def test_loop_unrolled_with_constant_trip_count() -> None:
    body = helper.make_graph(
        [c("Identity", ["cin"], ["cout"]), c("Add", ["acc", "x"], ["acc2"]), c("Identity", ["acc2"], ["sc"])],
        "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cin", TensorProto.BOOL, []),
         helper.make_tensor_value_info("acc", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("cout", TensorProto.BOOL, []),
         helper.make_tensor_value_info("acc2", TensorProto.FLOAT, [2]),
         helper.make_tensor_value_info("sc", TensorProto.FLOAT, [2])],
    )  # fmt: skip
    m = _model([c("Loop", ["n", "c0", "a0"], ["acc", "all"], body=body)],
               [("x", TensorProto.FLOAT, [2]), ("a0", TensorProto.FLOAT, [2])],
               [("acc", TensorProto.FLOAT, None), ("all", TensorProto.FLOAT, None)],
               [("n", np.array(3, np.int64)), ("c0", np.array(True))])  # fmt: skip
    x, a0 = RNG.standard_normal(2).astype(np.float32), RNG.standard_normal(2).astype(np.float32)
    module, params = import_model(m)
    got = run(module, [x, a0], params)
    for g, w in zip(got, _ref(m, {"x": x, "a0": a0}), strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-6)


@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax", "Hardmax"])
def test_softmax_below_opset_13_coerces_to_2d(op: str) -> None:
    x = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    m = _model([c(op, ["x"], ["y"], axis=1)], [("x", TensorProto.FLOAT, [2, 3, 4])],
               [("y", TensorProto.FLOAT, None)], opset=11)  # fmt: skip
    module, _ = import_model(m)
    x2 = x.reshape(2, 12)
    e = np.exp(x2 - x2.max(1, keepdims=True))
    sm = e / e.sum(1, keepdims=True)
    want = {"Softmax": sm, "LogSoftmax": np.log(sm),
            "Hardmax": (np.arange(12) == x2.argmax(1)[:, None]).astype(np.float32)}[op]  # fmt: skip
    np.testing.assert_allclose(run(module, [x])[0], want.reshape(2, 3, 4), rtol=1e-5, atol=1e-6)


def test_output_names_kept_and_gather_bounds() -> None:
    table = RNG.standard_normal((2, 4)).astype(np.float32)
    m = _model([c("Gather", ["tt", "ids"], ["emb"])], [("ids", TensorProto.INT64, [3])],
               [("emb", TensorProto.FLOAT, None)], [("tt", table)])  # fmt: skip
    module, _ = import_model(m)
    assert '{rlx.name = "emb"}' in str(module)
    assert index_bounds(module) == {"ids": 2}


def test_symbolic_sizes_used_as_data_are_computed_at_run_time() -> None:
    one = numpy_helper.from_array(np.array([1, 1], np.int64))
    m = _model([c("Shape", ["x"], ["s"]), c("Constant", [], ["one"], value=one),
                c("Equal", ["s", "one"], ["e"]), c("Cast", ["e"], ["y"], to=TensorProto.FLOAT)],
               [("x", TensorProto.FLOAT, ["n", 1])], [("y", TensorProto.FLOAT, None)])  # fmt: skip
    module, _ = import_model(m)
    bind_dims(module, {"n": 3})
    x = np.zeros((3, 1), np.float32)
    np.testing.assert_array_equal(run(module, [x])[0], _ref(m, {"x": x})[0])


def test_symbolic_range_start_is_an_error() -> None:
    ten = numpy_helper.from_array(np.array(10, np.int64))
    m = _model([c("Shape", ["x"], ["s"]), c("Constant", [], ["z"], value=numpy_helper.from_array(np.array([0], np.int64))),
                c("Gather", ["s", "z"], ["n0"]), c("Squeeze", ["n0"], ["n"]),
                c("Constant", [], ["ten"], value=ten), c("Constant", [], ["one"], value=numpy_helper.from_array(np.array(1, np.int64))),
                c("Range", ["n", "ten", "one"], ["y"])],
               [("x", TensorProto.FLOAT, ["n", 1])], [("y", TensorProto.INT64, None)])  # fmt: skip
    with pytest.raises(
        OnnxImportError, match=r"\(Range\): Range with a symbolic limit needs constant start"
    ):
        import_model(m)


def test_rlx_run_random_ids_stay_inside_a_small_table(tmp_path, capsys) -> None:  # noqa: ANN001
    from rlx.tools.rlx_run import main

    table = np.full((2, 4), np.nan, np.float32)
    table[:2] = RNG.standard_normal((2, 4))
    big = np.full((6, 4), np.nan, np.float32)
    big[:2] = 1.0  # rows >= 2 must never be read
    m = _model([c("Gather", ["tt", "ids"], ["a"]), c("Gather", ["big", "ids"], ["b"]), c("Add", ["a", "b"], ["y"])],
               [("ids", TensorProto.INT64, [64])], [("y", TensorProto.FLOAT, None)],
               [("tt", table), ("big", big)])  # fmt: skip
    module, params = import_model(m, bake_initializers=True)
    path = tmp_path / "g.mlir"
    path.write_text(str(module))
    assert main([str(path), "--output-dir", str(tmp_path), "--no-cache"]) == 0
    (out,) = tmp_path.glob("*.npy")  # the runtime names outputs itself (out0)
    assert np.isfinite(np.load(out)).all()


def test_compiled_outputs_keep_the_onnx_output_names() -> None:
    """The imported result names (`rlx.name`) become the compiled graph's output names."""
    import onnx
    from onnx import TensorProto, helper

    import rlx
    from rlx.frontends.onnx import import_model

    g = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"]), helper.make_node("Neg", ["x"], ["z.1"])],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, [2, 3]) for n in ("y", "z.1")],
    )
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    module, _ = import_model(model)
    assert [name for name, _, _ in rlx.compile(module).outputs] == ["y", "z.1"]


def test_scatter_with_an_index_out_of_range_raises() -> None:
    """ONNX makes an out-of-bounds scatter index an error (onnxruntime raises): the
    imported scatter checks its indices at run time instead of dropping the update."""
    import numpy as np
    import pytest
    from onnx import TensorProto, helper

    import rlx
    from rlx.frontends.onnx import import_model

    g = helper.make_graph(
        [helper.make_node("ScatterElements", ["d", "i", "u"], ["y"], axis=0)],
        "g",
        [
            helper.make_tensor_value_info("d", TensorProto.FLOAT, [4]),
            helper.make_tensor_value_info("i", TensorProto.INT64, [2]),
            helper.make_tensor_value_info("u", TensorProto.FLOAT, [2]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])],
    )
    module, _ = import_model(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]))
    compiled = rlx.compile(module)
    d, u = np.zeros(4, np.float32), np.array([1.0, 2.0], np.float32)
    (y,) = compiled.run(d, np.array([1, -1], np.int64), u)
    np.testing.assert_array_equal(y, [0.0, 1.0, 0.0, 2.0])
    with pytest.raises(IndexError, match="index 9 is out of range for an axis of size 4"):
        compiled.run(d, np.array([1, 9], np.int64), u)


@pytest.mark.parametrize("axis,bad", [(0, 2), (1, 3), (0, -3)])
def test_gather_elements_with_an_index_out_of_range_raises(axis: int, bad: int) -> None:
    """A GatherElements index outside [-dim, dim) on any axis is an IndexError; it must not
    land on a valid element of a neighbouring row."""
    from onnx import TensorProto, helper

    import rlx
    from rlx.frontends.onnx import import_model

    g = helper.make_graph(
        [helper.make_node("GatherElements", ["d", "i"], ["y"], axis=axis)],
        "g",
        [helper.make_tensor_value_info("d", TensorProto.FLOAT, [2, 3]),
         helper.make_tensor_value_info("i", TensorProto.INT64, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
    )  # fmt: skip
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    module, _ = import_model(model)
    compiled = rlx.compile(module)
    d = np.arange(6, dtype=np.float32).reshape(2, 3)
    good = np.array([[0, 1, 0], [1, 0, -1]], np.int64)
    (y,) = compiled.run(d, good)
    (want,) = ReferenceEvaluator(model).run(None, {"d": d, "i": good})
    np.testing.assert_array_equal(y, want)
    with pytest.raises(IndexError, match="out of range"):
        compiled.run(d, np.array([[0, bad, 0], [1, 0, 0]], np.int64))
