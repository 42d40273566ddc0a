"""Transformer-export rows: small BERT, DistilBERT, RoBERTa, GPT-2 and Llama models from
transformers (random init), exported to ONNX at bench time, RLX against onnxruntime,
OpenVINO and torch in one run.

    python bench/transformer_exports.py [--threads 2] [--reps 20] [--models bert,...]
                                        [--batch 2] [--seq 16] [--hidden 64] [--json PATH]

`bench/peers.py` runs these rows after its own (`--no-exports` skips them; `--only
exports` runs only them). Each model (2 layers, `--hidden` wide, hidden / 16 heads, FFN
2 x hidden; bench/onnx_exports.py builds them) is exported with the TorchScript exporter
(opset 17, dynamic batch / sequence axes) into a temporary directory; RLX imports the
file without `dims=`, compiles it for the sample's sizes (`dim_binding`) with the
initializers as params and `cache_param_invariant=True`, then sets them (as the peers
pre-pack weights at session creation); "compile" is the import plus `rlx.compile`.
Every output is compared with onnxruntime's (cosine). Models this small measure each
runtime's per-op overhead more than its kernels. torch, transformers, onnxruntime and
OpenVINO are bench-only dependencies; without torch / transformers the rows are one
skip line.
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
from onnx_exports import TRANSFORMERS, compile_export, export  # noqa: E402
from onnx_peers import Runner, cosine, ort_runner, ov_runner  # noqa: E402

PEERS = ("onnxruntime", "openvino", "torch")


def _torch_runner(model: Any, feeds: dict[str, Any]) -> Runner:
    import torch

    if THREADS:
        torch.set_num_threads(THREADS)
    args = tuple(torch.from_numpy(v) for v in feeds.values())

    def run() -> Any:
        with torch.no_grad():
            return model(*args).numpy()

    return run


def export_rows(
    reps: int, models: tuple[str, ...] = TRANSFORMERS, batch: int = 2, seq: int = 16,
    hidden: int = 64,
) -> list[dict[str, Any]]:  # fmt: skip
    """Export, compile and time each model; one printed line and one row per model (an
    empty list after one skip line without torch / transformers)."""
    try:
        import torch  # noqa: F401
        import transformers  # noqa: F401
    except ImportError as e:
        print(f"skip transformer-export rows: {e.name} not installed")
        return []
    title = f"exports (b{batch} s{seq} h{hidden})"
    print(f"{title:24} {'rlx ms':>8} " + " ".join(f"{p + ' ms':>14}" for p in PEERS)
          + f" {'rlx/best':>8} {'compile s':>9}  cosine vs ort (rlx, ov, torch)")  # fmt: skip
    rows: list[dict[str, Any]] = []
    tmp = Path(tempfile.mkdtemp(prefix="rlx-exports-"))
    try:
        for name in models:
            path = tmp / f"{name}.onnx"
            model, feeds = export(name, "torchscript", path, batch=batch, seq=seq, hidden=hidden)
            t0 = time.perf_counter()
            cg, names = compile_export(path, feeds, bind=False)
            t_compile = time.perf_counter() - t0
            rlx_feeds = {k: feeds[k] for k in names}
            runners: dict[str, Runner | None] = {
                "rlx": lambda cg=cg, f=rlx_feeds: cg.run(**f)[0],
                "onnxruntime": ort_runner(path, feeds),
                "openvino": ov_runner(path, feeds),
                "torch": _torch_runner(model, feeds),
            }
            outs = {k: fn() for k, fn in runners.items() if fn is not None}
            ref = outs.get("onnxruntime", outs["torch"])
            timing = race(runners, reps)
            ms = {k: timing.ms.get(k) for k in runners}
            cos = {k: cosine(v, ref) for k, v in outs.items()}
            best = timing.best(k for k in runners if k != "rlx")
            ratio = timing.ratio("rlx", best)
            rows.append({"model": name, "batch": batch, "seq": seq, "hidden": hidden, "ms": ms,
                         "cosine_vs_ort": cos, "ratio_to_best_peer": ratio, "best_peer": best,
                         "compile_cold_s": t_compile})  # fmt: skip
            cells = " ".join(f"{ms[p]:14.3f}" if ms[p] is not None else f"{'-':>14}" for p in PEERS)
            coss = ", ".join(
                f"{cos[k]:.6f}" if k in cos else "-" for k in ("rlx", "openvino", "torch")
            )
            print(f"{name:24} {ms['rlx']:8.3f} {cells} {ratio:8.2f} {t_compile:9.2f}  {coss}",
                  flush=True)  # fmt: skip
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return rows


def main() -> None:
    ap = arg_parser(__doc__)
    ap.add_argument("--models", default=",".join(TRANSFORMERS))
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--seq", type=int, default=16)
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--json", default=str(Path(__file__).with_name("transformer_exports.json")))
    args = ap.parse_args()
    info = machine()
    print(info)
    models = tuple(m for m in args.models.split(",") if m)
    rows = export_rows(reps_of(args), models, args.batch, args.seq, args.hidden)
    Path(args.json).write_text(json.dumps({"machine": info, "rows": rows}, indent=1))
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
