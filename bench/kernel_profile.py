"""Per-kernel profile of a workload at 1 and N threads, from the pool's timing records.

    RLX_POOL_PROFILE=1 .venv/bin/python bench/kernel_profile.py [--only encoder,minilm]
        [--threads N] [--reps R] [--env NAME=A,B]

Compiles each workload as bench/peers.py does (bench/common.py: the encoder layer,
MiniLM, ...; `cache_param_invariant=True` when it has params; `--only` picks by name
prefix), runs it `--reps` times at 1 thread and at N threads (alternating, in one
process) and prints, per `rlx_parallel_for` call in run order: the kernel (the task
symbols whose call in the graph function's LLVM IR has the same constant task count and
cap: `k3|k7` when several do), its task count and thread cap, the median wall
time at 1 and N threads, the speedup, how long the calling thread waited for the others
after its own share (imbalance / hand-off), the share of chunks it ran itself; between
the calls, the serial time (kernels below the parallel threshold and the graph function's
own work: a row "serial"). `--env NAME=A,B` compiles the workloads once per value of the
environment variable NAME (set while compiling) and prints one table each, to compare a
compile-time switch within one process. Needs `RLX_POOL_PROFILE=1` (rlx.runtime.pool_profile).
"""

from __future__ import annotations

import os
import re
import statistics
import sys
import time

from common import compile_rlx, workloads

import rlx  # isort: skip
from rlx.runtime import pool_profile  # isort: skip

_CALL = re.compile(
    r"call void @rlx_parallel_for\(ptr nonnull @(\w+), ptr [^,]+, i64 (\w+), i64 (\w+)\)"
)


def _task_names(c: rlx.CompiledGraph) -> dict[tuple[str, str], list[str]]:
    """(tasks, cap) as written in the graph function's `rlx_parallel_for` calls -> the task
    symbols called so (in IR order, distinct): how a record is named."""
    text = c.ir("llvm-ir")
    main = text[text.find("define void @main(") :]
    main = main[: main.find("\n}\n")]
    names: dict[tuple[str, str], list[str]] = {}
    for m in _CALL.finditer(main):
        got = names.setdefault((m.group(2), m.group(3)), [])
        if m.group(1) not in got:
            got.append(m.group(1))
    return names


def _name(names: dict[tuple[str, str], list[str]], rec: dict[str, int]) -> str:
    """The task symbol(s) a call with this record's constants can be; "?" for a computed
    task count (a kernel looping over calls)."""
    got = names.get((str(rec["tasks"]), str(rec["max_threads"])), [])
    return "|".join(n.removeprefix("rlx_").split("_task")[0] for n in got) or "?"


def _one_run(run: object) -> tuple[int, int, list[dict[str, int]]]:
    pool_profile.reset()
    t0 = time.monotonic_ns()
    run()  # type: ignore[operator]
    t1 = time.monotonic_ns()
    return t0, t1, pool_profile.records()


def _rows(runs: list[tuple[int, int, list[dict[str, int]]]]) -> list[list[float]]:
    """Per position (serial gap before each call, the call; the gap after the last):
    [gap, wall, caller wait, mine/chunks] medians in us."""
    n = min(len(r[2]) for r in runs)
    out: list[list[float]] = []
    for i in range(n + 1):
        gaps, walls, waits, shares = [], [], [], []
        for t0, t1, recs in runs:
            prev = t0 if i == 0 else recs[i - 1]["end"]
            nxt = t1 if i == n else recs[i]["start"]
            gaps.append((nxt - prev) / 1e3)
            if i < n:
                r = recs[i]
                walls.append((r["end"] - r["start"]) / 1e3)
                waits.append((r["end"] - r["mid"]) / 1e3 if r["chunks"] else 0.0)
                shares.append(r["mine"] / r["chunks"] if r["chunks"] else 1.0)
        med = statistics.median
        out.append([med(gaps), med(walls) if walls else 0, med(waits) if waits else 0,
                    med(shares) if shares else 0])  # fmt: skip
    return out


