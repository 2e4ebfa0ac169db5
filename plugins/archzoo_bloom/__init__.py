"""archzoo plugin: BLOOM decoders (BigScience 2022), as transformers builds BloomModel and BloomForCausalLM.

BLOOM is a Megatron-style GPT decoder: a token embedding followed by a LayerNorm (``word_embeddings_layernorm``),
pre-LN layers whose query, key and value come out of one fused linear with bias (``query_key_value``, the same
weights and FLOPs as three), a GELU feed-forward four times the width, a final LayerNorm (``ln_f``) and an LM head
tied to the token embedding. Positions are ALiBi: a fixed bias per head added to the attention scores, with no
parameters; transformers adds it inside ``baddbmm``, which FlopCounterMode counts as the score product alone, so
it appears in no formula.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, ClassVar, Literal

from pydantic import Field, PositiveInt

from archzoo import Architecture, Reference
from archzoo.architecture import TransformerConfig
from archzoo.blocks import Block, composite, embedding, feed_forward, layer_norm, repeat, with_modules
from archzoo.decoder_parts import (
    SPECIAL_TOKENS,
    decoder_heads,
    decoder_modules,
    decoder_reference,
    decoder_symbols,
    decoder_table,
    fused_attention,
    fused_attention_modules,
    labels_kwargs,
    mlp_modules,
)
from archzoo.formula import Poly, const
from archzoo.hf_config import (
    DROPOUT,
    INITIALISATION,
    NORM_EPSILON,
    NOT_READ,
    TOKEN_ID,
    USE_CACHE,
    hf_reader,
)
from archzoo.plugin_parts import (
    NumLabels,
    architectures_hook,
    head_field,
    hf_readers_hook,
    num_labels_field,
    table_values,
)

# the hook by which this plugin states what its layers save for backward
from .activation import register_activation_memory as register_activation_memory

__version__ = "0.1.0"


#: archzoo's head -> transformers' class
CLASSES = {
    "lm": "BloomForCausalLM",
    "none": "BloomModel",
    "sequence_classification": "BloomForSequenceClassification",
    "token_classification": "BloomForTokenClassification",
    "question_answering": "BloomForQuestionAnswering",
}


class BloomConfig(TransformerConfig):
    """A BLOOM decoder; defaults are BLOOM-560m (bigscience/bloom-560m). BloomAttention refuses heads that do not
    divide the width."""

    DEFAULTS: ClassVar[dict[str, Any]] = dict(vocab_size=250880, d_model=1024, n_layers=24, n_heads=16)
    DESCRIPTIONS: ClassVar = dict(
        vocab_size="rows of the token embedding (BLOOM's 250,680-token vocabulary, padded to 250,880)",
        d_model="model width (hidden_size); the feed-forward is 4 d_model",
        n_layers="decoder layers (n_layer)",
        n_heads="attention heads (n_head); must divide d_model",
    )

    max_positions: PositiveInt = Field(
        2048, description="training context length: the default N only (ALiBi positions have no parameters)"
    )
    tie_embeddings: bool = Field(True, description="LM head shares the token embedding matrix")
    head: Literal[tuple(CLASSES)] = head_field(  # type: ignore[valid-type]
        CLASSES, prefix="Bloom", token_classification="a classifier with bias on every token"
    )
    num_labels: NumLabels = num_labels_field()


def _fused_attention(d: Poly, heads: Poly, cached: bool = True) -> Block:
    """Causal self-attention whose query, key and value come from one d -> 3d linear with bias; ``cached``: its
    keys and values are kept between calls (BloomForQuestionAnswering passes no cache to its base model)."""
    fused = fused_attention(
        d,
        3 * d,
        bias=True,
        qkv=f"Linear({d}, 3·{d}): query, key and value fused",
        scores="softmax(Q Kᵀ / √d_h + ALiBi bias) V: no parameters",
        description="causal self-attention with ALiBi positions; query, key and value from one fused linear",
    )
    # the head layout on the tree, for readers such as activation memory
    return replace(fused, heads=heads) if cached else replace(fused, heads=heads, kv_cache=const(0))


def build(cfg: BloomConfig) -> Block:
    s = decoder_symbols(cfg)
    d = s.d
    attn = _fused_attention(d, s.h, cached=cfg.head != "question_answering")
    mlp = feed_forward("mlp", d, 4 * d, activation="gelu_new", description="feed-forward, GELU (tanh approximation)")
    layer = composite(
        "layer",
        "decoder_layer",
        [layer_norm("attention_norm", d), attn, layer_norm("mlp_norm", d), mlp],
        "pre-LN decoder layer: norm, causal attention with ALiBi, add; norm, GELU feed-forward, add",
    )
    children = [
        embedding("token", s.V, d, role="token", description="token embeddings"),
        layer_norm("embedding_norm", d, description=f"LayerNorm({d}) on the token embeddings"),
        repeat(layer, s.L, name="layers"),
        layer_norm("final_norm", d),
        *decoder_heads(
            cfg.head, d, s.V, tied=cfg.tie_embeddings, num_labels=cfg.num_labels, token_classifier="classifier"
        ),
    ]
    return with_modules(composite("bloom", "model", children, "BLOOM decoder"), reference_modules(cfg))


def reference_modules(cfg: BloomConfig) -> dict[str, tuple[str, ...]]:
    """Where each block's parameters live in the transformers class `reference` builds (for `archzoo verify`):
    block path -> submodule names, inside a layer relative to the layer."""
    layer = {
        "attention_norm": "input_layernorm",
        **fused_attention_modules("self_attention", "query_key_value", "dense"),
        "mlp_norm": "post_attention_layernorm",
        **mlp_modules("dense_h_to_4h", "dense_4h_to_h"),
    }
    return decoder_modules(
        "bloom",
        cfg.head,
        layer,
        base="transformer.",
        embed="word_embeddings",
        more={"embedding_norm": "word_embeddings_layernorm"},
        layers="h",
        final_norm="ln_f",
        heads=("lm_head", "score", "classifier", "qa_outputs"),
    )


def reference(cfg: BloomConfig) -> Reference:
    """BloomModel or one of its head classes, built from a BloomConfig with the same keys."""
    kwargs = dict(vocab_size=cfg.vocab_size, hidden_size=cfg.d_model, n_layer=cfg.n_layers, n_head=cfg.n_heads)
    kwargs.update(tie_word_embeddings=cfg.tie_embeddings, **labels_kwargs(cfg))
    return decoder_reference(CLASSES, cfg.head, "BloomConfig", kwargs)


# ---- Hugging Face config.json: BloomConfig's keys, as transformers 5.23 defines them --------------------

_MEGATRON = (
    f"{NOT_READ}: a setting of the Megatron-DeepSpeed training code the BigScience checkpoints were converted from"
)
_SAME_PRODUCTS = (
    "splits the attention output and feed-forward down-projections into pretraining_tp slices when "
    "slow_but_exact is set: the same weights, and slices whose products add up to the same FLOPs"
)

HF_BLOOM = decoder_table(
    "bloom",
    "BloomConfig",
    CLASSES,
    defaults=dict(
        vocab_size=250880,
        hidden_size=64,
        n_layer=2,
        n_head=8,
        layer_norm_epsilon=1e-05,
        initializer_range=0.02,
        use_cache=True,
        bos_token_id=1,
        eos_token_id=2,
        pad_token_id=None,
        apply_residual_connection_post_layernorm=False,
        hidden_dropout=0.0,
        attention_dropout=0.0,
        pretraining_tp=1,
        slow_but_exact=False,
        tie_word_embeddings=True,
    ),
    # BloomConfig's attribute_map, and n_embed, which its __post_init__ takes for hidden_size (the Hub's
    # bigscience/bloom config.json writes it), winning over hidden_size as an alias does
    aliases={"num_hidden_layers": "n_layer", "num_attention_heads": "n_head", "n_embed": "hidden_size"},
    read={
        "vocab_size": "vocab_size",
        "hidden_size": "d_model",
        "n_layer": "n_layers",
        "n_head": "n_heads",
        "tie_word_embeddings": "tie_embeddings",
        "num_labels": "num_labels",
    },
    ignored={
        "layer_norm_epsilon": NORM_EPSILON,
        "initializer_range": INITIALISATION,
        "use_cache": USE_CACHE,
        **SPECIAL_TOKENS,
        "pad_token_id": TOKEN_ID + " (BLOOM's token embedding has no padding index)",
        "unk_token_id": TOKEN_ID,
        "apply_residual_connection_post_layernorm": "adds the normalised rather than the raw input back: no "
        "parameters, and no matmul FLOPs",
        "hidden_dropout": DROPOUT,
        "attention_dropout": DROPOUT,
        "pretraining_tp": _SAME_PRODUCTS,
        "slow_but_exact": _SAME_PRODUCTS,
        "n_inner": f"{NOT_READ}: BLOOM's feed-forward is always 4 hidden_size",
        "seq_length": f"{NOT_READ}: ALiBi positions have no table sized by the context",
        "attention_softmax_in_fp32": _MEGATRON,
        "bias_dropout_fusion": _MEGATRON,
        "masked_softmax_fusion": _MEGATRON,
        "offset_alibi": _MEGATRON,
        "skip_bias_add": _MEGATRON,
        "skip_bias_add_qkv": _MEGATRON,
    },
)


@hf_reader(HF_BLOOM)
def _from_bloom(hf: dict[str, Any], model_class: str = "BloomModel") -> dict[str, Any]:
    return table_values(hf, HF_BLOOM)


ARCHITECTURE = Architecture(
    name="bloom",
    title="BLOOM",
    summary="BigScience's multilingual decoder: ALiBi positions (no position parameters), a LayerNorm on the "
    "token embeddings, fused query/key/value with biases, a GELU feed-forward of 4 d_model and a tied LM head.",
    citation="BigScience Workshop: Le Scao, Fan, Akiki, Pavlick, Ilić et al. BLOOM: A 176B-Parameter Open-Access "
    "Multilingual Language Model. 2022. arXiv:2211.05100",
    config_model=BloomConfig,
    build=build,
    seq_len_note=lambda cfg: "the training context length (ALiBi positions set no limit)",
    reference=reference,
)

register_architectures = architectures_hook(ARCHITECTURE)
register_hf_readers = hf_readers_hook({"bloom": (_from_bloom, None)})
