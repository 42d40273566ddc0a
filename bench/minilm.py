"""The all-MiniLM-L6-v2-shaped sentence encoder outside RLX: NumPy, PyTorch and ONNX.

Shared by bench/models.py (RLX vs NumPy) and bench/peers.py (RLX vs NumPy, onnxruntime,
torch). Every implementation here is written from the architecture (post-norm BERT, see
rlx/models/bert.py), not through RLX, and reads the same Hugging Face-named state dict
(`rlx.models.bert.random_state_dict`): embeddings (word gather + positions + type 0) and
LayerNorm; per layer attention with the padding mask as an additive `(1 - mask) * f32min`
bias, out projection + residual + LayerNorm, exact (erf) GELU FFN + residual + LayerNorm;
mean pooling over the mask and L2 normalization. Importing this module has no side
effects (no thread or cache settings); torch and onnx are imported only when used.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from rlx.models import bert

try:
    from scipy.special import erf as _erf
except ImportError:  # Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7)

    def _erf(x: np.ndarray) -> np.ndarray:
        s, a = np.sign(x), np.abs(x)
        t = 1.0 / (1.0 + 0.3275911 * a)
        y = t * (
            0.254829592
            + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429)))
        )
        return s * (1.0 - y * np.exp(-a * a))


F32_MIN = float(np.finfo(np.float32).min)


# ---------------------------------------------------------------- NumPy (f32)
def _ln(x: np.ndarray, w: np.ndarray, b: np.ndarray, eps: float) -> np.ndarray:
    mu = x.mean(-1, keepdims=True)
    xc = x - mu
    return xc / np.sqrt((xc * xc).mean(-1, keepdims=True) + eps) * w + b


def _softmax(s: np.ndarray) -> np.ndarray:
    e = np.exp(s - s.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def transposed(sd: dict) -> dict:
    """`name -> W.T` (contiguous) for every 2-D `*.weight`, computed once before timing."""
    return {k[: -len(".weight")]: np.ascontiguousarray(v.T) for k, v in sd.items() if v.ndim == 2}


def np_bert(
    sd: dict, lin: dict, cfg: bert.BertConfig, ids: np.ndarray, mask: np.ndarray
) -> np.ndarray:
    """Normalized mean-pooled embeddings [B, hidden]; `lin = transposed(sd)`."""
    b, s = ids.shape
    nh, hd, eps = cfg.num_attention_heads, cfg.head_dim, cfg.layer_norm_eps
    x = (sd["embeddings.word_embeddings.weight"][ids] + sd["embeddings.position_embeddings.weight"][:s]
         + sd["embeddings.token_type_embeddings.weight"][0])  # fmt: skip
    x = _ln(x, sd["embeddings.LayerNorm.weight"], sd["embeddings.LayerNorm.bias"], eps)
    m = mask.astype(np.float32)
    bias = ((1.0 - m) * np.finfo(np.float32).min)[:, None, None, :]
    for i in range(cfg.num_hidden_layers):
        p = f"encoder.layer.{i}."

        def dense(name: str, t: np.ndarray, p: str = p) -> np.ndarray:
            return t @ lin[p + name] + sd[p + name + ".bias"]

        def split(t: np.ndarray) -> np.ndarray:
            return t.reshape(b, s, nh, hd).transpose(0, 2, 1, 3)

        q, k, v = (split(dense(f"attention.self.{n}", x)) for n in ("query", "key", "value"))
        pr = _softmax(q @ k.transpose(0, 1, 3, 2) * np.float32(1 / math.sqrt(hd)) + bias)
        a = (pr @ v).transpose(0, 2, 1, 3).reshape(b, s, -1)
        x = _ln(dense("attention.output.dense", a) + x, sd[p + "attention.output.LayerNorm.weight"],
                sd[p + "attention.output.LayerNorm.bias"], eps)  # fmt: skip
        f = dense("intermediate.dense", x)
        f = 0.5 * f * (1.0 + _erf(f * np.float32(1 / math.sqrt(2.0))))
        x = _ln(dense("output.dense", f) + x, sd[p + "output.LayerNorm.weight"],
                sd[p + "output.LayerNorm.bias"], eps)  # fmt: skip
    pooled = (x * m[..., None]).sum(1) / np.maximum(m.sum(1, keepdims=True), 1e-9)
    return pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)


# ---------------------------------------------------------------- PyTorch
def torch_module(sd: dict, cfg: bert.BertConfig) -> Any:
    """An `nn.Module` with Hugging Face `BertModel` parameter names, `sd` loaded (strict),
    in eval mode; `module(ids, mask)` -> normalized mean-pooled embeddings. Attention is
    `F.scaled_dot_product_attention` with the float mask bias (as HF's default "sdpa")."""
    import torch
    import torch.nn.functional as F
    from torch import nn

    h, nh, hd, eps = cfg.hidden_size, cfg.num_attention_heads, cfg.head_dim, cfg.layer_norm_eps

    class Embeddings(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.word_embeddings = nn.Embedding(cfg.vocab_size, h)
            self.position_embeddings = nn.Embedding(cfg.max_position_embeddings, h)
            self.token_type_embeddings = nn.Embedding(cfg.type_vocab_size, h)
            self.LayerNorm = nn.LayerNorm(h, eps=eps)

        def forward(self, ids: torch.Tensor) -> torch.Tensor:
            s = ids.shape[1]
            x = self.word_embeddings(ids) + self.position_embeddings.weight[:s]
            return self.LayerNorm(x + self.token_type_embeddings.weight[0])

    class SelfAttn(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.query, self.key, self.value = nn.Linear(h, h), nn.Linear(h, h), nn.Linear(h, h)

    class DenseLN(nn.Module):
        def __init__(self, n_in: int) -> None:
            super().__init__()
            self.dense = nn.Linear(n_in, h)
            self.LayerNorm = nn.LayerNorm(h, eps=eps)

        def forward(self, x: torch.Tensor, res: torch.Tensor) -> torch.Tensor:
            return self.LayerNorm(self.dense(x) + res)

    class Attention(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.self = SelfAttn()
            self.output = DenseLN(h)

    class Intermediate(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.dense = nn.Linear(h, cfg.intermediate_size)

    class Layer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.attention = Attention()
            self.intermediate = Intermediate()
            self.output = DenseLN(cfg.intermediate_size)

        def forward(self, x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
            b, s, _ = x.shape
            sa = self.attention.self

            def split(t: torch.Tensor) -> torch.Tensor:
                return t.view(b, s, nh, hd).transpose(1, 2)

            q, k, v = split(sa.query(x)), split(sa.key(x)), split(sa.value(x))
            a = F.scaled_dot_product_attention(q, k, v, attn_mask=bias)
            x = self.attention.output(a.transpose(1, 2).reshape(b, s, h), x)
            return self.output(F.gelu(self.intermediate.dense(x)), x)

    class Encoder(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.layer = nn.ModuleList(Layer() for _ in range(cfg.num_hidden_layers))

    class SentenceEncoder(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embeddings = Embeddings()
            self.encoder = Encoder()

        def forward(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
            m = mask.to(torch.float32)
            bias = ((1.0 - m) * F32_MIN)[:, None, None, :]
            x = self.embeddings(ids)
            for layer in self.encoder.layer:
                x = layer(x, bias)
            pooled = (x * m[..., None]).sum(1) / m.sum(1, keepdim=True).clamp_min(1e-9)
            return F.normalize(pooled, p=2.0, dim=1, eps=1e-12)

    mod = SentenceEncoder()
    mod.load_state_dict({k: torch.from_numpy(np.asarray(v)) for k, v in sd.items()}, strict=True)
    return mod.eval()


# ---------------------------------------------------------------- ONNX (onnx.helper)
def onnx_model(sd: dict, cfg: bert.BertConfig, batch: int, seq: int) -> Any:
    """The encoder as an opset-17 ONNX model built node by node with `onnx.helper` (inputs
    `input_ids`, `attention_mask`: i64 [B, S]; output the normalized pooled embedding).
    Linear weights are stored transposed ([in, out], as torch's exporter folds them) and
    the position/type rows come from Gather on constant indices, as in HF exports."""
    from onnx import TensorProto, helper, numpy_helper

    h, nh, hd, eps = cfg.hidden_size, cfg.num_attention_heads, cfg.head_dim, cfg.layer_norm_eps
    nodes: list[Any] = []
    inits: list[Any] = []
    count = [0]

    def init(name: str, arr: np.ndarray) -> str:
        inits.append(numpy_helper.from_array(np.ascontiguousarray(arr), name))
        return name

    def const(v: Any, dtype: Any = np.float32) -> str:
        return init(f"c{len(inits)}", np.array(v, dtype))

    def node(op: str, ins: list[str], **attrs: Any) -> str:
        count[0] += 1
        out = f"t{count[0]}"
        nodes.append(helper.make_node(op, ins, [out], **attrs))
        return out

    def linear(x: str, name: str) -> str:
        w = init(f"{name}.weight", sd[f"{name}.weight"].T)
        return node("Add", [node("MatMul", [x, w]), init(f"{name}.bias", sd[f"{name}.bias"])])

    def ln(x: str, name: str) -> str:
        g, b = init(f"{name}.weight", sd[f"{name}.weight"]), init(f"{name}.bias", sd[f"{name}.bias"])  # fmt: skip
        return node("LayerNormalization", [x, g, b], axis=-1, epsilon=eps)

    def gelu(x: str) -> str:  # 0.5 x (1 + erf(x / sqrt 2))
        e = node("Erf", [node("Div", [x, const(math.sqrt(2.0))])])
        return node("Mul", [node("Mul", [x, node("Add", [e, const(1.0)])]), const(0.5)])

    emb = "embeddings."
    word = node("Gather", [init(emb + "word_embeddings.weight", sd[emb + "word_embeddings.weight"]), "input_ids"], axis=0)  # fmt: skip
    pos_t = init(emb + "position_embeddings.weight", sd[emb + "position_embeddings.weight"])
    pos = node("Gather", [pos_t, const(np.arange(seq)[None, :], np.int64)], axis=0)  # [1, S, H]
    type_t = init(emb + "token_type_embeddings.weight", sd[emb + "token_type_embeddings.weight"])
    typ = node("Gather", [type_t, const(np.zeros((1, seq), np.int64), np.int64)], axis=0)
    x = ln(node("Add", [node("Add", [word, pos]), typ]), emb + "LayerNorm")  # [B, S, H]

    m = node("Cast", ["attention_mask"], to=TensorProto.FLOAT)
    bias = node("Mul", [node("Sub", [const(1.0), m]), const(F32_MIN)])
    bias = node("Unsqueeze", [bias, const([1, 2], np.int64)])  # [B, 1, 1, S]
    split_shape = const([batch, seq, nh, hd], np.int64)
    merge_shape = const([batch, seq, h], np.int64)
    scale = const(1.0 / math.sqrt(hd))
    for i in range(cfg.num_hidden_layers):
        p = f"encoder.layer.{i}."

        def heads(t: str, perm: list[int]) -> str:
            return node("Transpose", [node("Reshape", [t, split_shape])], perm=perm)

        q = heads(linear(x, p + "attention.self.query"), [0, 2, 1, 3])
        kt = heads(linear(x, p + "attention.self.key"), [0, 2, 3, 1])  # K^T: [B, nh, hd, S]
        v = heads(linear(x, p + "attention.self.value"), [0, 2, 1, 3])
        sc = node("Add", [node("Mul", [node("MatMul", [q, kt]), scale]), bias])
        a = node("MatMul", [node("Softmax", [sc], axis=-1), v])
        a = node("Reshape", [node("Transpose", [a], perm=[0, 2, 1, 3]), merge_shape])
        a = linear(a, p + "attention.output.dense")
        x = ln(node("Add", [a, x]), p + "attention.output.LayerNorm")
        f = linear(gelu(linear(x, p + "intermediate.dense")), p + "output.dense")
        x = ln(node("Add", [f, x]), p + "output.LayerNorm")

    m3 = node("Unsqueeze", [m, const([2], np.int64)])  # [B, S, 1]
    axis1 = const([1], np.int64)
    summed = node("ReduceSum", [node("Mul", [x, m3]), axis1], keepdims=0)  # [B, H]
    cnt = node("Max", [node("ReduceSum", [m3, axis1], keepdims=0), const(1e-9)])  # [B, 1]
    pooled = node("Div", [summed, cnt])
    sq = node("ReduceSum", [node("Mul", [pooled, pooled]), axis1], keepdims=1)
    y = node("Div", [pooled, node("Max", [node("Sqrt", [sq]), const(1e-12)])])
    graph = helper.make_graph(
        nodes, "minilm",
        [helper.make_tensor_value_info(n, TensorProto.INT64, [batch, seq])
         for n in ("input_ids", "attention_mask")],
        [helper.make_tensor_value_info(y, TensorProto.FLOAT, [batch, h])],
        initializer=inits,
    )  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
