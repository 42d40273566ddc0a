"""A/B of the blocked channel layout on whole CNNs: RLX with `blocked_layout=True`
(NCHWc regions, the blocked conv / pool kernels) against RLX in NCHW, onnxruntime and
OpenVINO, in one process with the runs alternating (the shared machine's load changes
during a run, so only ratios from one run compare).

    BENCH_THREADS=2 python bench/cnn_layout_ab.py [--models resnet18,...] [--reps 10]
                                                 [--rounds 3] [--report] [--no-nchw]
                                                 [--variant NAME=PIPELINE ...] [--no-peers]
                                                 [--cpu]

Each model is bench/cnn.py's export (torchvision, random weights and batch-norm
statistics, batch 1, 224²). RLX compiles cold with the initializers as params and
`cache_param_invariant=True` (as cnn.py does), once per layout. Prints the compile times,
the max difference of each RLX output from onnxruntime's, and the best time of
`--rounds` x `--reps` runs per runner. `--report` prints the blocked build's dispatch
report (which conv kernels the NCHWc ops took). `--variant NAME=PIPELINE` adds an RLX
build with `blocked_layout=False` and PIPELINE run right after fusion (`extra_passes`),
e.g. `--variant nostem='blocked-layout{narrow-convs=false prepare-weights=true}'` to A/B
one pass option in the same process; `--no-nchw` drops the NCHW build, `--no-peers`
onnxruntime and OpenVINO (outputs are then not compared). `--cpu` times each run by the
process's CPU time instead of the wall clock (with BENCH_THREADS=1 it moves least with
other processes' load; with more threads it sums them).
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

if __name__ == "__main__" and "BENCH_THREADS" not in os.environ:
    os.environ["BENCH_THREADS"] = "2"

from common import THREADS  # noqa: E402
from onnx_peers import Runner, ort_runner, ov_runner  # noqa: E402

import numpy as np  # noqa: E402  isort: skip


def _compile(path: Path, x: np.ndarray, blocked: bool,
             extra: str | None = None) -> tuple[object, float]:  # fmt: skip
    import onnx

    import rlx
    from rlx.frontends.onnx import import_model
    from rlx.runtime.cache import CACHE

    os.environ["RLX_CACHE_DIR"] = tempfile.mkdtemp(prefix="rlx-bench-ab-")
    CACHE.clear_memory()
    module, params = import_model(onnx.load(str(path)))
    t0 = time.perf_counter()
    more = {"extra_passes": {"after:fusion": extra}} if extra else {}
    opts = rlx.CompileOptions(cache_param_invariant=True, blocked_layout=blocked, **more)
    compiled = rlx.compile(module, opts)
    seconds = time.perf_counter() - t0
    compiled.set_params(params)
    compiled.run(x=x)  # the first run computes @prepare
    return compiled, seconds


def _best(runs: dict[str, Runner], reps: int, rounds: int,
          clock: object = time.perf_counter) -> dict[str, float]:  # fmt: skip
    best = dict.fromkeys(runs, float("inf"))
    for _ in range(rounds):
        for name, fn in runs.items():
            fn()
            for _ in range(reps):
                t0 = clock()  # type: ignore[operator]
                fn()
                best[name] = min(best[name], clock() - t0)  # type: ignore[operator]
    return best


def main() -> None:
    import argparse

    from cnn import MODELS, export

    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--report", action="store_true")
    ap.add_argument("--no-nchw", action="store_true")
    ap.add_argument("--no-peers", action="store_true")
    ap.add_argument("--cpu", action="store_true")
    ap.add_argument("--variant", action="append", default=[], metavar="NAME=PIPELINE")
    args = ap.parse_args()
    builds: list[tuple[str, bool, str | None]] = [] if args.no_nchw else [("nchw", False, None)]
    builds.append(("nchwc", True, None))
    for v in args.variant:
        vname, sep, spec = v.partition("=")
        if not sep or not vname or not spec:
            ap.error(f"--variant wants NAME=PIPELINE, got {v!r}")
        builds.append((vname, False, spec))
    print(f"threads={THREADS or 'default'} load={os.getloadavg()[0]:.2f}")
    for name in args.models.split(","):
        path = Path(tempfile.mkdtemp(prefix="rlx-ab-")) / f"{name}.onnx"
        _, x = export(name, path, keep_bn=False)
        runs: dict[str, Runner] = {}
        outs, times = {}, {}
        for vname, blocked, spec in builds:
            key = f"rlx {vname}"
            compiled, times[key] = _compile(path, x, blocked, spec)
            runs[key] = lambda c=compiled, x=x: c.run(x=x)[0]  # type: ignore[attr-defined]
            outs[key] = runs[key]()
            if blocked and args.report:
                print(compiled.dispatch_report())  # type: ignore[attr-defined]
        peers = () if args.no_peers else (("ort", ort_runner(path, {"x": x})),
                                           ("ov", ov_runner(path, {"x": x})))  # fmt: skip
        for peer, runner in peers:
            if runner is not None:
                runs[peer] = runner
        want = runs["ort"]() if "ort" in runs else None
        best = _best(
            runs, args.reps, args.rounds, time.process_time if args.cpu else time.perf_counter
        )
        errs = (
            ""
            if want is None
            else "  max |rlx - ort| "
            + ", ".join(
                f"{k.split()[1]} {float(np.max(np.abs(v - want))):.1e}" for k, v in outs.items()
            )
        )
        cols = "  ".join(f"{k} {v * 1e3:7.2f} ms" for k, v in best.items())
        comp = ", ".join(f"{k.split()[1]} {v:.2f} s" for k, v in times.items())
        ratios = "  ".join(f"{k.split()[1]}/nchwc {v / best['rlx nchwc']:.2f}"
                           for k, v in best.items() if k.startswith("rlx ") and k != "rlx nchwc")  # fmt: skip
        print(f"{name:16s} {cols}  {ratios}"
              f"  compile {comp}{errs}  load {os.getloadavg()[0]:.2f}")  # fmt: skip


if __name__ == "__main__":
    main()
