"""ONNX If / Loop / Scan imported as `rlx.if` / `rlx.scan` regions (issue 15), checked
against onnx.reference, with the reference interpreter and compiled."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import rlx
from rlx.frontends.onnx import OnnxImportError, import_model
from rlx.interpreter import run

RNG = np.random.default_rng(1)
c = helper.make_node
F, I64, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL


def vi(name: str, t: int, s: list | None):  # noqa: ANN201
    return helper.make_tensor_value_info(name, t, s)


def _model(nodes, inputs, outputs, inits=(), opset: int = 17):  # noqa: ANN001,ANN202
    g = helper.make_graph(
        nodes, "g", [vi(*i) for i in inputs], [vi(*o) for o in outputs],
        [numpy_helper.from_array(a, n) for n, a in inits],
    )  # fmt: skip
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def _ort(m, feeds: dict) -> list:  # noqa: ANN001
    """onnxruntime's outputs (onnx.reference's Scan has no reversed directions)."""
    ort = pytest.importorskip("onnxruntime")
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


def _check(m, feeds: dict, ops: tuple[str, ...], compiled: bool = True, ref=None) -> None:  # noqa: ANN001
    """Imported `m` computes onnx.reference's (or `ref`'s) outputs, with the reference
    interpreter and compiled, and its IR holds `ops` (so it was not unrolled or selected)."""
    want = ReferenceEvaluator(m).run(None, feeds) if ref is None else ref(m, feeds)
    module, params = import_model(m)
    text = str(module)
    for op in ops:
        assert op in text, op
    got = run(module, list(feeds.values()), params)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    if compiled:
        cg = rlx.compile(module)
        cg.set_params(params)
        for g, w in zip(cg.run(*feeds.values()), want, strict=True):
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


# ----------------------------------------------------------------------------- If


def _guarded_gather_model():  # noqa: ANN202
    """y = cond ? x[idx] (idx out of range when cond is false) : -x[:2]."""
    then = helper.make_graph([c("Gather", ["x", "idx"], ["t"], axis=0)], "then", [],
                             [vi("t", F, [2])])  # fmt: skip
    els = helper.make_graph(
        [c("Slice", ["x", "s0", "s2"], ["h"]), c("Neg", ["h"], ["e"])], "else", [],
        [vi("e", F, [2])],
        [numpy_helper.from_array(np.array([0], np.int64), "s0"),
         numpy_helper.from_array(np.array([2], np.int64), "s2")],
    )  # fmt: skip
    return _model([c("If", ["cond"], ["y"], then_branch=then, else_branch=els)],
                  [("cond", B, []), ("x", F, [3]), ("idx", I64, [2])], [("y", F, None)])  # fmt: skip


@pytest.mark.parametrize("flag", [True, False])
def test_if_runtime_condition_runs_only_the_taken_branch(flag: bool) -> None:
    m = _guarded_gather_model()
    x = RNG.standard_normal(3).astype(np.float32)
    idx = np.array([2, 0] if flag else [7, -9], np.int64)  # out of range unless taken
    _check(m, {"cond": np.array(flag), "x": x, "idx": idx}, ("rlx.if",))
    assert "rlx.where" not in str(import_model(m)[0])


def test_if_branch_types_must_agree() -> None:
    then = helper.make_graph([c("Identity", ["x"], ["t"])], "then", [], [vi("t", F, [3])])
    els = helper.make_graph([c("Cast", ["x"], ["e"], to=I64)], "else", [], [vi("e", I64, [3])])
    m = _model([c("If", ["cond"], ["y"], then_branch=then, else_branch=els)],
               [("cond", B, []), ("x", F, [3])], [("y", F, None)])  # fmt: skip
    with pytest.raises(OnnxImportError, match="branches of one type"):
        import_model(m)


# ----------------------------------------------------------------------------- Loop


def _loop_body(cond_nodes: list, cond_out: str = "cout"):  # noqa: ANN001,ANN202
    """acc += x * i; scan output acc; the condition from `cond_nodes`."""
    return helper.make_graph(
        [*cond_nodes, c("Cast", ["i"], ["fi"], to=F), c("Mul", ["x", "fi"], ["xi"]),
         c("Add", ["acc", "xi"], ["acc2"]), c("Identity", ["acc2"], ["sc"])],
        "body", [vi("i", I64, []), vi("cin", B, []), vi("acc", F, [2])],
        [vi(cond_out, B, []), vi("acc2", F, [2]), vi("sc", F, [2])],
    )  # fmt: skip


def test_loop_constant_trip_count_is_a_scan() -> None:
    body = _loop_body([c("Identity", ["cin"], ["cout"])])
    m = _model([c("Loop", ["n", "c0", "a0"], ["acc", "all"], body=body)],
               [("x", F, [2]), ("a0", F, [2])], [("acc", F, None), ("all", F, None)],
               [("n", np.array(5, np.int64)), ("c0", np.array(True))])  # fmt: skip
    feeds = {"x": RNG.standard_normal(2).astype(np.float32), "a0": np.ones(2, np.float32)}
    _check(m, feeds, ("rlx.scan", "length = 5"))
    assert "rlx.concat" not in str(import_model(m)[0])


def _while_model(with_scan: bool):  # noqa: ANN202
    """acc doubles while sum(acc) < limit (at most 50 iterations)."""
    body = helper.make_graph(
        [c("Add", ["acc", "acc"], ["acc2"]), c("ReduceSum", ["acc2"], ["s"], keepdims=0),
         c("Less", ["s", "limit"], ["cout"]), c("Identity", ["acc2"], ["sc"])],
        "body", [vi("i", I64, []), vi("cin", B, []), vi("acc", F, [2])],
        [vi("cout", B, []), vi("acc2", F, [2]), *([vi("sc", F, [2])] if with_scan else [])],
    )  # fmt: skip
    outs = [("acc", F, None), *([("all", F, None)] if with_scan else [])]
    return _model([c("Loop", ["n", "c0", "a0"], [o[0] for o in outs], body=body)],
                  [("c0", B, []), ("a0", F, [2]), ("limit", F, [])], outs,
                  [("n", np.array(50, np.int64))])  # fmt: skip


@pytest.mark.parametrize("start", [0.1, 3.0, 100.0])
def test_loop_computed_condition_carries_it(start: float) -> None:
    m = _while_model(with_scan=False)
    for c0 in (True, False):
        feeds = {"c0": np.array(c0), "a0": np.full(2, start, np.float32),
                 "limit": np.array(10.0, np.float32)}  # fmt: skip
        _check(m, feeds, ("rlx.scan", "rlx.if"), compiled=c0 and start == 0.1)


def test_loop_computed_condition_with_scan_outputs_is_rejected() -> None:
    with pytest.raises(OnnxImportError, match=r"input #1 condition \('c0'\) must be a constant"):
        import_model(_while_model(with_scan=True))
    # with a constant initial condition, the body's condition is still a run-time value
    with pytest.raises(OnnxImportError, match="must be known at import time"):
        import_model(_while_model(with_scan=True), constants={"c0": np.array(True)})


def test_loop_iteration_number_as_compile_time_operand_is_unrolled() -> None:
    """Slice starts from the iteration number cannot be a scan body: unrolled."""
    body = helper.make_graph(
        [c("Identity", ["cin"], ["cout"]), c("Unsqueeze", ["i", "ax"], ["st"]),
         c("Add", ["st", "one"], ["en"]), c("Slice", ["x", "st", "en"], ["xi"]),
         c("Add", ["acc", "xi"], ["acc2"])],
        "body", [vi("i", I64, []), vi("cin", B, []), vi("acc", F, [1])],
        [vi("cout", B, []), vi("acc2", F, [1])],
        [numpy_helper.from_array(np.array([0], np.int64), "ax"),
         numpy_helper.from_array(np.array([1], np.int64), "one")],
    )  # fmt: skip
    m = _model([c("Loop", ["n", "c0", "a0"], ["acc"], body=body)],
               [("x", F, [4]), ("a0", F, [1])], [("acc", F, None)],
               [("n", np.array(4, np.int64)), ("c0", np.array(True))])  # fmt: skip
    feeds = {"x": RNG.standard_normal(4).astype(np.float32), "a0": np.zeros(1, np.float32)}
    _check(m, feeds, ())
    assert "rlx.scan" not in str(import_model(m)[0])


# ----------------------------------------------------------------------------- Scan


def test_scan_axes_and_directions() -> None:
    """State s += row; inputs scanned along axis 1 (one reversed); outputs stacked on
    axis 1 (one reversed)."""
    body = helper.make_graph(
        [c("Add", ["s", "a"], ["s2"]), c("Mul", ["s2", "b"], ["y1"]), c("Neg", ["a"], ["y2"])],
        "body", [vi("s", F, [2]), vi("a", F, [2]), vi("b", F, [2])],
        [vi("s2", F, [2]), vi("y1", F, [2]), vi("y2", F, [2])],
    )  # fmt: skip
    node = c("Scan", ["s0", "xa", "xb"], ["sf", "o1", "o2"], body=body, num_scan_inputs=2,
             scan_input_axes=[1, 0], scan_input_directions=[1, 0],
             scan_output_axes=[1, -2], scan_output_directions=[0, 1])  # fmt: skip
    m = _model([node], [("s0", F, [2]), ("xa", F, [2, 3]), ("xb", F, [3, 2])],
               [("sf", F, None), ("o1", F, None), ("o2", F, None)])  # fmt: skip
    feeds = {"s0": RNG.standard_normal(2).astype(np.float32),
             "xa": RNG.standard_normal((2, 3)).astype(np.float32),
             "xb": RNG.standard_normal((3, 2)).astype(np.float32)}  # fmt: skip
    _check(m, feeds, ("rlx.scan", "length = 3"), ref=_ort)


def test_scan_empty_sequence() -> None:
    body = helper.make_graph([c("Add", ["s", "a"], ["s2"]), c("Identity", ["s2"], ["y"])],
                             "body", [vi("s", F, [2]), vi("a", F, [2])],
                             [vi("s2", F, [2]), vi("y", F, [2])])  # fmt: skip
    m = _model([c("Scan", ["s0", "xa"], ["sf", "ys"], body=body, num_scan_inputs=1)],
               [("s0", F, [2]), ("xa", F, [0, 2])], [("sf", F, None), ("ys", F, None)])  # fmt: skip
    module, _ = import_model(m)
    s0 = np.ones(2, np.float32)
    sf, ys = run(module, [s0, np.zeros((0, 2), np.float32)])
    np.testing.assert_array_equal(sf, s0)
    assert ys.shape == (0, 2)


def test_scan8_batch_axis_and_directions() -> None:
    """Scan-8: batch axis 0, sequence axis 1, the second input scanned in reverse; an outer
    rlx.scan over the batch rows holds the scan over the sequence."""
    body = helper.make_graph(
        [c("Add", ["s", "a"], ["s2"]), c("Mul", ["s2", "b"], ["y"])],
        "body", [vi("s", F, [2]), vi("a", F, [2]), vi("b", F, [2])],
        [vi("s2", F, [2]), vi("y", F, [2])],
    )  # fmt: skip
    node = c("Scan", ["", "s0", "xa", "xb"], ["sf", "ys"], body=body, num_scan_inputs=2,
             directions=[0, 1])  # fmt: skip
    m = _model([node], [("s0", F, [3, 2]), ("xa", F, [3, 4, 2]), ("xb", F, [3, 4, 2])],
               [("sf", F, None), ("ys", F, None)], opset=8)  # fmt: skip
    feeds = {"s0": RNG.standard_normal((3, 2)).astype(np.float32),
             "xa": RNG.standard_normal((3, 4, 2)).astype(np.float32),
             "xb": RNG.standard_normal((3, 4, 2)).astype(np.float32)}  # fmt: skip
    _check(m, feeds, ("length = 3", "length = 4"), ref=_ort)


def test_dynamic_batch_through_bind_dims() -> None:
    """A Loop and a Scan on a dynamic batch dim: bind-dims re-infers the scan bodies and the
    if regions (block arguments, body ops, results), so the compiled graph is static."""
    body = _loop_body([c("Identity", ["cin"], ["cout"])])
    for vi_ in (*body.input[2:], *body.output[1:]):
        vi_.type.tensor_type.shape.dim[0].dim_param = "batch"
    lbody = helper.make_graph(
        [c("Add", ["s", "a"], ["s2"]), c("Identity", ["s2"], ["y"])],
        "sbody", [vi("s", F, ["batch"]), vi("a", F, ["batch"])],
        [vi("s2", F, ["batch"]), vi("y", F, ["batch"])],
    )  # fmt: skip
    then = helper.make_graph([c("Neg", ["acc"], ["t"])], "then", [], [vi("t", F, ["batch"])])
    els = helper.make_graph([c("Identity", ["acc"], ["e"])], "else", [], [vi("e", F, ["batch"])])
    m = _model(
        [c("Loop", ["n", "c0", "a0"], ["acc", "all"], body=body),
         c("Scan", ["acc", "xs"], ["sf", "ys"], body=lbody, num_scan_inputs=1),
         c("If", ["flag"], ["r"], then_branch=then, else_branch=els)],
        [("x", F, ["batch"]), ("a0", F, ["batch"]), ("xs", F, [3, "batch"]), ("flag", B, [])],
        [("all", F, None), ("sf", F, None), ("ys", F, None), ("r", F, None)],
        [("n", np.array(4, np.int64)), ("c0", np.array(True))],
    )  # fmt: skip
    feeds = {"x": RNG.standard_normal(5).astype(np.float32),
             "a0": RNG.standard_normal(5).astype(np.float32),
             "xs": RNG.standard_normal((3, 5)).astype(np.float32), "flag": np.array(True)}  # fmt: skip
    want = ReferenceEvaluator(m).run(None, feeds)
    module, params = import_model(m)
    assert "rlx.scan" in str(module) and "?" in str(module)
    cg = rlx.compile(module, rlx.CompileOptions(dim_binding={"batch": 5}))
    for g, w in zip(cg.run(*feeds.values()), want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


def test_loop_carry_changing_shape_is_unrolled() -> None:
    """acc = concat(acc, x) grows every iteration: no scan can carry it, so it is unrolled."""
    body = helper.make_graph(
        [c("Identity", ["cin"], ["cout"]), c("Concat", ["acc", "x"], ["acc2"], axis=0)],
        "body", [vi("i", I64, []), vi("cin", B, []), vi("acc", F, None)],
        [vi("cout", B, []), vi("acc2", F, None)],
    )  # fmt: skip
    m = _model([c("Loop", ["n", "c0", "a0"], ["acc"], body=body)],
               [("x", F, [2]), ("a0", F, [1])], [("acc", F, None)],
               [("n", np.array(3, np.int64)), ("c0", np.array(True))])  # fmt: skip
    feeds = {"x": RNG.standard_normal(2).astype(np.float32), "a0": np.ones(1, np.float32)}
    _check(m, feeds, ("rlx.concat",))
    text = str(import_model(m)[0])
    assert "rlx.scan" not in text and "tensor<7xf32>" in text


def test_branch_values_folded_from_weights_stay_distinct_params() -> None:
    """Both branches fold a weight into a value named `t` (kept as a param, not baked):
    the two values get two params, so neither branch reads the other's."""
    then = helper.make_graph([c("Neg", ["w"], ["t"])], "then", [], [vi("t", F, [100])])
    els = helper.make_graph([c("Abs", ["w"], ["t"])], "else", [], [vi("t", F, [100])])
    m = _model([c("If", ["cond"], ["y"], then_branch=then, else_branch=els)],
               [("cond", B, [])], [("y", F, None)],
               [("w", np.arange(100, dtype=np.float32) - 50)])  # fmt: skip
    module, params = import_model(m)
    assert sorted(params) == ["t", "t__1"] and "dense<" not in str(module)
    for flag in (True, False):
        _check(m, {"cond": np.array(flag)}, ("rlx.if",), compiled=False)


def test_loop_zero_trips_gives_empty_scan_outputs() -> None:
    """M = 0: the carries are the initial values, the scan outputs empty (of the body's
    per-step shape), whatever the body's condition."""
    body = _while_model(True).graph.node[0].attribute[0].g
    m = _model([c("Loop", ["n", "c0", "a0"], ["acc", "all"], body=body)],
               [("c0", B, []), ("a0", F, [2]), ("limit", F, [])],
               [("acc", F, None), ("all", F, None)], [("n", np.array(0, np.int64))])  # fmt: skip
    module, _ = import_model(m)
    a0 = np.ones(2, np.float32)
    acc, allv = run(module, [np.array(True), a0, np.array(1.0, np.float32)])
    np.testing.assert_array_equal(acc, a0)
    assert allv.shape == (0, 2)
