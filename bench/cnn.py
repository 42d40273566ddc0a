"""CNN rows: torchvision's resnet18, mobilenet_v2 and efficientnet_b0 (batch 1, 3x224x224),
RLX against onnxruntime, OpenVINO and torch in one run.

    python bench/cnn.py [--threads 2] [--reps 20] [--models resnet18,...] [--keep-bn]
                        [--openblas-threads N] [--json PATH] [--profile]

`--profile` prints, instead of the rows, where each model's time goes: RLX's ops of the
compiled graph each compiled and timed alone (`op_breakdown.py`), and onnxruntime's own
per-node profile (`SessionOptions.enable_profiling`), both summed by op kind.

`bench/peers.py` runs these rows after its own (`--no-cnn` skips them). Each model is
built by the installed torchvision with random weights and randomized batch-norm
statistics (running mean / var, affine weight and bias), in eval mode, and exported at
bench time with `torch.onnx.export` (TorchScript exporter, opset 17) into a temporary
directory; nothing is downloaded. The exporter folds BatchNormalization into the
convolutions itself (as onnxruntime and OpenVINO would); `--keep-bn` exports with
`training=PRESERVE`, which keeps the BatchNormalization nodes, so RLX's `fold-batch-norm`
does the folding. RLX imports the file with `rlx.frontends.onnx.import_model`, compiles it
cold (an empty compile cache directory and memory cache) with the initializers as params
and `cache_param_invariant=True`, then sets them (`set_params` runs the weight-only work,
e.g. folded batch norms, once, as the peers do at session creation): "compile" is
`rlx.compile` alone, "params" is `set_params` plus the first run (which computes
`@prepare`), "import" is the ONNX import. (Binding the initializers as constants,
`param_bindings`, compiles far slower: resnet18 9.5 s instead of 1.6 s.) Every output is
compared with onnxruntime's (cosine similarity). Peers: onnxruntime (ORT_ENABLE_ALL),
OpenVINO (CPU plugin, LATENCY hint, f32 inference precision) and torch (eager, no_grad,
`torch.set_num_threads`); a missing peer prints one skip line and an empty column, and
without torch / torchvision the CNN rows are one skip line. Times are medians of `--reps`
runs after a warm-up. `--openblas-threads N` caps OpenBLAS (RLX's convolutions are im2col
+ OpenBLAS GEMMs) at N threads for RLX's runs (threadpoolctl), independently of `--threads`
(RLX's own pool and the peers): OpenBLAS's workers and RLX's pool share the cores. torch,
torchvision, onnxruntime and OpenVINO are bench-only dependencies.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

if __name__ == "__main__" and "--threads" in sys.argv[:-1]:  # before numpy / BLAS load
    os.environ["BENCH_THREADS"] = sys.argv[sys.argv.index("--threads") + 1]

from common import THREADS, arg_parser, machine, race, reps_of  # noqa: E402
from onnx_peers import Runner, cosine, ort_runner, ov_runner  # noqa: E402

import numpy as np  # noqa: E402  isort: skip

MODELS = ("resnet18", "mobilenet_v2", "efficientnet_b0")
PEERS = ("onnxruntime", "openvino", "torch")


def have_torch() -> str | None:
    """None when torch and torchvision import, else the skip reason."""
    try:
        import torch  # noqa: F401
        import torchvision  # noqa: F401
    except ImportError as e:
        return f"{e.name} not installed (pip install torch torchvision)"
    return None


def export(name: str, path: Path, keep_bn: bool) -> tuple[Any, np.ndarray]:
    """torchvision `name` with random weights and batch-norm statistics, eval mode,
    written to `path` (opset 17); returns (the torch module, the input)."""
    import torch
    import torchvision

    torch.manual_seed(0)
    model = getattr(torchvision.models, name)(weights=None)
    gen = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.normal_(0.0, 0.2, generator=gen)
                m.running_var.uniform_(0.5, 2.0, generator=gen)
                m.weight.uniform_(0.5, 1.5, generator=gen)
                m.bias.normal_(0.0, 0.2, generator=gen)
    model.eval()
    x = torch.randn(1, 3, 224, 224, generator=gen)
    mode = torch.onnx.TrainingMode.PRESERVE if keep_bn else torch.onnx.TrainingMode.EVAL
    torch.onnx.export(
        model, (x,), str(path), input_names=["x"], output_names=["y"], opset_version=17,
        dynamo=False, training=mode,
    )  # fmt: skip
    return model, x.numpy()


def torch_runner(model: Any, x: np.ndarray) -> Runner:
    import torch

    if THREADS:
        torch.set_num_threads(THREADS)
    xt = torch.from_numpy(x)

    def run() -> np.ndarray:
        with torch.no_grad():
            return model(xt).numpy()

    return run


def rlx_compile(path: Path, x: np.ndarray) -> tuple[Runner, float, float, float]:
    """Import and compile cold (empty cache directory and memory cache), set the params;
    (runner, import, compile and set_params seconds)."""
    import onnx

    import rlx
    from rlx.frontends.onnx import import_model
    from rlx.runtime.cache import CACHE

    old = os.environ.get("RLX_CACHE_DIR")
    cold = tempfile.mkdtemp(prefix="rlx-bench-cnn-")
    os.environ["RLX_CACHE_DIR"] = cold
    CACHE.clear_memory()
    try:
        t0 = time.perf_counter()
        module, params = import_model(onnx.load(str(path)))
        t1 = time.perf_counter()
        c = rlx.compile(module, rlx.CompileOptions(cache_param_invariant=True))
        t2 = time.perf_counter()
        c.set_params(params)
        c.run(x=x)  # the first run computes @prepare
        t3 = time.perf_counter()
    finally:
        shutil.rmtree(cold, ignore_errors=True)
        if old is None:
            os.environ.pop("RLX_CACHE_DIR", None)
        else:
            os.environ["RLX_CACHE_DIR"] = old
    return (lambda: c.run(x=x)[0]), t1 - t0, t2 - t1, t3 - t2


def with_openblas_threads(fn: Runner, n: int) -> Runner:
    """`fn` run with OpenBLAS capped at `n` threads (0: unchanged)."""
    if not n:
        return fn
    from threadpoolctl import ThreadpoolController

    openblas = ThreadpoolController().select(internal_api="openblas")  # not torch's MKL

    def run() -> np.ndarray:
        with openblas.limit(limits=n):
            return fn()

    return run


HEADER = (
    f"{'cnn (batch 1, 224x224)':24} {'rlx ms':>8} "
    + " ".join(f"{p + ' ms':>14}" for p in PEERS)
    + f" {'rlx/best':>8} {'import s':>8} {'compile s':>9} {'params s':>8}"
    + "  cosine vs ort (rlx, ov, torch)"
)


def ort_profile(path: Path, x: np.ndarray, reps: int) -> dict[str, tuple[int, float]]:
    """onnxruntime's own per-node kernel times (`SessionOptions.enable_profiling`),
    summed by op type: {op type: (nodes, ms)}, each node's time the median of the
    faster half of `reps` runs."""
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    if THREADS:
        so.intra_op_num_threads = so.inter_op_num_threads = THREADS
    so.enable_profiling = True
    so.profile_file_prefix = str(path.with_suffix(""))
    sess = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
    for _ in range(reps + 2):
        sess.run(None, {"x": x})
    events = json.loads(Path(sess.end_profiling()).read_text())
    per: dict[str, list[float]] = {}
    kinds: dict[str, str] = {}
    for e in events:
        if e.get("cat") == "Node" and e["name"].endswith("_kernel_time"):
            per.setdefault(e["name"], []).append(e["dur"] / 1e3)
            kinds[e["name"]] = e["args"].get("op_name", "?")
    out: dict[str, tuple[int, float]] = {}
    for name, ts in per.items():
        fast = sorted(ts)[: max(1, len(ts) // 2)]
        n, ms = out.get(kinds[name], (0, 0.0))
        out[kinds[name]] = (n + 1, ms + float(np.median(fast)))
    return out


def print_profile(name: str, path: Path, x: np.ndarray, reps: int) -> None:
    """RLX's per-op kernel times (`op_breakdown.py`: each op of the compiled graph alone)
    and onnxruntime's profile, by op kind, side by side."""
    from op_breakdown import breakdown

    rlx_kinds: dict[str, tuple[int, float]] = {}
    for ms, kind, _ in breakdown(str(path), reps):
        n, t = rlx_kinds.get(kind, (0, 0.0))
        rlx_kinds[kind] = (n + 1, t + ms)
    try:
        ort_kinds = ort_profile(path, x, reps)
    except ImportError:
        ort_kinds = {}
    rows = [(f"rlx {k}", n, t) for k, (n, t) in rlx_kinds.items()]
    rows += [(f"ort {k}", n, t) for k, (n, t) in ort_kinds.items()]
    print(f"profile {name} (ms summed per kind; RLX: fastest of {reps} per op, alone)")
    for side in ("rlx", "ort"):
        mine = sorted((r for r in rows if r[0].startswith(side)), key=lambda r: -r[2])
        print(f"  {side} total {sum(r[2] for r in mine):.2f} ms")
        for label, n, t in mine:
            print(f"    {label[4:]:32s} x{n:3d} {t:8.3f}")


