"""rlx.models.llama against an independent NumPy Llama decoder.

The oracle is written from the architecture (HF LlamaForCausalLM: RMSNorm, rotate-half
RoPE with cos/sin of length head_dim, SwiGLU, causal GQA via repeat_kv), in f64, reading
the state dict by its Hugging Face names. Tolerances (f32 graphs, logits of O(1)):
reference interpreter 2e-5, compiled code 1e-4 absolute; cache consistency 1e-4.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from example_loader import load_example

import rlx
from rlx.models import llama

CFG = llama.LlamaConfig.tiny(rope_theta=500.0)  # 2 layers, 4 heads / 2 kv heads, D=16
REF_TOL, JIT_TOL = 2e-5, 1e-4


# ---------------------------------------------------------------- independent NumPy Llama
def _rms(x: np.ndarray, w: np.ndarray, eps: float) -> np.ndarray:
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * w


def _rotate_half(x: np.ndarray) -> np.ndarray:
    h = x.shape[-1] // 2
    return np.concatenate([-x[..., h:], x[..., :h]], axis=-1)


def numpy_llama(
    sd: dict, cfg: llama.LlamaConfig, ids: np.ndarray, start: int = 0, cache: list | None = None
) -> tuple[np.ndarray, list]:
    """(logits [B, S, V], [(k, v) per layer, k/v [B, n_kv, start+S, D]]) in f64; `cache`
    holds the previous layers' k/v for positions 0 .. start-1."""
    sd = {k: np.asarray(v, np.float64) for k, v in sd.items()}
    b, s = ids.shape
    nh, nkv, d = cfg.num_attention_heads, cfg.num_key_value_heads, cfg.d_head
    eps = cfg.rms_norm_eps
    inv = 1.0 / cfg.rope_theta ** (np.arange(0, d, 2) / d)
    ang = np.arange(start, start + s)[:, None] * inv[None, :]
    emb = np.concatenate([ang, ang], axis=-1)
    cos, sin = np.cos(emb), np.sin(emb)

    def proj(name: str, t: np.ndarray) -> np.ndarray:
        return t @ sd[name].T

    x = sd["model.embed_tokens.weight"][ids]
    new_cache = []
    for i in range(cfg.num_hidden_layers):
        p = f"model.layers.{i}."
        n = _rms(x, sd[p + "input_layernorm.weight"], eps)
        q = proj(p + "self_attn.q_proj.weight", n).reshape(b, s, nh, d).transpose(0, 2, 1, 3)
        k = proj(p + "self_attn.k_proj.weight", n).reshape(b, s, nkv, d).transpose(0, 2, 1, 3)
        v = proj(p + "self_attn.v_proj.weight", n).reshape(b, s, nkv, d).transpose(0, 2, 1, 3)
        q = q * cos + _rotate_half(q) * sin
        k = k * cos + _rotate_half(k) * sin
        if cache is not None:
            k = np.concatenate([cache[i][0], k], axis=2)
            v = np.concatenate([cache[i][1], v], axis=2)
        new_cache.append((k, v))
        kr, vr = np.repeat(k, nh // nkv, axis=1), np.repeat(v, nh // nkv, axis=1)
        t = kr.shape[2]
        sc = q @ kr.transpose(0, 1, 3, 2) / np.sqrt(d)
        qpos = start + np.arange(s)[:, None]
        sc = np.where(np.arange(t)[None, :] <= qpos, sc, -np.inf)
        pr = np.exp(sc - sc.max(-1, keepdims=True))
        pr /= pr.sum(-1, keepdims=True)
        a = (pr @ vr).transpose(0, 2, 1, 3).reshape(b, s, nh * d)
        x = x + proj(p + "self_attn.o_proj.weight", a)
        n = _rms(x, sd[p + "post_attention_layernorm.weight"], eps)
        gate = proj(p + "mlp.gate_proj.weight", n)
        up = proj(p + "mlp.up_proj.weight", n)
        x = x + proj(p + "mlp.down_proj.weight", gate / (1.0 + np.exp(-gate)) * up)
    x = _rms(x, sd["model.norm.weight"], eps)
    head = sd.get("lm_head.weight", sd["model.embed_tokens.weight"])
    return x @ head.T, new_cache


# ---------------------------------------------------------------- fixtures
def _checkpoint(tmp: Path, tied: bool) -> Path:
    sd = llama.random_state_dict(CFG, seed=2, std=0.2, tied=tied)
    path = tmp / ("tied.safetensors" if tied else "model.safetensors")
    rlx.weights.save(path, sd)
    return path


@pytest.fixture(scope="module")
def ckpt_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("llama")
    _checkpoint(d, tied=False)
    _checkpoint(d, tied=True)
    return d


def _ids(b: int, s: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, CFG.vocab_size, (b, s)).astype(np.int64)


@pytest.mark.parametrize("tied", [False, True])
def test_reference_and_compiled_match_numpy(ckpt_dir: Path, tied: bool) -> None:
    sd = llama.load_state_dict(ckpt_dir / ("tied.safetensors" if tied else "model.safetensors"))
    assert llama.is_tied(sd, CFG) == tied
    params = llama.prepare_params(sd, CFG)
    ids = _ids(2, 7)
    want, _ = numpy_llama(sd, CFG, ids)
    g = llama.build_decoder(CFG, 2, 7, tied=tied)
    (ref,) = rlx.reference.run(g.module, {"input_ids": ids}, params)
    np.testing.assert_allclose(ref, want, atol=REF_TOL, rtol=0)
    compiled = rlx.compile(g)
    compiled.set_params(params)
    (got,) = compiled.run(input_ids=ids)
    assert got.shape == (2, 7, CFG.vocab_size) and got.dtype == np.float32
    np.testing.assert_allclose(got, want, atol=JIT_TOL, rtol=0)


def test_kv_cache_prefill_then_decode_equals_full_sequence(ckpt_dir: Path) -> None:
    sd = llama.load_state_dict(ckpt_dir)
    params = llama.prepare_params(sd, CFG)
    ids = _ids(2, 6, seed=4)
    full = rlx.compile(llama.build_decoder(CFG, 2, 6, kv_cache=True))
    pre = rlx.compile(llama.build_decoder(CFG, 2, 5, kv_cache=True))
    step = rlx.compile(llama.build_decoder(CFG, 2, 1, past=5, kv_cache=True, logits="last"))
    for c in (full, pre, step):
        c.set_params(params)
    full_logits, *full_cache = full.run(input_ids=ids)
    _, *cache = pre.run(input_ids=ids[:, :5])
    feeds = {f"past_{n.removeprefix('present_')}": a
             for n, a in zip(llama.cache_names(CFG), cache, strict=True)}  # fmt: skip
    last, *new_cache = step.run(input_ids=ids[:, 5:], **feeds)
    assert last.shape == (2, CFG.vocab_size)
    np.testing.assert_allclose(last, full_logits[:, -1], atol=1e-4, rtol=0)
    for a, b in zip(new_cache, full_cache, strict=True):
        assert a.shape == (2, CFG.num_key_value_heads, 6, CFG.d_head)
        np.testing.assert_allclose(a, b, atol=1e-5, rtol=0)
    # and both equal the NumPy decoder run with its own cache
    want_full, want_cache = numpy_llama(sd, CFG, ids)
    np.testing.assert_allclose(full_logits, want_full, atol=JIT_TOL, rtol=0)
    np.testing.assert_allclose(full_cache[0], want_cache[0][0], atol=1e-5, rtol=0)
    _, np_pre = numpy_llama(sd, CFG, ids[:, :5])
    want_step, _ = numpy_llama(sd, CFG, ids[:, 5:], start=5, cache=np_pre)
    np.testing.assert_allclose(last, want_step[:, -1], atol=JIT_TOL, rtol=0)


def test_fixed_size_cache_steps_equal_full_sequence(ckpt_dir: Path) -> None:
    """Prefill 5 tokens, copy the cache into 9 slots (garbage elsewhere), two steps."""
    sd = llama.load_state_dict(ckpt_dir)
    params = llama.prepare_params(sd, CFG)
    ids = _ids(2, 7, seed=6)
    want, _ = numpy_llama(sd, CFG, ids)
    pre = rlx.compile(llama.build_decoder(CFG, 2, 5, kv_cache=True, logits="last"))
    step = rlx.compile(llama.build_decode_step(CFG, 2, max_len=9))
    pre.set_params(params)
    step.set_params(params)
    _, *cache = pre.run(input_ids=ids[:, :5])
    rng = np.random.default_rng(0)
    names = [f"cache_{kv}_{i}" for i in range(CFG.num_hidden_layers) for kv in "kv"]
    feeds = {}
    for n, c in zip(names, cache, strict=True):
        full = rng.normal(0, 10, (2, CFG.num_key_value_heads, 9, CFG.d_head)).astype(np.float32)
        full[:, :, :5] = c
        feeds[n] = full
    for p in (5, 6):
        logits, *new = step.run(input_ids=ids[:, p : p + 1], position=np.array([p]), **feeds)
        np.testing.assert_allclose(logits, want[:, p], atol=JIT_TOL, rtol=0)
        feeds = dict(zip(names, new, strict=True))
    (ref_logits, *_) = rlx.reference.run(
        llama.build_decode_step(CFG, 2, max_len=9).module,
        {"input_ids": ids[:, 6:7], "position": np.array([6]), **feeds},
        params,
    )
    np.testing.assert_allclose(ref_logits, logits, atol=1e-5, rtol=0)


def test_reference_decode_step_with_mha(ckpt_dir: Path) -> None:
    """n_kv == n_heads (no GQA repeat), a 3-token step after 4 cached ones."""
    cfg = llama.LlamaConfig.tiny(num_key_value_heads=4, num_hidden_layers=1)
    sd = llama.random_state_dict(cfg, seed=7, std=0.2)
    params = llama.prepare_params(sd, cfg)
    ids = _ids(1, 7, seed=9)
    _, np_pre = numpy_llama(sd, cfg, ids[:, :4])
    want, _ = numpy_llama(sd, cfg, ids[:, 4:], start=4, cache=np_pre)
    g = llama.build_decoder(cfg, 1, 3, past=4, kv_cache=True)
    feeds = {"input_ids": ids[:, 4:], "past_k_0": np_pre[0][0], "past_v_0": np_pre[0][1]}
    logits, k, v = rlx.reference.run(g.module, feeds, params)
    np.testing.assert_allclose(logits, want, atol=REF_TOL, rtol=0)
    assert k.shape == v.shape == (1, 4, 7, cfg.d_head)


def test_config_errors() -> None:
    cfg = llama.LlamaConfig.from_hf_config(
        {"vocab_size": 10, "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1,
         "num_attention_heads": 4, "rope_theta": 1e6, "tie_word_embeddings": True,
         "rope_scaling": None, "head_dim": None}
    )  # fmt: skip
    assert cfg.num_key_value_heads == 4 and cfg.d_head == 8 and cfg.tie_word_embeddings
    with pytest.raises(ValueError, match="rope_scaling"):
        llama.LlamaConfig.from_hf_config({"rope_scaling": {"rope_type": "llama3"}})
    with pytest.raises(ValueError, match="not a multiple"):
        llama.LlamaConfig.tiny(num_key_value_heads=3)
    with pytest.raises(ValueError, match="kv_cache"):
        llama.build_decoder(CFG, 1, 1, past=3)
    with pytest.raises(KeyError, match="lm_head.weight"):
        llama.prepare_params(llama.random_state_dict(CFG, tied=True), CFG, tied=False)


def test_generate_example_is_greedy_decoding(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """examples/generate.py on an HF-style checkpoint dir (tied) = NumPy greedy decoding."""
    import json

    cfg = llama.LlamaConfig.tiny(num_hidden_layers=1, tie_word_embeddings=True)
    sd = llama.random_state_dict(cfg, seed=3, std=0.3, tied=True)
    rlx.weights.save(tmp_path / "model.safetensors", sd)
    hf = {"model_type": "llama", "hidden_act": "silu", "rope_scaling": None, **cfg.__dict__}
    (tmp_path / "config.json").write_text(json.dumps(hf))
    prompt = [5, 9, 2]
    load_example("generate").main(["--checkpoint", str(tmp_path), "--prompt-ids", "5,9,2",
                               "--max-new-tokens", "5"])  # fmt: skip
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("generated ids:"))
    got = json.loads(line.split(":", 1)[1])
    seq = list(prompt)
    for _ in range(5):
        logits, _ = numpy_llama(sd, cfg, np.array([seq]))
        seq.append(int(np.argmax(logits[0, -1])))
    assert got == seq[len(prompt) :]
    with pytest.raises(SystemExit, match="does not exist"):
        load_example("generate").main(["--checkpoint", str(tmp_path / "missing")])
