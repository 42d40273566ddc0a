"""Compile time vs graph size: cold `rlx.compile` per stage, cache hits, and the slope.

    python bench/compile_time.py [--quick] [--sizes 1000,5000,20000] [--profile 5000]
                                 [--no-time-passes]

Graphs (built with `rlx.Graph`):
  * `layers-<n>`: repeated pre-norm transformer blocks (seq 16, hidden 64, 4 heads, FFN 256,
    own params per layer), about 37 rlx ops a layer, up to ~n ops;
  * `chain-<n>`: a flat chain of n elementwise ops (unary and binary with a per-op param)
    on one 4096-element value viewed in six shapes (a reshape every 8 ops);
  * `encoder-<L>L`: L encoder layers of seq 128, hidden 384, 12 heads, FFN 1536.

For each graph: `cold` is `rlx.compile` with an empty cache directory (everything, including
writing the cache entry), `hit(mem)` a second compile in the process, `hit(disk)` one after
dropping the in-memory cache. The per-stage breakdown re-runs the pipeline of
`rlx.runtime.compiler._build` stage by stage (same passes, same order) and times each:
load (clone + verify), print (the cache key text), the graph passes (+ their verification),
convert-rlx-to-linalg, plan-memory, the LOOPS_TO_LLVM passes, to_llvm_ir, LLVM (parse, O3,
MCJIT) and emit_object (the cache's object code). The slope is a least-squares fit of cold
seconds against thousands of ops, per graph family, with the slope of each step between
consecutive sizes (equal steps: linear growth). Then `rlx-opt --time-passes` runs the same
pass pipeline (the passes `rlx.compile` plans for the default CompileOptions, then
LOOPS_TO_LLVM) on the encoder-1L graph's MLIR text and its report is printed (wall time;
rlx-opt also verifies after every pass, `rlx.compile` does not). `--quick` runs only the
1k and 5k sizes; `--profile N` prints the cProfile top functions of the stages for the
N-op layers graph.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import os
import pstats
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import rlx
from rlx.builder import Graph, Value
from rlx.runtime import option_pipeline, pipeline_passes
from rlx.runtime.cache import CACHE, emit_object
from rlx.runtime.compiler import find_failure, load_module, make_context
from rlx.runtime.jit import JitModule, to_llvm_ir
from rlx.runtime.options import CompileOptions

# ----------------------------------------------------------------------------- graphs


def _block(g: Graph, x: Value, i: int, s: int, h: int, heads: int, ffn: int) -> Value:
    """One pre-norm transformer block (as examples/transformer_block.mlir), params `l<i>.*`
    (`i` = 0 for every layer shares the weights: see `layers_graph`)."""
    d = h // heads

    def p(name: str, shape: tuple[int, ...]) -> Value:
        return g.param(f"l{i}.{name}", shape)

    def heads_of(t: Value) -> Value:
        return g.transpose(g.reshape(t, (1, s, heads, d)), permutation=[0, 2, 1, 3])

    n1 = g.layer_norm(x, p("ln1.g", (h,)), p("ln1.b", (h,)), epsilon=1e-5)
    q, k, v = (heads_of(g.add(g.matmul(n1, p(f"w{c}", (h, h))), p(f"b{c}", (h,)))) for c in "qkv")
    a = g.op("attention", q, k, v, mask_kind="none")
    a2 = g.reshape(g.transpose(a, permutation=[0, 2, 1, 3]), (s, h))
    x = g.add(x, g.add(g.matmul(a2, p("wo", (h, h))), p("bo", (h,))))
    n2 = g.layer_norm(x, p("ln2.g", (h,)), p("ln2.b", (h,)), epsilon=1e-5)
    f = g.gelu(g.add(g.matmul(n2, p("w1", (h, ffn))), p("b1", (ffn,))))
    return g.add(x, g.add(g.matmul(f, p("w2", (ffn, h))), p("b2", (h,))))


OPS_PER_LAYER = 37
"""rlx ops (params included) in one `_block`."""


def layers_graph(n_ops: int, s: int = 16, h: int = 64, heads: int = 4, ffn: int = 256) -> Graph:
    """Transformer blocks stacked until about `n_ops` ops. The layers share their 16 params
    (each layer still has its own `rlx.param` ops): a graph with more than ~1000 distinct
    params cannot be compiled today (ctypes caps a function type at 1024 arguments, see
    docs/compile-time.md)."""
    g = Graph()
    x = g.input("x", (s, h))
    for _ in range(max(1, round(n_ops / OPS_PER_LAYER))):
        x = _block(g, x, 0, s, h, heads, ffn)
    g.output(x)
    return g


CHAIN_SHAPES = [(64, 64), (32, 128), (128, 32), (16, 256), (4096,), (8, 512)]
UNARY = ["tanh", "sigmoid", "neg", "abs", "exp", "silu"]
BINARY = ["add", "mul", "sub", "max"]


def chain_graph(n_ops: int) -> Graph:
    """A flat chain of `n_ops` elementwise ops on a 4096-element value in varied shapes
    (binary ops take a row param; params are shared by shape and position)."""
    g = Graph()
    x = g.input("x", CHAIN_SHAPES[0])
    n = 0
    while n < n_ops:
        shape = CHAIN_SHAPES[(n // 8) % len(CHAIN_SHAPES)]
        x = g.reshape(x, shape)
        n += 1
        for j in range(7):
            if j % 2:
                last = shape[-1]
                w = g.param(f"p{last}_{j}", (last,))  # few distinct params (ctypes limit)
                x = getattr(g, BINARY[(n + j) % len(BINARY)])(x, w)
                n += 2
            else:
                x = getattr(g, UNARY[(n + j) % len(UNARY)])(x)
                n += 1
    g.output(x)
    return g


def encoder_graph(layers: int) -> Graph:
    """`layers` encoder blocks of the MiniLM size: seq 128, hidden 384, 12 heads, FFN 1536."""
    g = Graph()
    x = g.input("x", (128, 384))
    for i in range(layers):
        x = _block(g, x, i, 128, 384, 12, 1536)
    g.output(x)
    return g


def count_ops(g: Graph) -> int:
    """rlx ops in the graph's entry function (the return excluded)."""
    return sum(1 for o in g.module.walk() if o.name.startswith("rlx."))


