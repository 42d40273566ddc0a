"""Dynamic (symbolic) batch / sequence dims through the ops of real exported models.

Each graph is hand-built with `onnx.helper` in the shape torch's exporters give it
(a dynamic batch or sequence dim named by `dim_param`, sizes read with `Shape`), imported
WITHOUT `dims=`, bound afterwards with `bind_dims` and run by the reference interpreter;
the result is compared with `onnx.reference` (found by tools/onnx_survey.py: segmentation
heads, video convs, swin, mobilebert, CLIP, DeBERTa, MobileViT, ShuffleNet)."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import rlx
from rlx.frontends.onnx import OnnxImportError, import_model, import_sized
from rlx.frontends.onnx.symbolic import Dim
from rlx.interpreter import run
from rlx.transforms.bind_dims import bind_dims

I64 = TensorProto.INT64
F32 = TensorProto.FLOAT


def _model(nodes, inputs, outputs, inits=(), opset: int = 17):  # noqa: ANN001,ANN202
    g = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
        [helper.make_tensor_value_info(n, t, s) for n, t, s in outputs],
        initializer=[numpy_helper.from_array(np.asarray(v), k) for k, v in inits],
    )
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def _c(name: str, value) -> object:  # noqa: ANN001
    return helper.make_node(
        "Constant", [], [name], value=numpy_helper.from_array(np.asarray(value))
    )


def _check(m, feeds: dict[str, np.ndarray], binding: dict[str, int], atol: float = 1e-5) -> None:  # noqa: ANN001
    module, params = import_model(m)  # no dims=: the dynamic dims stay symbolic
    bind_dims(module, binding)
    got = run(module, feeds, params)
    want = ReferenceEvaluator(m).run(None, feeds)
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, w, atol=atol, rtol=1e-5)


def _x(*shape: int) -> np.ndarray:
    return np.random.default_rng(0).standard_normal(shape).astype(np.float32)


def test_resize_with_sizes_from_the_input_shape_and_a_dynamic_batch() -> None:
    """sizes = Concat(Shape(x)[:2], [h, w]) as the TorchScript exporter writes bilinear
    upsampling: the dynamic batch axis keeps its size, only H and W are resized."""
    nodes = [
        helper.make_node("Shape", ["x"], ["s"], end=2),
        _c("hw", np.array([6, 8], np.int64)),
        helper.make_node("Concat", ["s", "hw"], ["sz"], axis=0),
        helper.make_node("Resize", ["x", "", "", "sz"], ["y"], mode="linear"),
    ]
    m = _model(nodes, [("x", F32, ["batch", 2, 3, 4])], [("y", F32, None)])
    _check(m, {"x": _x(3, 2, 3, 4)}, {"batch": 3})


def test_resize_scales_on_a_dynamic_axis() -> None:
    """Scale 1 on the dynamic axis imports; resizing the dynamic axis is a clear error."""
    sc = np.array([1, 1, 2, 2], np.float32)
    m = _model(
        [helper.make_node("Resize", ["x", "", "sc"], ["y"], mode="nearest")],
        [("x", F32, ["batch", 2, 3, 3])], [("y", F32, None)], [("sc", sc)],
    )  # fmt: skip
    _check(m, {"x": _x(2, 2, 3, 3)}, {"batch": 2})
    m2 = _model(
        [helper.make_node("Resize", ["x", "", "sc"], ["y"], mode="nearest")],
        [("x", F32, ["batch", 2, 3, 3])], [("y", F32, None)], [("sc", sc[::-1].copy())],
    )  # fmt: skip
    with pytest.raises(OnnxImportError, match=r"\(Resize\).*resized axis 0"):
        import_model(m2)


def _pad_model(pads: list[int]):  # noqa: ANN202
    return _model(
        [helper.make_node("Pad", ["x", "p", "v"], ["y"])],
        [("x", F32, ["batch", 2, 4, 3])], [("y", F32, None)],
        [("p", np.array(pads, np.int64)), ("v", np.array(0.5, np.float32))],
    )  # fmt: skip


def test_pad_with_a_dynamic_batch() -> None:
    _check(_pad_model([0, 1, 2, 0, 0, 3, 1, 0]), {"x": _x(2, 2, 4, 3)}, {"batch": 2})


def test_negative_pad_with_a_dynamic_batch() -> None:
    """Negative pads crop (onnx.reference cannot: NumPy slicing is the reference)."""
    module, params = import_model(_pad_model([0, 0, -1, 0, 0, 1, -1, 0]))
    bind_dims(module, {"batch": 2})
    x = _x(2, 2, 4, 3)
    (y,) = run(module, {"x": x}, params)
    want = np.pad(x[:, :, 1:-1, :], [(0, 0), (0, 1), (0, 0), (0, 0)], constant_values=0.5)
    np.testing.assert_array_equal(y, want)


def test_pad_of_the_dynamic_axis_itself() -> None:
    """MobileBERT's trigram embedding pads the sequence axis by one (constant mode)."""
    m = _model(
        [helper.make_node("Pad", ["x", "p"], ["y"])],
        [("x", F32, [2, "seq", 3])], [("y", F32, None)],
        [("p", np.array([0, 1, 0, 0, 0, 0], np.int64))],
    )  # fmt: skip
    _check(m, {"x": _x(2, 5, 3)}, {"seq": 5})
    m2 = _model(
        [helper.make_node("Pad", ["x", "p"], ["y"], mode="reflect")],
        [("x", F32, [2, "seq", 3])], [("y", F32, None)],
        [("p", np.array([0, 1, 0, 0, 0, 0], np.int64))],
    )  # fmt: skip
    with pytest.raises(OnnxImportError, match=r"\(Pad\): Pad mode 'reflect' needs a static size"):
        import_model(m2)


