"""CNN conv kernels against onnxruntime (batch 1, f32, bias + relu): the NCHW kernels and
the blocked-layout (NCHWc, `layout = "nchwc"`) kernels on the same cases.

    BENCH_THREADS=2 python bench/conv_kernels.py [--reps N] [--blas] [--only SUBSTR]

Prints per case the best-of-N RLX NCHW, RLX NCHWc (input, weights and output already
blocked, B = 16 where it divides the channels, else 8) and onnxruntime times (the three
alternate, twice), the ratios to onnxruntime, the path the NCHW conv took and the max
errors vs onnxruntime. `--blas` compiles with RLX_BLAS=1.
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
    "conv1x1 24->144 56²": ((1, 24, 56, 56), (144, 24, 1, 1), 1, [0, 0, 0, 0]),
    "conv1x1 144->24 56²": ((1, 144, 56, 56), (24, 144, 1, 1), 1, [0, 0, 0, 0]),
    "conv3x3 256->256 14²": ((1, 256, 14, 14), (256, 256, 3, 3), 1, [1, 1, 1, 1]),
    "conv3x3 512->512 7²": ((1, 512, 7, 7), (512, 512, 3, 3), 1, [1, 1, 1, 1]),
    "dw3x3 960 7²": ((1, 960, 7, 7), (960, 1, 3, 3), 960, [1, 1, 1, 1]),
    "dw3x3/2 96 112²": ((1, 96, 112, 112), (96, 1, 3, 3), 96, [1, 1, 1, 1], 2),
    "dw5x5/2 144 56²": ((1, 144, 56, 56), (144, 1, 5, 5), 144, [2, 2, 2, 2], 2),
}


def _t(shape, dt="f32"):  # type: ignore[no-untyped-def]
    return "tensor<" + "x".join(map(str, shape)) + f"x{dt}>"


def _rlx_nchwc(xs, ws, groups, pad, stride, block):  # type: ignore[no-untyped-def]
    """The blocked conv alone: x, w, bias in (blocked), blocked result out."""
    from rlx.dialects.rlx.layout import blocked_shape, blocked_weight_shape

    n, c, h, w = xs
    f, _, kh, kw = ws
    oh = (h + pad[0] + pad[2] - kh) // stride + 1
    ow = (w + pad[1] + pad[3] - kw) // stride + 1
    xb, yb = blocked_shape(xs, block), blocked_shape((n, f, oh, ow), block)
    w6 = blocked_weight_shape(ws, block, groups > 1)
    arr = lambda v: "array<i64: " + ", ".join(map(str, v)) + ">"  # noqa: E731
    attrs = f"strides = {arr([stride, stride])}, padding = {arr(pad)}, "
    attrs += f"groups = {groups} : i64, " if groups > 1 else ""
    attrs += 'activation = "relu", layout = "nchwc"'
    types = [_t(xb), _t(w6), _t((f,))]
    text = f"""func.func @main(%x: {types[0]}, %w: {types[1]}, %b: {types[2]}) -> {_t(yb)} {{
  %y = rlx.conv2d %x, %w, %b {{{attrs}}} : ({", ".join(types)}) -> {_t(yb)}
  func.return %y : {_t(yb)}
}}"""
    t0 = time.perf_counter()
    compiled = rlx.compile(text)
    return compiled, time.perf_counter() - t0


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
    ap.add_argument("--only", default="", help="run the cases whose name contains this")
    args = ap.parse_args()
    if args.blas:
        os.environ["RLX_BLAS"] = "1"
    print(f"threads={THREADS or 'default'} load={os.getloadavg()[0]:.2f}")
    rng = np.random.default_rng(0)
    from rlx.interpreter.ops.layout import block_weight, from_blocked, to_blocked

    for name, (xs, ws, groups, pad, *st) in CASES.items():
        if args.only not in name:
            continue
        stride = st[0] if st else 1
        x = rng.standard_normal(xs).astype(np.float32)
        w = (rng.standard_normal(ws) / np.sqrt(np.prod(ws[1:]))).astype(np.float32)
        b = rng.standard_normal((ws[0], 1, 1)).astype(np.float32)
        compiled, ct = _rlx(xs, ws, groups, pad, stride)
        compiled.set_params({"w": w, "b": b})
        block = 16 if xs[1] % 16 == 0 and ws[0] % 16 == 0 else 8
        blocked, ct_b = _rlx_nchwc(xs, ws, groups, pad, stride, block)
        xb, wb, bb = to_blocked(x, block), block_weight(w, block, groups > 1), b.reshape(-1)
        sess = _ort(xs, ws, groups, pad, w, b, stride)
        want = sess.run(None, {"x": x})[0]
        err = float(np.max(np.abs(compiled.run(x)[0] - want)))
        err_b = float(np.max(np.abs(from_blocked(blocked.run(xb, wb, bb)[0]) - want)))
        runs = {
            "nchw": lambda c=compiled, a=x: c.run(a),
            "nchwc": lambda c=blocked, a=(xb, wb, bb): c.run(*a),
            "ort": lambda s=sess, a=x: s.run(None, {"x": a}),
        }
        best = dict.fromkeys(runs, float("inf"))
        for _ in range(2):  # alternate: the load changes during a run
            for k, fn in runs.items():
                best[k] = min(best[k], best_s(fn, args.reps))
        ir = compiled.ir("linalg")
        path = "blas" if "rlx_blas_sgemm" in ir else ("gemm" if "ukernel" in ir else "direct")
        t_rlx, t_b, t_ort = best["nchw"], best["nchwc"], best["ort"]
        print(f"{name:22s} nchw {t_rlx * 1e3:7.3f} ms ({t_rlx / t_ort:4.2f})  "
              f"nchwc/{block} {t_b * 1e3:7.3f} ms ({t_b / t_ort:4.2f})  ort {t_ort * 1e3:7.3f} ms  "
              f"path {path:6s} compile {ct:4.2f}/{ct_b:4.2f} s  err {err:.0e}/{err_b:.0e}")  # fmt: skip


if __name__ == "__main__":
    main()