# ----------------------------------------------------------------------------- timing


@dataclass
class Row:
    """One graph's measurements (seconds)."""

    name: str
    family: str
    ops: int
    ops_after: int = 0
    kernels: int = 0
    cold: float = 0.0
    hit_mem: float = 0.0
    hit_disk: float = 0.0
    stages: dict[str, float] = field(default_factory=dict)


STAGE_GROUPS = [
    ("load", "load+verify"),
    ("print", "print key"),
    ("graph", "graph passes"),
    ("verify", "graph verify"),
    ("convert-rlx-to-linalg", "rlx->linalg"),
    ("plan-memory", "plan-memory"),
    ("split-graph", "split-graph"),
    ("convert-linalg-to-loops", "linalg->loops"),
    ("convert-scf-to-cf", "scf->cf"),
    ("convert-to-llvm", "to-llvm"),
    ("reconcile-unrealized-casts", "reconcile"),
    ("to_llvm_ir", "to_llvm_ir"),
    ("llvm", "LLVM O3+JIT"),
    ("emit_object", "emit_object"),
]


CLOCK: Callable[[], float] = time.process_time
"""CPU seconds of this process by default (robust on a shared machine); --clock wall."""


def _timed(out: dict[str, float], key: str, fn: Callable[[], object]) -> object:
    t0 = CLOCK()
    r = fn()
    out[key] = out.get(key, 0.0) + CLOCK() - t0
    return r


def stage_times(
    g: Graph, opts: CompileOptions, llvm: bool = True
) -> tuple[dict[str, float], int, int]:
    """Seconds per stage of the pipeline `rlx.compile` runs; also (ops after the graph
    passes, kernels)."""
    out: dict[str, float] = {}
    ctx = make_context()
    module, _ = _timed(out, "load", lambda: load_module(g, ctx))  # type: ignore[misc]
    _timed(out, "print", lambda: str(module))
    with tempfile.TemporaryDirectory(prefix="rlx-bench-") as tmp:
        plan = option_pipeline.build_plan(opts, Path(tmp))
        for p in plan.phase("graph"):
            _timed(out, "graph", lambda p=p: p.instance.apply(ctx, module))
            _timed(out, "verify", lambda: find_failure(module))
    ops_after = sum(1 for o in module.walk() if o.name.startswith("rlx."))
    for p in plan.phase("lower"):
        _timed(out, p.name, lambda p=p: p.instance.apply(ctx, module))
    kernels = sum(1 for o in module.ops if "rlx.kernel" in o.attributes)
    for p in pipeline_passes.llvm_pipeline():
        _timed(out, p.name, lambda p=p: p.apply(ctx, module))
    if llvm:
        ir = _timed(out, "to_llvm_ir", lambda: to_llvm_ir(module))
        _timed(out, "llvm", lambda: JitModule(ir))  # type: ignore[arg-type]
        _timed(out, "emit_object", lambda: emit_object(ir))  # type: ignore[arg-type]
    return out, ops_after, kernels


