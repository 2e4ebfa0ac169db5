"""archzoo plugin: StarCoder2 (BigCode's code models, 3B, 7B and 15B), as transformers 5.23 builds it.

A StarCoder2 layer is a pre-LN decoder layer with LayerNorms that have biases: a LayerNorm, grouped-query
attention (``q_proj``, ``k_proj``, ``v_proj`` and ``o_proj``, with biases when ``use_bias``), the residual sum, a
second LayerNorm and a plain feed-forward (``c_fc``, a GELU, ``c_proj``; not gated), again with biases when
``use_bias``. Positions are rotary: no parameters, and element-wise, so FlopCounterMode counts no FLOPs for them.
A final LayerNorm closes the stack, and the LM head is tied to the token embedding unless
``tie_word_embeddings`` is false.

Sliding-window attention (``sliding_window``, 4,096 in the released checkpoints, on every layer) is a mask on the
same score products: no parameters, and eager attention computes the full ``N x N`` products, which archzoo counts.
transformers' ``DynamicCache`` keeps the last ``W - 1`` tokens in every layer of a windowed model, and the step
reading a new token attends to ``W`` keys: past the window archzoo's decode step reads ``W`` for ``N``
(`archzoo.decoder_parts.windowed`). A window under one token is refused: transformers builds its mask with the wrong
shape and the forward pass fails.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field, PositiveInt

from archzoo import Architecture, Reference
from archzoo.blocks import Block, composite, feed_forward, layer_norm
from archzoo.decoder_parts import (
    PADDING_CHECKED,
    ROTARY_TYPE_CHECKED,
    HeadWidthConfig,
    attention_modules,
    causal_attention,
    d_head_field,
    decoder_descriptions,
    decoder_kwargs,
    decoder_model,
    decoder_modules,
    decoder_reference,
    decoder_symbols,
    decoder_table,
    head_dim_kwargs,
    kv_heads_field,
    labels_kwargs,
    mlp_modules,
    read_rotary_decoder,
    settings_ignored,
    windowed,
)
from archzoo.hf_config import (
    DROPOUT,
    hf_reader,
)
from archzoo.plugin_parts import NumLabels, architectures_hook, head_field, hf_readers_hook, num_labels_field
from archzoo.symbols import symbol

from .activation import register_activation_memory as register_activation_memory

__version__ = "0.1.0"

#: archzoo's head -> transformers' class (StarCoder2 has no question answering class)
CLASSES = {
    "lm": "Starcoder2ForCausalLM",
    "none": "Starcoder2Model",
    "sequence_classification": "Starcoder2ForSequenceClassification",
    "token_classification": "Starcoder2ForTokenClassification",
}


class Starcoder2Config(HeadWidthConfig):
    """A StarCoder2 decoder; defaults are StarCoder2-3B (Lozhkov et al. 2024), which are also transformers'
    Starcoder2Config defaults."""

    DEFAULTS: ClassVar[dict[str, Any]] = dict(vocab_size=49152, d_model=3072, n_layers=30, n_heads=24)
    DESCRIPTIONS: ClassVar = decoder_descriptions("rows of the token embedding (and of the LM head)")

    n_kv_heads: PositiveInt = kv_heads_field(
        2, "key/value heads (num_key_value_heads; grouped-query attention); must divide n_heads"
    )
    d_head: PositiveInt | None = d_head_field()
    d_ff: PositiveInt = Field(12288, description="hidden width of the feed-forward (intermediate_size)")
    max_positions: PositiveInt = Field(
        4096, description="context length (max_position_embeddings; rotary positions: no parameters)"
    )
    activation: str = Field("gelu_pytorch_tanh", description="activation of the feed-forward (hidden_act)")
    sliding_window: PositiveInt | None = Field(
        None, description="tokens every layer's attention attends to (sliding_window; null: no window)"
    )
    bias: bool = Field(True, description="biases on every linear of the layers (use_bias)")
    tie_embeddings: bool = Field(True, description="the LM head shares the token embedding matrix")
    head: Literal[tuple(CLASSES)] = head_field(CLASSES, prefix="Starcoder2")  # type: ignore[valid-type]
    num_labels: NumLabels = num_labels_field(
        "outputs of the sequence_classification and token_classification heads (num_labels)"
    )


def build(cfg: Starcoder2Config) -> Block:
    s = decoder_symbols(cfg)
    details = ", biases on every projection" if cfg.bias else ", no biases"
    attn = causal_attention(s.d, s.inner, s.h, s.d_h, cfg.n_heads, cfg.n_kv_heads, bias=cfg.bias, details=details)
    attn = windowed(attn, cfg.sliding_window)
    mlp = feed_forward("mlp", s.d, symbol("d_ff", cfg.d_ff), activation=cfg.activation, bias=cfg.bias)
    layer = composite(
        "layer",
        "decoder_layer",
        [layer_norm("attention_norm", s.d), attn, layer_norm("mlp_norm", s.d), mlp],
        "pre-LN decoder layer: LayerNorm, attention, add; LayerNorm, feed-forward, add",
    )
    return decoder_model(
        cfg, "starcoder2", "StarCoder2 decoder", layer, s, reference_modules(cfg), token="embed_tokens"
    )


def reference_modules(cfg: Starcoder2Config) -> dict[str, tuple[str, ...]]:
    """Where each block's parameters live in the transformers class `reference` builds (for `archzoo verify`):
    block path -> submodule names, inside a layer relative to the layer."""
    layer = {
        "attention_norm": "input_layernorm",
        **attention_modules(),
        "mlp_norm": "post_attention_layernorm",
        **mlp_modules("c_fc", "c_proj"),
    }
    return decoder_modules("starcoder2", cfg.head, layer)


def reference(cfg: Starcoder2Config) -> Reference:
    """Starcoder2Model or one of its head classes, built from a Starcoder2Config with the same keys."""
    own = dict(use_bias=cfg.bias, tie_word_embeddings=cfg.tie_embeddings, sliding_window=cfg.sliding_window)
    kwargs = dict(**decoder_kwargs(cfg), **own, **head_dim_kwargs(cfg), **labels_kwargs(cfg))
    return decoder_reference(CLASSES, cfg.head, "Starcoder2Config", kwargs)


# ---- Hugging Face config.json: Starcoder2Config's keys, as transformers 5.23 defines them -------------------

HF_STARCODER2 = decoder_table(
    "starcoder2",
    "Starcoder2Config",
    CLASSES,
    defaults=dict(
        vocab_size=49152,
        hidden_size=3072,
        intermediate_size=12288,
        num_hidden_layers=30,
        num_attention_heads=24,
        num_key_value_heads=2,
        hidden_act="gelu_pytorch_tanh",
        max_position_embeddings=4096,
        initializer_range=0.018042,
        norm_epsilon=1e-05,
        use_cache=True,
        bos_token_id=50256,
        eos_token_id=50256,
        pad_token_id=None,
        rope_parameters=None,
        sliding_window=None,
        attention_dropout=0.0,
        residual_dropout=0.0,
        embedding_dropout=0.0,
        use_bias=True,
        tie_word_embeddings=True,
    ),
    read={
        "vocab_size": "vocab_size",
        "hidden_size": "d_model",
        "intermediate_size": "d_ff",
        "num_hidden_layers": "n_layers",
        "num_attention_heads": "n_heads",
        "num_key_value_heads": "n_kv_heads",
        # not a Starcoder2Config field, but Starcoder2Attention reads it from the configuration when a file sets it
        "head_dim": "d_head",
        "hidden_act": "activation",
        "max_position_embeddings": "max_positions",
        "use_bias": "bias",
        "sliding_window": "sliding_window",
        "tie_word_embeddings": "tie_embeddings",
        "pad_token_id": PADDING_CHECKED,
        "rope_parameters": ROTARY_TYPE_CHECKED,
        "num_labels": "num_labels",
    },
    ignored={
        "attention_dropout": DROPOUT,
        "residual_dropout": DROPOUT,
        "embedding_dropout": DROPOUT,
        "classifier_dropout": DROPOUT,
        **settings_ignored("norm_epsilon"),
    },
)


@hf_reader(HF_STARCODER2)
def _from_starcoder2(hf: dict[str, Any], model_class: str = "Starcoder2Model") -> dict[str, Any]:
    return read_rotary_decoder(hf, HF_STARCODER2)


ARCHITECTURE = Architecture(
    name="starcoder2",
    title="StarCoder2",
    summary="BigCode's code decoder (StarCoder2-3B, 7B, 15B): pre-LN layers with LayerNorms with biases, "
    "grouped-query attention and a GELU feed-forward with biases, rotary positions, a tied LM head.",
    citation="Lozhkov et al. StarCoder 2 and The Stack v2: The Next Generation. 2024. arXiv:2402.19173",
    config_model=Starcoder2Config,
    build=build,
    reference=reference,
)

register_architectures = architectures_hook(ARCHITECTURE)
register_hf_readers = hf_readers_hook({"starcoder2": (_from_starcoder2, "starcoder2")})
