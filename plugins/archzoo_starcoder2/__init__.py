"""archzoo plugin: StarCoder2 (BigCode's code models, 3B, 7B and 15B), as transformers 5.23 builds it.

A StarCoder2 layer is a pre-LN decoder layer with LayerNorms that have biases: a LayerNorm, grouped-query
attention (``q_proj``, ``k_proj``, ``v_proj`` and ``o_proj``, with biases when ``use_bias``), the residual sum, a
second LayerNorm and a plain feed-forward (``c_fc``, a GELU, ``c_proj``; not gated), again with biases when
``use_bias``. Positions are rotary: no parameters, and element-wise, so FlopCounterMode counts no FLOPs for them.
A final LayerNorm closes the stack, and the LM head is tied to the token embedding unless
``tie_word_embeddings`` is false.

Sliding-window attention (``sliding_window``, 4,096 in the released checkpoints) is a mask on the same score
products: no parameters, and eager attention computes the full ``N x N`` products, which archzoo counts. The KV
cache figure is per token as the cache grows; a cache that honours the window stops growing at ``sliding_window``
tokens, which archzoo's per-token figure does not model.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal, Self

from pydantic import Field, PositiveInt, model_validator

from archzoo import Architecture, Reference
from archzoo.architecture import (
    TransformerConfig,
    check_activation,
    check_head_count,
    check_kv_heads,
    check_rotary_head_width,
)
from archzoo.blocks import Block, composite, feed_forward, layer_norm, with_modules
from archzoo.decoder_parts import (
    architectures_hook,
    attention_modules,
    causal_attention,
    decoder_heads,
    decoder_modules,
    decoder_stack,
    head_classes,
    head_field,
    hf_readers_hook,
    num_labels_field,
    table_values,
)
from archzoo.hf_config import (
    DROPOUT,
    INITIALISATION,
    NORM_EPSILON,
    TOKEN_ID,
    USE_CACHE,
    HFTable,
    check_padding_index,
    hf_reader,
    rope_type,
)
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


class Starcoder2Config(TransformerConfig):
    """A StarCoder2 decoder; defaults are StarCoder2-3B (Lozhkov et al. 2024), which are also transformers'
    Starcoder2Config defaults."""

    DEFAULTS: ClassVar[dict[str, Any]] = dict(vocab_size=49152, d_model=3072, n_layers=30, n_heads=24)
    DESCRIPTIONS: ClassVar = dict(
        vocab_size="rows of the token embedding (and of the LM head)",
        d_model="model width (hidden_size)",
        n_layers="decoder layers (num_hidden_layers)",
        n_heads="query heads (num_attention_heads)",
    )

    HEADS_DIVIDE_WIDTH: ClassVar = False  # a head is d_head wide, or d_model // n_heads rounded down
    n_kv_heads: PositiveInt = Field(
        2, description="key/value heads (num_key_value_heads; grouped-query attention); must divide n_heads"
    )
    d_head: PositiveInt | None = Field(
        None, description="width of one head (head_dim; null = d_model // n_heads, rounded down as transformers does)"
    )
    d_ff: PositiveInt = Field(12288, description="hidden width of the feed-forward (intermediate_size)")
    max_positions: PositiveInt = Field(
        4096, description="context length (max_position_embeddings; rotary positions: no parameters)"
    )
    activation: str = Field("gelu_pytorch_tanh", description="activation of the feed-forward (hidden_act)")
    bias: bool = Field(True, description="biases on every linear of the layers (use_bias)")
    tie_embeddings: bool = Field(True, description="the LM head shares the token embedding matrix")
    head: Literal[tuple(CLASSES)] = head_field(CLASSES, prefix="Starcoder2")  # type: ignore[valid-type]
    num_labels: PositiveInt = num_labels_field(
        "outputs of the sequence_classification and token_classification heads (num_labels)"
    )

    @model_validator(mode="after")
    def _check(self) -> Self:
        check_activation(self.activation)
        if self.d_head is None:
            check_head_count(self.d_model, self.n_heads, "or give d_head")
        check_kv_heads(self.n_heads, self.n_kv_heads)
        check_rotary_head_width(self.d_model, self.n_heads, self.d_head)
        return self

    @property
    def head_width(self) -> int:
        return self.d_head or self.d_model // self.n_heads


def build(cfg: Starcoder2Config) -> Block:
    d = symbol("d", cfg.d_model)
    V = symbol("V", cfg.vocab_size)
    L = symbol("L", cfg.n_layers)
    h = symbol("h", cfg.n_heads)
    d_h = symbol("d_h", cfg.head_width)
    inner = d if cfg.d_head is None and cfg.d_model % cfg.n_heads == 0 else h * d_h
    attn = causal_attention(
        d,
        inner,
        h,
        d_h,
        cfg.n_heads,
        cfg.n_kv_heads,
        bias=cfg.bias,
        details=", biases on every projection" if cfg.bias else ", no biases",
    )
    mlp = feed_forward("mlp", d, symbol("d_ff", cfg.d_ff), activation=cfg.activation, bias=cfg.bias)
    layer = composite(
        "layer",
        "decoder_layer",
        [layer_norm("attention_norm", d), attn, layer_norm("mlp_norm", d), mlp],
        "pre-LN decoder layer: LayerNorm, attention, add; LayerNorm, feed-forward, add",
    )
    children = [
        *decoder_stack(layer, d, V, L, token="embed_tokens"),
        *decoder_heads(cfg.head, d, V, tied=cfg.tie_embeddings, num_labels=cfg.num_labels),
    ]
    root = composite("starcoder2", "model", children, "StarCoder2 decoder")
    return with_modules(root, reference_modules(cfg))


def reference_modules(cfg: Starcoder2Config) -> dict[str, tuple[str, ...]]:
    """Where each block's parameters live in the transformers class `reference` builds (for `archzoo verify`):
    block path -> submodule names, inside a layer relative to the layer."""
    layer = {
        "attention_norm": "input_layernorm",
        **attention_modules(),
        "mlp_norm": "post_attention_layernorm",
        "mlp": "mlp",
        "mlp.fc_in": "mlp.c_fc",
        "mlp.fc_out": "mlp.c_proj",
    }
    return decoder_modules("starcoder2", cfg.head, layer)


def reference(cfg: Starcoder2Config) -> Reference:
    """Starcoder2Model or one of its head classes, built from a Starcoder2Config with the same keys."""
    labelled = cfg.head in ("sequence_classification", "token_classification")
    return Reference(
        library="transformers",
        target=f"transformers.{CLASSES[cfg.head]}",
        config_class="transformers.Starcoder2Config",
        kwargs=dict(
            vocab_size=cfg.vocab_size,
            hidden_size=cfg.d_model,
            num_hidden_layers=cfg.n_layers,
            num_attention_heads=cfg.n_heads,
            num_key_value_heads=cfg.n_kv_heads,
            intermediate_size=cfg.d_ff,
            max_position_embeddings=cfg.max_positions,
            hidden_act=cfg.activation,
            use_bias=cfg.bias,
            tie_word_embeddings=cfg.tie_embeddings,
            **({"head_dim": cfg.d_head} if cfg.d_head is not None else {}),
            **({"num_labels": cfg.num_labels} if labelled else {}),
        ),
    )


# ---- Hugging Face config.json: Starcoder2Config's keys, as transformers 5.23 defines them -------------------

HF_STARCODER2 = HFTable(
    model_type="starcoder2",
    config_class="Starcoder2Config",
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
    aliases={},
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
        "tie_word_embeddings": "tie_embeddings",
        # an index, not a size; read only to refuse what transformers' nn.Embedding refuses
        "pad_token_id": "(checked: inside the vocabulary)",
        # rotary settings change no count; read to refuse a type transformers does not build
        "rope_parameters": "(checked: a rotary type transformers builds)",
        "num_labels": "num_labels",
    },
    ignored={
        "attention_dropout": DROPOUT,
        "residual_dropout": DROPOUT,
        "embedding_dropout": DROPOUT,
        "classifier_dropout": DROPOUT,
        "initializer_range": INITIALISATION,
        "norm_epsilon": NORM_EPSILON,
        "use_cache": USE_CACHE,
        "bos_token_id": TOKEN_ID,
        "eos_token_id": TOKEN_ID,
        "sliding_window": "sliding-window attention: a mask on the same score products, so no parameters and the "
        "same eager FLOPs (archzoo counts the full N x N products, as eager attention computes them)",
    },
    refused={},
    base_class="Starcoder2Model",
    classes=head_classes(CLASSES),
)


@hf_reader(HF_STARCODER2)
def _from_starcoder2(hf: dict[str, Any], model_class: str = "Starcoder2Model") -> dict[str, Any]:
    check_padding_index(hf["vocab_size"], hf.get("pad_token_id"))
    rope_type(hf["rope_parameters"], "Starcoder2Config")  # rotary settings change no count: only a type is checked
    return table_values(hf, HF_STARCODER2)


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
