"""A/B of a compile-time choice in one process: each workload compiled as by default (A)
and with the named fusion patterns off and/or an environment variable set while compiling
(B), run alternately.

    .venv/bin/python bench/fusion_ab.py [--off shared_input_matmul] [--env RLX_GEMM_TASKS=1]
        [--only encoder,minilm] [--threads N] [--rounds R] [--reps N] [--cpu]

Prints, per round, the median of `--reps` runs of A and of B (ms) and B / A (> 1: the
patterns help), then the median ratio over the rounds; both are checked against the
workload's NumPy reference. Alternating rounds in one process is how a change is measured
on a shared machine (docs/performance.md): load moves the absolute times, much less the
ratio of neighbouring runs. `--cpu` times each run by the calling thread's CPU time
(`time.thread_time`) instead of wall time: with `--threads 1` that is the work itself,
nearly independent of how many other processes share the cores.
"""

from __future__ import annotations

import dataclasses
import os
import statistics
import sys
import time
from collections.abc import Callable

if "--threads" in sys.argv[:-1]:  # before numpy/BLAS are loaded (bench/common.py)
    os.environ["BENCH_THREADS"] = sys.argv[sys.argv.index("--threads") + 1]

from common import Workload, make_graph, max_err, median_s, workloads

import rlx  # isort: skip
from rlx.runtime.options import FusionOptions  # isort: skip


def _cpu_median(fn: Callable[[], object], reps: int) -> float:
    """Median CPU seconds of the calling thread per `fn()` (after one warm-up)."""
    fn()
    times = []
    for _ in range(reps):
        t0 = time.thread_time()
        fn()
        times.append(time.thread_time() - t0)
    return statistics.median(times)


def _compile(w: Workload, off: list[str], env: dict[str, str]) -> rlx.CompiledGraph:
    base = w.options or rlx.CompileOptions(cache_param_invariant=True)
    opts = base.replace(fusion_opts=FusionOptions(**{name: False for name in off}))
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        c = rlx.compile(make_graph(w), opts)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    c.set_params(w.params)
    return c


def main() -> None:
    args = sys.argv[1:]

    def opt(name: str, default: str) -> str:
        return args[args.index(name) + 1] if name in args[:-1] else default

    off = [p for p in opt("--off", "").split(",") if p]
    names = {f.name for f in dataclasses.fields(FusionOptions)}
    bad = [p for p in off if p not in names]
    env = dict(kv.split("=", 1) for kv in opt("--env", "").split(",") if "=" in kv)
    if bad or not (off or env):
        sys.exit(f"fusion_ab.py: --off takes fusion patterns of {sorted(names)} (got {off}); "
                 "or give --env NAME=VALUE")  # fmt: skip
    only = [p for p in opt("--only", "encoder,minilm").lower().split(",") if p]
    rounds, reps = int(opt("--rounds", "5")), int(opt("--reps", "20"))
    timer = _cpu_median if "--cpu" in args else median_s
    clock = "thread CPU time" if "--cpu" in args else "wall time"
    what = ", ".join([f"{p} off" for p in off] + [f"{k}={v}" for k, v in env.items()])
    print(f"load {os.getloadavg()}; B = {what}; {clock}")
    for w in workloads(quick=False):
        if not any(w.name.lower().startswith(p) for p in only):
            continue
        a, b = _compile(w, [], {}), _compile(w, off, env)
        ins = list(w.inputs.values())
        ref = w.numpy(w.inputs, w.params)
        errs = [max_err(c.run(*ins)[0], ref) for c in (a, b)]
        ratios = []
        for r in range(rounds):
            ta = timer(lambda c=a: c.run(*ins), reps)  # noqa: B023 (run at once)
            tb = timer(lambda c=b: c.run(*ins), reps)  # noqa: B023
            ratios.append(tb / ta)
            print(
                f"{w.name} round {r}: A {ta * 1e3:.3f} ms  B {tb * 1e3:.3f} ms  B/A {tb / ta:.3f}"
            )
        print(f"{w.name}: median B/A {statistics.median(ratios):.3f} "
              f"(max |err| A {errs[0]:.1e}, B {errs[1]:.1e})")  # fmt: skip
    print(f"load {os.getloadavg()}")


if __name__ == "__main__":
    main()
