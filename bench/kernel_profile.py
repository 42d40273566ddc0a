"""Per-kernel profile of a workload at 1 and N threads, from the pool's timing records.

    RLX_POOL_PROFILE=1 .venv/bin/python bench/kernel_profile.py [--only encoder,minilm]
        [--cnn resnet18,mobilenet_v2,efficientnet_b0] [--threads N] [--reps R] [--env NAME=A,B]
        [--variant NAME=PIPELINE] [--rounds K]

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
compile-time switch within one process. `--cnn` profiles torchvision models exported and
compiled as bench/cnn.py does (torch / torchvision needed; alone unless `--only` is given
too); kernels are named by their `rlx.kernel` label and the op's result shape in the
graph function's call order (`call_order`), else (`task_labels`) where the task
symbols can be matched, and the table ends with the time per label. `--variant
NAME=PIPELINE` (with `--cnn`, repeatable) also compiles each model with
`blocked_layout=False` and PIPELINE right after fusion (`extra_passes`, e.g.
`nostem='blocked-layout{narrow-convs=false prepare-weights=true}'`), and `--rounds K`
profiles the builds in turn K times (an A/B in one process: compare the rounds).
Needs `RLX_POOL_PROFILE=1` (rlx.runtime.pool_profile).
"""

from __future__ import annotations

import os
import re
import statistics
import struct
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


