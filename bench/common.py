"""Workloads and timing shared by bench/ops.py and bench/peers.py.

`BENCH_THREADS=N` (the scripts' `--threads N`) caps BLAS, onnxruntime, torch and RLX's pool at N
threads; it must be set before this module is imported. Each `Workload` builds the same computation as an rlx.Graph and as NumPy (f32), with its
inputs, params and FLOP count. The compile cache goes to a private
directory.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

THREADS = int(os.environ.get("BENCH_THREADS", "0") or 0)
"""Threads of every peer and of BLAS (0: their defaults); set by --threads."""
if THREADS:
    for _v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "RLX_NUM_THREADS"):
        os.environ[_v] = str(THREADS)
os.environ.setdefault("RLX_CACHE_DIR", str(Path(tempfile.gettempdir()) / "rlx-bench-cache"))

import numpy as np  # noqa: E402
from scipy.special import erf  # noqa: E402

import rlx  # noqa: E402
from rlx.runtime import blas  # noqa: E402

blas.register()

Arrays = dict[str, np.ndarray]


@dataclass
class Workload:
    """One benchmark case: `build(g)` adds inputs/params/outputs to an empty rlx.Graph (or
    returns a whole Graph of its own, see `make_graph`); `numpy(inputs, params)` computes
    the same output. `inputs` are in the graph's input order; `options` are the
    CompileOptions RLX compiles it with (None: the defaults)."""

    name: str
    build: Callable[[rlx.Graph], rlx.Graph | None]
    numpy: Callable[[Arrays, Arrays], np.ndarray]
    inputs: Arrays
    params: Arrays = field(default_factory=dict)
    flops: float = 0.0
    tags: dict[str, object] = field(default_factory=dict)
    options: rlx.CompileOptions | None = None


def rng_arrays(seed: int, **shapes: tuple[int, ...]) -> Arrays:
    r = np.random.default_rng(seed)
    return {k: (r.standard_normal(s) * (1 / math.sqrt(s[0]) if len(s) == 2 and k.startswith("w") else 1)).astype(np.float32) for k, s in shapes.items()}  # fmt: skip


def np_gelu(x: np.ndarray) -> np.ndarray:
    return (0.5 * x * (1.0 + erf(x * np.float32(1 / math.sqrt(2))))).astype(np.float32)


GELU_TANH_C = math.sqrt(2.0 / math.pi)


def np_gelu_tanh(x: np.ndarray) -> np.ndarray:
    """0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), in f32."""
    inner = np.float32(GELU_TANH_C) * (x + np.float32(0.044715) * x * x * x)
    return (np.float32(0.5) * x * (np.float32(1.0) + np.tanh(inner))).astype(np.float32)


def np_softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def np_layer_norm(x: np.ndarray, g: np.ndarray, b: np.ndarray, eps: float = 1e-5) -> np.ndarray:
    mu = x.mean(-1, keepdims=True)
    xc = x - mu
    return xc / np.sqrt((xc * xc).mean(-1, keepdims=True) + np.float32(eps)) * g + b


def workloads(quick: bool) -> list[Workload]:
    """Elementwise gelu_tanh(x*a+b), softmax, layer_norm, matmul, 2-layer MLP (erf GELU),
    a BERT-like encoder layer and the MiniLM-shaped encoder (the last two: same size in
    `quick`)."""
    s = 2 if quick else 1
    out: list[Workload] = []

    n = 4096 // s
    ew = rng_arrays(1, x=(n, n), a=(n,), b=(n,))

    def b_ew(g: rlx.Graph) -> None:
        x = g.input("x", (n, n))
        g.output(g.gelu_tanh(g.add(g.mul(x, g.param("a", (n,))), g.param("b", (n,)))))

    out.append(Workload(f"gelu_tanh(x*a+b) {n}x{n}", b_ew,
                        lambda i, p: np_gelu_tanh(i["x"] * p["a"] + p["b"]),
                        {"x": ew["x"]}, {"a": ew["a"], "b": ew["b"]}))  # fmt: skip

    ns = 2048 // s

    def b_sm(g: rlx.Graph) -> None:
        g.output(g.softmax(g.input("x", (ns, ns)), axis=-1))

    out.append(
        Workload(
            f"softmax {ns}x{ns}", b_sm, lambda i, p: np_softmax(i["x"]), rng_arrays(2, x=(ns, ns))
        )
    )

    r, h = 8192 // s, 768
    ln = rng_arrays(3, x=(r, h), g=(h,), b=(h,))

    def b_ln(g: rlx.Graph) -> None:
        x = g.input("x", (r, h))
        g.output(g.layer_norm(x, g.param("g", (h,)), g.param("b", (h,)), epsilon=1e-5))

    out.append(Workload(f"layer_norm {r}x{h}", b_ln, lambda i, p: np_layer_norm(i["x"], p["g"], p["b"]),
                        {"x": ln["x"]}, {"g": ln["g"], "b": ln["b"]}))  # fmt: skip

    m = 1024 // s
    mm = rng_arrays(4, x=(m, m), w=(m, m))

    def b_mm(g: rlx.Graph) -> None:
        g.output(g.matmul(g.input("x", (m, m)), g.param("w", (m, m))))

    out.append(Workload(f"matmul {m}^3", b_mm, lambda i, p: i["x"] @ p["w"], {"x": mm["x"]}, {"w": mm["w"]},
                        2.0 * m**3, {"matmul": True}))  # fmt: skip

    t, d, f = 256, 768, 3072
    mlp = rng_arrays(5, x=(t, d), w1=(d, f), b1=(f,), w2=(f, d), b2=(d,))

    def b_mlp(g: rlx.Graph) -> None:
        x = g.input("x", (t, d))
        hdn = g.gelu(g.add(g.matmul(x, g.param("w1", (d, f))), g.param("b1", (f,))))
        g.output(g.add(g.matmul(hdn, g.param("w2", (f, d))), g.param("b2", (d,))))

    def np_mlp(i: Arrays, p: Arrays) -> np.ndarray:
        return np_gelu(i["x"] @ p["w1"] + p["b1"]) @ p["w2"] + p["b2"]

    out.append(Workload(f"mlp {t}x{d}-{f}-{d}", b_mlp, np_mlp, {"x": mlp["x"]},
                        {k: v for k, v in mlp.items() if k != "x"}, 4.0 * t * d * f))  # fmt: skip

    out.append(encoder_layer())
    out.append(minilm_encoder())
    return out


ENC = {"seq": 128, "hidden": 384, "heads": 12, "ffn": 1536}


def encoder_layer() -> Workload:
    """Post-LN BERT layer: QKV, softmax(QK^T/sqrt(d))V, out proj + residual + LN, GELU FFN
    + residual + LN (seq 128, hidden 384, 12 heads, FFN 1536)."""
    sq, h, nh, ff = ENC["seq"], ENC["hidden"], ENC["heads"], ENC["ffn"]
    hd = h // nh
    shapes = {"x": (sq, h), "wq": (h, h), "bq": (h,), "wk": (h, h), "bk": (h,), "wv": (h, h),
              "bv": (h,), "wo": (h, h), "bo": (h,), "g1": (h,), "be1": (h,), "w1": (h, ff),
              "b1": (ff,), "w2": (ff, h), "b2": (h,), "g2": (h,), "be2": (h,)}  # fmt: skip
    arr = rng_arrays(6, **shapes)
    scale = np.float32(1 / math.sqrt(hd))

    def build(g: rlx.Graph) -> None:
        x = g.input("x", (sq, h))
        p = {k: g.param(k, v) for k, v in shapes.items() if k != "x"}

        def dense(t: rlx.Value, w: str, b: str) -> rlx.Value:
            return g.add(g.matmul(t, p[w]), p[b])

        def heads(t: rlx.Value) -> rlx.Value:
            return g.transpose(g.reshape(t, (sq, nh, hd)), permutation=[1, 0, 2])

        q, k, v = (
            heads(dense(x, "wq", "bq")),
            heads(dense(x, "wk", "bk")),
            heads(dense(x, "wv", "bv")),
        )
        kt = g.transpose(k, permutation=[0, 2, 1])
        sc = g.mul(g.matmul(q, kt), g.constant(np.array(scale, np.float32)))
        ctx = g.matmul(g.softmax(sc, axis=-1), v)
        ctx = g.reshape(g.transpose(ctx, permutation=[1, 0, 2]), (sq, h))
        h1 = g.layer_norm(g.add(dense(ctx, "wo", "bo"), x), p["g1"], p["be1"], epsilon=1e-12)
        f = dense(g.gelu(dense(h1, "w1", "b1")), "w2", "b2")
        g.output(g.layer_norm(g.add(f, h1), p["g2"], p["be2"], epsilon=1e-12))

    def ref(i: Arrays, p: Arrays) -> np.ndarray:
        x = i["x"]

        def heads(t: np.ndarray) -> np.ndarray:
            return t.reshape(sq, nh, hd).transpose(1, 0, 2)

        q, k, v = (heads(x @ p[w] + p[b]) for w, b in (("wq", "bq"), ("wk", "bk"), ("wv", "bv")))
        ctx = (np_softmax(q @ k.transpose(0, 2, 1) * scale) @ v).transpose(1, 0, 2).reshape(sq, h)
        h1 = np_layer_norm(ctx @ p["wo"] + p["bo"] + x, p["g1"], p["be1"], 1e-12)
        f = np_gelu(h1 @ p["w1"] + p["b1"]) @ p["w2"] + p["b2"]
        return np_layer_norm(f + h1, p["g2"], p["be2"], 1e-12)

    flops = 2.0 * sq * h * h * 4 + 2.0 * 2 * sq * sq * h + 2.0 * 2 * sq * h * ff
    return Workload(f"encoder layer s{sq} h{h} nh{nh} ff{ff}", build, ref, {"x": arr["x"]},
                    {k: v for k, v in arr.items() if k != "x"}, flops, {"encoder": True})  # fmt: skip


MINILM = {"batch": 1, "seq": 128}


def minilm_encoder() -> Workload:
    """all-MiniLM-L6-v2 shape (6 layers, hidden 384, 12 heads, FFN 1536, vocab 30522),
    batch 1, seq 128, random weights (`bert.random_state_dict(seed=0)`), the last quarter
    of the tokens padding. RLX: `rlx.models.bert.build_encoder` compiled with
    `cache_param_invariant=True` (as docs/models.md recommends: the weight transposes run
    once per set_params); NumPy: bench/minilm.py with the weights transposed before timing.
    `tags` carry the state dict and config for the other peers (bench/minilm.py)."""
    from minilm import np_bert, transposed

    from rlx.models import bert

    cfg = bert.BertConfig.minilm_l6()
    b, s = MINILM["batch"], MINILM["seq"]
    sd = bert.random_state_dict(cfg, seed=0)
    lin = transposed(sd)
    rng = np.random.default_rng(1)
    ids = rng.integers(0, cfg.vocab_size, (b, s)).astype(np.int64)
    mask = np.ones((b, s), np.int64)
    mask[:, s * 3 // 4 :] = 0

    def build(_: rlx.Graph) -> rlx.Graph:
        return bert.build_encoder(cfg, b, s)

    def ref(i: Arrays, p: Arrays) -> np.ndarray:
        return np_bert(sd, lin, cfg, i["input_ids"], i["attention_mask"])

    h, ff = cfg.hidden_size, cfg.intermediate_size
    flops = cfg.num_hidden_layers * (2.0 * b * s * (4 * h * h + 2 * h * ff) + 4.0 * b * s * s * h)
    return Workload(f"MiniLM-L6 encoder B{b} S{s}", build, ref,
                    {"input_ids": ids, "attention_mask": mask}, bert.prepare_params(sd, cfg),
                    flops, {"minilm": True, "cfg": cfg, "state_dict": sd},
                    rlx.CompileOptions(cache_param_invariant=True))  # fmt: skip


def arg_parser(doc: str | None) -> argparse.ArgumentParser:
    """The options `ops.py` and `peers.py` share: --quick, --reps, --threads."""
    ap = argparse.ArgumentParser(description=(doc or "").splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smaller sizes, fewer repeats")
    ap.add_argument(
        "--reps", type=int, default=None, help="timed runs (default 20; 5 with --quick)"
    )
    ap.add_argument(
        "--threads", type=int, default=0,
        help="cap BLAS, the peers and RLX's pool at N threads (0: their defaults)",
    )  # fmt: skip
    return ap


def reps_of(args: argparse.Namespace) -> int:
    return int(args.reps or (5 if args.quick else 20))


def median_s(fn: Callable[[], object], reps: int, budget_s: float = 10.0) -> float:
    """Median wall time of `fn()` over `reps` runs (after one warm-up; fewer if over budget)."""
    fn()
    times: list[float] = []
    start = time.perf_counter()
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
        if time.perf_counter() - start > budget_s and len(times) >= 3:
            break
    return statistics.median(times)


@dataclass
class Race:
    """Interleaved timings of several runners (see `race`): per runner, its time in each round
    (the median of that round's block of runs) and its fastest single run, in ms."""

    per_round: dict[str, list[float]]
    fastest_ms: dict[str, float]

    @property
    def ms(self) -> dict[str, float]:
        """Median over rounds of each runner's time."""
        return {k: statistics.median(v) for k, v in self.per_round.items()}

    def best(self, among: Iterable[str]) -> str:
        """The runner among `among` with the lowest median."""
        ms = self.ms
        return min((k for k in among if k in ms), key=ms.__getitem__)

    def ratio(self, a: str, b: str) -> float:
        """Median over rounds of a's time / b's time in the same round: a burst of load on
        this shared machine hits both sides of a round alike, so the ratio moves far less
        than the two medians do."""
        return statistics.median(
            x / y for x, y in zip(self.per_round[a], self.per_round[b], strict=True)
        )


SETTLE_S = 0.3
"""Seconds `race` waits before each block, for the previous runner's threads to stop spinning."""
BLOCK_S = 0.4
"""Seconds of back-to-back runs in one block of `race` (at least 5 runs)."""
WARM_S = 0.1
"""Runs starting in a block's first WARM_S seconds are not counted (at least 3 are kept)."""


def race(
    runners: dict[str, Callable[[], object] | None], reps: int, budget_s: float = 40.0
) -> Race:
    """Time `runners` (None: skipped) in interleaved rounds rather than one after another.

    Each round runs every runner in turn, starting one further each round, as a block of
    back-to-back runs lasting `BLOCK_S` (at least 5 runs); its time in the round is the median
    of the runs after the block's first `WARM_S`. Before each block the process sleeps
    `SETTLE_S`. Both guard against one runner's leftovers slowing the next on this 2-core
    machine: thread pools busy-wait after a call (measured here without the pause,
    onnxruntime's first three 1024^3 matmuls right after NumPy's took 31 ms instead of 15:
    OpenBLAS's idle threads still spinning), and caches and sleeping threads warm up again.
    Interleaving at this ~1 s grain cancels load drifting over minutes, which moved single
    rows by up to 2x between runs of the one-after-another timing. Rounds: `max(3, reps / 4)`,
    fewer if over `budget_s`, never fewer than 2."""
    live = {k: f for k, f in runners.items() if f is not None}
    for f in live.values():
        f()
    names = list(live)
    per_round: dict[str, list[float]] = {k: [] for k in names}
    fastest = dict.fromkeys(names, math.inf)
    start = time.perf_counter()
    for r in range(max(3, reps // 4)):
        if r >= 2 and time.perf_counter() - start > budget_s:
            break
        for k in names[r % len(names) :] + names[: r % len(names)]:
            time.sleep(SETTLE_S)
            ts: list[tuple[float, float]] = []
            t_block = time.perf_counter()
            while len(ts) < 200 and (len(ts) < 5 or time.perf_counter() - t_block < BLOCK_S):
                t0 = time.perf_counter()
                live[k]()
                ts.append((t0 - t_block, (time.perf_counter() - t0) * 1e3))
            warm = [t for at, t in ts if at >= WARM_S]
            kept = warm if len(warm) >= 3 else [t for _, t in ts[-3:]]
            per_round[k].append(statistics.median(kept))
            fastest[k] = min(fastest[k], *(t for _, t in ts))
    return Race(per_round, fastest)


def make_graph(w: Workload) -> rlx.Graph:
    """A fresh rlx.Graph of the workload."""
    g = rlx.Graph()
    return w.build(g) or g


def compile_rlx(w: Workload) -> tuple[rlx.CompiledGraph, float]:
    """rlx.compile the workload with its params set; (graph, compile seconds)."""
    g = make_graph(w)
    t0 = time.perf_counter()
    c = rlx.compile(g, w.options or rlx.CompileOptions())
    dt = time.perf_counter() - t0
    c.set_params(w.params)
    return c, dt


def run_rlx(c: rlx.CompiledGraph, w: Workload) -> Callable[[], np.ndarray]:
    ins = list(w.inputs.values())
    return lambda: c.run(*ins)[0]


def max_err(a: np.ndarray, ref: np.ndarray) -> float:
    return float(np.max(np.abs(np.asarray(a, np.float64) - ref.astype(np.float64))))


def copy_floor_runner(x: np.ndarray) -> Callable[[], object]:
    """A runner copying `x` into a preallocated array of its size, split by rows over
    THREADS (or 2) Python threads (NumPy releases the GIL while copying): the memory
    traffic floor of an elementwise op that reads `x` once and writes its result once."""
    from concurrent.futures import ThreadPoolExecutor

    n = max(1, THREADS or 2)
    dst = np.empty_like(x)
    parts = list(zip(np.array_split(dst, n), np.array_split(x, n), strict=True))
    pool = ThreadPoolExecutor(n)
    return lambda: list(pool.map(lambda ds: np.copyto(*ds), parts))


def machine() -> dict[str, object]:
    """Date, commit, load and CPU of this run."""
    root = Path(__file__).resolve().parent.parent
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True).stdout.strip()  # fmt: skip
    except OSError:
        commit = "?"
    return {"date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "commit": commit,
            "load": os.getloadavg(), "cpus": os.cpu_count(), "python": sys.version.split()[0],
            "numpy": np.__version__, "threads": THREADS or "default", "rlx_blas": bool(blas.available("f32"))}  # fmt: skip
