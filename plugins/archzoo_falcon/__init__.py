"""archzoo plugin: the Falcon decoders (Falcon-7B, 40B and 180B; TII's RefinedWeb models).

A Falcon layer runs its attention and feed-forward side by side (``parallel_attn``: both read the normalised
input, and both are added to it) or one after the other, as GPT-2 does. Every linear is a ``FalconLinear``
(``x @ Wᵀ``, then the bias if there is one: ``bias``), so its FLOPs are a linear's. The query, key and value come
out of one fused linear whose width says how many key/value heads there are:

* **multi-query** (``multi_query``, Falcon-7B): ``h`` query heads and one key and one value head,
  ``d + 2 d_h`` outputs;
* **the new decoder architecture** (``new_decoder_architecture``, Falcon-40B and 180B): ``h_kv`` groups of
  ``h / h_kv`` query heads, each with its own key and value head, ``(h + 2 h_kv) d_h`` outputs, and two
  LayerNorms per layer (``ln_attn``, ``ln_mlp``; one with ``num_ln_in_parallel_attn: 1``);
* otherwise classic multi-head attention, ``3 d`` outputs.

The attention products always run over all ``h`` heads (a shared key is broadcast), so they cost what
multi-head attention costs. What transformers' ``FalconAttention`` caches differs from what the weights
need: with the new decoder architecture it caches the keys and values after broadcasting them to every query
head, ``2 d`` elements per token and layer, though the model computes only ``2 h_kv d_h``; archzoo's KV cache
figure is what transformers stores (``2 d_h`` for multi-query, ``2 d`` otherwise). Positions are rotary
(no parameters, and element-wise: FlopCounterMode counts no FLOPs for them) or ALiBi biases added to the
scores (``alibi``: no parameters either, and no matmul). The feed-forward is ``dense_h_to_4h``, an activation
and ``dense_4h_to_h`` (width ``ffn_hidden_size``, default ``4 d``), and the LM head is tied to the token
embedding unless ``tie_word_embeddings`` is false.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any, ClassVar, Literal, Self

from pydantic import Field, PositiveInt, model_validator

from archzoo import Architecture, Reference
from archzoo.architecture import TransformerConfig, check_activation
from archzoo.blocks import Block, composite, feed_forward, layer_norm
from archzoo.decoder_parts import (
    DecoderSymbols,
    decoder_descriptions,
    decoder_model,
    decoder_modules,
    decoder_reference,
    decoder_symbols,
    decoder_table,
    fused_attention,
    fused_attention_modules,
    kv_heads,
    labels_kwargs,
    mlp_modules,
    settings_ignored,
)
from archzoo.formula import const
from archzoo.hf_config import DROPOUT, TOKEN_ID, hf_reader, rope_type
from archzoo.plugin_parts import (
    NumLabels,
    architectures_hook,
    head_field,
    hf_readers_hook,
    num_labels_field,
    table_values,
)
from archzoo.symbols import symbol

from .activation import register_activation_memory as register_activation_memory

__version__ = "0.1.0"

#: archzoo's head -> transformers' class
CLASSES = {
    "lm": "FalconForCausalLM",
    "none": "FalconModel",
    "sequence_classification": "FalconForSequenceClassification",
    "token_classification": "FalconForTokenClassification",
    "question_answering": "FalconForQuestionAnswering",
}


class FalconConfig(TransformerConfig):
    """A Falcon decoder; defaults are Falcon-7B (Almazrouei et al. 2023), which are also transformers'
    FalconConfig defaults (FalconAttention refuses heads that do not divide the width)."""

    DEFAULTS: ClassVar[dict[str, Any]] = dict(vocab_size=65024, d_model=4544, n_layers=32, n_heads=71)
    DESCRIPTIONS: ClassVar = decoder_descriptions(
        "rows of the token embedding (and of the LM head)", "query heads (num_attention_heads); must divide d_model"
    )

    n_kv_heads: PositiveInt | None = Field(
        None,
        description="key/value heads of the new decoder architecture (num_kv_heads; null = n_heads); must divide "
        "n_heads. Multi-query attention has one whatever this says; classic attention has n_heads",
    )
    d_ff: PositiveInt | None = Field(
        None, description="hidden width of the feed-forward (ffn_hidden_size; null = 4 d_model)"
    )
    max_positions: PositiveInt = Field(
        2048, description="context length (max_position_embeddings; rotary or ALiBi positions: no parameters)"
    )
    activation: str = Field("gelu", description="activation of the feed-forward: no parameters")
    bias: bool = Field(False, description="biases on every linear of the layers")
    new_decoder_architecture: bool = Field(
        False,
        description="grouped key/value heads (n_kv_heads) and, with num_norms 2, a LayerNorm each for the "
        "attention and the feed-forward (Falcon-40B, 180B); needs parallel_attn",
    )
    multi_query: bool = Field(
        True,
        description="one key and one value head shared by every query head (Falcon-7B); ignored by the new "
        "decoder architecture",
    )
    parallel_attn: bool = Field(
        True,
        description="attention and feed-forward both read the normalised input (one LayerNorm); false: the "
        "feed-forward reads the attention's sum through a second LayerNorm",
    )
    num_norms: Literal[1, 2] | None = Field(
        None,
        description="LayerNorms before the parallel attention and feed-forward (num_ln_in_parallel_attn; null: 2 "
        "with the new decoder architecture, else 1)",
    )
    alibi: bool = Field(False, description="ALiBi biases on the scores instead of rotary positions: no parameters")
    tie_embeddings: bool = Field(True, description="the LM head shares the token embedding matrix")
    head: Literal[tuple(CLASSES)] = head_field(  # type: ignore[valid-type]
        CLASSES, prefix="Falcon", token_classification="a classifier with bias on every token"
    )
    num_labels: NumLabels = num_labels_field()

    @model_validator(mode="after")
    def _check(self) -> Self:
        check_activation(self.activation)
        kv = self.n_heads if self.n_kv_heads is None else self.n_kv_heads
        if self.new_decoder_architecture:
            if self.n_heads % kv:
                raise ValueError(
                    f"n_kv_heads: n_heads {self.n_heads} is not divisible by n_kv_heads {kv}; the new decoder "
                    "architecture groups query heads around each key/value head, so choose a divisor of n_heads"
                )
            if not self.parallel_attn:
                raise ValueError(
                    "parallel_attn: transformers' Falcon layer with the new decoder architecture builds the "
                    "sequential layer's LayerNorms but runs the parallel one, and its forward pass fails; set "
                    "parallel_attn to true (Falcon-40B and 180B are parallel)"
                )
        else:
            if self.parallel_attn and self.num_norms == 2:
                raise ValueError(
                    "num_norms: two LayerNorms before the parallel attention and feed-forward exist only with the "
                    "new decoder architecture (transformers builds them but runs input_layernorm, which then does "
                    "not exist); set num_norms to 1 or null, or new_decoder_architecture to true"
                )
            if not self.multi_query and kv != self.n_heads:
                raise ValueError(
                    f"n_kv_heads: classic multi-head attention has a key/value head per query head, and "
                    f"transformers' forward pass fails with {kv} of {self.n_heads}; set n_kv_heads to null (or "
                    "n_heads), or new_decoder_architecture to true for grouped key/value heads"
                )
        return self

    @property
    def norms(self) -> int:
        """LayerNorms per layer: 2 for the sequential layer and the new decoder architecture's default."""
        if not self.parallel_attn:
            return 2
        if self.new_decoder_architecture:
            return self.num_norms or 2
        return 1


