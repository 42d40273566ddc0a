"""Llama-style decoder as an `rlx.Graph`: RMSNorm, RoPE, SwiGLU, GQA, optional KV cache.

    cfg = LlamaConfig.tiny()                              # or LlamaConfig.from_hf_config(json)
    g = build_decoder(cfg, batch=1, seq=8)                # input: input_ids -> logits [B,S,V]
    g = build_decoder(cfg, 1, 1, past=8, kv_cache=True)   # + past_k_i/past_v_i, present_*
    g = build_decode_step(cfg, 1, max_len=64)             # fixed-size cache: one graph
    compiled = rlx.compile(g); compiled.set_params(prepare_params(state, cfg))

Per layer (pre-norm): `x += Wo·attn(rope(Wq·n), rope(Wk·n), Wv·n)` with `n = rms(x)`, then
`x += Wdown·(silu(Wgate·n) ⊙ Wup·n)` with `n = rms(x)`; logits `= rms(x) · Wlmᵀ`, `Wlm`
being `lm_head.weight` or, when tied, `model.embed_tokens.weight`. RoPE is rotate-half
over the whole head dim with `inv_freq[i] = theta^(-2i/D)` at positions `past .. past+S-1`
(tables baked into the graph). Attention is causal; with `n_kv < n_heads` (GQA) query head
`h` reads kv head `h // (n_heads / n_kv)`. With `kv_cache`, layer `i` takes
`past_k_i`/`past_v_i` [B, n_kv, past, D] (only when `past > 0`) and returns
`present_k_i`/`present_v_i` [B, n_kv, past + S, D] (keys after RoPE) after the logits.
`build_decode_step` instead keeps a fixed-size cache [B, n_kv, max_len, D] and takes the
position as an input, so generation compiles one graph for all steps.
Linear weights are `[out, in]` (torch): `y = x · Wᵀ`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from rlx.builder import Graph, Value
from rlx.weights import load


@dataclass(frozen=True)
class LlamaConfig:
    """The shape of a Llama decoder (Hugging Face `LlamaConfig` field names)."""

    vocab_size: int = 32000
    hidden_size: int = 2048
    intermediate_size: int = 5632
    num_hidden_layers: int = 22
    num_attention_heads: int = 32
    num_key_value_heads: int = 4
    rms_norm_eps: float = 1e-5
    rope_theta: float = 10000.0
    max_position_embeddings: int = 2048
    tie_word_embeddings: bool = False
    head_dim: int | None = None

    def __post_init__(self) -> None:
        if self.num_attention_heads % self.num_key_value_heads:
            raise ValueError(
                f"num_attention_heads {self.num_attention_heads} is not a multiple of "
                f"num_key_value_heads {self.num_key_value_heads}"
            )
        if self.head_dim is None and self.hidden_size % self.num_attention_heads:
            raise ValueError("hidden_size is not a multiple of num_attention_heads")
        if self.d_head % 2:
            raise ValueError(f"head_dim must be even for RoPE, got {self.d_head}")

    @property
    def d_head(self) -> int:
        return self.head_dim or self.hidden_size // self.num_attention_heads

    @classmethod
    def tiny(cls, **overrides: Any) -> LlamaConfig:
        """A small test/demo shape: 2 layers, hidden 64, 4 heads over 2 kv heads."""
        base: dict[str, Any] = dict(
            vocab_size=128, hidden_size=64, intermediate_size=160, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
        )  # fmt: skip
        return cls(**{**base, **overrides})

    @classmethod
    def from_hf_config(cls, cfg: Mapping[str, Any] | str | Path) -> LlamaConfig:
        """From a config.json dict or path; refuses features the builder does not model."""
        if not isinstance(cfg, Mapping):
            cfg = json.loads(Path(cfg).read_text())
        if cfg.get("rope_scaling"):
            raise ValueError(f"rope_scaling {cfg['rope_scaling']!r} is not supported")
        for flag in ("attention_bias", "mlp_bias"):
            if cfg.get(flag):
                raise ValueError(f"{flag}=true is not supported")
        if cfg.get("hidden_act", "silu") != "silu":
            raise ValueError(f"unsupported hidden_act {cfg['hidden_act']!r}")
        vals = {k: cfg[k] for k in cls.__dataclass_fields__ if cfg.get(k) is not None}
        vals.setdefault("num_key_value_heads", cfg["num_attention_heads"])
        return cls(**vals)


def param_shapes(cfg: LlamaConfig, tied: bool | None = None) -> dict[str, tuple[int, ...]]:
    """Every param the decoder reads, by its Hugging Face name."""
    tied = cfg.tie_word_embeddings if tied is None else tied
    h, f, d = cfg.hidden_size, cfg.intermediate_size, cfg.d_head
    nq, nkv = cfg.num_attention_heads * d, cfg.num_key_value_heads * d
    out: dict[str, tuple[int, ...]] = {"model.embed_tokens.weight": (cfg.vocab_size, h)}
    for i in range(cfg.num_hidden_layers):
        p = f"model.layers.{i}."
        out[f"{p}input_layernorm.weight"] = (h,)
        out[f"{p}self_attn.q_proj.weight"] = (nq, h)
        out[f"{p}self_attn.k_proj.weight"] = (nkv, h)
        out[f"{p}self_attn.v_proj.weight"] = (nkv, h)
        out[f"{p}self_attn.o_proj.weight"] = (h, nq)
        out[f"{p}post_attention_layernorm.weight"] = (h,)
        out[f"{p}mlp.gate_proj.weight"] = (f, h)
        out[f"{p}mlp.up_proj.weight"] = (f, h)
        out[f"{p}mlp.down_proj.weight"] = (h, f)
    out["model.norm.weight"] = (h,)
    if not tied:
        out["lm_head.weight"] = (cfg.vocab_size, h)
    return out


def rope_tables(cfg: LlamaConfig, start: int, length: int) -> tuple[np.ndarray, np.ndarray]:
    """cos, sin [length, D/2] (f32) for positions start .. start+length-1."""
    d = cfg.d_head
    inv_freq = 1.0 / cfg.rope_theta ** (np.arange(0, d, 2, dtype=np.float64) / d)
    ang = np.arange(start, start + length, dtype=np.float64)[:, None] * inv_freq[None, :]
    return np.cos(ang).astype(np.float32), np.sin(ang).astype(np.float32)


def _linear(g: Graph, x: Value, name: str, n_in: int, n_out: int) -> Value:
    w = g.param(name, (n_out, n_in))
    return g.matmul(x, g.transpose(w, permutation=[1, 0]))


Attend = Callable[[int, Value, Value, Value], tuple[Value, Value, Value]]


def _body(
    g: Graph, cfg: LlamaConfig, ids: Value, batch: int, seq: int, cos: Value, sin: Value,
    attend: Attend, logits: str, tied: bool,
) -> tuple[Value, list[Value]]:  # fmt: skip
    """Embedding, the layers and the head; `attend(layer, q, k, v)` [B, heads, S, d] (q, k
    after RoPE) returns (attention output [B, nh, S, d], present k, present v)."""
    h, d, nh, nkv = cfg.hidden_size, cfg.d_head, cfg.num_attention_heads, cfg.num_key_value_heads
    eps, ffn = cfg.rms_norm_eps, cfg.intermediate_size
    embed = g.param("model.embed_tokens.weight", (cfg.vocab_size, h))
    x = g.reshape(g.gather(embed, ids), (batch * seq, h))

    def heads(t: Value, n: int) -> Value:  # [B*S, n*d] -> [B, n, S, d]
        return g.transpose(g.reshape(t, (batch, seq, n, d)), permutation=[0, 2, 1, 3])

    presents: list[Value] = []
    for i in range(cfg.num_hidden_layers):
        p = f"model.layers.{i}."
        n = g.rms_norm(x, g.param(f"{p}input_layernorm.weight", (h,)), epsilon=eps)
        q = g.rope(heads(_linear(g, n, f"{p}self_attn.q_proj.weight", h, nh * d), nh), cos, sin)
        k = g.rope(heads(_linear(g, n, f"{p}self_attn.k_proj.weight", h, nkv * d), nkv), cos, sin)
        v = heads(_linear(g, n, f"{p}self_attn.v_proj.weight", h, nkv * d), nkv)
        a, k, v = attend(i, q, k, v)
        presents += [k, v]
        a = g.reshape(g.transpose(a, permutation=[0, 2, 1, 3]), (batch * seq, nh * d))
        x = g.add(x, _linear(g, a, f"{p}self_attn.o_proj.weight", nh * d, h))
        n = g.rms_norm(x, g.param(f"{p}post_attention_layernorm.weight", (h,)), epsilon=eps)
        gate = g.silu(_linear(g, n, f"{p}mlp.gate_proj.weight", h, ffn))
        up = _linear(g, n, f"{p}mlp.up_proj.weight", h, ffn)
        x = g.add(x, _linear(g, g.mul(gate, up), f"{p}mlp.down_proj.weight", ffn, h))

    if logits == "last":
        x3 = g.reshape(x, (batch, seq, h))
        x = g.reshape(g.slice(x3, starts=[0, seq - 1, 0], limits=[batch, seq, h]), (batch, h))
    x = g.rms_norm(x, g.param("model.norm.weight", (h,)), epsilon=eps)
    out = _linear(
        g, x, "model.embed_tokens.weight" if tied else "lm_head.weight", h, cfg.vocab_size
    )
    return (out if logits == "last" else g.reshape(out, (batch, seq, cfg.vocab_size))), presents


def _repeat_kv(g: Graph, cfg: LlamaConfig, t: Value, batch: int, total: int) -> Value:
    """[B, nkv, T, d] -> [B, nh, T, d]: query head h reads kv head h // rep."""
    nh, nkv, d = cfg.num_attention_heads, cfg.num_key_value_heads, cfg.d_head
    if nh == nkv:
        return t
    t = g.broadcast_to(g.reshape(t, (batch, nkv, 1, total, d)), (batch, nkv, nh // nkv, total, d))
    return g.reshape(t, (batch, nh, total, d))


def build_decoder(
    cfg: LlamaConfig,
    batch: int,
    seq: int,
    past: int = 0,
    *,
    kv_cache: bool = False,
    logits: str = "all",
    tied: bool | None = None,
) -> Graph:
    """The decoder for static `batch` x `seq` new tokens after `past` cached ones.

    Input `input_ids` i64 [B, S] (+ the cache inputs, see the module docstring; `past > 0`
    needs `kv_cache`). Output `logits` [B, S, V], or [B, V] for the last token with
    `logits="last"`, then the present caches. `tied` overrides `cfg.tie_word_embeddings`.
    """
    if past and not kv_cache:
        raise ValueError("past > 0 needs kv_cache=True")
    if logits not in ("all", "last"):
        raise ValueError(f"logits must be 'all' or 'last', got {logits!r}")
    tied = cfg.tie_word_embeddings if tied is None else tied
    nkv, d, total = cfg.num_key_value_heads, cfg.d_head, past + seq
    g = Graph("main")
    ids = g.input("input_ids", (batch, seq), "i64")
    pasts = []
    if past:
        for i in range(cfg.num_hidden_layers):
            pk = g.input(f"past_k_{i}", (batch, nkv, past, d))
            pasts.append((pk, g.input(f"past_v_{i}", (batch, nkv, past, d))))
    cos_np, sin_np = rope_tables(cfg, past, seq)

    def attend(i: int, q: Value, k: Value, v: Value) -> tuple[Value, Value, Value]:
        if pasts:
            k, v = g.concat(pasts[i][0], k, axis=2), g.concat(pasts[i][1], v, axis=2)
        kr, vr = _repeat_kv(g, cfg, k, batch, total), _repeat_kv(g, cfg, v, batch, total)
        return g.attention(q, kr, vr, mask_kind="causal", scale=d**-0.5), k, v

    out, presents = _body(g, cfg, ids, batch, seq, g.constant(cos_np), g.constant(sin_np),
                          attend, logits, tied)  # fmt: skip
    g.output(out)
    if kv_cache:
        g.output(*presents)
    return g


def build_decode_step(
    cfg: LlamaConfig, batch: int, max_len: int, *, tied: bool | None = None
) -> Graph:
    """One-token decode step on a fixed-size cache, so one compiled graph serves every step.

    Inputs: `input_ids` i64 [B, 1], `position` i64 [1] (the new token's position `p <
    max_len`), `cache_k_i`/`cache_v_i` [B, n_kv, max_len, d] (slots `>= p` are ignored).
    Outputs: `logits` [B, V], then the caches with slot `p` set to the new key/value
    (same names with `cache_`, shapes unchanged). Attention sees slots `0..p` (bias mask).
    """
    tied = cfg.tie_word_embeddings if tied is None else tied
    nkv, d, L = cfg.num_key_value_heads, cfg.d_head, max_len
    g = Graph("main")
    ids = g.input("input_ids", (batch, 1), "i64")
    pos = g.input("position", (1,), "i64")
    caches = []
    for i in range(cfg.num_hidden_layers):
        ck = g.input(f"cache_k_{i}", (batch, nkv, L, d))
        caches.append((ck, g.input(f"cache_v_{i}", (batch, nkv, L, d))))
    cos_np, sin_np = rope_tables(cfg, 0, L)
    cos, sin = g.gather(g.constant(cos_np), pos), g.gather(g.constant(sin_np), pos)  # [1, d/2]
    slots = g.constant(np.arange(L, dtype=np.int64))
    here = g.reshape(g.compare(slots, pos, predicate="eq"), (1, 1, L, 1))
    live = g.compare(slots, pos, predicate="le")
    zero, dead = g.constant(np.float32(0.0)), g.constant(np.float32(np.finfo(np.float32).min))
    bias = g.reshape(g.where(live, zero, dead), (1, 1, 1, L))

    def attend(i: int, q: Value, k: Value, v: Value) -> tuple[Value, Value, Value]:
        k, v = g.where(here, k, caches[i][0]), g.where(here, v, caches[i][1])
        kr, vr = _repeat_kv(g, cfg, k, batch, L), _repeat_kv(g, cfg, v, batch, L)
        return g.attention(q, kr, vr, bias, mask_kind="bias", scale=d**-0.5), k, v

    out, presents = _body(g, cfg, ids, batch, 1, cos, sin, attend, "last", tied)
    g.output(out, *presents)
    return g


def cache_names(cfg: LlamaConfig) -> list[str]:
    """Names of the present-cache outputs in order (`present_k_0`, `present_v_0`, ...);
    the matching inputs are the same names with `past_`."""
    return [f"present_{kv}_{i}" for i in range(cfg.num_hidden_layers) for kv in ("k", "v")]


def load_state_dict(path: str | Path) -> dict[str, np.ndarray]:
    """Tensors of a .safetensors/.npz/.gguf file, or of a directory's model.safetensors."""

    p = Path(path)
    if p.is_dir():
        p = p / "model.safetensors"
    return load(p)  # type: ignore[return-value]


def is_tied(state: Mapping[str, Any], cfg: LlamaConfig) -> bool:
    """Tied when the config says so or the checkpoint has no `lm_head.weight`."""
    return cfg.tie_word_embeddings or "lm_head.weight" not in state


def prepare_params(
    state: Mapping[str, Any], cfg: LlamaConfig, tied: bool | None = None
) -> dict[str, np.ndarray]:
    """Exactly the params the decoder reads, as contiguous f32 arrays, shape-checked."""
    tied = is_tied(state, cfg) if tied is None else tied
    out: dict[str, np.ndarray] = {}
    for name, shape in param_shapes(cfg, tied).items():
        if name not in state:
            raise KeyError(f"checkpoint has no tensor '{name}'")
        arr = np.ascontiguousarray(np.asarray(state[name], dtype=np.float32))
        if arr.shape != shape:
            raise ValueError(f"tensor '{name}' has shape {arr.shape}, the config needs {shape}")
        out[name] = arr
    return out


def random_state_dict(
    cfg: LlamaConfig, seed: int = 0, std: float = 0.05, tied: bool | None = None
) -> dict[str, np.ndarray]:
    """Random f32 weights with the Hugging Face names (norm gains near 1)."""
    rng = np.random.default_rng(seed)
    out = {}
    for name, shape in param_shapes(cfg, tied).items():
        a = rng.normal(0.0, std, shape)
        if name.endswith("norm.weight"):
            a = 1.0 + a
        out[name] = a.astype(np.float32)
    return out
