"""archzoo plugin: Cohere's Command R decoders (Command R, Command R+, Aya 23), as transformers 5.23 builds them
(model type ``cohere``).

A Cohere layer is *parallel*: one LayerNorm without a bias (``CohereLayerNorm``: mean-centred, a weight only)
feeds both the grouped-query attention and the gated SiLU feed-forward (``gate_proj``, ``up_proj``,
``down_proj``, no biases), and both outputs are added to the layer's input. With ``use_qk_norm`` (Command R+) the
queries and keys are normalised per head by LayerNorms of their own, whose weights have one row per head
(``h d_h`` and ``h_kv d_h`` parameters). Positions are rotary: no parameters, and element-wise, so
FlopCounterMode counts no FLOPs for them. A final LayerNorm closes the stack, and the LM head is tied to the
token embedding unless ``tie_word_embeddings`` is false; its logits are multiplied by ``logit_scale``
(element-wise: no parameters, no matmul).
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
    mlp_modules,
    read_rotary_decoder,
    settings_ignored,
    with_norms,
)
from archzoo.hf_config import (
    DROPOUT,
    hf_reader,
)
from archzoo.plugin_parts import architectures_hook, head_field, hf_readers_hook
from archzoo.symbols import symbol

from .activation import register_activation_memory as register_activation_memory

__version__ = "0.1.0"

#: archzoo's head -> transformers' class (transformers has no classifier classes for cohere)
CLASSES = {"lm": "CohereForCausalLM", "none": "CohereModel"}


class CohereConfig(HeadWidthConfig):
    """A Cohere decoder; defaults are Command R (Cohere 2024, CohereForAI/c4ai-command-r-v01), which are also
    transformers' CohereConfig defaults."""

    DEFAULTS: ClassVar[dict[str, Any]] = dict(vocab_size=256000, d_model=8192, n_layers=40, n_heads=64)
    DESCRIPTIONS: ClassVar = decoder_descriptions("rows of the token embedding (and of the LM head)")

    n_kv_heads: PositiveInt | None = kv_heads_field()
    d_head: PositiveInt | None = d_head_field()
    d_ff: PositiveInt = Field(22528, description="hidden width of the gated feed-forward (intermediate_size)")
    max_positions: PositiveInt = Field(
        8192, description="context length (max_position_embeddings; rotary positions: no parameters)"
    )
    activation: str = Field("silu", description="activation of the feed-forward's gate (hidden_act)")
    attention_bias: bool = Field(False, description="biases on the query, key, value and output projections")
    qk_norm: bool = Field(False, description="a LayerNorm per head on the queries and the keys (use_qk_norm)")
    tie_embeddings: bool = Field(True, description="the LM head shares the token embedding matrix")
    head: Literal[tuple(CLASSES)] = head_field(CLASSES)  # type: ignore[valid-type]


def build(cfg: CohereConfig) -> Block:
    s = decoder_symbols(cfg)
    details = ", a LayerNorm per head on queries and keys" if cfg.qk_norm else ""
    attn = causal_attention(
        s.d, s.inner, s.h, s.d_h, cfg.n_heads, cfg.n_kv_heads, bias=cfg.attention_bias, details=details
    )
    if cfg.qk_norm:
        assert attn.kv_heads is not None
        q_norm = layer_norm("q_norm", s.h * s.d_h, bias=False, description="LayerNorm weights per query head (h × d_h)")
        k_words = "LayerNorm weights per key head (h_kv × d_h)"
        attn = with_norms(attn, [q_norm, layer_norm("k_norm", attn.kv_heads * s.d_h, bias=False, description=k_words)])
    mlp = feed_forward("mlp", s.d, symbol("d_ff", cfg.d_ff), activation=cfg.activation, gated=True, bias=False)
    layer = composite(
        "layer",
        "decoder_layer",
        [layer_norm("norm", s.d, bias=False), attn, mlp],
        "parallel decoder layer: one LayerNorm (no bias), read by the attention and the feed-forward, both added "
        "to the layer's input",
    )
    final_norm = layer_norm("final_norm", s.d, bias=False)
    modules = reference_modules(cfg)
    return decoder_model(
        cfg, "cohere", "Cohere decoder", layer, s, modules, token="embed_tokens", final_norm=final_norm
    )


