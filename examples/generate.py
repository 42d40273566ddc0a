"""Greedy generation with a Llama-style decoder compiled by RLX.

    python examples/generate.py                                  # random tiny model
    python examples/generate.py --prompt-ids 1,15,27 --max-new-tokens 12
    python examples/generate.py --checkpoint DIR --prompt "Once upon a time"

DIR holds a Hugging Face Llama checkpoint: config.json and model.safetensors (one file),
plus tokenizer.json for --prompt (needs the `tokenizers` package). Nothing is
downloaded. Two graphs are compiled: the prompt prefill (returns the KV cache) and a
one-token step on a fixed-size cache (`build_decode_step`), reused for every new token.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

import rlx
from rlx.models import llama


def load_checkpoint(path: Path) -> tuple[llama.LlamaConfig, dict[str, np.ndarray], bool]:
    if not path.is_dir():
        sys.exit(f"error: checkpoint directory {path} does not exist (expected config.json and "
                 "model.safetensors; nothing is downloaded). Omit --checkpoint for a random model.")  # fmt: skip
    for name in ("config.json", "model.safetensors"):
        if not (path / name).is_file():
            sys.exit(f"error: {path / name} not found")
    cfg = llama.LlamaConfig.from_hf_config(path / "config.json")
    state = llama.load_state_dict(path)
    tied = llama.is_tied(state, cfg)
    return cfg, llama.prepare_params(state, cfg, tied), tied


def tokenizer(path: Path | None) -> Any:
    """The checkpoint's tokenizers.Tokenizer, or None."""
    if path is None or not (path / "tokenizer.json").is_file():
        return None
    try:
        from tokenizers import Tokenizer
    except ImportError:
        return None
    return Tokenizer.from_file(str(path / "tokenizer.json"))


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--checkpoint", type=Path, help="HF Llama directory (default: random tiny)")
    ap.add_argument("--prompt", help="prompt text (needs tokenizer.json and `tokenizers`)")
    ap.add_argument("--prompt-ids", default="1,2,3,4", help="prompt token ids, comma separated")
    ap.add_argument("--max-new-tokens", type=int, default=8)
    ap.add_argument("--seed", type=int, default=0, help="seed of the random tiny weights")
    a = ap.parse_args(argv)

    if a.checkpoint is not None:
        cfg, params, tied = load_checkpoint(a.checkpoint)
    else:
        cfg = llama.LlamaConfig.tiny()
        params, tied = llama.random_state_dict(cfg, seed=a.seed, std=0.3), False
    tok = tokenizer(a.checkpoint)
    if a.prompt is not None:
        if tok is None:
            sys.exit("error: --prompt needs tokenizer.json in --checkpoint and the `tokenizers` "
                     "package; use --prompt-ids")  # fmt: skip
        prompt = tok.encode(a.prompt).ids
    else:
        prompt = [int(t) for t in a.prompt_ids.replace(",", " ").split()]
    if not prompt or not all(0 <= t < cfg.vocab_size for t in prompt):
        sys.exit(f"error: prompt ids must be a non-empty list in [0, {cfg.vocab_size})")
    max_len = len(prompt) + a.max_new_tokens
    if max_len > cfg.max_position_embeddings:
        sys.exit(
            f"error: {max_len} tokens exceed max_position_embeddings {cfg.max_position_embeddings}"
        )

    opts = rlx.CompileOptions(cache_param_invariant=True)
    t0 = time.perf_counter()
    prefill = rlx.compile(
        llama.build_decoder(cfg, 1, len(prompt), kv_cache=True, logits="last", tied=tied), opts
    )
    step = rlx.compile(llama.build_decode_step(cfg, 1, max_len, tied=tied), opts)
    prefill.set_params(params)
    step.set_params(params)
    t1 = time.perf_counter()

    logits, *cache = prefill.run(input_ids=np.array([prompt], np.int64))
    names = [f"cache_{kv}_{i}" for i in range(cfg.num_hidden_layers) for kv in "kv"]
    feeds: dict[str, np.ndarray] = {}
    for n, c in zip(names, cache, strict=True):
        full = np.zeros((1, cfg.num_key_value_heads, max_len, cfg.d_head), np.float32)
        full[:, :, : len(prompt)] = c
        feeds[n] = full
    out = list(prompt)
    t2 = time.perf_counter()
    for pos in range(len(prompt), max_len):
        nxt = int(np.argmax(logits[0]))
        out.append(nxt)
        if pos == max_len - 1:
            break
        logits, *new = step.run(
            input_ids=np.array([[nxt]], np.int64), position=np.array([pos], np.int64), **feeds
        )
        feeds = dict(zip(names, new, strict=True))
    t3 = time.perf_counter()
    n_new = len(out) - len(prompt)
    print(f"compiled 2 graphs in {t1 - t0:.1f} s; generated {n_new} tokens in {t3 - t2:.3f} s")
    print("prompt ids:   ", prompt)
    print("generated ids:", out[len(prompt) :])
    if tok is not None:
        print("text:", tok.decode(out))


if __name__ == "__main__":
    main()
