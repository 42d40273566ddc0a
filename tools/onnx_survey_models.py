"""The model zoo of tools/onnx_survey.py: small random-weight torchvision and transformers
models with sample inputs.

Each builder returns `(module, feeds, axes)`: a torch module whose forward takes the
feeds positionally and returns a tensor or a tuple of tensors, the sample inputs
(NumPy, by ONNX input name) and the dynamic axes per input (`{name: {axis: dim}}`).
Nothing is downloaded: torchvision models are built with `weights=None`, transformers
models from small configs with random init.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

Built = tuple[Any, dict[str, np.ndarray], dict[str, dict[int, str]]]
BATCH, SEQ, HIDDEN = 2, 7, 32


def _flat(out: Any) -> tuple[Any, ...]:
    """The tensors of a model output (tuple / dict / Cache nested), in order."""
    import torch

    if isinstance(out, torch.Tensor):
        return (out,)
    if isinstance(out, dict):
        out = list(out.values())
    if hasattr(out, "layers") and not isinstance(out, (list, tuple)):  # a transformers Cache
        return tuple(t for layer in out.layers for t in (layer.keys, layer.values))
    if isinstance(out, (list, tuple)):
        return tuple(t for o in out if o is not None for t in _flat(o))
    return ()


class Wrap:
    """Calls `model` with the feeds by keyword (or positionally) and returns flat tensors."""

    @staticmethod
    def make(model: Any, names: list[str], keywords: bool, first: bool, **extra: Any) -> Any:
        import torch

        class _W(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.m = model

            def forward(self, *a: Any) -> Any:
                out = (
                    self.m(**dict(zip(names, a, strict=True)), **extra) if keywords else self.m(*a)
                )
                flat = _flat(out)
                return flat[0] if first else flat

        return _W().eval()


def _rng() -> np.random.Generator:
    import torch

    torch.manual_seed(0)
    return np.random.default_rng(0)


# ------------------------------------------------------------------------- torchvision
def vision(name: str, size: int = 64, frames: int = 0, **kw: Any) -> Callable[[], Built]:
    def build() -> Built:
        import torchvision

        rng = _rng()
        fn = getattr(torchvision.models, name, None)
        for sub in ("segmentation", "video", "detection", "optical_flow"):
            fn = fn or getattr(getattr(torchvision.models, sub), name, None)
        model = fn(weights=None, **kw).eval()
        if name.startswith(("fcn", "deeplab", "lraspp")):
            model.aux_classifier = None
        shp = (1, 3, frames, size, size) if frames else (BATCH, 3, size, size)
        x = rng.standard_normal(shp).astype(np.float32)
        return Wrap.make(model, ["x"], False, True), {"x": x}, {"x": {0: "batch"}}

    return build


def tv_class(cls: str, **cfg: Any) -> Callable[[], Built]:
    """A torchvision model class with a small config (vit, swin)."""

    def build() -> Built:
        import torchvision

        rng = _rng()
        model = getattr(torchvision.models, cls)(**cfg).eval()
        size = cfg.get("image_size", 32)
        x = rng.standard_normal((BATCH, 3, size, size)).astype(np.float32)
        return Wrap.make(model, ["x"], False, True), {"x": x}, {"x": {0: "batch"}}

    return build


def ssdlite_backbone() -> Built:
    import torchvision

    rng = _rng()
    m = torchvision.models.detection.ssdlite320_mobilenet_v3_large(
        weights=None, weights_backbone=None
    )
    x = rng.standard_normal((1, 3, 64, 64)).astype(np.float32)
    return Wrap.make(m.backbone.eval(), ["x"], False, False), {"x": x}, {}


def retinanet_backbone() -> Built:
    import torchvision

    rng = _rng()
    m = torchvision.models.detection.retinanet_resnet50_fpn(weights=None, weights_backbone=None)
    x = rng.standard_normal((1, 3, 64, 64)).astype(np.float32)
    return Wrap.make(m.backbone.eval(), ["x"], False, False), {"x": x}, {}


# ------------------------------------------------------------------------- transformers
def _ids(rng: np.random.Generator, mask: bool = True, types: bool = False) -> dict[str, np.ndarray]:
    ids = rng.integers(2, 100, (BATCH, SEQ)).astype(np.int64)
    feeds = {"input_ids": ids}
    if mask:
        m = np.ones((BATCH, SEQ), np.int64)
        m[-1, -2:] = 0
        feeds["attention_mask"] = m
    if types:
        feeds["token_type_ids"] = (
            (np.arange(SEQ)[None] >= SEQ // 2).repeat(BATCH, 0).astype(np.int64)
        )
    return feeds


def _seq_axes(feeds: dict[str, np.ndarray]) -> dict[str, dict[int, str]]:
    return {k: {0: "batch", 1: "seq"} for k in feeds}


def text(cfg: str, cls: str, mask: bool = True, types: bool = False, first: bool = True,
         **over: Any) -> Callable[[], Built]:  # fmt: skip
    """A transformers text model `cls` from config class `cfg` with `over` small sizes."""

    def build() -> Built:
        import transformers as tf

        rng = _rng()
        c = getattr(tf, cfg)(**over)
        c.use_cache = False
        model = getattr(tf, cls)(c).eval()
        feeds = _ids(rng, mask, types)
        w = Wrap.make(model, list(feeds), True, first, return_dict=False)
        return w, feeds, _seq_axes(feeds)

    return build


SMALL = dict(vocab_size=100, hidden_size=HIDDEN, num_hidden_layers=2, num_attention_heads=2,
             intermediate_size=2 * HIDDEN, max_position_embeddings=64)  # fmt: skip


def decoder_past(cfg: str, cls: str, past: int = 3, **over: Any) -> Callable[[], Built]:
    """A decoder with `past` cached positions: inputs ids, mask, position ids and the
    per-layer past keys / values; outputs logits and the present keys / values."""

    def build() -> Built:
        import torch
        import transformers as tf

        rng = _rng()
        c = getattr(tf, cfg)(**{**SMALL, **over})
        model = getattr(tf, cls)(c).eval()
        n_kv = getattr(c, "num_key_value_heads", None) or c.num_attention_heads
        hd = getattr(c, "head_dim", None) or c.hidden_size // c.num_attention_heads
        layers = c.num_hidden_layers
        feeds = _ids(rng, mask=False)
        feeds["input_ids"] = feeds["input_ids"][:, :2]
        feeds["attention_mask"] = np.ones((BATCH, past + 2), np.int64)
        feeds["position_ids"] = np.arange(past, past + 2)[None].repeat(BATCH, 0).astype(np.int64)
        for i in range(layers):
            for kv in ("key", "value"):
                feeds[f"past_{kv}_{i}"] = rng.standard_normal((BATCH, n_kv, past, hd)).astype(
                    np.float32
                )

        class Past(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.m = model

            def forward(self, *a: Any) -> Any:  # *a: the dynamo exporter's dynamic_shapes
                ids, mask, pos, kv = a[0], a[1], a[2], a[3:]
                cache = tf.DynamicCache(
                    ddp_cache_data=[(kv[2 * i], kv[2 * i + 1]) for i in range(layers)], config=c
                )
                out = self.m(input_ids=ids, attention_mask=mask, position_ids=pos,
                             past_key_values=cache, use_cache=True, return_dict=True)  # fmt: skip
                return (out.logits, *_flat(out.past_key_values))

        axes = {"input_ids": {0: "batch", 1: "seq"}, "attention_mask": {0: "batch", 1: "total"},
                "position_ids": {0: "batch", 1: "seq"}}  # fmt: skip
        axes |= {k: {0: "batch", 2: "past"} for k in feeds if k.startswith("past")}
        return Past().eval(), feeds, axes

    return build


def hf_vision(
    cfg: str, cls: str, size: int = 32, channels: int = 3, **over: Any
) -> Callable[[], Built]:
    def build() -> Built:
        import transformers as tf

        rng = _rng()
        model = getattr(tf, cls)(getattr(tf, cfg)(**over)).eval()
        x = rng.standard_normal((BATCH, channels, size, size)).astype(np.float32)
        w = Wrap.make(model, ["pixel_values"], True, True, return_dict=False)
        return w, {"pixel_values": x}, {"pixel_values": {0: "batch"}}

    return build


def audio(
    cfg: str, cls: str, name: str, shape: tuple[int, ...], part: str = "", **over: Any
) -> Callable[[], Built]:
    """An audio model on a random `shape` input `name` (`part`: a submodule, e.g. the encoder)."""

    def build() -> Built:
        import transformers as tf

        rng = _rng()
        model = getattr(tf, cls)(getattr(tf, cfg)(**over)).eval()
        model = getattr(model, part) if part else model
        x = rng.standard_normal(shape).astype(np.float32)
        w = Wrap.make(model, [name], True, True, return_dict=False)
        return w, {name: x}, {name: {0: "batch"}}

    return build


def t5_decoder() -> Built:
    """T5 decoder step with encoder states (cross attention) as an input."""
    import torch
    import transformers as tf

    rng = _rng()
    c = tf.T5Config(vocab_size=100, d_model=HIDDEN, d_kv=16, d_ff=64, num_layers=2, num_heads=2)
    model = tf.T5ForConditionalGeneration(c).eval()

    class Dec(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.m = model

        def forward(self, ids: Any, enc: Any, enc_mask: Any) -> Any:
            out = self.m.decoder(input_ids=ids, encoder_hidden_states=enc,
                                 encoder_attention_mask=enc_mask, use_cache=False, return_dict=True)  # fmt: skip
            return self.m.lm_head(out.last_hidden_state)

    feeds = {"decoder_input_ids": rng.integers(0, 100, (BATCH, 3)).astype(np.int64),
             "encoder_hidden_states": rng.standard_normal((BATCH, SEQ, HIDDEN)).astype(np.float32),
             "encoder_attention_mask": np.ones((BATCH, SEQ), np.int64)}  # fmt: skip
    axes = {"decoder_input_ids": {0: "batch", 1: "dec"}, "encoder_hidden_states": {0: "batch", 1: "seq"},
            "encoder_attention_mask": {0: "batch", 1: "seq"}}  # fmt: skip
    return Dec().eval(), feeds, axes


def clip_model() -> Built:
    import transformers as tf

    rng = _rng()
    c = tf.CLIPConfig(
        text_config=dict(vocab_size=100, hidden_size=HIDDEN, num_hidden_layers=2, num_attention_heads=2,
                         intermediate_size=64, max_position_embeddings=16),
        vision_config=dict(hidden_size=HIDDEN, num_hidden_layers=2, num_attention_heads=2,
                           intermediate_size=64, image_size=32, patch_size=8),
        projection_dim=16)  # fmt: skip
    model = tf.CLIPModel(c).eval()
    feeds = _ids(rng)
    feeds["pixel_values"] = rng.standard_normal((BATCH, 3, 32, 32)).astype(np.float32)
    axes = _seq_axes({k: v for k, v in feeds.items() if k != "pixel_values"})
    w = Wrap.make(model, list(feeds), True, False, return_dict=False)
    return w, feeds, axes


def _bert_like(**over: Any) -> dict[str, Any]:
    return {**SMALL, **over}


MODELS: dict[str, Callable[[], Built]] = {
    # torchvision classification not in bench/conv_models.py
    "alexnet": vision("alexnet", 224),
    "vgg11_bn": vision("vgg11_bn", 32),
    "googlenet": vision("googlenet", 64, aux_logits=False, init_weights=True),
    "inception_v3": vision("inception_v3", 80, aux_logits=False, init_weights=True),
    "resnet50": vision("resnet50"),
    "resnext50_32x4d": vision("resnext50_32x4d"),
    "wide_resnet50_2": vision("wide_resnet50_2", 32),
    "mnasnet0_5": vision("mnasnet0_5"),
    "mobilenet_v3_large": vision("mobilenet_v3_large"),
    "efficientnet_v2_s": vision("efficientnet_v2_s"),
    "regnet_x_400mf": vision("regnet_x_400mf"),
    "squeezenet1_0": vision("squeezenet1_0"),
    "shufflenet_v2_x0_5": vision("shufflenet_v2_x0_5"),
    "tv_vit": tv_class(
        "VisionTransformer",
        image_size=32,
        patch_size=8,
        num_layers=2,
        num_heads=2,
        hidden_dim=32,
        mlp_dim=64,
        num_classes=10,
    ),
    "tv_swin": tv_class(
        "SwinTransformer",
        patch_size=[4, 4],
        embed_dim=16,
        depths=[2, 2],
        num_heads=[2, 2],
        window_size=[4, 4],
        num_classes=10,
    ),
    "maxvit_t": vision("maxvit_t", 224),
    # segmentation, video, detection pieces, flow
    "fcn_resnet50": vision("fcn_resnet50", 64, weights_backbone=None, aux_loss=False),
    "deeplabv3_mobilenet_v3_large": vision(
        "deeplabv3_mobilenet_v3_large", 64, weights_backbone=None
    ),
    "lraspp_mobilenet_v3_large": vision("lraspp_mobilenet_v3_large", 64, weights_backbone=None),
    "r3d_18": vision("r3d_18", 32, frames=4),
    "mc3_18": vision("mc3_18", 32, frames=4),
    "r2plus1d_18": vision("r2plus1d_18", 32, frames=4),
    "ssdlite_backbone": ssdlite_backbone,
    "retinanet_backbone": retinanet_backbone,
    # transformers encoders
    "vit": hf_vision("ViTConfig", "ViTModel", **_bert_like(image_size=32, patch_size=8)),
    "deit": hf_vision("DeiTConfig", "DeiTModel", **_bert_like(image_size=32, patch_size=8)),
    "swin": hf_vision(
        "SwinConfig",
        "SwinModel",
        image_size=32,
        patch_size=4,
        embed_dim=16,
        depths=[2, 2],
        num_heads=[2, 2],
        window_size=4,
    ),
    "convnext": hf_vision(
        "ConvNextConfig", "ConvNextModel", num_stages=2, hidden_sizes=[16, 32], depths=[1, 1]
    ),
    "beit": hf_vision(
        "BeitConfig",
        "BeitModel",
        **_bert_like(image_size=32, patch_size=8, use_relative_position_bias=True),
    ),
    "dinov2": hf_vision("Dinov2Config", "Dinov2Model", **_bert_like(image_size=32, patch_size=8)),
    "segformer": hf_vision(
        "SegformerConfig",
        "SegformerModel",
        num_encoder_blocks=2,
        depths=[1, 1],
        sr_ratios=[2, 1],
        hidden_sizes=[16, 32],
        num_attention_heads=[1, 2],
        patch_sizes=[7, 3],
        strides=[4, 2],
        mlp_ratios=[2, 2],
    ),
    "mobilevit": hf_vision(
        "MobileViTConfig",
        "MobileViTModel",
        image_size=64,
        hidden_sizes=[16, 24, 32],
        neck_hidden_sizes=[8, 8, 16, 16, 24, 24, 32],
        size=64,
    ),
    "clip": clip_model,
    "mobilebert": text(
        "MobileBertConfig",
        "MobileBertModel",
        types=True,
        **_bert_like(
            embedding_size=16,
            intra_bottleneck_size=16,
            true_hidden_size=16,
            num_feedforward_networks=2,
        ),
    ),
    "albert": text("AlbertConfig", "AlbertModel", types=True, **_bert_like(embedding_size=16)),
    "electra": text("ElectraConfig", "ElectraModel", types=True, **_bert_like(embedding_size=16)),
    "deberta_v2": text(
        "DebertaV2Config",
        "DebertaV2Model",
        types=True,
        **_bert_like(relative_attention=True, position_buckets=8, pos_att_type=["p2c", "c2p"]),
    ),
    "xlm_roberta": text("XLMRobertaConfig", "XLMRobertaModel", **_bert_like(pad_token_id=1)),
    "mpnet": text("MPNetConfig", "MPNetModel", **_bert_like()),
    "t5_encoder": text(
        "T5Config",
        "T5EncoderModel",
        vocab_size=100,
        d_model=HIDDEN,
        d_kv=16,
        d_ff=64,
        num_layers=2,
        num_heads=2,
    ),
    "t5_decoder": t5_decoder,
    "bart": text(
        "BartConfig",
        "BartModel",
        vocab_size=100,
        d_model=HIDDEN,
        encoder_layers=1,
        decoder_layers=1,
        encoder_attention_heads=2,
        decoder_attention_heads=2,
        encoder_ffn_dim=64,
        decoder_ffn_dim=64,
        max_position_embeddings=64,
    ),
    "whisper_encoder": audio(
        "WhisperConfig",
        "WhisperModel",
        "input_features",
        (1, 8, 32),
        "encoder",
        d_model=HIDDEN,
        pad_token_id=1,
        bos_token_id=2,
        eos_token_id=3,
        decoder_start_token_id=2,
        encoder_layers=1,
        decoder_layers=1,
        encoder_attention_heads=2,
        decoder_attention_heads=2,
        num_mel_bins=8,
        max_source_positions=16,
        encoder_ffn_dim=64,
        decoder_ffn_dim=64,
        vocab_size=100,
    ),
    "wav2vec2": audio(
        "Wav2Vec2Config",
        "Wav2Vec2Model",
        "input_values",
        (BATCH, 800),
        **_bert_like(
            conv_dim=[16, 16],
            conv_stride=[5, 2],
            conv_kernel=[10, 3],
            num_conv_pos_embeddings=16,
            num_conv_pos_embedding_groups=2,
            feat_extract_norm="group",
        ),
    ),
    # decoders
    "gpt_neo": text(
        "GPTNeoConfig",
        "GPTNeoModel",
        vocab_size=100,
        hidden_size=HIDDEN,
        num_layers=2,
        num_heads=2,
        attention_types=[[["global", "local"], 1]],
        window_size=4,
        max_position_embeddings=64,
    ),
    "gptj": text(
        "GPTJConfig",
        "GPTJModel",
        vocab_size=100,
        n_embd=HIDDEN,
        n_layer=2,
        n_head=2,
        rotary_dim=8,
        n_positions=64,
    ),
    "opt": text(
        "OPTConfig",
        "OPTModel",
        vocab_size=100,
        hidden_size=HIDDEN,
        num_hidden_layers=2,
        num_attention_heads=2,
        ffn_dim=64,
        word_embed_proj_dim=HIDDEN,
        max_position_embeddings=64,
    ),
    "bloom": text(
        "BloomConfig", "BloomModel", vocab_size=100, hidden_size=HIDDEN, n_layer=2, n_head=2
    ),
    "falcon": text(
        "FalconConfig",
        "FalconModel",
        vocab_size=100,
        hidden_size=HIDDEN,
        num_hidden_layers=2,
        num_attention_heads=2,
        new_decoder_architecture=False,
        multi_query=True,
    ),
    "mistral": text(
        "MistralConfig", "MistralModel", **_bert_like(num_key_value_heads=1, sliding_window=4)
    ),
    "phi": text("PhiConfig", "PhiModel", **_bert_like(partial_rotary_factor=0.5)),
    "qwen2": text("Qwen2Config", "Qwen2Model", **_bert_like(num_key_value_heads=1)),
    "gemma": text("GemmaConfig", "GemmaModel", **_bert_like(num_key_value_heads=1, head_dim=16)),
    "gpt_bigcode": text(
        "GPTBigCodeConfig",
        "GPTBigCodeModel",
        vocab_size=100,
        n_embd=HIDDEN,
        n_layer=2,
        n_head=2,
        n_positions=64,
        multi_query=True,
    ),
    "codegen": text(
        "CodeGenConfig",
        "CodeGenModel",
        vocab_size=100,
        n_embd=HIDDEN,
        n_layer=2,
        n_head=2,
        rotary_dim=8,
        n_positions=64,
        n_ctx=64,
    ),
    "llama_past": decoder_past("LlamaConfig", "LlamaForCausalLM", num_key_value_heads=1),
    "qwen2_past": decoder_past("Qwen2Config", "Qwen2ForCausalLM", num_key_value_heads=1),
    "gemma_past": decoder_past(
        "GemmaConfig", "GemmaForCausalLM", num_key_value_heads=1, head_dim=16
    ),
    "phi3_past": decoder_past(
        "Phi3Config", "Phi3ForCausalLM", num_key_value_heads=2, pad_token_id=0
    ),
}
"""Survey models by name (insertion order is the table's order)."""


def half(build: Callable[[], Built]) -> Callable[[], Built]:
    """`build` in float16 (weights and float inputs): an f16 model as exported for GPUs."""

    def b() -> Built:
        model, feeds, axes = build()
        feeds = {k: v.astype(np.float16) if v.dtype == np.float32 else v for k, v in feeds.items()}
        return model.half(), feeds, axes

    return b


MODELS |= {
    "bert": text("BertConfig", "BertModel", types=True, **SMALL),
    "gpt2": text(
        "GPT2Config",
        "GPT2Model",
        vocab_size=100,
        n_embd=HIDDEN,
        n_layer=2,
        n_head=2,
        n_positions=64,
    ),
    "resnet18_f16": half(vision("resnet18", 32)),
    "bert_f16": half(text("BertConfig", "BertModel", types=True, **SMALL)),
    "llama_f16": half(text("LlamaConfig", "LlamaModel", **{**SMALL, "num_key_value_heads": 1})),
}
