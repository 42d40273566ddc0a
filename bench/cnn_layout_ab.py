"""A/B of the blocked channel layout on whole CNNs: RLX with `blocked_layout=True`
(NCHWc regions, the blocked conv / pool kernels) against RLX in NCHW, onnxruntime and
OpenVINO, in one process with the runs alternating (the shared machine's load changes
during a run, so only ratios from one run compare).

    BENCH_THREADS=2 python bench/cnn_layout_ab.py [--models resnet18,...] [--reps 10]
                                                 [--rounds 3] [--report] [--no-nchw]
                                                 [--variant NAME=PIPELINE ...] [--no-peers]
                                                 [--cpu] [--env NAME=VAR=VALUE ...]

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
other processes' load; with more threads it sums them). `--env NAME=VAR=VALUE` adds a
blocked build compiled with the environment variable VAR set to VALUE (e.g. `--env
nowg=RLX_CONV_WINOGRAD=0`: the direct kernel instead of Winograd).
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


def _compile(path: Path, x: np.ndarray, blocked: bool, extra: str | None = None,
             env: tuple[str, str] | None = None) -> tuple[object, float]:  # fmt: skip
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
    old = os.environ.get(env[0]) if env else None
    if env:
        os.environ[env[0]] = env[1]
    try:
        compiled = rlx.compile(module, opts)
    finally:
        if env and old is None:
            os.environ.pop(env[0], None)
        elif env and old is not None:
            os.environ[env[0]] = old
    seconds = time.perf_counter() - t0
    compiled.set_params(params)
    compiled.run(x=x)  # the first run computes @prepare
    return compiled, seconds


def _cos(a: np.ndarray, b: np.ndarray) -> float:
    a, b = a.ravel().astype(np.float64), b.ravel().astype(np.float64)
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


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
    ap.add_argument("--env", action="append", default=[], metavar="NAME=VAR=VALUE")
    args = ap.parse_args()
    Build = tuple[str, bool, str | None, tuple[str, str] | None]
    builds: list[Build] = [] if args.no_nchw else [("nchw", False, None, None)]
    builds.append(("nchwc", True, None, None))
    for v in args.variant:
        vname, sep, spec = v.partition("=")
        if not sep or not vname or not spec:
            ap.error(f"--variant wants NAME=PIPELINE, got {v!r}")
        builds.append((vname, False, spec, None))
    for v in args.env:
        vname, var, value = (v.split("=", 2) + ["", ""])[:3]
        if not vname or not var:
            ap.error(f"--env wants NAME=VAR=VALUE, got {v!r}")
        builds.append((vname, True, None, (var, value)))
    print(f"threads={THREADS or 'default'} load={os.getloadavg()[0]:.2f}")
    for name in args.models.split(","):
        path = Path(tempfile.mkdtemp(prefix="rlx-ab-")) / f"{name}.onnx"
        _, x = export(name, path, keep_bn=False)
        runs: dict[str, Runner] = {}
        outs, times = {}, {}
        for vname, blocked, spec, env in builds:
            key = f"rlx {vname}"
            compiled, times[key] = _compile(path, x, blocked, spec, env)
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
                f"{k.split()[1]} {float(np.max(np.abs(v - want))):.1e} (cos {_cos(v, want):.6f})"
                for k, v in outs.items()
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
