"""archzoo plugin: Stability AI's StableLM decoders (StableLM-3B-4E1T, StableLM 2), as transformers 5.23 builds them
(model type ``stablelm``).

A StableLM layer is a pre-LN decoder layer with LayerNorms that have biases: a LayerNorm, grouped-query attention
(``q_proj``, ``k_proj``, ``v_proj`` with biases when ``use_qkv_bias``, ``o_proj`` without), then a second LayerNorm
and a gated SiLU feed-forward (``gate_proj``, ``up_proj``, ``down_proj``, no biases). With
``use_parallel_residual`` (StableLM 2 12B) one LayerNorm feeds both the attention and the feed-forward, whose
outputs are added to the layer's input together. With ``qk_layernorm`` each query head and each key head has a
LayerNorm of its own (no bias: ``h d_h`` and ``h_kv d_h`` weights). Rotary positions turn a fraction of each head
(``partial_rotary_factor``, a quarter by default): no parameters, and element-wise, so FlopCounterMode counts no
FLOPs for them. A final LayerNorm closes the stack; the LM head is untied unless ``tie_word_embeddings`` says
otherwise.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal, Self

from pydantic import Field, PositiveInt, model_validator

from archzoo import Architecture, Reference
from archzoo.architecture import TransformerConfig, check_activation, check_kv_heads
from archzoo.blocks import Block, composite, feed_forward, layer_norm
from archzoo.decoder_parts import (
    PADDING_CHECKED,
    attention_modules,
    causal_attention,
    decoder_descriptions,
    decoder_kwargs,
    decoder_model,
    decoder_modules,
    decoder_reference,
    decoder_symbols,
    decoder_table,
    kv_heads_field,
    labels_kwargs,
    mlp_modules,
    partial_rotary,
    read_partial_rotary,
    settings_ignored,
    with_norms,
)
from archzoo.hf_config import (
    DROPOUT,
    hf_reader,
)
from archzoo.plugin_parts import NumLabels, architectures_hook, head_field, hf_readers_hook, num_labels_field
from archzoo.symbols import symbol

from .activation import register_activation_memory as register_activation_memory

__version__ = "0.1.0"

#: archzoo's head -> transformers' class
CLASSES = {
    "lm": "StableLmForCausalLM",
    "none": "StableLmModel",
    "sequence_classification": "StableLmForSequenceClassification",
    "token_classification": "StableLmForTokenClassification",
}


class StableLmConfig(TransformerConfig):
    """A StableLM decoder; defaults are StableLM-3B-4E1T (Stability AI 2023), which are also transformers'
    StableLmConfig defaults (StableLmAttention refuses heads that do not divide the width)."""

    DEFAULTS: ClassVar[dict[str, Any]] = dict(vocab_size=50304, d_model=2560, n_layers=32, n_heads=32)
    DESCRIPTIONS: ClassVar = decoder_descriptions(
        "rows of the token embedding and of the LM head", "query heads (num_attention_heads); must divide d_model"
    )

    n_kv_heads: PositiveInt | None = kv_heads_field()
    d_ff: PositiveInt = Field(6912, description="hidden width of the gated feed-forward (intermediate_size)")
    max_positions: PositiveInt = Field(
        4096, description="context length (max_position_embeddings; rotary positions: no parameters)"
    )
    activation: str = Field("silu", description="activation of the feed-forward's gate (hidden_act)")
    qkv_bias: bool = Field(False, description="biases on the query, key and value projections (use_qkv_bias)")
    qk_norm: bool = Field(False, description="a LayerNorm per query and key head (qk_layernorm)")
    parallel_residual: bool = Field(
        False, description="one LayerNorm feeds attention and feed-forward, added together (use_parallel_residual)"
    )
    rotary_fraction: float = Field(
        0.25,
        ge=0,
        le=1,
        description="fraction of each head the rotary positions turn (partial_rotary_factor): no parameters, but "
        "transformers' StableLM runs only when it leaves an even number of channels",
    )
    tie_embeddings: bool = Field(False, description="the LM head shares the token embedding matrix")
    head: Literal[tuple(CLASSES)] = head_field(CLASSES, prefix="StableLm")  # type: ignore[valid-type]
    num_labels: NumLabels = num_labels_field(
        "outputs of the sequence_classification and token_classification heads (num_labels)"
    )

    @model_validator(mode="after")
    def _check(self) -> Self:
        check_activation(self.activation)
        check_kv_heads(self.n_heads, self.n_kv_heads)
        d_head = self.d_model // self.n_heads
        rotary = int(d_head * self.rotary_fraction)  # as StableLmAttention computes it
        if rotary % 2:
            raise ValueError(
                f"rotary_fraction: {self.rotary_fraction} of a {d_head}-wide head (d_model {self.d_model} / n_heads "
                f"{self.n_heads}) is {rotary} channels, an odd number the rotary embedding rounds up, so transformers' "
                "forward pass fails; choose a fraction that leaves an even number"
            )
        return self


def build(cfg: StableLmConfig) -> Block:
    s = decoder_symbols(cfg)
    details = ", a LayerNorm per query and key head" if cfg.qk_norm else ""
    positions = "partial rotary positions"
    attn = causal_attention(
        s.d,
        s.d,
        s.h,
        s.d_h,
        cfg.n_heads,
        cfg.n_kv_heads,
        bias=cfg.qkv_bias,
        out_bias=False,
        positions=positions,
        details=details,
    )
    if cfg.qk_norm:
        assert attn.kv_heads is not None
        q_norm = layer_norm("q_norm", s.h * s.d_h, bias=False, description="a LayerNorm(d_h) per query head, no bias")
        k_words = "a LayerNorm(d_h) per key head, no bias"
        attn = with_norms(attn, [q_norm, layer_norm("k_norm", attn.kv_heads * s.d_h, bias=False, description=k_words)])
    mlp = feed_forward("mlp", s.d, symbol("d_ff", cfg.d_ff), activation=cfg.activation, gated=True, bias=False)
    if cfg.parallel_residual:
        parts = [layer_norm("norm", s.d), attn, mlp]
        flow = "parallel decoder layer: one LayerNorm, read by the attention and the feed-forward, both added"
    else:
        parts = [layer_norm("attention_norm", s.d), attn, layer_norm("mlp_norm", s.d), mlp]
        flow = "pre-LN decoder layer: LayerNorm, attention, add; LayerNorm, gated feed-forward, add"
    layer = composite("layer", "decoder_layer", parts, flow)
    return decoder_model(cfg, "stablelm", "StableLM decoder", layer, s, reference_modules(cfg), token="embed_tokens")


def reference_modules(cfg: StableLmConfig) -> dict[str, tuple[str, ...]]:
    """Where each block's parameters live in the transformers class `reference` builds (for `archzoo verify`):
    block path -> submodule names, inside a layer relative to the layer."""
    layer = {
        "norm": "input_layernorm",
        "attention_norm": "input_layernorm",
        **attention_modules(norms=("q_layernorm", "k_layernorm")),
        "mlp_norm": "post_attention_layernorm",
        **mlp_modules("up_proj", "down_proj", gate="gate_proj"),
    }
    return decoder_modules("stablelm", cfg.head, layer)


def reference(cfg: StableLmConfig) -> Reference:
    """StableLmModel or one of its head classes, built from a StableLmConfig with the same keys."""
    own = dict(use_qkv_bias=cfg.qkv_bias, qk_layernorm=cfg.qk_norm, use_parallel_residual=cfg.parallel_residual)
    rotary = dict(rope_parameters=partial_rotary(cfg.rotary_fraction), tie_word_embeddings=cfg.tie_embeddings)
    kwargs = dict(**decoder_kwargs(cfg), **own, **rotary, **labels_kwargs(cfg))
    return decoder_reference(CLASSES, cfg.head, "StableLmConfig", kwargs)


# ---- Hugging Face config.json: StableLmConfig's keys, as transformers 5.23 defines them ---------------------

HF_STABLELM = decoder_table(
    "stablelm",
    "StableLmConfig",
    CLASSES,
    defaults=dict(
        vocab_size=50304,
        intermediate_size=6912,
        hidden_size=2560,
        num_hidden_layers=32,
        num_attention_heads=32,
        num_key_value_heads=32,
        hidden_act="silu",
        max_position_embeddings=4096,
        initializer_range=0.02,
        layer_norm_eps=1e-05,
        use_cache=True,
        tie_word_embeddings=False,
        rope_parameters=None,
        use_qkv_bias=False,
        qk_layernorm=False,
        use_parallel_residual=False,
        hidden_dropout=0.0,
        attention_dropout=0.0,
        bos_token_id=0,
        eos_token_id=0,
        pad_token_id=None,
    ),
    read={
        "vocab_size": "vocab_size",
        "intermediate_size": "d_ff",
        "hidden_size": "d_model",
        "num_hidden_layers": "n_layers",
        "num_attention_heads": "n_heads",
        "num_key_value_heads": "n_kv_heads",
        "hidden_act": "activation",
        "max_position_embeddings": "max_positions",
        "tie_word_embeddings": "tie_embeddings",
        "use_qkv_bias": "qkv_bias",
        "qk_layernorm": "qk_norm",
        "use_parallel_residual": "parallel_residual",
        # rotary settings change no count; read for the fraction it turns and to refuse a type transformers
        # does not build (archzoo.hf_config folds a top-level partial_rotary_factor into it, as loading does)
        "rope_parameters": "rotary_fraction",
        "pad_token_id": PADDING_CHECKED,
        "num_labels": "num_labels",
    },
    ignored={
        "hidden_dropout": DROPOUT,
        "attention_dropout": DROPOUT,
        "classifier_dropout": DROPOUT,
        **settings_ignored(),
    },
)


@hf_reader(HF_STABLELM)
def _from_stablelm(hf: dict[str, Any], model_class: str = "StableLmModel") -> dict[str, Any]:
    return read_partial_rotary(hf, HF_STABLELM, 0.25)  # StableLmConfig's own default fraction


ARCHITECTURE = Architecture(
    name="stablelm",
    title="StableLM",
    summary="Stability AI's decoder (StableLM-3B-4E1T, StableLM 2): pre-LN layers with LayerNorms with biases, "
    "grouped-query attention with optional biases and per-head QK LayerNorms, a gated SiLU feed-forward, partial "
    "rotary positions, in sequence or in parallel.",
    citation="Bellagente et al. Stable LM 2 1.6B Technical Report. 2024. arXiv:2402.17834",
    config_model=StableLmConfig,
    build=build,
    reference=reference,
)

register_architectures = architectures_hook(ARCHITECTURE)
register_hf_readers = hf_readers_hook({"stablelm": (_from_stablelm, "stablelm")})
