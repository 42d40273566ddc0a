"""RLX against its peers on the same workloads, in one process.

    .venv/bin/python bench/peers.py [--quick] [--reps N] [--threads N] [--generated] [--json PATH]

Workloads (bench/common.py): gelu_tanh(x*a+b) 4096x4096, softmax 2048x2048, layer_norm
8192x768, matmul 1024^3, MLP 256x768 -> 3072 -> 768 (bias, erf GELU), one BERT encoder
layer (seq 128, hidden 384, 12 heads, FFN 1536) and the all-MiniLM-L6-v2-shaped sentence
encoder (6 layers, batch 1, seq 128, random weights; `--quick` halves only the first
four sizes). Peers: NumPy (always), onnxruntime (graphs built with onnx.helper, opset 20,
ORT_ENABLE_ALL; the MiniLM graph in bench/minilm.py), OpenVINO (the same ONNX graphs, CPU
plugin, latency hint, f32 inference precision) and PyTorch (CPU, eager, no_grad; MiniLM as
an nn.Module with Hugging Face parameter names) when installed (`pip install -e .[bench]`,
`pip install openvino`; a missing peer prints one skip line and an empty column). RLX
compiles every workload with `cache_param_invariant=True` (weight-only work, including the
packing of matmul weights for the generated GEMM, runs once after `set_params`, as
onnxruntime and OpenVINO pre-pack at session creation). `--generated` sets `RLX_BLAS=0`:
every RLX matmul uses the generated GEMM, never OpenBLAS (the default picks per shape
class; `RLX_BLAS=1` forces OpenBLAS). Runners are timed in interleaved rounds (`common.race`:
each round runs every runner in turn), so a burst of load hits all of them alike. Prints, per
workload, the median run time of each, the ratio RLX / best peer (< 1: RLX faster: the median
over rounds of RLX's time / the best peer's in the same round) and each one's max |error| against NumPy; writes
everything to bench/peers.json (gitignored). Also times the encoder layer's compile: cold
(empty cache), disk cache hit and memory cache hit. `--threads N` caps BLAS, onnxruntime,
OpenVINO, torch and RLX's pool at N threads (default: each library's own default);
`--only matmul,mlp` runs only the workloads whose names start so (any case: `minilm`). The CNN rows of
bench/cnn.py (resnet18, mobilenet_v2, efficientnet_b0 exported from torchvision) follow the
transformer rows (`--no-cnn` skips them; `--only cnn` runs only them), then the rows of
bench/transformer_exports.py (small BERT, DistilBERT, RoBERTa, GPT-2 and Llama exported
from transformers, batch 2 x seq 16; `--no-exports`, `--only exports`).
"""

from __future__ import annotations

import json
import math
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

if "--threads" in sys.argv[:-1]:  # before numpy/BLAS are loaded (bench/common.py)
    os.environ["BENCH_THREADS"] = sys.argv[sys.argv.index("--threads") + 1]
if "--generated" in sys.argv:  # read when RLX compiles a matmul
    os.environ["RLX_BLAS"] = "0"

from common import (
    ENC,
    THREADS,
    Workload,
    arg_parser,
    compile_rlx,
    copy_floor_runner,
    machine,
    make_graph,
    max_err,
    race,
    reps_of,
    run_rlx,
    workloads,
)

import numpy as np  # isort: skip

import rlx  # isort: skip

Runner = Callable[[], np.ndarray]


