"""CNN compile time (cold) and run time vs onnxruntime on torchvision models.

    PYTHONPATH=. /work/main/.venv/bin/python bench/conv_models.py \
        [--models resnet18,mobilenet_v2,...] [--size 224] [--reps 5]

Each model (random init, no download) is exported with torch's TorchScript ONNX exporter
at batch 1 and a fixed size (static shapes), imported with
`rlx.frontends.onnx.import_model` and compiled with an empty cache directory and the
options `bench/cnn.py` uses (`cache_param_invariant=True`, so the blocked layout is on):
`cold` is that `rlx.compile` (the compiler imported before), wall seconds and CPU seconds of
the process and of its children (the forked `parallel_build` and `text_later` helpers; on
an idle 2-core machine the wall time is about the process's CPU time; LLVM runs in
process, `RLX_LLVM_WORKER=0`;
weights stay params, set afterwards with `set_params`). The script prints the number of convolution ops, the distinct conv
kernels (`rlx.kernel` labels of the module), all kernels, the dispatch report's conv lines, the max
error vs onnxruntime and, with `--reps > 0`, the best-of-N run times of both (threads:
`BENCH_THREADS`, default 2; the machine load is printed). torch, torchvision and
onnxruntime are bench-only dependencies.
"""

from __future__ import annotations

import argparse
import os
import re
import tempfile
import time
from pathlib import Path

MODELS = ("resnet18", "mobilenet_v2", "squeezenet1_1", "efficientnet_b0", "regnet_y_400mf",
          "shufflenet_v2_x1_0", "mobilenet_v3_small", "densenet121", "convnext_tiny", "swin_t")  # fmt: skip
"""The models of issue 18's compile-time target (<= 6 s cold each; swin_t is named in its Why)."""

THREADS = int(os.environ.get("BENCH_THREADS", "2"))
for _v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "RLX_NUM_THREADS"):
    os.environ[_v] = str(THREADS)
os.environ["RLX_CACHE_DIR"] = tempfile.mkdtemp(prefix="rlx-conv-models-")

os.environ.setdefault("RLX_LLVM_WORKER", "0")  # LLVM in this process: counted in its CPU time

import numpy as np  # noqa: E402


def export(name: str, size: int, path: Path) -> np.ndarray:
    import torch
    import torchvision

    torch.manual_seed(0)
    model = getattr(torchvision.models, name)(weights=None).eval()
    x = np.random.default_rng(0).standard_normal((1, 3, size, size)).astype(np.float32)
    torch.onnx.export(model, (torch.from_numpy(x),), str(path), input_names=["x"],
                      output_names=["y"], dynamo=False, opset_version=17)  # fmt: skip
    return x


def _cpu() -> tuple[float, float]:
    """CPU seconds of this process and of its reaped children (the compile's helpers)."""
    t = os.times()
    return t.user + t.system, t.children_user + t.children_system


def _best(fn: object, reps: int) -> float:
    """Fastest of `reps` runs after a warm-up (the least disturbed on a shared machine)."""
    fn()  # type: ignore[operator]
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()  # type: ignore[operator]
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args()

    import onnxruntime as ort

    import rlx
    from rlx.frontends.onnx import import_model

    compile_ = rlx.compile  # imports the compiler (~0.4 s CPU) before the first timing
    print(f"threads={THREADS} load={os.getloadavg()[0]:.2f}")
    tmp = Path(tempfile.mkdtemp(prefix="rlx-conv-onnx-"))
    for name in args.models.split(","):
        path = tmp / f"{name}.onnx"
        x = export(name, args.size, path)
        so = ort.SessionOptions()
        so.intra_op_num_threads, so.inter_op_num_threads = THREADS, 1
        sess = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
        want = sess.run(None, {"x": x})[0]
        t0 = time.perf_counter()
        module, params = import_model(str(path))
        t1, c1 = time.perf_counter(), _cpu()
        cg = compile_(module, rlx.CompileOptions(cache_param_invariant=True))
        t2, c2 = time.perf_counter(), _cpu()
        main_cpu, child_cpu = c2[0] - c1[0], c2[1] - c1[1]
        cg.set_params(params)
        got = cg.run(x)[0]
        ir = cg.ir("rlx")
        convs = len(re.findall(r"rlx\.(?:conv2d|fused_conv2d_residual) ", ir))
        linalg = cg.ir("linalg")
        kernels = len(re.findall(r'rlx.kernel = "conv ', linalg))
        n_kernels = len(re.findall(r"rlx.kernel = ", linalg))
        err = float(np.max(np.abs(got - want)))
        line = (f"{name:14s} import {t1 - t0:5.2f} s  cold compile {t2 - t1:5.2f} s"
                f" (cpu {main_cpu:5.2f} + children {child_cpu:4.2f} s,"
                f" load {os.getloadavg()[0]:.1f})  convs {convs}"
                f"  conv kernels {kernels}  kernels {n_kernels}  max|diff| {err:.1e}")  # fmt: skip
        if args.reps:
            t_rlx = _best(lambda c=cg, a=x: c.run(a), args.reps)
            t_ort = _best(lambda s=sess, a=x: s.run(None, {"x": a}), args.reps)
            line += (
                f"  rlx {t_rlx * 1e3:7.1f} ms  ort {t_ort * 1e3:7.1f} ms  ratio {t_rlx / t_ort:.2f}"
            )
        print(line, flush=True)
        for ln in cg.dispatch_report().splitlines():
            if "conv" in ln and "×" in ln:
                print("   ", ln.strip())


if __name__ == "__main__":
    main()
