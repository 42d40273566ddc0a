"""Export small real models with both torch ONNX exporters and check RLX against
onnxruntime.

    python bench/onnx_exports.py [--models bert,gpt2,llama,resnet18,mobilenet_v2,distilbert,roberta]
                                 [--exporters torchscript,dynamo] [--keep DIR]

Models come from installed packages only (transformers with random init and small
configs, torchvision without weights); nothing is downloaded at run time. Each export is
imported with `rlx.frontends.onnx.import_model` WITHOUT `dims=` (dynamic batch/sequence
dims stay symbolic), compiled with `CompileOptions(dim_binding=...)` for the sample's
sizes and run; the outputs are compared with onnxruntime (cosine similarity and max abs
difference). torch, transformers, torchvision and onnxruntime are bench-only
dependencies, never test dependencies.
"""

from __future__ import annotations

import argparse
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

import numpy as np

SEQ, BATCH = 7, 2


TRANSFORMERS = ("bert", "distilbert", "roberta", "gpt2", "llama")


def _transformer(
    name: str, batch: int = BATCH, seq: int = SEQ, hidden: int = 32
) -> tuple[Any, dict[str, np.ndarray], dict[str, dict[int, str]]]:
    """A transformers model `name` (one of TRANSFORMERS) with random init: 2 layers,
    `hidden` wide, hidden / 16 heads, FFN 2 x hidden; sample ids and a padding mask."""
    import torch
    import transformers as tf

    torch.manual_seed(0)
    heads = max(1, hidden // 16)
    small = dict(vocab_size=100, hidden_size=hidden, num_hidden_layers=2,
                 num_attention_heads=heads, intermediate_size=2 * hidden,
                 max_position_embeddings=max(64, seq + 2))  # fmt: skip
    if name == "bert":
        model = tf.BertModel(tf.BertConfig(**small, type_vocab_size=2))
    elif name == "roberta":
        model = tf.RobertaModel(tf.RobertaConfig(**small, type_vocab_size=1, pad_token_id=1))
    elif name == "distilbert":
        model = tf.DistilBertModel(
            tf.DistilBertConfig(vocab_size=100, dim=hidden, n_layers=2, n_heads=heads,
                                hidden_dim=2 * hidden, max_position_embeddings=small["max_position_embeddings"])
        )  # fmt: skip
    elif name == "gpt2":
        model = tf.GPT2Model(
            tf.GPT2Config(vocab_size=100, n_embd=hidden, n_layer=2, n_head=heads, n_positions=max(64, seq))
        )  # fmt: skip
    elif name == "llama":
        model = tf.LlamaModel(tf.LlamaConfig(**small, num_key_value_heads=1))
    else:
        raise ValueError(f"unknown model {name!r}; known: {', '.join(TRANSFORMERS)}")
    model.config.use_cache = False
    rng = np.random.default_rng(0)
    ids = rng.integers(2, 100, (batch, seq)).astype(np.int64)
    mask = np.ones((batch, seq), np.int64)
    mask[-1, -2:] = 0
    feeds = {"input_ids": ids, "attention_mask": mask}
    axes = {k: {0: "batch", 1: "seq"} for k in feeds}
    return model.eval(), feeds, axes


def _vision(name: str) -> tuple[Any, dict[str, np.ndarray], dict[str, dict[int, str]]]:
    import torch
    import torchvision

    torch.manual_seed(0)
    model = getattr(torchvision.models, name)(weights=None).eval()
    x = np.random.default_rng(0).standard_normal((BATCH, 3, 64, 64)).astype(np.float32)
    return model, {"x": x}, {"x": {0: "batch"}}


def export(name: str, exporter: str, path: Path, **sizes: int) -> tuple[Any, dict[str, np.ndarray]]:
    """Write `name` exported by `exporter` to `path`; returns the torch module (as
    exported: it returns the first output) and the sample inputs. `sizes` (batch, seq,
    hidden) go to the transformer models."""
    import torch

    if name in ("resnet18", "mobilenet_v2"):
        model, feeds, axes = _vision(name)
    else:
        model, feeds, axes = _transformer(name, **sizes)
    args = tuple(torch.from_numpy(v) for v in feeds.values())

    class Wrap(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.m = model

        def forward(self, *a: Any) -> Any:
            if name in ("resnet18", "mobilenet_v2"):
                out = self.m(*a)
            else:  # by keyword: GPT-2's second positional argument is past_key_values
                out = self.m(**dict(zip(names, a, strict=True)), return_dict=False)
            return out if isinstance(out, torch.Tensor) else out[0]

    names = list(feeds)
    if exporter == "dynamo":
        dims = {k: {a: torch.export.Dim.AUTO for a in v} for k, v in axes.items()}
        torch.onnx.export(Wrap(), args, str(path), input_names=names, output_names=["y"],
                          dynamo=True, dynamic_shapes=(tuple(dims.values()),), optimize=True)  # fmt: skip
    else:
        torch.onnx.export(Wrap(), args, str(path), input_names=names, output_names=["y"],
                          dynamic_axes={**axes, "y": {0: "batch"}}, dynamo=False, opset_version=17)  # fmt: skip
    return Wrap().eval(), feeds


def check(path: Path, feeds: dict[str, np.ndarray]) -> str:
    """Import without dims= (symbolic, bound at compile time); if that import fails, with
    dims= (bound at import); compare with onnxruntime."""
    try:
        return "symbolic: " + _check(path, feeds, False)
    except Exception as e:
        why = f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"
    return f"dims=: {_check(path, feeds, True)}\n{'':26s}(without dims=: {why})"


def compile_export(
    path: Path, feeds: dict[str, np.ndarray], at_import: bool = False, bind: bool = True
) -> tuple[Any, list[str]]:
    """Import `path` (symbolic dims, or bound at import with `at_import`) and compile it
    for the sizes of `feeds`; the initializers are bound as constants (`bind`) or kept as
    params, set once with `cache_param_invariant=True` as the peers pre-pack weights.
    Returns (the compiled graph, its input names in order)."""
    import rlx
    from rlx.frontends.onnx import import_sized

    module, params, binding, names = import_sized(path, feeds, at_import=at_import)
    if bind:
        opts = rlx.CompileOptions(dim_binding=binding, param_bindings=params)
        return rlx.compile(module, opts), names
    cg = rlx.compile(module, rlx.CompileOptions(dim_binding=binding, cache_param_invariant=True))
    cg.set_params(params)
    return cg, names


def _check(path: Path, feeds: dict[str, np.ndarray], at_import: bool) -> str:
    import onnxruntime as ort

    want = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    t0 = time.perf_counter()
    cg, names = compile_export(path, feeds, at_import)
    got = cg.run(**{k: feeds[k] for k in names})[0]
    dt = time.perf_counter() - t0
    a, b = got.astype(np.float64).ravel(), want.astype(np.float64).ravel()
    cos = float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b) + 1e-30))
    return f"cosine {cos:.6f}  max|diff| {np.abs(a - b).max():.2e}  ({dt:.1f} s)"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", default="bert,gpt2,llama,resnet18,mobilenet_v2")
    p.add_argument("--exporters", default="torchscript,dynamo")
    p.add_argument("--keep", help="directory to keep the .onnx files in")
    a = p.parse_args()
    out = Path(a.keep or tempfile.mkdtemp())
    out.mkdir(parents=True, exist_ok=True)
    for name in a.models.split(","):
        for exp in a.exporters.split(","):
            path = out / f"{name}_{exp}.onnx"
            try:
                _, feeds = export(name, exp, path)
            except Exception as e:  # an exporter failure is reported, not an RLX result
                print(
                    f"{name:13s} {exp:11s} EXPORT FAILED: {type(e).__name__}: {str(e).splitlines()[0][:160]}"
                )
                continue
            try:
                print(f"{name:13s} {exp:11s} {check(path, feeds)}", flush=True)
            except Exception as e:
                print(
                    f"{name:13s} {exp:11s} FAILED: {type(e).__name__}: {str(e).splitlines()[0][:300]}"
                )
                if "-v" in __import__("sys").argv:
                    traceback.print_exc()


if __name__ == "__main__":
    main()
