"""Model builders: real architectures as `rlx.Graph`s, bound to Hugging Face state dicts.

* `rlx.models.bert`: BERT-style sentence encoder (all-MiniLM-L6-v2 and friends) with mean
  pooling and L2 normalization.
* `rlx.models.llama`: Llama-style decoder (RMSNorm, RoPE, SwiGLU, GQA, optional KV cache).

Each module has a config dataclass (`from_hf_config` reads a config.json dict), a
`build_*` function returning an `rlx.Graph` for static batch/sequence sizes, and
`load_state_dict` / `prepare_params` to turn a checkpoint into the graph's params.
See docs/models.md.
"""

from __future__ import annotations

from rlx.models import bert, llama

__all__ = ["bert", "llama"]