def _attention(cfg: FalconConfig, s: DecoderSymbols) -> Block:
    """The fused query/key/value linear, the attention products over all heads, and the output linear."""
    d, h, d_h = s.d, s.h, s.d_h
    if cfg.new_decoder_architecture:
        h_kv, _ = kv_heads(cfg.n_heads, cfg.n_kv_heads, h, d_h, d)
        kv_width, what, cached = h_kv * d_h, "grouped-query", d
    elif cfg.multi_query:
        kv_width, what, cached = d_h, "multi-query", d_h
    else:
        kv_width, what, cached = d, "multi-head", d
    positions = "ALiBi biases on the scores" if cfg.alibi else "rotary positions on Q and K"
    fused = fused_attention(
        d,
        d + 2 * kv_width,
        bias=cfg.bias,
        qkv=f"Linear({d}, {d + 2 * kv_width}{'' if cfg.bias else ', bias=False'}): query, key and value fused "
        "(query_key_value)",
        # over all h heads: a shared key is broadcast to its queries
        scores=f"softmax(Q Kᵀ / √d_h) V over all h heads, {positions}: no parameters",
        description=f"causal {what} self-attention, {positions}",
    )
    # the key/value heads the weights hold (one with multi-query attention)
    weights_kv = h_kv if cfg.new_decoder_architecture else const(1) if cfg.multi_query else h
    # what transformers' FalconAttention caches: the new decoder architecture's keys and values after broadcasting
    return replace(fused, kv_cache=2 * cached, heads=h, kv_heads=weights_kv, d_head=d_h)


