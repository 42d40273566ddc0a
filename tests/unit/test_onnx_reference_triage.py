"""Mismatches of `tools/fuzz/fuzz_onnx.py` against onnx.reference, triaged with
onnxruntime and a NumPy statement of the ONNX spec (docs/fuzzing.md, session 7).

* LpNormalization p=1 of negative values: onnx.reference sums `x**1` (no `abs`), so its
  "norm" can be near 0 or negative; rlx divides by the L1 norm, as onnxruntime does.
* MaxPool's Indices with N*C > 1 or H != W: the spec's indices are flat positions in the
  whole input (`[0, N*C*H*W)`); onnx.reference gives per-image positions with a wrong row
  stride; rlx matches onnxruntime.
* MaxPool / AveragePool with a pad as large as the kernel: the border windows lie wholly
  in the padding (rlx gave -inf with index -1); refused, as onnxruntime refuses it.
"""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto as T
from onnx import helper as h

import rlx
from rlx.frontends.onnx import OnnxImportError, import_model


def _model(node, in_shape, outs):  # type: ignore[no-untyped-def]
    ins = [h.make_tensor_value_info("x", T.FLOAT, in_shape)]
    outs = [h.make_tensor_value_info(o, t, None) for o, t in outs]
    m = h.make_model(h.make_graph([node], "g", ins, outs), opset_imports=[h.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def _ort(m, x):  # type: ignore[no-untyped-def]
    ort = pytest.importorskip("onnxruntime")
    s = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    return s.run(None, {"x": x})


@pytest.mark.parametrize(("axis", "shape"), [(0, [5]), (1, [2, 5]), (-1, [5, 2, 3])])
def test_l1_normalization_of_negative_values(axis: int, shape: list[int]) -> None:
    m = _model(h.make_node("LpNormalization", ["x"], ["y"], axis=axis, p=1), shape,
               [("y", T.FLOAT)])  # fmt: skip
    x = (np.random.default_rng(0).standard_normal(shape) * 2).astype(np.float32)
    got = rlx.compile(import_model(m)[0]).run(x)[0]
    want = x / np.abs(x).sum(axis=axis, keepdims=True)  # the spec: x / ||x||_1
    np.testing.assert_allclose(got, want, rtol=1e-5)
    np.testing.assert_allclose(got, _ort(m, x)[0], rtol=1e-5)


def _flat_argmax_pool(x: np.ndarray, k: int, pad: int, order: int) -> np.ndarray:
    """The spec's Indices of a k x k, stride-1 MaxPool: positions in the flat input."""
    n, c, hh, ww = x.shape
    xp = np.pad(x, [(0, 0), (0, 0), (pad, pad), (pad, pad)], constant_values=-np.inf)
    oh, ow = hh + 2 * pad - k + 1, ww + 2 * pad - k + 1
    out = np.zeros((n, c, oh, ow), np.int64)
    for b, ch, i, j in np.ndindex(n, c, oh, ow):
        r, s = np.unravel_index(np.argmax(xp[b, ch, i : i + k, j : j + k]), (k, k))
        y, z = i + r - pad, j + s - pad
        pos = y * ww + z if order == 0 else z * hh + y
        out[b, ch, i, j] = (b * c + ch) * hh * ww + pos
    return out


@pytest.mark.parametrize("order", [0, 1])
def test_maxpool_indices_are_flat_input_positions(order: int) -> None:
    shape = [2, 3, 4, 5]
    node = h.make_node("MaxPool", ["x"], ["y", "i"], kernel_shape=[3, 3], pads=[1, 1, 1, 1],
                       storage_order=order)  # fmt: skip
    m = _model(node, shape, [("y", T.FLOAT), ("i", T.INT64)])
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    y, idx = rlx.compile(import_model(m)[0]).run(x)
    np.testing.assert_array_equal(idx, _flat_argmax_pool(x, 3, 1, order))
    np.testing.assert_array_equal(x.reshape(-1)[idx] if order == 0 else y, y)
    oy, oi = _ort(m, x)
    np.testing.assert_array_equal(idx, oi)
    np.testing.assert_array_equal(y, oy)


@pytest.mark.parametrize(("op", "outs"), [("MaxPool", 1), ("MaxPool", 2), ("AveragePool", 1)])
def test_pool_pad_as_large_as_the_kernel_is_refused(op: str, outs: int) -> None:
    node = h.make_node(op, ["x"], ["y", "i"][:outs], kernel_shape=[2, 2], pads=[0, 2, 0, 0])
    m = _model(node, [1, 1, 3, 4], [("y", T.FLOAT), ("i", T.INT64)][:outs])
    with pytest.raises(OnnxImportError, match=rf"node 'y' \({op}\): pads \[0, 2, 0, 0\]: pad 2 "
                       r"is not smaller than the kernel \(2\) on spatial axis 1"):  # fmt: skip
        import_model(m)


def test_pool_kernel_rank_must_match_the_input() -> None:
    node = h.make_node("MaxPool", ["x"], ["y", "i"], kernel_shape=[2])
    m = _model(node, [1, 1, 3, 4], [("y", T.FLOAT), ("i", T.INT64)])
    with pytest.raises(
        OnnxImportError, match=r"node 'y' \(MaxPool\): kernel_shape \[2\] must be 2"
    ):
        import_model(m)


def _conv_transpose_np(x: np.ndarray, w: np.ndarray, st: list[int], out: list[int]) -> np.ndarray:
    """The spec's ConvTranspose with `output_shape` (no auto_pad): the full result
    cropped by `total - total // 2` at the start of each axis (negative: zero-extended)."""
    n, c, hh, ww = x.shape
    f, kh, kw = w.shape[1], w.shape[2], w.shape[3]
    full = np.zeros((n, f, st[0] * (hh - 1) + kh, st[1] * (ww - 1) + kw))
    for i, j in np.ndindex(hh, ww):
        full[:, :, i * st[0] : i * st[0] + kh, j * st[1] : j * st[1] + kw] += np.einsum(
            "nc,cfab->nfab", x[:, :, i, j], w
        )
    for ax, want in ((2, out[0]), (3, out[1])):
        tot = full.shape[ax] - want
        lo = tot - tot // 2
        if lo < 0:
            full = np.concatenate([np.zeros_like(full.take(range(-lo), ax)), full], ax)
            lo = 0
        pad = [(0, 0)] * 4
        pad[ax] = (0, max(want - (full.shape[ax] - lo), 0))
        full = np.pad(full, pad).take(range(lo, lo + want), ax)
    return full


@pytest.mark.parametrize(("xs", "st", "out"), [([3, 3], [3, 3], [10, 8]), ([4, 4], [2, 2], [7, 9])])
def test_conv_transpose_output_shape_crops_at_the_start(xs, st, out) -> None:  # type: ignore[no-untyped-def]
    """With `output_shape` and no auto_pad the crop of an odd total is at the start (the
    spec, onnxruntime); it was at the end (fuzz_onnx.py, session 7)."""
    node = h.make_node("ConvTranspose", ["x", "w"], ["y"], strides=st, output_shape=out)
    ins = [h.make_tensor_value_info("x", T.FLOAT, [1, 1, *xs]),
           h.make_tensor_value_info("w", T.FLOAT, [1, 2, 3, 3])]  # fmt: skip
    m = h.make_model(h.make_graph([node], "g", ins, [h.make_tensor_value_info("y", T.FLOAT, None)]),
                     opset_imports=[h.make_opsetid("", 17)])  # fmt: skip
    m.ir_version = 8
    rng = np.random.default_rng(2)
    x = rng.standard_normal([1, 1, *xs]).astype(np.float32)
    w = rng.standard_normal([1, 2, 3, 3]).astype(np.float32)
    got = rlx.compile(import_model(m)[0]).run(x, w)[0]
    np.testing.assert_allclose(got, _conv_transpose_np(x, w, st, out), rtol=1e-5, atol=1e-5)
    ort = pytest.importorskip("onnxruntime")
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    np.testing.assert_allclose(got, sess.run(None, {"x": x, "w": w})[0], rtol=1e-5, atol=1e-5)