# ----------------------------------------------------------------------------- onnxruntime
def _onnx_model(w: Workload) -> object | None:
    """The workload as an ONNX graph (opset 20), or None if not expressible here."""
    from onnx import TensorProto, helper, numpy_helper

    if w.tags.get("minilm"):
        from minilm import onnx_model

        ids = w.inputs["input_ids"]
        return onnx_model(w.tags["state_dict"], w.tags["cfg"], *ids.shape)  # type: ignore[arg-type]

    nodes: list[object] = []
    inits = [numpy_helper.from_array(v, k) for k, v in w.params.items()]
    n = [0]

    def node(op: str, ins: list[str], **attrs: object) -> str:
        n[0] += 1
        out = f"t{n[0]}"
        nodes.append(helper.make_node(op, ins, [out], **attrs))
        return out

    def const(v: float) -> str:
        name = f"c{len(inits)}"
        inits.append(numpy_helper.from_array(np.array(v, np.float32), name))
        return name

    def gelu(x: str) -> str:  # 0.5 x (1 + erf(x / sqrt 2))
        e = node("Erf", [node("Mul", [x, const(1 / math.sqrt(2))])])
        return node("Mul", [node("Mul", [x, const(0.5)]), node("Add", [e, const(1.0)])])

    def ln(x: str, g: str, b: str, eps: float) -> str:
        return node("LayerNormalization", [x, g, b], axis=-1, epsilon=eps)

    name = w.name.split()[0]
    if name.startswith("gelu_tanh"):  # the standard op (opset 20): ORT's tanh-approx kernel
        y = node("Gelu", [node("Add", [node("Mul", ["x", "a"]), "b"])], approximate="tanh")
    elif name == "softmax":
        y = node("Softmax", ["x"], axis=-1)
    elif name == "layer_norm":
        y = ln("x", "g", "b", 1e-5)
    elif name == "matmul":
        y = node("MatMul", ["x", "w"])
    elif name == "mlp":
        y = node(
            "Add",
            [node("MatMul", [gelu(node("Add", [node("MatMul", ["x", "w1"]), "b1"])), "w2"]), "b2"],
        )
    elif name == "encoder":
        sq, h, nh = ENC["seq"], ENC["hidden"], ENC["heads"]
        hd = h // nh
        inits.append(numpy_helper.from_array(np.array([sq, nh, hd], np.int64), "shp3"))
        inits.append(numpy_helper.from_array(np.array([sq, h], np.int64), "shp2"))

        def dense(t: str, wn: str, bn: str) -> str:
            return node("Add", [node("MatMul", [t, wn]), bn])

        def heads(t: str) -> str:
            return node("Transpose", [node("Reshape", [t, "shp3"])], perm=[1, 0, 2])

        q, k, v = (heads(dense("x", a, b)) for a, b in (("wq", "bq"), ("wk", "bk"), ("wv", "bv")))
        sc = node(
            "Mul",
            [node("MatMul", [q, node("Transpose", [k], perm=[0, 2, 1])]), const(1 / math.sqrt(hd))],
        )
        ctx = node("MatMul", [node("Softmax", [sc], axis=-1), v])
        ctx = node("Reshape", [node("Transpose", [ctx], perm=[1, 0, 2]), "shp2"])
        h1 = ln(node("Add", [dense(ctx, "wo", "bo"), "x"]), "g1", "be1", 1e-12)
        f = dense(gelu(dense(h1, "w1", "b1")), "w2", "b2")
        y = ln(node("Add", [f, h1]), "g2", "be2", 1e-12)
    else:
        return None
    x = w.inputs["x"]
    graph = helper.make_graph(
        nodes, "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape))],
        [helper.make_tensor_value_info(y, TensorProto.FLOAT, None)],
        initializer=inits,
    )  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])


def ort_runner(w: Workload) -> Runner | None:
    try:
        import onnxruntime as ort
    except ImportError:
        return None
    model = _onnx_model(w)
    if model is None:
        return None
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    if THREADS:
        so.intra_op_num_threads = so.inter_op_num_threads = THREADS
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])  # type: ignore[attr-defined]
    feed = dict(w.inputs)
    return lambda: sess.run(None, feed)[0]


# ----------------------------------------------------------------------------- OpenVINO
def ov_runner(w: Workload) -> Runner | None:
    """The onnxruntime graph on OpenVINO's CPU plugin (latency hint, f32 precision)."""
    try:
        import openvino as ov
    except ImportError:
        return None
    model = _onnx_model(w)
    if model is None:
        return None
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "model.onnx"
        path.write_bytes(model.SerializeToString())  # type: ignore[attr-defined]
        core = ov.Core()
        config = {"PERFORMANCE_HINT": "LATENCY", "INFERENCE_PRECISION_HINT": "f32"}
        if THREADS:
            config["INFERENCE_NUM_THREADS"] = str(THREADS)
        compiled = core.compile_model(core.read_model(str(path)), "CPU", config)
    req = compiled.create_infer_request()
    feed = dict(w.inputs)

    def run() -> np.ndarray:
        req.infer(feed)
        return np.array(req.get_output_tensor(0).data)

    return run