def build(cfg: FalconConfig) -> Block:
    s = decoder_symbols(cfg)
    d = s.d
    d_ff = 4 * d if cfg.d_ff is None else symbol("d_ff", cfg.d_ff)
    mlp = feed_forward("mlp", d, d_ff, activation=cfg.activation, bias=cfg.bias)
    attn = _attention(cfg, s)
    if cfg.norms == 1:
        parts = [layer_norm("norm", d), attn, mlp]
        flow = "one LayerNorm, read by the attention and the feed-forward, both added to the layer's input"
    elif cfg.parallel_attn:
        parts = [layer_norm("attention_norm", d), attn, layer_norm("mlp_norm", d), mlp]
        flow = "a LayerNorm each for the attention and the feed-forward, both on the layer's input and added to it"
    else:
        parts = [layer_norm("attention_norm", d), attn, layer_norm("mlp_norm", d), mlp]
        flow = "attention, add; the feed-forward on the sum, add (sequential)"
    layer = composite("layer", "decoder_layer", parts, f"decoder layer: {flow}")
    modules = reference_modules(cfg)
    return decoder_model(
        cfg, "falcon", "Falcon decoder", layer, s, modules, token="word_embeddings", token_classifier="classifier"
    )


def reference_modules(cfg: FalconConfig) -> dict[str, tuple[str, ...]]:
    """Where each block's parameters live in the transformers class `reference` builds (for `archzoo verify`):
    block path -> submodule names, inside a layer relative to the layer."""
    if cfg.norms == 1:
        norms = {"norm": "input_layernorm"}
    elif cfg.parallel_attn:
        norms = {"attention_norm": "ln_attn", "mlp_norm": "ln_mlp"}
    else:
        norms = {"attention_norm": "input_layernorm", "mlp_norm": "post_attention_layernorm"}
    layer = {
        **norms,
        **fused_attention_modules("self_attention", "query_key_value", "dense"),
        **mlp_modules("dense_h_to_4h", "dense_4h_to_h"),
    }
    return decoder_modules(
        "falcon",
        cfg.head,
        layer,
        base="transformer.",
        embed="word_embeddings",
        layers="h",
        final_norm="ln_f",
        heads=("lm_head", "score", "classifier", "qa_outputs"),
    )


def reference(cfg: FalconConfig) -> Reference:
    """FalconModel or one of its head classes, built from a FalconConfig with the same keys."""
    kwargs = dict(
        vocab_size=cfg.vocab_size,
        hidden_size=cfg.d_model,
        num_hidden_layers=cfg.n_layers,
        num_attention_heads=cfg.n_heads,
        num_kv_heads=cfg.n_kv_heads,
        ffn_hidden_size=cfg.d_ff,
        max_position_embeddings=cfg.max_positions,
        activation=cfg.activation,
        bias=cfg.bias,
        new_decoder_architecture=cfg.new_decoder_architecture,
        multi_query=cfg.multi_query,
        parallel_attn=cfg.parallel_attn,
        num_ln_in_parallel_attn=cfg.num_norms,
        alibi=cfg.alibi,
        tie_word_embeddings=cfg.tie_embeddings,
        **labels_kwargs(cfg),
    )
    return decoder_reference(CLASSES, cfg.head, "FalconConfig", kwargs)


