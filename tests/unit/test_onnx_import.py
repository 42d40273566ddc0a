"""The ONNX importer on small hand-built models: params, dynamic dims, folding, errors,
the `rlx-translate` tool, and agreement with onnx's reference evaluator."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

import rlx  # noqa: E402
from rlx.frontends.onnx import OnnxImportError, import_model  # noqa: E402
from rlx.interpreter import run  # noqa: E402
from rlx.transforms.bind_dims import arg_dim_names, bind_dims  # noqa: E402

RNG = np.random.default_rng(0)


def _model(nodes, inputs, outputs, inits=(), opset: int = 17) -> onnx.ModelProto:
    g = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
        [helper.make_tensor_value_info(n, t, s) for n, t, s in outputs],
        [numpy_helper.from_array(a, n) for n, a in inits],
    )
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def _mlp() -> onnx.ModelProto:
    """Gemm + Relu + Gemm(transB, alpha, beta) + Softmax with a dynamic batch dim."""
    f, rng = np.float32, np.random.default_rng(1)
    inits = [
        ("w1", rng.standard_normal((8, 16)).astype(f)),
        ("b1", rng.standard_normal(16).astype(f)),
        ("w2", rng.standard_normal((4, 16)).astype(f)),
        ("b2", rng.standard_normal(4).astype(f)),
    ]
    nodes = [
        helper.make_node("Gemm", ["x", "w1", "b1"], ["h"]),
        helper.make_node("Relu", ["h"], ["r"]),
        helper.make_node("Gemm", ["r", "w2", "b2"], ["z"], transB=1, alpha=0.5, beta=2.0),
        helper.make_node("Softmax", ["z"], ["y"], axis=-1),
    ]
    m = _model(
        nodes,
        [("x", TensorProto.FLOAT, ["batch", 8])],
        [("y", TensorProto.FLOAT, ["batch", 4])],
        inits,
    )
    onnx.checker.check_model(m)
    return m


def test_mlp_dynamic_batch_matches_onnx_reference() -> None:
    m = _mlp()
    module, params = import_model(m)
    assert sorted(params) == ["b1", "b2", "w1", "w2"]
    f = module.body.block.first_op
    assert arg_dim_names(f) == [["batch", 8]]  # type: ignore[arg-type]
    assert "tensor<?x8xf32>" in str(module)
    bind_dims(module, {"batch": 3})
    x = RNG.standard_normal((3, 8)).astype(np.float32)
    want = ReferenceEvaluator(m).run(None, {"x": x})[0]
    (got,) = run(module, {"x": x}, params)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_mlp_compiled() -> None:
    m = _mlp()
    module, params = import_model(m)
    x = RNG.standard_normal((5, 8)).astype(np.float32)
    want = ReferenceEvaluator(m).run(None, {"x": x})[0]
    compiled = rlx.compile(
        module, rlx.CompileOptions(dim_binding={"batch": 5}, param_bindings=params)
    )
    (got,) = compiled.run(x)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_bake_initializers() -> None:
    module, params = import_model(_mlp(), bake_initializers=True)
    assert params == {} and "rlx.param" not in str(module)
    bind_dims(module, {"batch": 2})
    x = RNG.standard_normal((2, 8)).astype(np.float32)
    want = ReferenceEvaluator(_mlp()).run(None, {"x": x})[0]
    (got,) = run(module, [x])
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_shape_folding_reshape_slice() -> None:
    """Shape -> Gather -> Concat -> Reshape folds; Reshape 0/-1; negative, clamped Slice."""
    c = helper.make_node
    nodes = [
        c("Shape", ["x"], ["s"]),
        c("Constant", [], ["i0"], value=numpy_helper.from_array(np.array([0], np.int64))),
        c("Gather", ["s", "i0"], ["n"], axis=0),
        c("Constant", [], ["m1"], value=numpy_helper.from_array(np.array([-1], np.int64))),
        c("Concat", ["n", "m1"], ["shp"], axis=0),
        c("Reshape", ["x", "shp"], ["flat"]),
        c("Constant", [], ["st"], value=numpy_helper.from_array(np.array([-5, 100], np.int64))),
        c("Constant", [], ["en"], value=numpy_helper.from_array(np.array([-1, -100], np.int64))),
        c("Constant", [], ["ax"], value=numpy_helper.from_array(np.array([1, 0], np.int64))),
        c("Constant", [], ["sp"], value=numpy_helper.from_array(np.array([2, -1], np.int64))),
        c("Slice", ["flat", "st", "en", "ax", "sp"], ["y"]),
        c("Constant", [], ["z0"], value=numpy_helper.from_array(np.array([0, 3, -1], np.int64))),
        c("Reshape", ["x", "z0"], ["y2"]),
    ]
    m = _model(
        nodes,
        [("x", TensorProto.FLOAT, [2, 3, 4])],
        [("y", TensorProto.FLOAT, None), ("y2", TensorProto.FLOAT, None)],
    )
    module, params = import_model(m)
    assert params == {}
    x = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    want = ReferenceEvaluator(m).run(None, {"x": x})
    got = run(module, [x])
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)


def test_dims_at_import_fold_dynamic_shape_arithmetic() -> None:
    """Shape of a dynamic input imports symbolically (bound later); with `dims=` it folds."""
    c = helper.make_node
    nodes = [
        c("Shape", ["x"], ["s"], end=1),
        c("Constant", [], ["m1"], value=numpy_helper.from_array(np.array([-1], np.int64))),
        c("Concat", ["s", "m1"], ["shp"], axis=0),
        c("Reshape", ["x", "shp"], ["y"]),
    ]
    m = _model(nodes, [("x", TensorProto.FLOAT, ["batch", 3, 4])], [("y", TensorProto.FLOAT, None)])
    sym, _ = import_model(m)
    assert 'rlx.dims = ["batch", 12 : i64]' in str(sym)  # the batch size stays symbolic
    module, _ = import_model(m, dims={"batch": 2})
    assert "tensor<2x12xf32>" in str(module)
    x = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    np.testing.assert_array_equal(run(module, [x])[0], x.reshape(2, 12))


def test_dims_at_import_bind_unnamed_dims_by_their_generated_names() -> None:
    """An exporter's anonymous batch dim (scikit-learn's `[None, F]`) is bound at import by
    the name the importer gives it (the warning lists it), a `dim_param` that is no
    identifier by its name as written; no warning once bound."""
    import warnings

    relu = [helper.make_node("Relu", ["x"], ["y"])]
    anon = _model(relu, [("x", TensorProto.FLOAT, [None, 3])], [("y", TensorProto.FLOAT, None)])
    with pytest.warns(UserWarning, match="x_0"):
        import_model(anon)
    odd = _model(
        relu, [("x", TensorProto.FLOAT, ["batch size", 3])], [("y", TensorProto.FLOAT, None)]
    )
    for m, dims in ((anon, {"x_0": 5}), (odd, {"batch size": 5}), (odd, {"x_0": 5})):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            module, _ = import_model(m, dims=dims)
        assert "tensor<5x3xf32>" in str(module)


@pytest.mark.parametrize(
    ("dims", "match"),
    [({"batch": 2, "bacth": 2}, r"dims names \['bacth'\], which no graph input has; its dynamic dims: seq"),
     ({"batch": -1}, "dims must be integers >= 0"), ({"batch": 2.5}, "dims must be integers >= 0"),
     ({"batch": True}, "dims must be integers >= 0")],
)  # fmt: skip
def test_bad_dims_at_import_are_refused(dims: dict, match: str) -> None:
    m = _model([helper.make_node("Relu", ["x"], ["y"])],
               [("x", TensorProto.FLOAT, ["batch", "seq"])], [("y", TensorProto.FLOAT, None)])  # fmt: skip
    with pytest.raises(OnnxImportError, match=match):
        import_model(m, dims=dims)


def test_constant_inputs_freeze_graph_inputs() -> None:
    m = _model(
        [helper.make_node("ReduceSum", ["x", "axes"], ["y"], keepdims=0)],
        [("x", TensorProto.FLOAT, [2, 3]), ("axes", TensorProto.INT64, [1])],
        [("y", TensorProto.FLOAT, None)],
    )
    with pytest.raises(
        OnnxImportError, match=r"\(ReduceSum\): input #1 axes .* must be a constant"
    ):
        import_model(m)
    module, _ = import_model(m, constants={"axes": np.array([1])})
    x = RNG.standard_normal((2, 3)).astype(np.float32)
    np.testing.assert_allclose(run(module, [x])[0], x.sum(1), rtol=1e-6)


def test_unsupported_op_and_attribute_errors() -> None:
    m = _model(
        [helper.make_node("Unique", ["x"], ["v"], name="u0")],
        [("x", TensorProto.FLOAT, [4])],
        [("v", TensorProto.FLOAT, None)],
    )
    with pytest.raises(
        ValueError, match="node 'u0' \\(Unique\\): op type 'Unique' is not supported"
    ):
        import_model(m)
    m = _model(
        [helper.make_node("ConvTranspose", ["x", "w"], ["y"], name="p")],
        [("x", TensorProto.FLOAT, [1, 1, 2, 2, 2]), ("w", TensorProto.FLOAT, [1, 1, 2, 2, 2])],
        [("y", TensorProto.FLOAT, None)],
    )
    with pytest.raises(OnnxImportError, match="node 'p' \\(ConvTranspose\\): only 1-D and 2-D"):
        import_model(m)
    m = _model(
        [helper.make_node("Relu", ["x"], ["y"], name="r", bogus=1)],
        [("x", TensorProto.FLOAT, [2])],
        [("y", TensorProto.FLOAT, None)],
    )
    with pytest.raises(
        OnnxImportError, match="node 'r' \\(Relu\\): attribute\\(s\\) bogus not supported"
    ):
        import_model(m)


def test_conv_pool_same_upper_and_quant() -> None:
    f = np.float32
    w = RNG.standard_normal((4, 2, 3, 3)).astype(f)
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], auto_pad="SAME_UPPER", strides=[2, 2]),
        helper.make_node("MaxPool", ["c"], ["p"], kernel_shape=[2, 2], pads=[1, 1, 1, 1]),
        helper.make_node("QuantizeLinear", ["p", "s", "zp"], ["q"]),
        helper.make_node("DequantizeLinear", ["q", "s", "zp"], ["y"]),
    ]
    inits = [("w", w), ("s", np.array(0.05, f)), ("zp", np.array(3, np.int8))]
    m = _model(
        nodes, [("x", TensorProto.FLOAT, [1, 2, 7, 7])], [("y", TensorProto.FLOAT, None)], inits, 21
    )
    module, params = import_model(m)
    assert sorted(params) == ["w"]
    assert "rlx.quantize" in str(module) and "rlx.conv2d" in str(module)
    x = RNG.standard_normal((1, 2, 7, 7)).astype(f)
    want = ReferenceEvaluator(m).run(None, {"x": x})[0]
    np.testing.assert_allclose(run(module, [x], params)[0], want, rtol=1e-5, atol=1e-5)


def test_rlx_translate(tmp_path: Path) -> None:
    from rlx.tools.rlx_translate import main

    src = tmp_path / "mlp.onnx"
    onnx.save(_mlp(), str(src))
    out = tmp_path / "mlp.mlir"
    assert main(["--import-onnx", str(src), "-o", str(out), "--dim-binding", "batch=2"]) == 0
    text = out.read_text()
    assert 'rlx.param "w1"' in text and "tensor<2x8xf32>" in text
    weights = rlx.weights.load(tmp_path / "mlp.npz")
    assert sorted(weights) == ["b1", "b2", "w1", "w2"]
    x = RNG.standard_normal((2, 8)).astype(np.float32)
    want = ReferenceEvaluator(_mlp()).run(None, {"x": x})[0]
    (got,) = run(text, [x], weights)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert main(["--import-onnx", str(tmp_path / "missing.onnx")]) == 1
