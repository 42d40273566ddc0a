"""Embed sentences with a BERT sentence encoder (all-MiniLM-L6-v2) compiled by RLX.

    python examples/embed_sentences.py MODEL_DIR "A cat sits." "A dog runs."
    python examples/embed_sentences.py MODEL_DIR --token-ids 101,1037,4937,102 --token-ids 101,102
    python examples/embed_sentences.py --random-tiny "works without any weights"

MODEL_DIR holds a Hugging Face checkpoint: config.json and model.safetensors, plus
tokenizer.json to embed text (needs the `tokenizers` package; otherwise pass token ids).
Nothing is downloaded. With --random-tiny a small random model and a toy word-hash
tokenizer stand in for the checkpoint. Prints each embedding's first values and the
cosine-similarity matrix (embeddings are L2-normalized, so it is a dot product).
"""

from __future__ import annotations

import argparse
import sys
import time
import zlib
from pathlib import Path

import numpy as np

import rlx
from rlx.models import bert

TINY = bert.BertConfig(
    vocab_size=1000, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
    intermediate_size=128, max_position_embeddings=64,
)  # fmt: skip


def parse_ids(texts: list[str]) -> list[list[int]]:
    """`"101,2023,102"` or `"101 2023 102"` -> [101, 2023, 102] for each string."""
    return [[int(t) for t in s.replace(",", " ").split()] for s in texts]


def toy_tokenize(sentences: list[str], vocab: int) -> list[list[int]]:
    """[CLS]=1, one id per lower-cased word (crc32 hash), [SEP]=2: for the random model."""
    return [
        [1] + [3 + zlib.crc32(w.encode()) % (vocab - 3) for w in s.lower().split()] + [2]
        for s in sentences
    ]


def hf_tokenize(model_dir: Path, sentences: list[str], max_len: int) -> list[list[int]]:
    path = model_dir / "tokenizer.json"
    try:
        from tokenizers import Tokenizer
    except ImportError:
        sys.exit("error: embedding text needs the `tokenizers` package (pip install tokenizers);"
                 " or pass --token-ids")  # fmt: skip
    if not path.is_file():
        sys.exit(f"error: {path} not found; pass --token-ids instead")
    tok = Tokenizer.from_file(str(path))
    tok.no_padding()
    tok.enable_truncation(max_len)
    return [e.ids for e in tok.encode_batch(sentences)]


def pad(seqs: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
    """Right-pad with id 0: (input_ids, attention_mask), both i64 [B, max len]."""
    s = max(len(x) for x in seqs)
    ids = np.zeros((len(seqs), s), np.int64)
    mask = np.zeros((len(seqs), s), np.int64)
    for i, x in enumerate(seqs):
        ids[i, : len(x)], mask[i, : len(x)] = x, 1
    return ids, mask


def load_model(model_dir: Path) -> tuple[bert.BertConfig, dict[str, np.ndarray]]:
    if not model_dir.is_dir():
        sys.exit(f"error: model directory {model_dir} does not exist (expected config.json and "
                 "model.safetensors of e.g. sentence-transformers/all-MiniLM-L6-v2; nothing is "
                 "downloaded). Try --random-tiny.")  # fmt: skip
    for name in ("config.json", "model.safetensors"):
        if not (model_dir / name).is_file():
            sys.exit(f"error: {model_dir / name} not found")
    cfg = bert.BertConfig.from_hf_config(model_dir / "config.json")
    return cfg, bert.prepare_params(bert.load_state_dict(model_dir), cfg)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model_dir", nargs="?", type=Path, help="checkpoint directory")
    ap.add_argument("sentences", nargs="*", help="text to embed (needs tokenizer.json)")
    ap.add_argument("--token-ids", action="append", default=[], metavar="IDS",
                    help="one sequence of token ids ('101,2023,102'); repeatable")  # fmt: skip
    ap.add_argument("--random-tiny", action="store_true", help="random tiny model, no weights")
    ap.add_argument("--max-len", type=int, default=256, help="truncate text to this many tokens")
    ap.add_argument("--reference", action="store_true", help="run the NumPy reference interpreter")
    a = ap.parse_args(argv)

    if a.random_tiny:
        if a.model_dir is not None:  # with --random-tiny every positional is a sentence
            a.sentences.insert(0, str(a.model_dir))
        cfg, params = TINY, bert.random_state_dict(TINY, seed=0)
        if not a.token_ids:
            a.sentences = a.sentences or [
                "a cat sits on the mat",
                "a cat sat on a mat",
                "prices fell",
            ]
        seqs = parse_ids(a.token_ids) or toy_tokenize(a.sentences, cfg.vocab_size)
    else:
        if a.model_dir is None:
            ap.error("give a model directory, or --random-tiny")
        cfg, params = load_model(a.model_dir)
        if a.token_ids:
            seqs = parse_ids(a.token_ids)
        elif a.sentences:
            seqs = hf_tokenize(
                a.model_dir, a.sentences, min(a.max_len, cfg.max_position_embeddings)
            )
        else:
            ap.error("give sentences or --token-ids")
    bad = [i for s in seqs for i in s if not 0 <= i < cfg.vocab_size]
    if bad or not all(seqs):
        sys.exit(
            f"error: token ids must be non-empty lists in [0, {cfg.vocab_size}), got {bad[:5]}"
        )
    ids, mask = pad(seqs)

    g = bert.build_encoder(cfg, *ids.shape)
    t0 = time.perf_counter()
    if a.reference:
        (emb,) = rlx.reference.run(g.module, {"input_ids": ids, "attention_mask": mask}, params)
        how = "reference interpreter"
    else:
        compiled = rlx.compile(g, rlx.CompileOptions(cache_param_invariant=True))
        compiled.set_params(params)
        t1 = time.perf_counter()
        (emb,) = compiled.run(input_ids=ids, attention_mask=mask)
        how = f"compiled in {t1 - t0:.1f} s"
    print(f"{len(seqs)} sequence(s) of <= {ids.shape[1]} tokens, hidden {cfg.hidden_size} "
          f"({how}; total {time.perf_counter() - t0:.2f} s)")  # fmt: skip
    labels = a.sentences if a.sentences and not a.token_ids else [str(s) for s in seqs]
    for lab, e in zip(labels, emb, strict=False):
        print(f"  {lab[:40]:40} [{', '.join(f'{v:+.4f}' for v in e[:4])}, ...]")
    print("cosine similarity:")
    sim = emb @ emb.T
    for row in sim:
        print("  " + " ".join(f"{v:6.3f}" for v in row))


if __name__ == "__main__":
    main()