# ---- Hugging Face config.json: FalconConfig's keys, as transformers 5.23 defines them ----------------------

HF_FALCON = decoder_table(
    "falcon",
    "FalconConfig",
    CLASSES,
    defaults=dict(
        vocab_size=65024,
        hidden_size=4544,
        num_hidden_layers=32,
        num_attention_heads=71,
        num_ln_in_parallel_attn=None,
        layer_norm_epsilon=1e-05,
        initializer_range=0.02,
        use_cache=True,
        hidden_dropout=0.0,
        attention_dropout=0.0,
        num_kv_heads=None,
        alibi=False,
        new_decoder_architecture=False,
        multi_query=True,
        parallel_attn=True,
        bias=False,
        max_position_embeddings=2048,
        rope_parameters=None,
        bos_token_id=11,
        eos_token_id=11,
        pad_token_id=None,
        ffn_hidden_size=None,
        activation="gelu",
        tie_word_embeddings=True,
    ),
    aliases={"n_embed": "hidden_size"},  # FalconConfig takes an n_embed argument for hidden_size
    read={
        "vocab_size": "vocab_size",
        "hidden_size": "d_model",
        "num_hidden_layers": "n_layers",
        "num_attention_heads": "n_heads",
        "num_kv_heads": "n_kv_heads",
        "ffn_hidden_size": "d_ff",
        "max_position_embeddings": "max_positions",
        "activation": "activation",
        "bias": "bias",
        "new_decoder_architecture": "new_decoder_architecture",
        "multi_query": "multi_query",
        "parallel_attn": "parallel_attn",
        "num_ln_in_parallel_attn": "num_norms",
        "alibi": "alibi",
        "tie_word_embeddings": "tie_embeddings",
        # rotary settings change no count; read to refuse a type or a partial rotation transformers cannot run
        "rope_parameters": "(checked: a rotary type transformers builds, turning whole heads)",
        "num_labels": "num_labels",
    },
    ignored={
        "hidden_dropout": DROPOUT,
        "attention_dropout": DROPOUT,
        **settings_ignored("layer_norm_epsilon"),
        "pad_token_id": TOKEN_ID + " (Falcon's token embedding has no padding index)",
    },
)


def _check_rope(rope: Any, alibi: bool) -> None:
    """Refuse a rotary type transformers does not build, and a partial rotation its Falcon cannot apply: the
    rotary types other than ``default`` turn ``partial_rotary_factor`` of a head, and FalconAttention rotates
    whole heads with them, so its forward pass fails (with ALiBi no rotation runs)."""
    kind = rope_type(rope, "FalconConfig")
    if kind is None:
        return
    fraction = rope.get("partial_rotary_factor")
    if kind != "default" and not alibi and fraction not in (None, 1, 1.0):
        raise ValueError(
            f"rope_parameters: partial_rotary_factor {json.dumps(fraction)[:30]} with rope_type {kind} rotates part "
            "of each head, and transformers' Falcon rotates whole heads, so its forward pass fails; remove "
            "partial_rotary_factor"
        )


@hf_reader(HF_FALCON)
def _from_falcon(hf: dict[str, Any], model_class: str = "FalconModel") -> dict[str, Any]:
    _check_rope(hf["rope_parameters"], bool(hf["alibi"]))
    return table_values(hf, HF_FALCON)


ARCHITECTURE = Architecture(
    name="falcon",
    title="Falcon",
    summary="TII's decoder (Falcon-7B, 40B, 180B): attention and feed-forward in parallel, multi-query or "
    "grouped key/value heads from one fused linear, no biases, rotary positions (or ALiBi), a tied LM head.",
    citation="Almazrouei et al. The Falcon Series of Open Language Models. 2023. arXiv:2311.16867",
    config_model=FalconConfig,
    build=build,
    reference=reference,
)

register_architectures = architectures_hook(ARCHITECTURE)
register_hf_readers = hf_readers_hook({"falcon": (_from_falcon, "falcon")})