def measure(
    name: str,
    family: str,
    g: Graph,
    opts: CompileOptions,
    breakdown: bool,
    compile_: bool = True,
    llvm: bool = True,
) -> Row:
    """Cold compile in an empty cache dir, then memory and disk cache hits; the breakdown."""
    row = Row(name, family, count_ops(g))
    if compile_:
        with tempfile.TemporaryDirectory(prefix="rlx-cache-") as d:
            os.environ["RLX_CACHE_DIR"] = d
            os.environ.pop("RLX_CACHE", None)
            CACHE.clear_memory()
            t0 = CLOCK()
            rlx.compile(g, opts)
            row.cold = CLOCK() - t0
            t0 = CLOCK()
            assert rlx.compile(g, opts).cache_hit
            row.hit_mem = CLOCK() - t0
            CACHE.clear_memory()
            t0 = CLOCK()
            assert rlx.compile(g, opts).cache_hit
            row.hit_disk = CLOCK() - t0
            CACHE.clear_memory()
    if breakdown:
        row.stages, row.ops_after, row.kernels = stage_times(g, opts, llvm)
    return row


def slope(rows: list[Row]) -> tuple[float, float]:
    """Least-squares (seconds per 1k ops, intercept seconds) of cold time against ops."""
    xs = [r.ops / 1e3 for r in rows]
    ys = [r.cold for r in rows]
    if len(rows) < 2:
        return (ys[0] / xs[0] if rows else 0.0), 0.0
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx
    return b, my - b * mx


# ----------------------------------------------------------------------------- output


def print_table(rows: list[Row]) -> None:
    """Markdown tables: totals, then the per-stage breakdown."""
    print(
        "| graph | rlx ops | after graph passes | kernels | cold s | hit(mem) ms | hit(disk) ms |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r.name} | {r.ops} | {r.ops_after} | {r.kernels} | {r.cold:.2f} "
            f"| {r.hit_mem * 1e3:.0f} | {r.hit_disk * 1e3:.0f} |"
        )
    print()
    have = [r for r in rows if r.stages]
    if not have:
        return
    print("| stage (s) | " + " | ".join(r.name for r in have) + " |")
    print("|---|" + "---:|" * len(have))
    for key, label in STAGE_GROUPS:
        print(f"| {label} | " + " | ".join(f"{r.stages.get(key, 0.0):.2f}" for r in have) + " |")
    print("| **sum** | " + " | ".join(f"{sum(r.stages.values()):.2f}" for r in have) + " |")
    print()


def print_slopes(rows: list[Row]) -> None:
    """Slope per family (least squares, and between consecutive sizes) and the cold
    compile time per op at each size."""
    for fam in sorted({r.family for r in rows} - {"encoder"}):
        rs = sorted((r for r in rows if r.family == fam), key=lambda r: r.ops)
        b, a = slope(rs)
        per = ", ".join(f"{r.ops}: {r.cold / r.ops * 1e3:.2f}" for r in rs)
        steps = ", ".join(
            f"{r0.ops}->{r1.ops}: {(r1.cold - r0.cold) / (r1.ops - r0.ops) * 1e3:.2f}"
            for r0, r1 in zip(rs, rs[1:], strict=False)
        )
        print(f"{fam}: slope {b:.2f} s per 1k ops (intercept {a:.2f} s); ms/op: {per}")
        if steps:
            print(f"{fam}: step slopes (s per 1k ops): {steps}")