# ----------------------------------------------------------------------------- torch
def torch_runner(w: Workload) -> Runner | None:
    try:
        import torch
    except ImportError:
        return None
    import torch.nn.functional as F

    if THREADS:
        torch.set_num_threads(THREADS)

    if w.tags.get("minilm"):
        from minilm import torch_module

        mod = torch_module(w.tags["state_dict"], w.tags["cfg"])  # type: ignore[arg-type]
        ids, mask = (torch.from_numpy(v) for v in w.inputs.values())

        def run_minilm() -> np.ndarray:
            with torch.no_grad():
                return mod(ids, mask).numpy()

        return run_minilm

    t = {k: torch.from_numpy(v) for k, v in {**w.inputs, **w.params}.items()}
    name = w.name.split()[0]
    if name.startswith("gelu_tanh"):
        fn = lambda: F.gelu(t["x"] * t["a"] + t["b"], approximate="tanh")  # noqa: E731
    elif name == "softmax":
        fn = lambda: torch.softmax(t["x"], -1)  # noqa: E731
    elif name == "layer_norm":
        fn = lambda: F.layer_norm(t["x"], (t["x"].shape[-1],), t["g"], t["b"], 1e-5)  # noqa: E731
    elif name == "matmul":
        fn = lambda: t["x"] @ t["w"]  # noqa: E731
    elif name == "mlp":
        fn = lambda: F.gelu(t["x"] @ t["w1"] + t["b1"]) @ t["w2"] + t["b2"]  # noqa: E731
    elif name == "encoder":
        sq, h, nh = ENC["seq"], ENC["hidden"], ENC["heads"]
        hd = h // nh

        def fn() -> object:
            x = t["x"]

            def heads(a: object) -> object:
                return a.reshape(sq, nh, hd).transpose(0, 1)  # type: ignore[attr-defined]

            q, k, v = (
                heads(x @ t[a] + t[b]) for a, b in (("wq", "bq"), ("wk", "bk"), ("wv", "bv"))
            )
            ctx = torch.softmax(q @ k.transpose(1, 2) / math.sqrt(hd), -1) @ v
            ctx = ctx.transpose(0, 1).reshape(sq, h)
            h1 = F.layer_norm(ctx @ t["wo"] + t["bo"] + x, (h,), t["g1"], t["be1"], 1e-12)
            f = F.gelu(h1 @ t["w1"] + t["b1"]) @ t["w2"] + t["b2"]
            return F.layer_norm(f + h1, (h,), t["g2"], t["be2"], 1e-12)
    else:
        return None

    def run() -> np.ndarray:
        with torch.no_grad():
            return fn().numpy()  # type: ignore[attr-defined]

    return run


# ----------------------------------------------------------------------------- main
def compile_times(reps: int) -> dict[str, float]:
    """Encoder layer compile (s): cache miss (empty cache dir and memory), disk hit (memory
    cleared) and memory hit; medians over `reps`, in this already warmed-up process."""
    from rlx.runtime.cache import CACHE

    w = next(x for x in workloads(True) if x.tags.get("encoder"))
    old = os.environ.get("RLX_CACHE_DIR")
    out: dict[str, list[float]] = {
        "encoder_cold_s": [],
        "encoder_disk_hit_s": [],
        "encoder_memory_hit_s": [],
    }

    def once() -> float:
        g = make_graph(w)
        t0 = time.perf_counter()
        rlx.compile(g)
        return time.perf_counter() - t0

    try:
        for _ in range(reps):
            d = tempfile.mkdtemp(prefix="rlx-bench-cold-")
            os.environ["RLX_CACHE_DIR"] = d
            CACHE.clear_memory()
            out["encoder_cold_s"].append(once())
            CACHE.clear_memory()
            out["encoder_disk_hit_s"].append(once())
            out["encoder_memory_hit_s"].append(once())
            shutil.rmtree(d, ignore_errors=True)
    finally:
        if old is None:
            os.environ.pop("RLX_CACHE_DIR", None)
        else:
            os.environ["RLX_CACHE_DIR"] = old
    return {k: float(np.median(v)) for k, v in out.items()}