def cnn_rows(
    reps: int,
    models: tuple[str, ...] = MODELS,
    keep_bn: bool = False,
    openblas_threads: int = 0,
    profile: bool = False,
) -> list[dict[str, Any]]:
    """Export, compile and time each model; prints one line per model and returns the rows
    (an empty list, after one skip line, without torch / torchvision)."""
    why = have_torch()
    if why is not None:
        print(f"skip CNN rows: {why}")
        return []
    for peer in ("onnxruntime", "openvino"):
        try:
            __import__(peer)
        except ImportError:
            print(f"skip {peer} (CNN rows): not installed (pip install {peer})")
    if not profile:
        print(HEADER)
    rows: list[dict[str, Any]] = []
    tmp = Path(tempfile.mkdtemp(prefix="rlx-cnn-onnx-"))
    try:
        for name in models:
            path = tmp / f"{name}.onnx"
            model, x = export(name, path, keep_bn)
            if profile:
                print_profile(name, path, x, min(reps, 10))
                continue
            rlx_run, t_import, t_compile, t_params = rlx_compile(path, x)
            runners: dict[str, Runner | None] = {
                "rlx": with_openblas_threads(rlx_run, openblas_threads),
                "onnxruntime": ort_runner(path, {"x": x}),
                "openvino": ov_runner(path, {"x": x}),
                "torch": torch_runner(model, x),
            }
            outs = {k: fn() for k, fn in runners.items() if fn is not None}
            ref = outs.get("onnxruntime", outs["torch"])
            timing = race(runners, reps)
            ms = {k: timing.ms.get(k) for k in runners}
            fastest = {k: timing.fastest_ms.get(k) for k in runners}
            cos = {k: cosine(v, ref) for k, v in outs.items()}
            best = timing.best(k for k in runners if k != "rlx")
            ratio = timing.ratio("rlx", best)
            rows.append({"model": name, "ms": ms, "cosine_vs_ort": cos, "ratio_to_best_peer": ratio, "best_peer": best, "min_ms": fastest,
                         "import_s": t_import, "compile_cold_s": t_compile,
                         "set_params_first_run_s": t_params, "keep_bn": keep_bn})  # fmt: skip
            cells = " ".join(f"{ms[p]:14.2f}" if ms[p] is not None else f"{'-':>14}" for p in PEERS)
            coss = ", ".join(
                f"{cos[k]:.6f}" if k in cos else "-" for k in ("rlx", "openvino", "torch")
            )
            print(
                f"{name:24} {ms['rlx']:8.2f} {cells} {ratio:8.2f} {t_import:8.2f} {t_compile:9.2f} {t_params:8.2f}  {coss}",
                flush=True,
            )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return rows


def main() -> None:
    ap = arg_parser(__doc__)
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--keep-bn", action="store_true",
                    help="export with BatchNormalization nodes (RLX's fold-batch-norm folds them)")  # fmt: skip
    ap.add_argument("--openblas-threads", type=int, default=0,
                    help="cap OpenBLAS at N threads in RLX's runs (0: as --threads)")  # fmt: skip
    ap.add_argument("--profile", action="store_true",
                    help="per-op-kind kernel times of RLX and onnxruntime instead of the rows")  # fmt: skip
    ap.add_argument("--json", default=str(Path(__file__).with_name("cnn.json")))
    args = ap.parse_args()
    info = machine()
    print(info | {"openblas_threads_rlx": args.openblas_threads or "as --threads"})
    models = tuple(m for m in args.models.split(",") if m)
    rows = cnn_rows(reps_of(args), models, args.keep_bn, args.openblas_threads, args.profile)
    if args.profile:
        return
    Path(args.json).write_text(json.dumps({"machine": info, "rows": rows}, indent=1))
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