def test_conv3d_with_a_dynamic_batch() -> None:
    w = _x(4, 2, 3, 3, 3)
    m = _model(
        [helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 0, 1, 1, 0, 1], strides=[2, 1, 1])],
        [("x", F32, ["batch", 2, 4, 5, 5])], [("y", F32, None)], [("w", w)],
    )  # fmt: skip
    _check(m, {"x": _x(2, 2, 4, 5, 5)}, {"batch": 2}, atol=1e-4)


def test_shape_after_conv_and_pool_keeps_the_batch_symbol() -> None:
    """Shape of a conv / pool result (ShuffleNet's channel shuffle, ViT's patch reshape)
    is symbolic in the batch, also after a long chain (no recursion depth limit)."""
    nodes = [helper.make_node("Conv", ["x", "w"], ["c0"], pads=[1, 1, 1, 1])]
    for i in range(80):  # a deep chain of elementwise ops
        nodes.append(helper.make_node("Relu", [f"c{i}"], [f"c{i + 1}"]))
    nodes += [
        helper.make_node("MaxPool", ["c80"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Shape", ["p"], ["s"]),
        _c("i0", np.array([0], np.int64)),
        helper.make_node("Gather", ["s", "i0"], ["b"], axis=0),
        _c("rest", np.array([2, -1], np.int64)),
        helper.make_node("Concat", ["b", "rest"], ["t"], axis=0),
        helper.make_node("Reshape", ["p", "t"], ["y"]),
    ]
    m = _model(nodes, [("x", F32, ["batch", 3, 4, 4])], [("y", F32, None)], [("w", _x(4, 3, 3, 3))])
    _check(m, {"x": _x(2, 3, 4, 4)}, {"batch": 2}, atol=1e-4)


def test_argmax_over_the_dynamic_sequence() -> None:
    """CLIP's text pooling: ArgMax of the ids over the dynamic sequence axis."""
    m = _model(
        [helper.make_node("ArgMax", ["x"], ["y"], axis=-1, keepdims=0)],
        [("x", I64, ["batch", "seq"])], [("y", I64, None)],
    )  # fmt: skip
    x = np.array([[3, 9, 9, 1], [7, 2, 5, 7]], np.int64)
    _check(m, {"x": x}, {"batch": 2, "seq": 4})


def test_tile_with_repeats_from_the_shape() -> None:
    """DeBERTa's relative-position Tile: repeats computed from the symbolic batch."""
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        _c("i0", np.array([0], np.int64)),
        helper.make_node("Gather", ["s", "i0"], ["b"], axis=0),
        _c("one", np.array([1, 1], np.int64)),
        helper.make_node("Concat", ["b", "one"], ["r"], axis=0),
        helper.make_node("Tile", ["p", "r"], ["y"]),
    ]
    m = _model(nodes, [("x", F32, ["batch", 3])], [("y", F32, None)], [("p", _x(2, 3, 4))])
    _check(m, {"x": _x(3, 3)}, {"batch": 3})


@pytest.mark.parametrize(
    ("start", "end", "step"),
    [(1, 2**63 - 1, 1), (-1, 2**63 - 1, 1), (0, -1, 1), (1, -1, 2), (-3, 2**63 - 1, 2)],
)
def test_slice_of_a_dynamic_axis_counted_from_the_end(start: int, end: int, step: int) -> None:
    m = _model(
        [helper.make_node("Slice", ["x", "s", "e", "a", "st"], ["y"])],
        [("x", F32, [2, "seq", 3])], [("y", F32, None)],
        [("s", np.array([start])), ("e", np.array([end])), ("a", np.array([1])), ("st", np.array([step]))],
    )  # fmt: skip
    _check(m, {"x": _x(2, 6, 3)}, {"seq": 6})


@pytest.mark.parametrize("step", [1, 2])
@pytest.mark.parametrize("seq", [1, 2, 3, 5])
def test_slice_with_a_negative_start_past_a_short_dynamic_axis_clamps(seq: int, step: int) -> None:
    """x[-3::step] on an axis bound to fewer than 3 elements takes all of them (ONNX clamps
    the start to 0); it used to assume the axis was long enough: a negative gather start
    (a constant-folding crash once compiled)."""
    m = _model(
        [helper.make_node("Slice", ["x", "s", "e", "a", "st"], ["y"])],
        [("x", F32, [2, "seq", 3])], [("y", F32, None)],
        [("s", np.array([-3])), ("e", np.array([2**63 - 1])), ("a", np.array([1])), ("st", np.array([step]))],
    )  # fmt: skip
    feeds = {"x": _x(2, seq, 3)}
    _check(m, feeds, {"seq": seq})
    module, params = import_model(m)
    cg = rlx.compile(module, rlx.CompileOptions(dim_binding={"seq": seq}))
    cg.set_params(params)
    np.testing.assert_array_equal(cg.run(feeds["x"])[0], ReferenceEvaluator(m).run(None, feeds)[0])


def test_slice_of_a_dynamic_axis_with_a_static_end_is_a_clear_error() -> None:
    m = _model(
        [helper.make_node("Slice", ["x", "s", "e", "a"], ["y"])],
        [("x", F32, [2, "seq", 3])], [("y", F32, None)],
        [("s", np.array([0])), ("e", np.array([2])), ("a", np.array([1]))],
    )  # fmt: skip
    with pytest.raises(OnnxImportError, match=r"\(Slice\): slicing the dynamic axis 1 \[0:2:1\]"):
        import_model(m)


def test_symbolic_products_and_quotients_simplify() -> None:
    """MobileViT's unfold reshapes compare (1024*batch)//16//(4*batch) with 16."""
    b, s = Dim("batch"), Dim("seq")
    assert (1024 * b) // 16 // (b * 4) == 16
    assert 2 * b // 2 == b and (b * s) // s == b and b - b == 0
    assert repr(b + b) == "(2*batch)" and repr(b * 4) == "(4*batch)"
    assert repr((b + 1) * 2) == "((batch+1)*2)"  # not a monomial: kept as text


def test_min_of_a_symbolic_size_is_a_min_expression() -> None:
    """GPT-Neo's local attention (dynamo export): Reshape to min(window, seq) rows."""
    nodes = [
        helper.make_node("Shape", ["x"], ["s"], start=1, end=2),
        _c("w", np.array([4], np.int64)),
        helper.make_node("Min", ["s", "w"], ["m"]),
        _c("last", np.array([-1], np.int64)),
        helper.make_node("Concat", ["m", "last"], ["t"], axis=0),
        helper.make_node("Slice", ["x", "zero", "m", "one"], ["xs"]),
        helper.make_node("Reshape", ["xs", "t"], ["y"]),
    ]
    inits = [("zero", np.array([0])), ("one", np.array([1]))]
    m = _model(nodes, [("x", F32, [2, "seq"])], [("y", F32, None)], inits)
    for seq in (3, 6):  # min picks either side
        _check(m, {"x": _x(2, seq)}, {"seq": seq})


def test_eval_dim_min_max() -> None:
    from rlx.transforms.dim_exprs import eval_dim

    assert eval_dim("min(4,seq)", {"seq": 3}) == 3
    assert eval_dim("(max(seq,2)*2)", {"seq": 1}) == 4
    assert eval_dim("min(seq,n)", {"seq": 1}) is None  # an unbound name
    assert eval_dim("pow(2,3)", {}) is None  # not in the grammar


def test_gather_nd_with_dynamic_indices() -> None:
    """GPT-J's sin/cos table indexed by `arange(seq)` rows (GatherND, dynamic indices)."""
    nodes = [
        helper.make_node("Shape", ["ids"], ["s"], start=1, end=2),
        helper.make_node("Squeeze", ["s"], ["n"]),
        helper.make_node("Range", ["zero", "n", "one"], ["r"]),
        helper.make_node("Unsqueeze", ["r", "ax"], ["r2"]),
        helper.make_node("GatherND", ["table", "r2"], ["y"]),
    ]
    inits = [
        ("zero", np.array(0)),
        ("one", np.array(1)),
        ("ax", np.array([-1])),
        ("table", _x(10, 4)),
    ]
    m = _model(nodes, [("ids", I64, [1, "seq"])], [("y", F32, None)], inits)
    _check(m, {"ids": np.zeros((1, 5), np.int64)}, {"seq": 5})


def test_shape_after_a_head_split_reshape() -> None:
    """A converter's `[b, s, 32] -> [?, ?, 2, 16]` keeps b and s for a later Shape."""
    nodes = [
        helper.make_node("LayerNormalization", ["x", "g"], ["h"], axis=-1),
        helper.make_node("Shape", ["x"], ["s"], end=2),
        _c("heads", np.array([2, 16], np.int64)),
        helper.make_node("Concat", ["s", "heads"], ["t"], axis=0),
        helper.make_node("Reshape", ["h", "t"], ["h4"]),
        helper.make_node("Shape", ["h4"], ["s4"]),
        helper.make_node("Slice", ["s4", "zero", "two"], ["bs"]),
        _c("flat", np.array([32], np.int64)),
        helper.make_node("Concat", ["bs", "flat"], ["t2"], axis=0),
        helper.make_node("Reshape", ["h4", "t2"], ["y"]),
    ]
    inits = [("g", _x(32)), ("zero", np.array([0])), ("two", np.array([2]))]
    m = _model(nodes, [("x", F32, ["batch", "seq", 32])], [("y", F32, None)], inits)
    _check(m, {"x": _x(2, 3, 32)}, {"batch": 2, "seq": 3}, atol=1e-4)


@pytest.mark.parametrize("reduction", ["none", "add"])
def test_scatter_nd_into_a_dynamic_buffer(reduction: str) -> None:
    """BART's shift_tokens_right: `out[:, 1:] = ids[:, :-1]` into a `[batch, seq]` buffer
    (ConstantOfShape of Shape(ids)), indices from expanded aranges."""
    nodes = [
        helper.make_node("Shape", ["ids"], ["s"]),
        helper.make_node(
            "ConstantOfShape",
            ["s"],
            ["buf"],
            value=numpy_helper.from_array(np.array([7], np.int64)),
        ),
        helper.make_node("Slice", ["ids", "zero", "m1", "one"], ["upd"]),
        helper.make_node("Shape", ["upd"], ["us"]),
        helper.make_node("Gather", ["s", "i0"], ["b"]),
        helper.make_node("Range", ["z0", "b", "o0"], ["rb"]),
        helper.make_node("Unsqueeze", ["rb", "ax1"], ["rb2"]),
        helper.make_node("Expand", ["rb2", "us"], ["ib"]),
        helper.make_node("Gather", ["us", "i1"], ["sm1"]),
        helper.make_node("Range", ["o0", "s1", "o0"], ["rs"]),
        helper.make_node("Gather", ["s", "i1"], ["s1"]),
        helper.make_node("Expand", ["rs", "us"], ["is_"]),
        helper.make_node("Unsqueeze", ["ib", "axm1"], ["ib3"]),
        helper.make_node("Unsqueeze", ["is_", "axm1"], ["is3"]),
        helper.make_node("Concat", ["ib3", "is3"], ["idx"], axis=-1),
        helper.make_node("ScatterND", ["buf", "idx", "upd"], ["y"], reduction=reduction),
    ]
    nodes = [nodes[i] for i in (0, 1, 2, 3, 4, 5, 6, 7, 8, 10, 9, 11, 12, 13, 14, 15)]
    inits = [("zero", np.array([0])), ("m1", np.array([-1])), ("one", np.array([1])),
             ("i0", np.array(0)), ("i1", np.array(1)), ("z0", np.array(0)), ("o0", np.array(1)),
             ("ax1", np.array([1])), ("axm1", np.array([-1]))]  # fmt: skip
    m = _model(nodes, [("ids", I64, ["batch", "seq"])], [("y", I64, None)], inits, opset=18)
    ids = np.arange(10, dtype=np.int64).reshape(2, 5)
    _check(m, {"ids": ids}, {"batch": 2, "seq": 5})


@pytest.mark.parametrize("reduction", ["none", "max"])
def test_scatter_elements_with_dynamic_dims(reduction: str) -> None:
    """select_scatter (`out[:, 0] = v`) of a dynamo export, with a dynamic batch and
    sequence; negative indices count from the end of the dynamic axis."""
    m = _model(
        [helper.make_node("ScatterElements", ["x", "i", "u"], ["y"], axis=1, reduction=reduction)],
        [("x", F32, ["batch", "seq"]), ("i", I64, ["batch", 2]), ("u", F32, ["batch", 2])],
        [("y", F32, None)],
    )  # fmt: skip
    i = np.array([[0, -1], [2, 1], [4, 0]], np.int64)
    _check(m, {"x": _x(3, 5), "i": i, "u": _x(3, 2) + 3}, {"batch": 3, "seq": 5})


def test_einsum_with_a_dynamic_batch() -> None:
    """MaxViT's relative attention einsum with a dynamic batch."""
    m = _model(
        [helper.make_node("Einsum", ["q", "k"], ["y"], equation="bhid,bhjd->bhij")],
        [("q", F32, ["batch", 2, 3, 4]), ("k", F32, ["batch", 2, 5, 4])], [("y", F32, None)],
    )  # fmt: skip
    _check(m, {"q": _x(3, 2, 3, 4), "k": _x(3, 2, 5, 4) - 1}, {"batch": 3}, atol=1e-4)


@pytest.mark.parametrize("at_import", [False, True])
def test_import_sized_binds_every_dim_name_from_the_inputs(at_import: bool) -> None:
    """`import_sized` reads the binding off the fed arrays (the model's `dim_param` names
    and the names the entry's arguments carry), in the model's input order even when the
    feeds are given in another; the compiled graph then matches onnx.reference."""
    m = _model(
        [helper.make_node("Add", ["x", "y"], ["s"]), helper.make_node("Relu", ["s"], ["z"])],
        [("x", F32, ["batch", "seq"]), ("y", F32, [1, "seq"])], [("z", F32, None)],
    )  # fmt: skip
    feeds = {"y": _x(1, 5), "x": _x(3, 5)}
    module, params, binding, names = import_sized(m, feeds, at_import=at_import)
    assert binding == {"batch": 3, "seq": 5} and names == ["x", "y"]
    cg = rlx.compile(module, rlx.CompileOptions(dim_binding=binding))
    cg.set_params(params)
    want = ReferenceEvaluator(m).run(None, feeds)[0]
    np.testing.assert_array_equal(cg.run(**feeds)[0], want)
