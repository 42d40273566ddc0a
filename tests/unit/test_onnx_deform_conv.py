"""DeformConv (was missing from the importer) with run-time offsets and masks, against
onnx.reference: strides, pads, dilations, groups, offset groups, bias and mask, offsets that
push taps off the image, batch 2; compiled and interpreted; bad shapes are an
OnnxImportError naming the node."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

import rlx
from rlx.frontends.onnx import OnnxImportError, import_model

F = TensorProto.FLOAT


def _model(xs, ws, os_, bias: bool, mask: bool, **attrs):  # noqa: ANN001, ANN202
    names = ["x", "w", "off"] + (["b"] if bias else [""] if mask else []) + (["m"] if mask else [])
    ins = [helper.make_tensor_value_info("x", F, xs), helper.make_tensor_value_info("w", F, ws),
           helper.make_tensor_value_info("off", F, os_)]  # fmt: skip
    if bias:
        ins.append(helper.make_tensor_value_info("b", F, [ws[0]]))
    if mask:
        ins.append(helper.make_tensor_value_info("m", F, [os_[0], os_[1] // 2, *os_[2:]]))
    g = helper.make_graph([helper.make_node("DeformConv", names, ["y"], name="dc", **attrs)],
                          "g", ins, [helper.make_empty_tensor_value_info("y")])  # fmt: skip
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 19)])


CASES = [  # x shape, w shape, attrs, bias, mask
    ([1, 2, 5, 5], [3, 2, 3, 3], {}, False, False),
    ([2, 4, 6, 5], [4, 2, 3, 2], dict(group=2, pads=[1, 0, 1, 1], strides=[2, 1]), True, False),
    ([1, 4, 7, 7], [2, 4, 2, 2], dict(offset_group=2, dilations=[2, 3]), True, True),
    ([2, 2, 4, 4], [2, 1, 3, 3], dict(group=2, offset_group=2, pads=[1, 1, 1, 1]), False, True),
]  # fmt: skip


@pytest.mark.parametrize("case", range(len(CASES)))
def test_matches_onnx_reference(case: int) -> None:
    xs, ws, attrs, bias, mask = CASES[case]
    st, dl = attrs.get("strides", [1, 1]), attrs.get("dilations", [1, 1])
    pads = attrs.get("pads", [0, 0, 0, 0])
    oh = (xs[2] + pads[0] + pads[2] - (ws[2] - 1) * dl[0] - 1) // st[0] + 1
    ow = (xs[3] + pads[1] + pads[3] - (ws[3] - 1) * dl[1] - 1) // st[1] + 1
    og = attrs.get("offset_group", 1)
    os_ = [xs[0], og * ws[2] * ws[3] * 2, oh, ow]
    model = _model(xs, ws, os_, bias, mask, **attrs)
    rng = np.random.default_rng(case)
    feeds = {"x": rng.standard_normal(xs), "w": rng.standard_normal(ws),
             "off": 1.5 * rng.standard_normal(os_)}  # fmt: skip  # taps pushed off the image too
    if bias:
        feeds["b"] = rng.standard_normal(ws[0])
    if mask:
        feeds["m"] = rng.random([os_[0], os_[1] // 2, oh, ow])
    feeds = {k: v.astype(np.float32) for k, v in feeds.items()}
    (want,) = ReferenceEvaluator(model).run(None, feeds)
    got = rlx.compile(import_model(model)[0]).run(**feeds)[0]
    (ref,) = rlx.reference.run(import_model(model)[0], list(feeds.values()))
    for v in (got, np.asarray(ref)):
        assert v.shape == want.shape
        np.testing.assert_allclose(v, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(
    ("ws", "os_", "attrs", "msg"),
    [
        ([3, 3, 3, 3], [1, 18, 3, 3], {}, "channels"),
        ([3, 2, 3, 3], [1, 16, 3, 3], {}, "offset shape"),
        ([3, 2, 3, 3], [1, 18, 3, 3], dict(kernel_shape=[2, 2]), "kernel_shape"),
    ],
)
def test_bad_shapes_are_import_errors(ws: list, os_: list, attrs: dict, msg: str) -> None:  # type: ignore[type-arg]
    with pytest.raises(OnnxImportError, match=rf"dc.*{msg}"):
        import_model(_model([1, 2, 5, 5], ws, os_, False, False, **attrs))


@pytest.mark.parametrize("side", ["end", "start"])
def test_hostile_offsets_stay_in_bounds(side: str) -> None:
    """NaN, +-inf and 1e30 offsets on guard pages: every tap index stays inside X (a tap
    off the image reads nothing), no error."""
    from guarded_memory import guarded_run

    model = _model([1, 1, 4, 4], [1, 1, 2, 2], [1, 8, 3, 3], False, False)
    g = rlx.compile(import_model(model)[0])
    x = np.ones((1, 1, 4, 4), np.float32)
    w = np.ones((1, 1, 2, 2), np.float32)
    off = np.zeros((1, 8, 3, 3), np.float32)
    off[0, 0], off[0, 1], off[0, 2], off[0, 3] = np.nan, np.inf, -np.inf, 1e30
    outs, status = guarded_run(g, [x, w, off], side)
    assert status is None or status[0] == 0
    assert outs[0].shape == (1, 1, 3, 3)