def profile(w: object, threads: int, reps: int, label: str) -> None:
    if getattr(w, "params", None) and getattr(w, "options", None) is None:  # as peers.py
        w.options = rlx.CompileOptions(cache_param_invariant=True)  # type: ignore[attr-defined]
    c, _ = compile_rlx(w)  # type: ignore[arg-type]
    ins = list(w.inputs.values())  # type: ignore[attr-defined]

    def run() -> object:
        return c.run(*ins)

    names = _task_names(c)
    one: list[tuple[int, int, list[dict[str, int]]]] = []
    many: list[tuple[int, int, list[dict[str, int]]]] = []
    for _ in range(2):
        for t in (1, threads):
            rlx.set_num_threads(t)
            run()
    for _ in range(reps):
        for t, acc in ((1, one), (threads, many)):
            rlx.set_num_threads(t)
            acc.append(_one_run(run))
    seq = one[0][2]
    r1, rn = _rows(one), _rows(many)
    tot1 = statistics.median((t1 - t0) / 1e3 for t0, t1, _ in one)
    totn = statistics.median((t1 - t0) / 1e3 for t0, t1, _ in many)
    print(f"\n## {w.name} {label} (us, median of {reps}; T={threads})")  # type: ignore[attr-defined]
    print(f"{'#':>3} {'kernel':44} {'tasks':>5} {'cap':>4} {'1T':>8} {f'{threads}T':>8} "
          f"{'x':>5} {'wait':>7} {'mine':>5}")  # fmt: skip
    sums = [0.0, 0.0, 0.0, 0.0]
    for i in range(len(r1)):
        g1, gn = r1[i][0], rn[i][0]
        sums[2] += g1
        sums[3] += gn
        if g1 + gn > 2.0:
            print(f"{'':>3} {'serial':44} {'':>5} {'':>4} {g1:8.1f} {gn:8.1f} "
                  f"{g1 / max(gn, 1e-9):5.2f}")  # fmt: skip
        if i == len(r1) - 1 or i >= len(seq):
            continue
        rec = seq[i]
        w1, wn = r1[i][1], rn[i][1]
        sums[0] += w1
        sums[1] += wn
        print(f"{i:3d} {_name(names, rec)[:44]:44} {rec['tasks']:5d} {rec['max_threads']:4d} "
              f"{w1:8.1f} {wn:8.1f} {w1 / max(wn, 1e-9):5.2f} {rn[i][2]:7.1f} {rn[i][3]:5.2f}")  # fmt: skip
    print(f"    {'parallel kernels':44} {'':>5} {'':>4} {sums[0]:8.1f} {sums[1]:8.1f} "
          f"{sums[0] / max(sums[1], 1e-9):5.2f}")  # fmt: skip
    print(f"    {'serial (sum of gaps)':44} {'':>5} {'':>4} {sums[2]:8.1f} {sums[3]:8.1f} "
          f"{sums[2] / max(sums[3], 1e-9):5.2f}")  # fmt: skip
    print(f"    {'run (wall)':44} {'':>5} {'':>4} {tot1:8.1f} {totn:8.1f} {tot1 / totn:5.2f}")


def main() -> None:
    args = sys.argv[1:]

    def opt(name: str, default: str) -> str:
        return args[args.index(name) + 1] if name in args[:-1] else default

    if not pool_profile.enabled():
        sys.exit("kernel_profile.py: set RLX_POOL_PROFILE=1")
    only = [p for p in opt("--only", "encoder,minilm").lower().split(",") if p]
    threads, reps = int(opt("--threads", "2")), int(opt("--reps", "20"))
    env = opt("--env", "")
    variants: list[tuple[str, str | None]] = [("", None)]
    if env:
        name, values = env.split("=", 1)
        variants = [(name, v) for v in values.split(",")]
    print(f"uptime: {os.getloadavg()}")
    for w in workloads(quick=False):
        if not any(w.name.lower().startswith(p) for p in only):
            continue
        for name, value in variants:
            if value is not None:
                os.environ[name] = value
            profile(w, threads, reps, f"{name}={value}" if value is not None else "")
    print(f"uptime: {os.getloadavg()}")


if __name__ == "__main__":
    main()
