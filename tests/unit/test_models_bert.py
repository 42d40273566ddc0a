"""rlx.models.bert against an independent NumPy BERT sentence encoder.

The oracle below is written from the architecture (HF BertModel + sentence-transformers
mean pooling + Normalize), in f64, reading the state dict by its Hugging Face names.
Tolerances (f32 graphs): reference interpreter 2e-5, compiled code 1e-4 (absolute, on
unit-norm embeddings and O(1) hidden states).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from example_loader import load_example

import rlx
from rlx.models import bert

CFG = bert.BertConfig(
    vocab_size=97, hidden_size=48, num_hidden_layers=2, num_attention_heads=4,
    intermediate_size=96, max_position_embeddings=24, type_vocab_size=2,
)  # fmt: skip
B, S = 3, 10
REF_TOL, JIT_TOL = 2e-5, 1e-4
_erf = np.vectorize(math.erf)


# ---------------------------------------------------------------- independent NumPy BERT
def _ln(x: np.ndarray, w: np.ndarray, b: np.ndarray, eps: float) -> np.ndarray:
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def _lin(sd: dict, name: str, x: np.ndarray) -> np.ndarray:
    return x @ sd[name + ".weight"].astype(np.float64).T + sd[name + ".bias"]


def numpy_bert(sd: dict, cfg: bert.BertConfig, ids, mask, tt=None) -> tuple[np.ndarray, np.ndarray]:
    """(normalized mean-pooled embedding [B, H], last hidden state [B, S, H]) in f64."""
    sd = {k.removeprefix("bert."): np.asarray(v, np.float64) for k, v in sd.items()}
    b, s = ids.shape
    nh, hd = cfg.num_attention_heads, cfg.hidden_size // cfg.num_attention_heads
    tt = np.zeros_like(ids) if tt is None else tt
    x = (
        sd["embeddings.word_embeddings.weight"][ids]
        + sd["embeddings.position_embeddings.weight"][np.arange(s)][None]
        + sd["embeddings.token_type_embeddings.weight"][tt]
    )
    eps = cfg.layer_norm_eps
    x = _ln(x, sd["embeddings.LayerNorm.weight"], sd["embeddings.LayerNorm.bias"], eps)
    m = np.asarray(mask, np.float64)
    for i in range(cfg.num_hidden_layers):
        p = f"encoder.layer.{i}."

        def split(t: np.ndarray) -> np.ndarray:
            return t.reshape(b, s, nh, hd).transpose(0, 2, 1, 3)

        q = split(_lin(sd, p + "attention.self.query", x))
        k = split(_lin(sd, p + "attention.self.key", x))
        v = split(_lin(sd, p + "attention.self.value", x))
        sc = q @ k.transpose(0, 1, 3, 2) / math.sqrt(hd)
        sc = np.where(m[:, None, None, :] > 0, sc, -np.inf)
        pr = np.exp(sc - sc.max(-1, keepdims=True))
        pr /= pr.sum(-1, keepdims=True)
        ctx = (pr @ v).transpose(0, 2, 1, 3).reshape(b, s, -1)
        a = _lin(sd, p + "attention.output.dense", ctx)
        x = _ln(a + x, sd[p + "attention.output.LayerNorm.weight"],
                sd[p + "attention.output.LayerNorm.bias"], eps)  # fmt: skip
        f = _lin(sd, p + "intermediate.dense", x)
        f = 0.5 * f * (1.0 + _erf(f / math.sqrt(2.0)))
        f = _lin(sd, p + "output.dense", f)
        x = _ln(f + x, sd[p + "output.LayerNorm.weight"], sd[p + "output.LayerNorm.bias"], eps)
    pooled = (x * m[..., None]).sum(1) / np.maximum(m.sum(1, keepdims=True), 1e-9)
    pooled /= np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
    return pooled, x


# ---------------------------------------------------------------- fixtures
@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Random weights in a .safetensors file, with a `bert.` prefix and extra tensors."""
    sd = bert.random_state_dict(CFG, seed=1, std=0.2)
    sd = {f"bert.{k}": v for k, v in sd.items()}
    sd["bert.pooler.dense.weight"] = np.zeros((48, 48), np.float32)  # unused by the encoder
    path = tmp_path_factory.mktemp("bert") / "model.safetensors"
    rlx.weights.save(path, sd)
    return path


def _inputs(seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, CFG.vocab_size, (B, S)).astype(np.int64)
    mask = np.ones((B, S), np.int64)
    mask[1, 6:] = 0  # padded sequence
    mask[2, 3:] = 0
    tt = rng.integers(0, 2, (B, S)).astype(np.int64)
    return ids, mask, tt


