"""Three conv kernels against onnxruntime: a 64->64 3x3 on 56², a depthwise 3x3 on 32x112²
and a 1x1 256->64 on 56² (batch 1, f32, weights as params, bias + relu).

    BENCH_THREADS=2 python bench/conv_kernels.py [--reps N] [--blas]

Prints per case the best-of-N RLX and onnxruntime times, their ratio, the path the conv took
(the dispatch report) and the max error vs onnxruntime. `--blas` compiles with RLX_BLAS=1.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
from common import THREADS  # noqa: E402

import rlx  # noqa: E402


def best_s(fn, reps: int) -> float:  # type: ignore[no-untyped-def]
    """Fastest of `reps` runs after a warm-up: the least disturbed by other processes on a
    shared machine (medians swing 2-10x with the load)."""
    fn()
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


CASES = {
    "conv3x3 64->64 56²": ((1, 64, 56, 56), (64, 64, 3, 3), 1, [1, 1, 1, 1]),
    "dw3x3 32 112²": ((1, 32, 112, 112), (32, 1, 3, 3), 32, [1, 1, 1, 1]),
    "conv1x1 256->64 56²": ((1, 256, 56, 56), (64, 256, 1, 1), 1, [0, 0, 0, 0]),
}


def _rlx(xs, ws, groups, pad, stride=1):  # type: ignore[no-untyped-def]
    g = rlx.Graph()
    x = g.input("x", xs)
    w = g.param("w", ws)
    b = g.param("b", (ws[0], 1, 1))
    c = g.conv2d(x, w, padding=pad, groups=groups, strides=[stride, stride])
    g.output(g.relu(g.add(c, b)))
    t0 = time.perf_counter()
    compiled = rlx.compile(g)
    return compiled, time.perf_counter() - t0


def _ort(xs, ws, groups, pad, w, b, stride=1):  # type: ignore[no-untyped-def]
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper

    f = ws[0]
    node = helper.make_node(
        "Conv", ["x", "w", "b"], ["c"], group=groups, pads=pad, strides=[stride, stride]
    )
    relu = helper.make_node("Relu", ["c"], ["y"])
    graph = helper.make_graph(
        [node, relu], "conv",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(xs))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b.reshape(f), "b")],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    so = ort.SessionOptions()
    if THREADS:
        so.intra_op_num_threads = THREADS
        so.inter_op_num_threads = 1
    return ort.InferenceSession(model.SerializeToString(), so)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--blas", action="store_true")
    args = ap.parse_args()
    if args.blas:
        os.environ["RLX_BLAS"] = "1"
    print(f"threads={THREADS or 'default'} load={os.getloadavg()[0]:.2f}")
    rng = np.random.default_rng(0)
    for name, (xs, ws, groups, pad, *st) in CASES.items():
        stride = st[0] if st else 1
        x = rng.standard_normal(xs).astype(np.float32)
        w = (rng.standard_normal(ws) / np.sqrt(np.prod(ws[1:]))).astype(np.float32)
        b = rng.standard_normal((ws[0], 1, 1)).astype(np.float32)
        compiled, ct = _rlx(xs, ws, groups, pad, stride)
        compiled.set_params({"w": w, "b": b})
        sess = _ort(xs, ws, groups, pad, w, b, stride)
        want = sess.run(None, {"x": x})[0]
        got = compiled.run(x)[0]
        err = float(np.max(np.abs(got - want)))
        t_rlx = best_s(lambda c=compiled, a=x: c.run(a), args.reps)
        t_ort = best_s(lambda s=sess, a=x: s.run(None, {"x": a}), args.reps)
        ir = compiled.ir("linalg")
        path = "blas" if "rlx_blas_sgemm" in ir else ("gemm" if "ukernel" in ir else "direct")
        print(f"{name:22s} rlx {t_rlx * 1e3:7.3f} ms  ort {t_ort * 1e3:7.3f} ms  "
              f"ratio {t_rlx / t_ort:5.2f}  path {path:6s} compile {ct:5.2f} s  err {err:.1e}")  # fmt: skip


if __name__ == "__main__":
    main()
