"""Time the model builders in RLX against an independent NumPy implementation.

    .venv/bin/python bench/models.py [--reps N] [--quick]

Cases: the all-MiniLM-L6-v2-shaped encoder (random weights, batch 1 and 8, seq 128) and
a tiny and a medium Llama-style decoder (prefill of 128 tokens, and one cached decode
step after 127). The NumPy side is written here from the architecture (f32, BLAS
matmuls), not through RLX; each case also checks that both sides agree. Prints compile
time, the median wall time of each side and the ratio RLX / NumPy (< 1: RLX faster), also
as a ratio of median process CPU times (steadier than wall time on a shared machine).

RLX's generated code runs on one thread, so NumPy's BLAS is pinned to one thread too
(OPENBLAS/OMP/MKL_NUM_THREADS default to 1; set them to compare against threaded BLAS).
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")  # before NumPy is imported

import argparse  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402

import numpy as np  # noqa: E402
from minilm import np_bert, transposed  # noqa: E402  (bench/minilm.py)

import rlx  # noqa: E402
from rlx.models import bert, llama  # noqa: E402


# ---------------------------------------------------------------- NumPy Llama (f32)
# (the NumPy MiniLM encoder is in bench/minilm.py, shared with bench/peers.py)
def _softmax(s: np.ndarray) -> np.ndarray:
    e = np.exp(s - s.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def np_llama(
    sd: dict, wt: dict, cfg: llama.LlamaConfig, ids: np.ndarray, cache: list | None = None
) -> tuple:
    """Logits of the last token and the new cache; `cache` = [(k, v)] of earlier tokens,
    `wt = transposed(sd)`."""
    b, s = ids.shape
    nh, nkv, d, eps = cfg.num_attention_heads, cfg.num_key_value_heads, cfg.d_head, cfg.rms_norm_eps
    start = 0 if cache is None else cache[0][0].shape[2]
    ang = np.arange(start, start + s)[:, None] / cfg.rope_theta ** (np.arange(0, d, 2) / d)
    cos, sin = np.cos(ang).astype(np.float32), np.sin(ang).astype(np.float32)

    def rope(t: np.ndarray) -> np.ndarray:
        a, c = t[..., : d // 2], t[..., d // 2 :]
        return np.concatenate([a * cos - c * sin, c * cos + a * sin], axis=-1)

    def rms(t: np.ndarray, w: np.ndarray) -> np.ndarray:
        return t / np.sqrt((t * t).mean(-1, keepdims=True) + eps) * w

    x = sd["model.embed_tokens.weight"][ids]
    causal = np.where(np.arange(start + s)[None, :] <= start + np.arange(s)[:, None], 0.0, -np.inf)
    causal = causal.astype(np.float32)
    new = []
    for i in range(cfg.num_hidden_layers):
        p = f"model.layers.{i}."
        n = rms(x, sd[p + "input_layernorm.weight"])
        q = rope((n @ wt[p + "self_attn.q_proj"]).reshape(b, s, nh, d).transpose(0, 2, 1, 3))
        k = rope((n @ wt[p + "self_attn.k_proj"]).reshape(b, s, nkv, d).transpose(0, 2, 1, 3))
        v = (n @ wt[p + "self_attn.v_proj"]).reshape(b, s, nkv, d).transpose(0, 2, 1, 3)
        if cache is not None:
            k, v = np.concatenate([cache[i][0], k], 2), np.concatenate([cache[i][1], v], 2)
        new.append((k, v))
        qg = q.reshape(b, nkv, nh // nkv, s, d)  # GQA: query heads grouped by kv head
        sc = qg @ k[:, :, None].transpose(0, 1, 2, 4, 3) * np.float32(d**-0.5) + causal
        a = (_softmax(sc) @ v[:, :, None]).reshape(b, nh, s, d).transpose(0, 2, 1, 3)
        x = x + a.reshape(b, s, nh * d) @ wt[p + "self_attn.o_proj"]
        n = rms(x, sd[p + "post_attention_layernorm.weight"])
        gate = n @ wt[p + "mlp.gate_proj"]
        up = n @ wt[p + "mlp.up_proj"]
        x = x + (gate / (1.0 + np.exp(-gate)) * up) @ wt[p + "mlp.down_proj"]
    x = rms(x[:, -1], sd["model.norm.weight"])
    head = wt.get("lm_head", wt["model.embed_tokens"])
    return x @ head, new


# ---------------------------------------------------------------- timing
def median_ms(fn: Callable[[], object], reps: int, budget_s: float = 4.0) -> tuple[float, float]:
    """(median wall ms, median CPU ms of this process) over up to `reps` runs."""
    fn()  # warm-up
    wall: list[float] = []
    cpu: list[float] = []
    t_end = time.perf_counter() + budget_s
    while len(wall) < reps and (len(wall) < 3 or time.perf_counter() < t_end):
        t0, c0 = time.perf_counter(), time.process_time()
        fn()
        cpu.append(time.process_time() - c0)
        wall.append(time.perf_counter() - t0)
    return statistics.median(wall) * 1e3, statistics.median(cpu) * 1e3


def _progress(row: tuple) -> tuple:
    print(
        f"  {row[0]}: RLX {row[2][0]:.2f} ms, NumPy {row[3][0]:.2f} ms", file=sys.stderr, flush=True
    )
    return row


HOIST = True  # CompileOptions.cache_param_invariant: weight transposes computed once


def _compile(g: rlx.Graph, params: dict) -> tuple[rlx.CompiledGraph, str]:
    """Compiled graph with params bound and `@prepare` run; the time, `*` if cached."""
    t0 = time.perf_counter()
    c = rlx.compile(g, rlx.CompileOptions(cache_param_invariant=HOIST))
    c.set_params(params)
    c.run(*(np.zeros(shape, dt) for _, shape, dt in c.inputs))  # runs @prepare once
    return c, f"{time.perf_counter() - t0:.1f}{'*' if c.cache_hit else ''}"


def bench_encoder(batch: int, reps: int, seq: int = 128) -> tuple:
    cfg = bert.BertConfig.minilm_l6()
    sd = bert.random_state_dict(cfg, seed=0)
    c, tc = _compile(bert.build_encoder(cfg, batch, seq), bert.prepare_params(sd, cfg))
    lin = transposed(sd)
    rng = np.random.default_rng(1)
    ids = rng.integers(0, cfg.vocab_size, (batch, seq)).astype(np.int64)
    mask = np.ones((batch, seq), np.int64)
    mask[batch // 2 :, seq * 3 // 4 :] = 0  # some padding
    err = float(np.abs(c.run(ids, mask)[0] - np_bert(sd, lin, cfg, ids, mask)).max())
    t_rlx = median_ms(lambda: c.run(ids, mask), reps)
    t_np = median_ms(lambda: np_bert(sd, lin, cfg, ids, mask), reps)
    return _progress((f"MiniLM-L6 encoder B={batch} S={seq}", tc, t_rlx, t_np, err))


def bench_decoder(name: str, cfg: llama.LlamaConfig, reps: int, seq: int = 128) -> list[tuple]:
    sd = llama.random_state_dict(cfg, seed=0)
    params = llama.prepare_params(sd, cfg)
    wt = transposed(sd)
    ids = np.random.default_rng(2).integers(0, cfg.vocab_size, (1, seq)).astype(np.int64)
    rows = []
    pre, tc = _compile(llama.build_decoder(cfg, 1, seq, logits="last"), params)
    err = float(np.abs(pre.run(ids)[0] - np_llama(sd, wt, cfg, ids)[0]).max())
    rows.append(_progress((f"{name} prefill S={seq}", tc, median_ms(lambda: pre.run(ids), reps),
                 median_ms(lambda: np_llama(sd, wt, cfg, ids), reps), err)))  # fmt: skip
    step, tc = _compile(
        llama.build_decoder(cfg, 1, 1, past=seq - 1, kv_cache=True, logits="last"), params
    )
    _, np_cache = np_llama(sd, wt, cfg, ids[:, :-1])
    feeds = {f"past_{kv}_{i}": np_cache[i][j] for i in range(cfg.num_hidden_layers)
             for j, kv in enumerate("kv")}  # fmt: skip
    last = ids[:, -1:]
    err = float(np.abs(step.run(last, **feeds)[0] - np_llama(sd, wt, cfg, last, np_cache)[0]).max())
    rows.append(_progress((f"{name} decode 1 token after {seq - 1}", tc,
                 median_ms(lambda: step.run(last, **feeds), reps * 4),
                 median_ms(lambda: np_llama(sd, wt, cfg, last, np_cache), reps * 4), err)))  # fmt: skip
    # the generation loop's graph: fixed-size cache (max_len = seq), position as an input
    fixed, tc = _compile(llama.build_decode_step(cfg, 1, seq), params)
    slots = np.zeros((1, cfg.num_key_value_heads, seq, cfg.d_head), np.float32)
    ffeeds = {}
    for k, v in feeds.items():
        ffeeds[k.replace("past_", "cache_")] = buf = slots.copy()
        buf[:, :, : seq - 1] = v
    pos = np.array([seq - 1], np.int64)
    err = float(
        np.abs(fixed.run(last, pos, **ffeeds)[0] - np_llama(sd, wt, cfg, last, np_cache)[0]).max()
    )
    rows.append(_progress((f"{name} decode step, fixed cache of {seq}", tc,
                 median_ms(lambda: fixed.run(last, pos, **ffeeds), reps * 4),
                 median_ms(lambda: np_llama(sd, wt, cfg, last, np_cache), reps * 4), err)))  # fmt: skip
    return rows


MEDIUM = llama.LlamaConfig(
    vocab_size=8192, hidden_size=512, intermediate_size=1408, num_hidden_layers=4,
    num_attention_heads=8, num_key_value_heads=2, max_position_embeddings=512,
)  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=10, help="timed runs per side (median)")
    ap.add_argument("--quick", action="store_true", help="encoder B=1 and the tiny decoder only")
    ap.add_argument(
        "--no-hoist",
        action="store_true",
        help="compile without cache_param_invariant (transpose weights every run)",
    )
    a = ap.parse_args()
    global HOIST
    HOIST = not a.no_hoist
    t0 = time.perf_counter()
    rows = [bench_encoder(1, a.reps)]
    if not a.quick:
        rows.append(bench_encoder(8, a.reps))
    rows += bench_decoder("tiny decoder (Llama, 2x64, GQA 4/2)", llama.LlamaConfig.tiny(), a.reps)
    if not a.quick:
        rows += bench_decoder("medium decoder (Llama, 4x512, GQA 8/2)", MEDIUM, a.reps)
    print(f"# {time.strftime('%Y-%m-%d %H:%M')} {platform.machine()} {platform.processor() or ''}"
          f" numpy {np.__version__}, BLAS threads {os.environ['OPENBLAS_NUM_THREADS']},"
          f" load {os.getloadavg()[0]:.1f}, median of up to {a.reps} runs,"
          f" cache_param_invariant={HOIST}")  # fmt: skip
    print(
        "| case | compile s | RLX ms | NumPy ms | RLX/NumPy | RLX/NumPy (CPU time) | max abs diff |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, tc, (tr, cr), (tn, cn), err in rows:
        print(
            f"| {name} | {tc} | {tr:.2f} | {tn:.2f} | {tr / tn:.2f} | {cr / cn:.2f} | {err:.1e} |"
        )
    print(f"total {time.perf_counter() - t0:.0f} s (* compile cache hit; RLX_CACHE=0 disables it)")


if __name__ == "__main__":
    main()