def _elf_functions(obj: bytes) -> dict[str, tuple[int, int]]:
    """{function symbol: (section index, offset)} of an ELF64 little-endian object."""
    (shoff,) = struct.unpack_from("<Q", obj, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", obj, 0x3A)
    secs = [struct.unpack_from("<IIQQQQIIQQ", obj, shoff + i * shentsize) for i in range(shnum)]
    out: dict[str, tuple[int, int]] = {}
    for sec in secs:
        if sec[1] != 2:  # SHT_SYMTAB
            continue
        strtab = secs[sec[6]]
        for k in range(sec[5] // 24):
            name, info, _, shndx, value, _ = struct.unpack_from("<IBBHQQ", obj, sec[4] + k * 24)
            if info & 0xF == 2:  # STT_FUNC
                end = obj.index(b"\0", strtab[4] + name)
                out[obj[strtab[4] + name : end].decode()] = (shndx, value)
    return out


def task_labels(c: rlx.CompiledGraph, seen: set[int]) -> dict[int, str]:
    """{task function address: "kN label"} for the task addresses `seen` in the records:
    the kernels' `rlx.kernel` labels (the loops stage) of the task wrappers
    `rlx_kN_task...`. The internal task symbols are not exported, so their order comes
    from object code of the same LLVM IR emitted again (not byte-identical to the JIT's,
    the same function order): the i-th lowest address seen is the i-th task symbol. {}
    when the counts differ (then the table names kernels by their task counts)."""
    from rlx.runtime.cache import emit_object

    labels = dict(re.findall(r'func\.func private @(rlx_k\d+)\(.*?rlx\.kernel = "([^"]*)"',
                             c.ir("loops")))  # fmt: skip
    try:
        syms = _elf_functions(emit_object(c.ir("llvm-ir")))
    except (ValueError, struct.error):
        return {}
    tasks = sorted((v, m.group(1)) for k, (_, v) in syms.items()
                   if (m := re.match(r"(rlx_k\d+)_task", k)))  # fmt: skip
    if len(tasks) != len(seen):
        return {}
    return {
        a: f"{sym[4:]} {labels.get(sym, '?')}"
        for a, (_, sym) in zip(sorted(seen), tasks, strict=True)
    }


_DEFINE = re.compile(r"^define [^@]*@(rlx_k\d+)\(", re.M)
_STEP = re.compile(
    r"call (?:fastcc )?void @(rlx_k\d+)\("
    r"|call void @rlx_parallel_for\(ptr nonnull @(rlx_k\d+)_task"
)
_SIG = re.compile(
    r"func\.func private @(rlx_k\d+)\((.*?)\)(?: -> [^{]*)? attributes "
    r"\{[^}]*rlx\.kernel = \"([^\"]*)\""
)


def call_order(c: rlx.CompiledGraph) -> list[str]:
    """Per `rlx_parallel_for` call of a run, in run order: "kN label @<result shape>", N the
    kernel whose tasks run and the shape the last memref argument of the op's wrapper
    kernel (its result). Read from the graph function's LLVM IR: each call of a wrapper
    kernel is replaced by the calls in its body (recursively), so the list matches the
    pool's records when no call sits in a loop (the caller checks the length)."""
    text = c.ir("llvm-ir")
    bodies: dict[str, str] = {}
    for m in _DEFINE.finditer(text):
        end = text.find("\n}\n", m.end())
        bodies[m.group(1)] = text[m.end() : end]
    main = text[text.find("define void @main(") :]
    main = main[: main.find("\n}\n")]
    sigs = {m.group(1): (m.group(3), m.group(2)) for m in _SIG.finditer(c.ir("loops"))}

    def shape(k: str) -> str:
        got = re.findall(r"memref<([0-9x]+)x\w+>", sigs.get(k, ("", ""))[1])
        return got[-1] if got else ""

    out: list[str] = []

    def walk(body: str, op: str, depth: int) -> None:
        for m in _STEP.finditer(body):
            if m.group(2):
                out.append(f"{m.group(2)[4:]} {sigs.get(m.group(2), ('?',))[0]} @{shape(op)}")
            elif depth < 4 and m.group(1) in bodies:
                walk(bodies[m.group(1)], m.group(1) if depth == 0 else op, depth + 1)

    walk(main, "", 0)
    return out


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
    profile_compiled(c, list(w.inputs.values()), w.name, threads, reps, label)  # type: ignore[attr-defined]


def cnn_compiled(name: str, pipeline: str | None = None) -> tuple[rlx.CompiledGraph, list[object]]:
    """torchvision `name` exported and compiled as bench/cnn.py does (its params set and
    `@prepare` run); (graph, inputs). `pipeline`: run after fusion instead of the default
    blocked-layout (`blocked_layout=False` and `extra_passes`)."""
    import tempfile
    from pathlib import Path

    import cnn
    import onnx

    from rlx.frontends.onnx import import_model

    path = Path(tempfile.mkdtemp(prefix="rlx-kprof-")) / f"{name}.onnx"
    _, x = cnn.export(name, path, False)
    module, params = import_model(onnx.load(str(path)))
    more = {} if pipeline is None else {"blocked_layout": False,
                                        "extra_passes": {"after:fusion": pipeline}}  # fmt: skip
    c = rlx.compile(module, rlx.CompileOptions(cache_param_invariant=True, **more))
    c.set_params(params)
    return c, [x]


def profile_compiled(c: rlx.CompiledGraph, ins: list[object], title: str, threads: int,
                     reps: int, label: str) -> None:  # fmt: skip
    """The per-kernel table of `c` run on `ins` (module docstring)."""

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
    order = call_order(c)
    labels = {} if len(order) == len(seq) else task_labels(c, {r["task"] for r in seq})
    r1, rn = _rows(one), _rows(many)
    tot1 = statistics.median((t1 - t0) / 1e3 for t0, t1, _ in one)
    totn = statistics.median((t1 - t0) / 1e3 for t0, t1, _ in many)
    print(f"\n## {title} {label} (us, median of {reps}; T={threads})")
    print(f"{'#':>3} {'kernel':56} {'tasks':>5} {'cap':>4} {'1T':>8} {f'{threads}T':>8} "
          f"{'x':>5} {'wait':>7} {'mine':>5}")  # fmt: skip
    sums = [0.0, 0.0, 0.0, 0.0]
    by_label: dict[str, list[float]] = {}
    for i in range(len(r1)):
        g1, gn = r1[i][0], rn[i][0]
        sums[2] += g1
        sums[3] += gn
        if g1 + gn > 2.0:
            print(f"{'':>3} {'serial':56} {'':>5} {'':>4} {g1:8.1f} {gn:8.1f} "
                  f"{g1 / max(gn, 1e-9):5.2f}")  # fmt: skip
        if i == len(r1) - 1 or i >= len(seq):
            continue
        rec = seq[i]
        w1, wn = r1[i][1], rn[i][1]
        sums[0] += w1
        sums[1] += wn
        label = order[i] if len(order) == len(seq) else labels.get(rec["task"], _name(names, rec))
        got = by_label.setdefault(label.split(" ", 1)[-1].split(" @")[0], [0, 0.0, 0.0])
        got[0] += 1
        got[1] += w1
        got[2] += wn
        print(f"{i:3d} {label[:56]:56} {rec['tasks']:5d} {rec['max_threads']:4d} "
              f"{w1:8.1f} {wn:8.1f} {w1 / max(wn, 1e-9):5.2f} {rn[i][2]:7.1f} {rn[i][3]:5.2f}")  # fmt: skip
    print(f"    {'parallel kernels':44} {'':>5} {'':>4} {sums[0]:8.1f} {sums[1]:8.1f} "
          f"{sums[0] / max(sums[1], 1e-9):5.2f}")  # fmt: skip
    print(f"    {'serial (sum of gaps)':44} {'':>5} {'':>4} {sums[2]:8.1f} {sums[3]:8.1f} "
          f"{sums[2] / max(sums[3], 1e-9):5.2f}")  # fmt: skip
    for label, (k, t1, tn) in sorted(by_label.items(), key=lambda kv: -kv[1][1]):
        print(f"    {'by kernel: ' + label[:33]:44} {int(k):5d} {'':>4} {t1:8.1f} {tn:8.1f} "
              f"{t1 / max(tn, 1e-9):5.2f}")  # fmt: skip
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
    pipes: list[tuple[str, str | None]] = [("", None)]
    for i, a in enumerate(args[:-1]):
        if a == "--variant":
            vname, _, spec = args[i + 1].partition("=")
            pipes.append((vname, spec))
    rounds = int(opt("--rounds", "1"))
    print(f"uptime: {os.getloadavg()}")
    for name in (m for m in opt("--cnn", "").split(",") if m):
        for var, value in variants:
            if value is not None:
                os.environ[var] = value
            built = [(vname, *cnn_compiled(name, spec)) for vname, spec in pipes]
            for r in range(rounds):
                for vname, c, ins in built:
                    label = f"{var}={value}" if value is not None else ""
                    label += f" {vname}" if vname else ""
                    label += f" round {r + 1}" if rounds > 1 else ""
                    profile_compiled(c, ins, name, threads, reps, label.strip())
    if "--cnn" in args[:-1] and "--only" not in args[:-1]:
        only = []
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
