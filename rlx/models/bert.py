"""BERT-style sentence encoder (the all-MiniLM-L6-v2 architecture) as an `rlx.Graph`.

    cfg = BertConfig.minilm_l6()                        # or BertConfig.from_hf_config(json)
    g = build_encoder(cfg, batch=2, seq=16)             # inputs: input_ids, attention_mask
    state = load_state_dict("model.safetensors")        # HF names, `bert.` prefix dropped
    compiled = rlx.compile(g); compiled.set_params(prepare_params(state, cfg))
    (emb,) = compiled.run(input_ids=ids, attention_mask=mask)   # [B, hidden], unit norm

Architecture (post-norm BERT): `x = LN(word[ids] + pos[0:S] + type[tt])`; per layer
`x = LN(x + Wo·attn(x) + bo)`, `x = LN(x + W2·gelu(W1·x + b1) + b2)` with exact GELU;
attention over heads of `hidden/heads` with the padding mask as an additive bias
(`(1 - mask) · f32min`: masked keys get probability 0, as in Hugging Face). Sentence
embedding: mean of `x` over the unmasked tokens, then `v / max(‖v‖₂, 1e-12)`.
Linear weights are `[out, in]` (torch): `y = x · Wᵀ + b`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from rlx.builder import Graph, Value
from rlx.weights import load

F32_MIN = float(np.finfo(np.float32).min)


@dataclass(frozen=True)
class BertConfig:
    """The shape of a BERT encoder (Hugging Face `BertConfig` field names)."""

    vocab_size: int = 30522
    hidden_size: int = 384
    num_hidden_layers: int = 6
    num_attention_heads: int = 12
    intermediate_size: int = 1536
    max_position_embeddings: int = 512
    type_vocab_size: int = 2
    layer_norm_eps: float = 1e-12

    def __post_init__(self) -> None:
        if self.hidden_size % self.num_attention_heads:
            raise ValueError(
                f"hidden_size {self.hidden_size} is not a multiple of "
                f"num_attention_heads {self.num_attention_heads}"
            )

    @property
    def head_dim(self) -> int:
        return self.hidden_size // self.num_attention_heads

    @classmethod
    def minilm_l6(cls) -> BertConfig:
        """sentence-transformers/all-MiniLM-L6-v2."""
        return cls()

    @classmethod
    def from_hf_config(cls, cfg: Mapping[str, Any] | str | Path) -> BertConfig:
        """From a config.json dict or path; unknown keys are ignored."""
        if not isinstance(cfg, Mapping):
            cfg = json.loads(Path(cfg).read_text())
        act = cfg.get("hidden_act", "gelu")
        if act != "gelu":
            raise ValueError(f"unsupported hidden_act {act!r}: only exact 'gelu' is built")
        pe = cfg.get("position_embedding_type", "absolute")
        if pe != "absolute":
            raise ValueError(f"unsupported position_embedding_type {pe!r}: only 'absolute'")
        names = cls.__dataclass_fields__
        return cls(**{k: cfg[k] for k in names if k in cfg})


def param_shapes(cfg: BertConfig) -> dict[str, tuple[int, ...]]:
    """Every param the encoder reads, by its Hugging Face name (no `bert.` prefix)."""
    h, f = cfg.hidden_size, cfg.intermediate_size
    out: dict[str, tuple[int, ...]] = {
        "embeddings.word_embeddings.weight": (cfg.vocab_size, h),
        "embeddings.position_embeddings.weight": (cfg.max_position_embeddings, h),
        "embeddings.token_type_embeddings.weight": (cfg.type_vocab_size, h),
        "embeddings.LayerNorm.weight": (h,),
        "embeddings.LayerNorm.bias": (h,),
    }
    for i in range(cfg.num_hidden_layers):
        p = f"encoder.layer.{i}."
        for n in ("query", "key", "value"):
            out[f"{p}attention.self.{n}.weight"] = (h, h)
            out[f"{p}attention.self.{n}.bias"] = (h,)
        out[f"{p}attention.output.dense.weight"] = (h, h)
        out[f"{p}attention.output.dense.bias"] = (h,)
        out[f"{p}attention.output.LayerNorm.weight"] = (h,)
        out[f"{p}attention.output.LayerNorm.bias"] = (h,)
        out[f"{p}intermediate.dense.weight"] = (f, h)
        out[f"{p}intermediate.dense.bias"] = (f,)
        out[f"{p}output.dense.weight"] = (h, f)
        out[f"{p}output.dense.bias"] = (h,)
        out[f"{p}output.LayerNorm.weight"] = (h,)
        out[f"{p}output.LayerNorm.bias"] = (h,)
    return out


def _linear(g: Graph, x: Value, name: str, n_in: int, n_out: int, bias: bool = True) -> Value:
    """`x · Wᵀ (+ b)` with W the torch-layout param `name.weight` [out, in]."""
    w = g.param(f"{name}.weight", (n_out, n_in))
    y = g.matmul(x, g.transpose(w, permutation=[1, 0]))
    return g.add(y, g.param(f"{name}.bias", (n_out,))) if bias else y


def _layer_norm(g: Graph, x: Value, name: str, n: int, eps: float) -> Value:
    return g.layer_norm(
        x, g.param(f"{name}.weight", (n,)), g.param(f"{name}.bias", (n,)), epsilon=eps
    )


def build_encoder(
    cfg: BertConfig,
    batch: int,
    seq: int,
    *,
    token_type_ids: bool = False,
    mask_dtype: str = "i64",
    last_hidden_state: bool = False,
    normalize: bool = True,
) -> Graph:
    """The sentence encoder for static `batch` x `seq`.

    Inputs: `input_ids` i64 [B, S], `attention_mask` (`mask_dtype`: i64 or f32) [B, S]
    (1 = token, 0 = padding), and `token_type_ids` i64 [B, S] if `token_type_ids` (else
    all tokens use type 0). Outputs: the pooled embedding [B, hidden] (L2-normalized
    unless `normalize=False`), then `last_hidden_state` [B, S, hidden] if asked.
    """
    if seq > cfg.max_position_embeddings:
        raise ValueError(f"seq {seq} exceeds max_position_embeddings {cfg.max_position_embeddings}")
    if mask_dtype not in ("i64", "f32"):
        raise ValueError(f"mask_dtype must be 'i64' or 'f32', got {mask_dtype!r}")
    h, nh, hd, eps = cfg.hidden_size, cfg.num_attention_heads, cfg.head_dim, cfg.layer_norm_eps
    g = Graph("main")
    ids = g.input("input_ids", (batch, seq), "i64")
    mask_in = g.input("attention_mask", (batch, seq), mask_dtype)
    tt = g.input("token_type_ids", (batch, seq), "i64") if token_type_ids else None
    mask = mask_in if mask_dtype == "f32" else g.cast(mask_in, "f32")

    # embeddings
    word = g.gather(g.param("embeddings.word_embeddings.weight", (cfg.vocab_size, h)), ids)
    pos_table = g.param("embeddings.position_embeddings.weight", (cfg.max_position_embeddings, h))
    pos = g.slice(pos_table, starts=[0, 0], limits=[seq, h])
    type_table = g.param("embeddings.token_type_embeddings.weight", (cfg.type_vocab_size, h))
    if tt is not None:
        typ = g.gather(type_table, tt)
    else:
        typ = g.slice(type_table, starts=[0, 0], limits=[1, h])
    x = g.add(g.add(word, pos), typ)
    x = _layer_norm(g, x, "embeddings.LayerNorm", h, eps)  # [B, S, H]
    x = g.reshape(x, (batch * seq, h))

    # additive attention bias [B, 1, 1, S]: 0 for tokens, f32 min for padding
    one = g.constant(np.float32(1.0))
    bias = g.mul(g.sub(one, mask), g.constant(np.float32(F32_MIN)))
    bias = g.reshape(bias, (batch, 1, 1, seq))

    def heads(t: Value) -> Value:  # [B*S, H] -> [B, nh, S, hd]
        return g.transpose(g.reshape(t, (batch, seq, nh, hd)), permutation=[0, 2, 1, 3])

    for i in range(cfg.num_hidden_layers):
        p = f"encoder.layer.{i}."
        q = heads(_linear(g, x, f"{p}attention.self.query", h, h))
        k = heads(_linear(g, x, f"{p}attention.self.key", h, h))
        v = heads(_linear(g, x, f"{p}attention.self.value", h, h))
        a = g.attention(q, k, v, bias, mask_kind="bias", scale=1.0 / float(np.sqrt(hd)))
        a = g.reshape(g.transpose(a, permutation=[0, 2, 1, 3]), (batch * seq, h))
        a = _linear(g, a, f"{p}attention.output.dense", h, h)
        x = _layer_norm(g, g.add(a, x), f"{p}attention.output.LayerNorm", h, eps)
        f = g.gelu(_linear(g, x, f"{p}intermediate.dense", h, cfg.intermediate_size))
        f = _linear(g, f, f"{p}output.dense", cfg.intermediate_size, h)
        x = _layer_norm(g, g.add(f, x), f"{p}output.LayerNorm", h, eps)

    hidden = g.reshape(x, (batch, seq, h))
    # mean pooling over the mask
    m3 = g.reshape(mask, (batch, seq, 1))
    summed = g.reduce(g.mul(hidden, m3), kind="sum", axes=[1])  # [B, H]
    count = g.reduce(m3, kind="sum", axes=[1])  # [B, 1]
    count = g.max(count, g.constant(np.float32(1e-9)))
    pooled = g.div(summed, count)
    if normalize:
        sq = g.reduce(g.mul(pooled, pooled), kind="sum", axes=[1], keepdims=True)
        norm = g.max(g.sqrt(sq), g.constant(np.float32(1e-12)))
        pooled = g.div(pooled, norm)
    g.output(pooled)
    if last_hidden_state:
        g.output(hidden)
    return g


def strip_prefix(state: Mapping[str, Any]) -> dict[str, Any]:
    """Drop a leading `bert.` (BertModel inside a task model) from every name."""
    return {k.removeprefix("bert."): v for k, v in state.items()}


def load_state_dict(path: str | Path) -> dict[str, np.ndarray]:
    """Tensors of a .safetensors/.npz/.gguf file (or a directory's model.safetensors),
    names without the `bert.` prefix."""

    p = Path(path)
    if p.is_dir():
        p = p / "model.safetensors"
    return strip_prefix(load(p))  # type: ignore[arg-type]


def prepare_params(state: Mapping[str, Any], cfg: BertConfig) -> dict[str, np.ndarray]:
    """Exactly the params the encoder reads, as contiguous f32 arrays, shape-checked."""
    state = strip_prefix(state)
    out: dict[str, np.ndarray] = {}
    for name, shape in param_shapes(cfg).items():
        if name not in state:
            raise KeyError(f"checkpoint has no tensor '{name}'")
        arr = np.ascontiguousarray(np.asarray(state[name], dtype=np.float32))
        if arr.shape != shape:
            raise ValueError(f"tensor '{name}' has shape {arr.shape}, the config needs {shape}")
        out[name] = arr
    return out


def random_state_dict(cfg: BertConfig, seed: int = 0, std: float = 0.05) -> dict[str, np.ndarray]:
    """Random f32 weights with the Hugging Face names (layer-norm gains near 1)."""
    rng = np.random.default_rng(seed)
    out = {}
    for name, shape in param_shapes(cfg).items():
        a = rng.normal(0.0, std, shape)
        if "LayerNorm.weight" in name:
            a = 1.0 + a
        out[name] = a.astype(np.float32)
    return out
