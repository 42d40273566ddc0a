"""CPU time per test, for finding what makes the suite slow (docs/testing.md). Opt-in:

    RLX_CPU_PROFILE=/tmp/prof PYTHONPATH=tests pytest -n 2 -p cpu_profile
    python tests/cpu_profile.py /tmp/prof        # per-file and per-test summary

Why not `--durations`: wall time on a shared 2-core machine mostly measures the load, and
a test's work is partly done in other processes. Each test is charged the CPU time of its
process, of the children it reaped and of its live descendants (the lit tool server and
the runs it forked, the LLVM helper of `rlx.runtime.llvm_worker`: their utime + stime +
reaped children's, from /proc), from just before its setup to just after its teardown.
Each pytest process writes one JSON line per test to `$RLX_CPU_PROFILE/<worker>.jsonl`.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import pytest

_out: IO[str] | None = None
_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _descendants_cpu() -> float:
    """CPU seconds of this process's live descendants (Linux /proc; 0 elsewhere)."""
    children: dict[int, list[int]] = defaultdict(list)
    cpu: dict[int, float] = {}
    try:
        pids = [int(p) for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        return 0.0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                stat = f.read()
        except OSError:
            continue  # exited meanwhile
        fields = stat[stat.rindex(")") + 2 :].split()
        children[int(fields[1])].append(pid)
        cpu[pid] = sum(int(v) for v in fields[11:15]) / _TICKS  # utime stime cutime cstime
    total, stack = 0.0, list(children[os.getpid()])
    while stack:
        pid = stack.pop()
        total += cpu.get(pid, 0.0)
        stack.extend(children[pid])
    return total


def _cpu() -> tuple[float, float]:
    """(this process, its reaped children + live descendants), in CPU seconds."""
    me = resource.getrusage(resource.RUSAGE_SELF)
    reaped = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime, reaped.ru_utime + reaped.ru_stime + _descendants_cpu()


def _write(record: dict[str, Any]) -> None:
    global _out
    if _out is None:
        directory = Path(os.environ.get("RLX_CPU_PROFILE", "cpu-profile"))
        directory.mkdir(parents=True, exist_ok=True)
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        _out = open(directory / f"{worker}.jsonl", "a", buffering=1)  # noqa: SIM115
    _out.write(json.dumps(record) + "\n")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    t0, (own0, other0) = time.time(), _cpu()
    yield
    t1, (own1, other1) = time.time(), _cpu()
    _write({"id": item.nodeid, "t0": t0, "t1": t1, "self": own1 - own0, "child": other1 - other0})


def pytest_sessionfinish(session: pytest.Session) -> None:
    own, other = _cpu()
    _write({"id": "__session__", "t1": time.time(), "self": own, "child": other})


def summarize(directory: Path, top: int = 40) -> str:
    """Per worker: session CPU (collection included) and tests' CPU; the costliest files
    (the lit files as one line) and tests."""
    lines, tests = [], []
    for path in sorted(directory.glob("*.jsonl")):
        rows = [json.loads(line) for line in path.read_text().splitlines()]
        for r in rows:
            if r["id"] == "__session__":
                lines.append(f"{path.stem}: session {r['self'] + r['child']:.1f} s of CPU")
            else:
                tests.append(r)
    per_file: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    for r in tests:
        name = r["id"].split("::")[0]
        name = "tests/test_lit.py (all lit files)" if name.endswith("test_lit.py") else name
        per_file[name][0] += r["self"] + r["child"]
        per_file[name][1] += 1
    total = sum(cpu for cpu, _ in per_file.values())
    lines.append(f"tests: {len(tests)}, {total:.1f} s of CPU")
    for name, (cpu, n) in sorted(per_file.items(), key=lambda kv: -kv[1][0])[:top]:
        lines.append(f"{cpu:7.1f} s {int(n):5d} tests  {name}")
    lines.append("costliest tests:")
    for r in sorted(tests, key=lambda r: -(r["self"] + r["child"]))[:top]:
        lines.append(f"{r['self'] + r['child']:7.2f} s  {r['id']}")
    return "\n".join(lines)


if __name__ == "__main__":
    print(summarize(Path(sys.argv[1] if len(sys.argv) > 1 else "cpu-profile")))