def rlx_opt_time_passes(g: Graph, opts: CompileOptions) -> str:
    """`rlx-opt --time-passes` on `g` with the pass pipeline `rlx.compile` plans for `opts`
    (graph + lower phases, then LOOPS_TO_LLVM; output: LLVM IR to /dev/null); its report."""
    with tempfile.TemporaryDirectory(prefix="rlx-bench-") as tmp:
        src = Path(tmp) / "graph.mlir"
        src.write_text(str(g.module))
        plan = option_pipeline.build_plan(opts, Path(tmp))
        specs = [p.spec for p in plan.passes] + [
            str(p.spec()) for p in pipeline_passes.llvm_pipeline()
        ]
        exe = Path(sys.executable).with_name("rlx-opt")
        cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "rlx.tools.rlx_opt"]
        cmd += [str(src), "-p", ",".join(specs), "--time-passes", "--emit", "llvm-ir"]
        r = subprocess.run(cmd + ["-o", os.devnull], capture_output=True, text=True)
    head = f"$ rlx-opt graph.mlir -p {','.join(specs)} --time-passes --emit llvm-ir -o /dev/null"
    if r.returncode:
        return f"{head}\nfailed (exit {r.returncode}):\n{r.stderr[-2000:]}"
    return f"{head}\n{r.stderr.rstrip()}"


def profile(n_ops: int, opts: CompileOptions, top: int) -> None:
    """cProfile of the stage pipeline (LLVM included) on the `n_ops` layers graph."""
    g = layers_graph(n_ops)
    g.module  # noqa: B018  (build outside the profile)
    prof = cProfile.Profile()
    prof.enable()
    stage_times(g, opts)
    prof.disable()
    pstats.Stats(prof, stream=sys.stdout).sort_stats("tottime").print_stats(top)
    pstats.Stats(prof, stream=sys.stdout).sort_stats("cumulative").print_stats(top)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="only the 1k and 5k sizes")
    ap.add_argument("--sizes", default="1000,5000,20000", help="op counts (comma-separated)")
    ap.add_argument("--families", default="layers,chain,encoder")
    ap.add_argument("--no-breakdown", action="store_true", help="skip the per-stage re-run")
    ap.add_argument("--profile", type=int, default=0, help="cProfile the N-op layers graph")
    ap.add_argument("--top", type=int, default=40)
    ap.add_argument("--clock", choices=("cpu", "wall"), default="cpu")
    ap.add_argument("--no-llvm", action="store_true", help="breakdown without the LLVM stages")
    ap.add_argument("--stages-only", action="store_true", help="only the breakdown (no compile)")
    ap.add_argument(
        "--no-time-passes",
        action="store_true",
        help="skip the rlx-opt --time-passes report of the encoder-1L graph",
    )
    a = ap.parse_args()
    global CLOCK
    CLOCK = time.process_time if a.clock == "cpu" else time.perf_counter
    opts = CompileOptions()
    if a.profile:
        profile(a.profile, opts, a.top)
        return
    sizes = [int(s) for s in a.sizes.split(",")]
    if a.quick:
        sizes = [s for s in sizes if s <= 5000] or [1000, 5000]
    fams = a.families.split(",")
    rows: list[Row] = []
    builders: dict[str, Callable[[int], Graph]] = {"layers": layers_graph, "chain": chain_graph}
    jobs: list[tuple[str, str, Callable[[], Graph]]] = []
    for fam in ("layers", "chain"):
        if fam in fams:
            jobs += [
                (f"{fam}-{n / 1000:g}k", fam, lambda f=fam, n=n: builders[f](n)) for n in sizes
            ]
    if "encoder" in fams:
        jobs += [(f"encoder-{n}L", "encoder", lambda n=n: encoder_graph(n)) for n in (1, 6)]
    for name, fam, build in jobs:
        g = build()
        g.module  # noqa: B018
        gc.collect()
        row = measure(name, fam, g, opts, not a.no_breakdown, not a.stages_only, not a.no_llvm)
        print(f"# {name}: {row.ops} ops, cold {row.cold:.2f} s", file=sys.stderr, flush=True)
        rows.append(row)
    print_table(rows)
    print_slopes(rows)
    if not a.no_time_passes:
        print()
        print("rlx-opt --time-passes, encoder-1L (seq 128, hidden 384, 12 heads, FFN 1536):")
        print(rlx_opt_time_passes(encoder_graph(1), opts))


if __name__ == "__main__":
    main()