def main() -> None:
    ap = arg_parser(__doc__)
    ap.add_argument("--json", default=str(Path(__file__).with_name("peers.json")))
    ap.add_argument("--generated", action="store_true",
                    help="RLX_BLAS=0: RLX's matmuls on the generated GEMM, OpenBLAS off")  # fmt: skip
    ap.add_argument("--only", default="",
                    help="comma-separated workload name prefixes, e.g. matmul,mlp,encoder")  # fmt: skip
    ap.add_argument("--no-cnn", action="store_true", help="skip the CNN rows (bench/cnn.py)")
    ap.add_argument("--no-exports", action="store_true",
                    help="skip the transformer-export rows (bench/transformer_exports.py)")  # fmt: skip
    args = ap.parse_args()
    reps = reps_of(args)
    info = machine() | {"rlx_gemm": "generated (RLX_BLAS=0)" if args.generated else "default"}
    print(info)
    for peer, mod in (("onnxruntime", "onnxruntime"), ("openvino", "openvino"), ("torch", "torch")):
        try:
            __import__(mod)
        except ImportError:
            print(f"skip {peer}: not installed (pip install {mod}); its column stays empty")
    rows: list[dict[str, object]] = []
    peers = ("numpy", "onnxruntime", "openvino", "torch")
    print(
        f"{'workload':36} {'rlx ms':>9} "
        + " ".join(f"{p + ' ms':>14}" for p in peers)
        + f" {'rlx/best':>8}  max err (rlx, ort, ov, torch)"
    )
    only = [p for p in args.only.split(",") if p]
    for w in workloads(args.quick):
        if only and not any(w.name.lower().startswith(p.lower()) for p in only):
            continue
        ref = w.numpy(w.inputs, w.params)
        if w.params and w.options is None:
            w.options = rlx.CompileOptions(cache_param_invariant=True)
        c, _ = compile_rlx(w)
        runners: dict[str, Runner | None] = {
            "rlx": run_rlx(c, w),
            "numpy": lambda w=w: w.numpy(w.inputs, w.params),
            "onnxruntime": ort_runner(w),
            "openvino": ov_runner(w),
            "torch": torch_runner(w),
        }
        err = {k: None if fn is None else max_err(fn(), ref) for k, fn in runners.items()}
        floor = copy_floor_runner(w.inputs["x"]) if w.name.startswith("gelu") else None
        timing = race(runners | {"copy floor": floor}, reps)
        ms: dict[str, float | None] = {k: timing.ms.get(k) for k in runners}
        best = timing.best(k for k in runners if k != "rlx")
        ratio = timing.ratio("rlx", best)
        row = {"workload": w.name, "ms": ms, "max_err": err, "ratio_to_best_peer": ratio,
               "best_peer": best, "rounds": len(timing.per_round["rlx"])}  # fmt: skip
        if floor is not None:  # issue 17: within 1.5x of the copy-bandwidth floor
            row["copy_floor_ms"] = timing.ms["copy floor"]
            row["ratio_to_copy_floor"] = timing.ratio("rlx", "copy floor")
        if w.flops:
            row["gflops"] = {k: w.flops / v * 1e-6 for k, v in ms.items() if v}
        rows.append(row)
        cells = " ".join(
            f"{v:14.3f}" if v is not None else f"{'-':>14}" for v in (ms[p] for p in peers)
        )
        errs = ", ".join(
            "-" if err[k] is None else f"{err[k]:.1e}"
            for k in ("rlx", "onnxruntime", "openvino", "torch")
        )
        print(f"{w.name:36} {ms['rlx']:9.3f} {cells} {ratio:8.2f}  {errs}")
        if "copy_floor_ms" in row:
            print(f"{'  copy floor (read x, write out)':36} {row['copy_floor_ms']:9.3f}   "
                  f"rlx / floor {row['ratio_to_copy_floor']:.2f}")  # fmt: skip
    ct = compile_times(3) if not only or any("encoder".startswith(p) for p in only) else {}
    if ct:
        print(
            f"encoder layer compile: cold {ct['encoder_cold_s']:.2f} s, disk cache hit "
            f"{ct['encoder_disk_hit_s'] * 1e3:.1f} ms, memory hit "
            f"{ct['encoder_memory_hit_s'] * 1e3:.1f} ms"
        )
    cnn = [] if args.no_cnn or (only and "cnn" not in only) else __import__("cnn").cnn_rows(reps)
    exports = (
        [] if args.no_exports or (only and "exports" not in only)
        else __import__("transformer_exports").export_rows(reps)
    )  # fmt: skip
    Path(args.json).write_text(json.dumps(
        {"machine": info, "quick": args.quick, "rows": rows, "compile": ct, "cnn": cnn,
         "exports": exports}, indent=1
    ))  # fmt: skip
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