def test_reference_and_compiled_match_numpy(checkpoint: Path) -> None:
    sd = bert.load_state_dict(checkpoint)
    assert "embeddings.word_embeddings.weight" in sd  # prefix dropped
    params = bert.prepare_params(sd, CFG)
    ids, mask, _ = _inputs()
    want_pooled, want_hidden = numpy_bert(sd, CFG, ids, mask)
    g = bert.build_encoder(CFG, B, S, last_hidden_state=True)
    feeds = {"input_ids": ids, "attention_mask": mask}
    ref_pooled, ref_hidden = rlx.reference.run(g.module, feeds, params)
    np.testing.assert_allclose(ref_pooled, want_pooled, atol=REF_TOL, rtol=0)
    np.testing.assert_allclose(ref_hidden, want_hidden, atol=REF_TOL * 5, rtol=0)
    compiled = rlx.compile(g)
    compiled.set_params(params)
    jit_pooled, jit_hidden = compiled.run(**feeds)
    assert jit_pooled.shape == (B, CFG.hidden_size) and jit_pooled.dtype == np.float32
    np.testing.assert_allclose(jit_pooled, want_pooled, atol=JIT_TOL, rtol=0)
    np.testing.assert_allclose(jit_hidden, want_hidden, atol=JIT_TOL * 5, rtol=0)
    np.testing.assert_allclose(np.linalg.norm(jit_pooled, axis=1), 1.0, atol=1e-5)


def test_token_types_and_float_mask(checkpoint: Path) -> None:
    sd = bert.load_state_dict(checkpoint)
    ids, mask, tt = _inputs(3)
    want, _ = numpy_bert(sd, CFG, ids, mask, tt)
    g = bert.build_encoder(CFG, B, S, token_type_ids=True, mask_dtype="f32")
    compiled = rlx.compile(g)
    compiled.set_params(bert.prepare_params(sd, CFG))
    (got,) = compiled.run(input_ids=ids, attention_mask=mask.astype(np.float32), token_type_ids=tt)
    np.testing.assert_allclose(got, want, atol=JIT_TOL, rtol=0)


def test_padding_does_not_change_the_embedding(checkpoint: Path) -> None:
    """A sentence padded to S embeds like the same sentence at its own length."""
    sd = bert.load_state_dict(checkpoint)
    params = bert.prepare_params(sd, CFG)
    ids, mask, _ = _inputs(5)
    (padded,) = rlx.reference.run(
        bert.build_encoder(CFG, B, S).module, {"input_ids": ids, "attention_mask": mask}, params
    )
    short = bert.build_encoder(CFG, 1, 6).module
    (alone,) = rlx.reference.run(
        short, {"input_ids": ids[1:2, :6], "attention_mask": mask[1:2, :6]}, params
    )
    np.testing.assert_allclose(padded[1], alone[0], atol=1e-5, rtol=0)


def test_config_and_param_errors() -> None:
    cfg = bert.BertConfig.from_hf_config(
        {"hidden_size": 48, "num_attention_heads": 4, "num_hidden_layers": 1,
         "intermediate_size": 96, "vocab_size": 97, "model_type": "bert"}
    )  # fmt: skip
    assert cfg.head_dim == 12 and cfg.layer_norm_eps == 1e-12
    assert bert.BertConfig.minilm_l6().hidden_size == 384
    with pytest.raises(ValueError, match="not a multiple"):
        bert.BertConfig(hidden_size=10, num_attention_heads=4)
    with pytest.raises(ValueError, match="hidden_act"):
        bert.BertConfig.from_hf_config({"hidden_act": "relu"})
    with pytest.raises(ValueError, match="position_embedding_type"):
        bert.BertConfig.from_hf_config({"position_embedding_type": "relative_key"})
    with pytest.raises(ValueError, match="max_position_embeddings"):
        bert.build_encoder(CFG, 1, 100)
    sd = bert.random_state_dict(CFG)
    with pytest.raises(KeyError, match="encoder.layer.1.output.dense.bias"):
        bert.prepare_params({k: v for k, v in sd.items() if "1.output.dense.bias" not in k}, CFG)
    sd["embeddings.LayerNorm.bias"] = np.zeros(5, np.float32)
    with pytest.raises(ValueError, match="embeddings.LayerNorm.bias"):
        bert.prepare_params(sd, CFG)


def test_embed_sentencesload_example(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """examples/embed_sentences.py on an HF-style directory with --token-ids."""
    import json

    sd = bert.random_state_dict(CFG, seed=4, std=0.2)
    rlx.weights.save(tmp_path / "model.safetensors", sd)
    (tmp_path / "config.json").write_text(json.dumps({"hidden_act": "gelu", **CFG.__dict__}))
    seqs = [[1, 40, 41, 2], [1, 7, 2]]
    ex = load_example("embed_sentences")
    ex.main([str(tmp_path), "--token-ids", "1,40,41,2", "--token-ids", "1 7 2", "--reference"])
    out = capsys.readouterr().out.splitlines()
    ids, mask = ex.pad(seqs)
    want, _ = numpy_bert(sd, CFG, ids, mask)
    rows = [x for x in out if x.strip().startswith("[1,")]
    got = [[float(v) for v in r.split("[")[2].split(", ...")[0].split(",")] for r in rows]
    np.testing.assert_allclose(got, want[:, :4], atol=1e-4)
    sim_row = [float(v) for v in out[out.index("cosine similarity:") + 1].split()]
    np.testing.assert_allclose(sim_row, want @ want[0], atol=1e-3)
    with pytest.raises(SystemExit, match="does not exist"):
        ex.main([str(tmp_path / "missing"), "--token-ids", "1,2"])
    ex.main(["--random-tiny", "--reference", "one sentence"])
    assert "cosine similarity:" in capsys.readouterr().out
