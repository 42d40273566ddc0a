"""Probe compiled single-node ONNX models with hostile run-time inputs (docs/fuzzing.md).

Each probe is one node and a list of feeds (in-range, -1, the size, the size + 1,
±2^62, INT_MIN, empty shapes, NaN / Inf coordinates, zero divisors, ...). Every feed is
run by rlx (import, compile, run), by onnxruntime, and by rlx again on guard-page
buffers (`tests/unit/guarded_memory.py`: an access out of bounds faults or trips a
canary). A finding is printed as one line:

* `mismatch`: both ran and the results differ (NaN positions must match too);
* `accepted`: rlx ran a feed onnxruntime refuses (a likely silent value: check the spec);
* `refused`: rlx raised where onnxruntime ran (a spurious error, or onnxruntime lax);
* `error`: rlx raised anything but ValueError / IndexError / ArithmeticError, or the
  error of a bad index does not name an input (`[from input ...]`);
* `guard`: the guarded run differs from the plain one or a canary was overwritten.

    RLX_NUM_THREADS=1 nice -n 10 timeout 900 .venv/bin/python tools/fuzz/probe_run_inputs.py

Add probes to `PROBES` (session 9 found the MaxUnpool / RotaryEmbedding / TensorScatter
/ ReverseSequence negative-index values and the update-less scatter with it).
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "unit"))
from guarded_memory import guarded_run  # noqa: E402

import rlx  # noqa: E402
from rlx.frontends.onnx import import_model  # noqa: E402

ONNX_TYPE = {np.float32: TensorProto.FLOAT, np.int64: TensorProto.INT64,
             np.int32: TensorProto.INT32, np.uint32: TensorProto.UINT32,
             np.uint8: TensorProto.UINT8, np.bool_: TensorProto.BOOL}  # fmt: skip
OK_ERRORS = (ValueError, IndexError, ArithmeticError)
N_OUT = {"TopK": 2, "LSTM": 2}
KNOWN = {"grid_sample[0]", "argmax_nan[0]", "resize_linear_nan[0]"}
"""Findings looked at and kept (docs/fuzzing.md): NaN / Inf grid coordinates give NaN;
ArgMax picks a NaN (NumPy, onnx.reference; onnxruntime skips NaN); linear Resize skips
taps of weight 0 (both references multiply a NaN there by 0: NaN)."""


def F(*shape: int) -> np.ndarray:  # noqa: N802
    return np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape) + 1


def I(*v: Any) -> np.ndarray:  # noqa: N802, E743
    return np.array(v, np.int64)


NAN_GRID = np.array([[[[0.5, 0.2], [np.nan, 0], [np.inf, -np.inf], [1e30, -1e30]]]], np.float32)
DEPTH = {"depth": np.array(5, np.int64), "v": np.array([0, 1], np.float32)}
NAN_X = np.array([[1, np.nan, 3, -np.inf], [np.inf, np.nan, np.nan, 0], [np.nan] * 4], np.float32)
RESIZE = {"roi": np.zeros(0, np.float32), "s": np.array([1, 1, 2, 0.5], np.float32)}
# (label, op, feeds, attrs, initializers, input order (None: the feeds'), opset)
PROBES: list[tuple[str, str, list[dict[str, np.ndarray]], dict, dict, list | None, int]] = [
    ("gather", "Gather", [dict(d=F(4, 3), i=I(3, -4)), dict(d=F(4, 3), i=I(4, 0)),
                          dict(d=F(4, 3), i=I(-2**62, 0)), dict(d=F(4, 3), i=np.zeros(0, np.int64))],
     {"axis": 0}, {}, None, 18),
    ("gather_i32", "Gather", [dict(d=F(4, 3), i=np.array([-2**31, 0], np.int32))], {}, {}, None, 18),
    ("gather_elements", "GatherElements", [dict(d=F(4, 3), i=I([3, -4, 0])), dict(d=F(4, 3), i=I([4, 0, 0]))],
     {"axis": 0}, {}, None, 18),
    ("gather_nd", "GatherND", [dict(d=F(2, 3, 2), i=I([2], [-3])), dict(d=F(2, 3, 2), i=I([3], [0]))],
     {"batch_dims": 1}, {}, None, 18),
    ("scatter_nd", "ScatterND", [dict(d=F(4, 2), i=I([1], [3]), u=F(2, 2)), dict(d=F(4, 2), i=I([4], [0]), u=F(2, 2)),
                                 dict(d=F(4, 2), i=np.zeros((0, 1), np.int64), u=np.zeros((0, 2), np.float32))],
     {}, {}, None, 18),
    ("scatter_elements", "ScatterElements", [dict(d=F(4, 2), i=I([4, 0], [0, 0]), u=F(2, 2)),
                                             dict(d=F(4, 2), i=I([-5, 0], [0, 0]), u=F(2, 2))],
     {"axis": 0, "reduction": "add"}, {}, None, 18),
    ("one_hot", "OneHot", [dict(i=I(0, 2, -1, 5, -6, 2**62))], {}, DEPTH, ["i", "depth", "v"], 18),
    ("max_unpool", "MaxUnpool", [dict(x=F(1, 1, 2, 2), i=I(0, 3, 8, v).reshape(1, 1, 2, 2)) for v in (15, 16, -1)],
     {"kernel_shape": [2, 2], "strides": [2, 2]}, {}, None, 18),
    ("reverse_sequence", "ReverseSequence", [dict(x=F(4, 2), l=I(*v)) for v in ((1, 4), (5, 4), (0, -1))],
     {"batch_axis": 1, "time_axis": 0}, {}, None, 18),
    ("rotary", "RotaryEmbedding", [dict(x=F(1, 2, 2, 4), c=F(4, 2), s=F(4, 2), p=I(v)) for v in ([0, 3], [0, 4], [0, -1])],
     {}, {}, None, 23),
    ("tensor_scatter", "TensorScatter", [dict(c=F(2, 4, 3), u=F(2, 1, 3), w=I(*v)) for v in ((0, 3), (0, 4), (0, -1))],
     {}, {}, None, 24),
    ("nll", "NegativeLogLikelihoodLoss", [dict(x=F(2, 3), t=I(*v)) for v in ((1, 2), (3, 0), (-1, 0))],
     {"reduction": "none"}, {}, None, 18),
    ("grid_sample", "GridSample", [dict(x=F(1, 1, 3, 3), g=NAN_GRID)], {}, {}, None, 18),
    ("bitshift", "BitShift", [dict(x=np.array([1, 2, 3], np.uint32), y=np.array([0, 32, 40], np.uint32))],
     {"direction": "LEFT"}, {}, None, 18),
    ("topk_nan", "TopK", [dict(x=NAN_X)], {}, {"k": I(3)}, ["x", "k"], 18),
    ("topk_nan_smallest", "TopK", [dict(x=NAN_X)], {"largest": 0}, {"k": I(4)}, ["x", "k"], 18),
    ("argmax_nan", "ArgMax", [dict(x=NAN_X)], {"axis": 1}, {}, None, 18),
    ("resize_nearest_nan", "Resize", [dict(x=NAN_X.reshape(1, 1, 3, 4))], {"mode": "nearest"}, RESIZE,
     ["x", "roi", "s"], 18),
    ("resize_linear_nan", "Resize", [dict(x=NAN_X.reshape(1, 1, 3, 4))], {"mode": "linear"}, RESIZE,
     ["x", "roi", "s"], 18),
    ("lstm_lens", "LSTM", [dict(x=F(3, 2, 2) / 12, l=np.array(v, np.int32)) for v in ([3, 1], [4, 1], [-1, 1])],
     {"hidden_size": 3}, {"W": F(1, 12, 2) / 24, "R": -F(1, 12, 3) / 36}, ["x", "W", "R", "", "l"], 18),
    ("div_int", "Div", [dict(a=I(5, -2**63), b=I(0, -1))], {}, {}, None, 18),
    ("mod_int", "Mod", [dict(a=I(5, -5), b=I(0, 3))], {}, {}, None, 18),
]  # fmt: skip


def _model(op: str, feeds: dict, attrs: dict, inits: dict, order: list | None, opset: int):  # noqa: ANN202
    ins = [
        helper.make_tensor_value_info(k, ONNX_TYPE[v.dtype.type], v.shape) for k, v in feeds.items()
    ]
    outs = [f"out{i}" for i in range(N_OUT.get(op, 1))]
    node = helper.make_node(op, order or list(feeds), outs, name="n", **attrs)
    g = helper.make_graph([node], "g", ins, [helper.make_empty_tensor_value_info(o) for o in outs],
                          [numpy_helper.from_array(v, k) for k, v in inits.items()])  # fmt: skip
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def _same(a: list, b: list) -> bool:
    """Equal (integers, NaN positions) or within float rounding (recurrences, sums)."""
    return all(
        np.allclose(x, y, rtol=1e-5, atol=1e-6, equal_nan=True)
        if np.asarray(x).dtype.kind == "f"
        else np.array_equal(x, y)
        for x, y in zip(a, b, strict=True)
    )


def probe(label: str, op: str, feeds_list: list, attrs: dict, inits: dict, order: list | None,
          opset: int) -> list[str]:  # fmt: skip
    """The findings of one probe (see the module docstring)."""
    import onnxruntime as ort

    model = _model(op, feeds_list[0], attrs, inits, order, opset)
    try:
        module, params = import_model(model)
        g = rlx.compile(module)
        g.set_params(params)
    except OK_ERRORS as e:
        return [f"{label}: compile refused: {e}"]
    so = ort.SessionOptions()
    so.log_severity_level = 4  # its own error lines for the refused feeds are expected
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    found = []
    for k, feeds in enumerate(feeds_list):
        tag = f"{label}[{k}]"
        try:
            ours, err = g.run(**feeds), None
        except OK_ERRORS as e:
            ours, err = None, e
        except Exception as e:  # noqa: BLE001  (a finding)
            found.append(f"{tag}: error: {type(e).__name__}: {e}")
            continue
        try:
            theirs = sess.run(None, feeds)
        except Exception:  # noqa: BLE001  (onnxruntime refuses the feed)
            theirs = None
        if isinstance(err, IndexError) and "from input" not in str(err):
            found.append(f"{tag}: error: the IndexError names no input: {err}")
        if ours is not None and theirs is not None and not _same(ours, theirs):
            found.append(
                f"{tag}: mismatch: rlx {ours[0].ravel()[:6]} onnxruntime {theirs[0].ravel()[:6]}"
            )
        elif ours is not None and theirs is None:
            found.append(f"{tag}: accepted: rlx ran a feed onnxruntime refuses")
        elif ours is None and theirs is not None:
            found.append(f"{tag}: refused: {err}")
        for side in ("end", "start"):
            try:
                outs, _ = guarded_run(g, [feeds[n] for n, _, _ in g.inputs], side)
            except AssertionError as e:
                found.append(f"{tag}: guard ({side}): {e}")
                continue
            if ours is not None and not _same(outs, ours):
                found.append(f"{tag}: guard ({side}): the guarded run differs")
    return found


def main() -> int:
    warnings.simplefilter("ignore")
    findings = [f for p in PROBES for f in probe(*p) if f.split(":")[0] not in KNOWN]
    print("\n".join(findings) or "no findings")
    print(f"{len(PROBES)} probes, {sum(len(p[2]) for p in PROBES)} feeds, {len(findings)} findings")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
