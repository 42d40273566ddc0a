"""ONNX RNN / GRU / LSTM imported as one `rlx.scan` per direction (issue 15), not unrolled:
the IR size does not grow with the sequence length, and the numbers match onnxruntime
(and onnx.reference where it implements the case), with the reference interpreter and
compiled (the scan unrolled by `scan-unroll` and kept as a loop)."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import rlx
from rlx.frontends.onnx import OnnxImportError, import_model
from rlx.interpreter import run

F, I32 = TensorProto.FLOAT, TensorProto.INT32
GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}
OUTS = {"RNN": 2, "GRU": 2, "LSTM": 3}


def _model(op: str, seq: int, batch: int, inp: int, hid: int, *, lens: bool = False,
           seed: int = 0, layout: int = 0, **attrs: object):  # noqa: ANN003,ANN202  # fmt: skip
    """A one-node model: X, sequence_lens (optional) and initial states are inputs; W, R, B
    (and LSTM peepholes) initializers. The same seed gives the same numbers in either
    layout (layout 1: X, the states and the outputs batch-major)."""
    rng = np.random.default_rng(seed)
    dirs = 2 if attrs.get("direction") == "bidirectional" else 1
    g = GATES[op]
    inits = {
        "W": rng.uniform(-0.5, 0.5, (dirs, g * hid, inp)).astype(np.float32),
        "R": rng.uniform(-0.5, 0.5, (dirs, g * hid, hid)).astype(np.float32),
        "B": rng.uniform(-0.5, 0.5, (dirs, 2 * g * hid)).astype(np.float32),
    }
    ins = ["X", "W", "R", "B", "L" if lens else "", "H0"]
    sw = (lambda s: [s[1], s[0], *s[2:]]) if layout else list
    vis = [("X", F, sw([seq, batch, inp])), ("H0", F, sw([dirs, batch, hid]))]
    if lens:
        vis.append(("L", I32, [batch]))
    if op == "LSTM":
        ins += ["C0", "P"]
        vis.append(("C0", F, sw([dirs, batch, hid])))
        inits["P"] = rng.uniform(-0.5, 0.5, (dirs, 3 * hid)).astype(np.float32)
    outs = ["Y", "Y_h", "Y_c"][: OUTS[op]]
    if layout:
        attrs["layout"] = layout
    node = helper.make_node(op, ins, outs, hidden_size=hid, **attrs)
    graph = helper.make_graph(
        [node], "g",
        [helper.make_tensor_value_info(*v) for v in vis],
        [helper.make_tensor_value_info(o, F, None) for o in outs],
        [numpy_helper.from_array(a, k) for k, a in inits.items()],
    )  # fmt: skip
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    feeds = {
        "X": rng.standard_normal((seq, batch, inp)).astype(np.float32),
        "H0": rng.standard_normal((dirs, batch, hid)).astype(np.float32),
    }
    if op == "LSTM":
        feeds["C0"] = rng.standard_normal((dirs, batch, hid)).astype(np.float32)
    if layout:
        feeds = {k: np.ascontiguousarray(np.swapaxes(v, 0, 1)) for k, v in feeds.items()}
    if lens:
        feeds["L"] = rng.integers(1, seq + 1, batch).astype(np.int32)
    return m, feeds


def _ort(m, feeds: dict) -> list:  # noqa: ANN001
    ort = pytest.importorskip("onnxruntime")
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


def _ops(module) -> list[str]:  # noqa: ANN001
    return [o.name for o in module.walk()]


def _check(m, feeds: dict, want: list, unrolled: bool = True) -> None:  # noqa: ANN001
    """Imported `m` computes `want` with the reference interpreter and compiled: the scan
    kept as a loop (scan_unroll_max_length=0) and, if `unrolled`, unrolled by default."""
    module, params = import_model(m)
    order = [i.name for i in m.graph.input]
    args = [feeds[k] for k in order]
    for gv, wv in zip(run(module, args, params), want, strict=True):
        np.testing.assert_allclose(gv, wv, rtol=1e-4, atol=1e-5)
    opts_list = [rlx.CompileOptions(scan_unroll_max_length=0)]
    if unrolled:
        opts_list.append(rlx.CompileOptions())
    for opts in opts_list:
        cg = rlx.compile(module, opts)
        cg.set_params(params)
        for gv, wv in zip(cg.run(*args), want, strict=True):
            np.testing.assert_allclose(gv, wv, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("op", ["RNN", "GRU", "LSTM"])
@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
def test_one_scan_per_direction_independent_of_length(op: str, direction: str) -> None:
    """Exactly one rlx.scan per direction, and the op count (matmuls included) is the same
    for 2 and 37 steps: nothing is unrolled per step."""
    counts = []
    for seq in (2, 37):
        m, _ = _model(op, seq, 2, 3, 4, lens=True, direction=direction)
        names = _ops(import_model(m)[0])
        dirs = 2 if direction == "bidirectional" else 1
        assert names.count("rlx.scan") == dirs
        counts.append((names.count("rlx.matmul"), len(names)))
    assert counts[0] == counts[1]


def test_bidirectional_lstm_with_sequence_lens() -> None:
    m, feeds = _model("LSTM", 5, 3, 4, 6, lens=True, direction="bidirectional")
    feeds["L"] = np.array([5, 2, 1], np.int32)
    _check(m, feeds, _ort(m, feeds))


@pytest.mark.parametrize("seq", [4, 37])
def test_gru_linear_before_reset(seq: int) -> None:
    """37 steps: longer than tiny, still one scan, compiled as a loop only (unrolling 37
    steps by scan-unroll costs seconds of compile time); onnx.reference agrees with ORT."""
    m, feeds = _model("GRU", seq, 2, 3, 5, linear_before_reset=1, direction="bidirectional")
    want = _ort(m, feeds)
    for r, w in zip(ReferenceEvaluator(m).run(None, feeds), want, strict=True):
        np.testing.assert_allclose(r, w, rtol=1e-4, atol=1e-5)
    _check(m, feeds, want, unrolled=seq < 8)


def test_reverse_rnn_clip_sequence_lens() -> None:
    m, feeds = _model("RNN", 6, 3, 2, 4, lens=True, direction="reverse", clip=0.7)
    _check(m, feeds, _ort(m, feeds))


def test_empty_sequence_is_a_clear_error() -> None:
    """The references disagree on Y_h of zero steps, so the import refuses (located)."""
    m, _ = _model("LSTM", 0, 2, 3, 4)
    with pytest.raises(OnnxImportError, match=r"LSTM.*empty sequence"):
        import_model(m)


def test_lstm_layout1_custom_activations_input_forget() -> None:
    """Layout 1 against onnxruntime's layout-0 run of the same numbers (its CPU LSTM has no
    layout 1; onnx.reference ignores custom activations)."""
    kw = dict(direction="bidirectional", input_forget=1, activation_alpha=[0.3],
              activations=["HardSigmoid", "Softsign", "Relu"] * 2)  # fmt: skip
    m0, feeds0 = _model("LSTM", 5, 2, 3, 4, **kw)
    m1, feeds1 = _model("LSTM", 5, 2, 3, 4, layout=1, **kw)
    y, yh, yc = _ort(m0, feeds0)
    perm = lambda v: np.ascontiguousarray(np.swapaxes(v, 0, 1))  # noqa: E731
    _check(m1, feeds1, [np.transpose(y, (2, 0, 1, 3)), perm(yh), perm(yc)])