def reference_modules(cfg: CohereConfig) -> dict[str, tuple[str, ...]]:
    """Where each block's parameters live in the transformers class `reference` builds (for `archzoo verify`):
    block path -> submodule names, inside a layer relative to the layer."""
    layer = {
        "norm": "input_layernorm",
        **attention_modules(norms=("q_norm", "k_norm")),
        **mlp_modules("up_proj", "down_proj", gate="gate_proj"),
    }
    return decoder_modules("cohere", cfg.head, layer, heads=("lm_head",))


def reference(cfg: CohereConfig) -> Reference:
    """CohereModel or CohereForCausalLM, built from a CohereConfig with the same keys."""
    own = dict(attention_bias=cfg.attention_bias, use_qk_norm=cfg.qk_norm, tie_word_embeddings=cfg.tie_embeddings)
    tokens = dict(pad_token_id=None, bos_token_id=None, eos_token_id=None)
    kwargs = dict(**decoder_kwargs(cfg), **own, **tokens, **head_dim_kwargs(cfg))
    return decoder_reference(CLASSES, cfg.head, "CohereConfig", kwargs)


# ---- Hugging Face config.json: CohereConfig's keys, as transformers 5.23 defines them -----------------------

HF_COHERE = decoder_table(
    "cohere",
    "CohereConfig",
    CLASSES,
    defaults=dict(
        vocab_size=256000,
        hidden_size=8192,
        intermediate_size=22528,
        logit_scale=0.0625,
        num_hidden_layers=40,
        num_attention_heads=64,
        num_key_value_heads=None,
        hidden_act="silu",
        max_position_embeddings=8192,
        initializer_range=0.02,
        layer_norm_eps=1e-05,
        use_cache=True,
        pad_token_id=0,
        bos_token_id=5,
        eos_token_id=255001,
        tie_word_embeddings=True,
        rope_parameters=None,
        attention_bias=False,
        attention_dropout=0.0,
        use_qk_norm=False,
    ),
    read={
        "vocab_size": "vocab_size",
        "hidden_size": "d_model",
        "intermediate_size": "d_ff",
        "num_hidden_layers": "n_layers",
        "num_attention_heads": "n_heads",
        "num_key_value_heads": "n_kv_heads",
        # not a CohereConfig field, but CohereAttention reads it from the configuration when a file sets it
        "head_dim": "d_head",
        "hidden_act": "activation",
        "max_position_embeddings": "max_positions",
        "attention_bias": "attention_bias",
        "use_qk_norm": "qk_norm",
        "tie_word_embeddings": "tie_embeddings",
        "pad_token_id": PADDING_CHECKED,
        "rope_parameters": ROTARY_TYPE_CHECKED,
    },
    ignored={
        "logit_scale": "a factor on the logits: element-wise, no parameters and no matmul",
        "attention_dropout": DROPOUT,
        **settings_ignored(),
    },
)


@hf_reader(HF_COHERE)
def _from_cohere(hf: dict[str, Any], model_class: str = "CohereModel") -> dict[str, Any]:
    return read_rotary_decoder(hf, HF_COHERE)


ARCHITECTURE = Architecture(
    name="cohere",
    title="Cohere Command R",
    summary="Cohere's decoder (Command R, Command R+, Aya 23): parallel layers with one bias-free LayerNorm, "
    "grouped-query attention with an optional LayerNorm per head on queries and keys, a gated SiLU feed-forward, "
    "rotary positions, a tied LM head.",
    citation="Cohere. Command R and Command R+ model cards (CohereForAI/c4ai-command-r-v01, c4ai-command-r-plus). 2024",
    config_model=CohereConfig,
    build=build,
    reference=reference,
)

register_architectures = architectures_hook(ARCHITECTURE)
register_hf_readers = hf_readers_hook({"cohere": (_from_cohere, "cohere")})
