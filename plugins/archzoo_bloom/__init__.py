"""archzoo plugin: BLOOM decoders (BigScience 2022), as transformers builds BloomModel and BloomForCausalLM.

BLOOM is a Megatron-style GPT decoder: a token embedding followed by a LayerNorm (``word_embeddings_layernorm``),
pre-LN layers whose query, key and value come out of one fused linear with bias (``query_key_value``, the same
weights and FLOPs as three), a GELU feed-forward four times the width, a final LayerNorm (``ln_f``) and an LM head
tied to the token embedding. Positions are ALiBi: a fixed bias per head added to the attention scores, with no
parameters; transformers adds it inside ``baddbmm``, which FlopCounterMode counts as the score product alone, so
it appears in no formula.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any, Literal

from pydantic import Field, PositiveInt, model_validator

from archzoo import ArchConfig, Architecture, Reference, hookimpl
from archzoo.architecture import check_heads
from archzoo.blocks import (
    Block,
    attention,
    composite,
    embedding,
    feed_forward,
    layer_norm,
    linear,
    lm_head,
    repeat,
    with_modules,
)
from archzoo.formula import Poly, const
from archzoo.hf_config import (
    DROPOUT,
    INITIALISATION,
    NORM_EPSILON,
    NOT_READ,
    TOKEN_ID,
    USE_CACHE,
    HFTable,
    hf_reader,
)
from archzoo.symbols import declare_symbol, symbol

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

#: The one symbol the heads add (shared in meaning with the bert and gpt plugins' K).
LABELS = declare_symbol("K", latex="K", meaning="labels (num_labels)", order=33)


class BloomConfig(ArchConfig):
    """A BLOOM decoder; defaults are BLOOM-560m (bigscience/bloom-560m)."""

    vocab_size: PositiveInt = Field(
        250880, description="rows of the token embedding (BLOOM's 250,680-token vocabulary, padded to 250,880)"
    )
    d_model: PositiveInt = Field(1024, description="model width (hidden_size); the feed-forward is 4 d_model")
    n_layers: PositiveInt = Field(24, description="decoder layers (n_layer)")
    n_heads: PositiveInt = Field(16, description="attention heads (n_head); must divide d_model")
    max_positions: PositiveInt = Field(
        2048, description="training context length: the default N only (ALiBi positions have no parameters)"
    )
    tie_embeddings: bool = Field(True, description="LM head shares the token embedding matrix")
    head: Literal[tuple(CLASSES)] = Field(  # type: ignore[valid-type]
        "lm",
        description="lm (BloomForCausalLM), none (BloomModel), sequence_classification (a bias-free score layer "
        "on every token, the last non-padding one's kept), token_classification (a classifier with bias on every "
        "token) or question_answering (Linear(d_model, 2) on every token): BloomFor...",
    )
    num_labels: PositiveInt = Field(
        2,
        description="outputs of the sequence_classification and token_classification heads (transformers' "
        "num_labels); question_answering always has 2",
    )

    @model_validator(mode="after")
    def _check(self) -> BloomConfig:
        check_heads(self.d_model, self.n_heads)  # BloomAttention refuses heads that do not divide the width
        return self


def _fused_attention(d: Poly, heads: Poly, cached: bool = True) -> Block:
    """Causal self-attention whose query, key and value come from one d -> 3d linear with bias; ``cached``: its
    keys and values are kept between calls (BloomForQuestionAnswering passes no cache to its base model)."""
    split = attention("attention", d, d, causal=True)  # for its attention products and its KV cache
    scores = next(child for child in split.children if child.kind == "attention_core")
    fused = composite(
        "attention",
        "self_attention",
        [
            linear("qkv_proj", d, 3 * d, description=f"Linear({d}, 3·{d}): query, key and value fused"),
            replace(scores, description="softmax(Q Kᵀ / √d_h + ALiBi bias) V: no parameters"),
            linear("out_proj", d, d),
        ],
        "causal self-attention with ALiBi positions; query, key and value from one fused linear",
    )
    fused = replace(fused, heads=heads)  # the head layout on the tree, for readers such as activation memory
    return replace(fused, kv_cache=split.kv_cache) if cached else fused


def build(cfg: BloomConfig) -> Block:
    d = symbol("d", cfg.d_model)
    V = symbol("V", cfg.vocab_size)
    L = symbol("L", cfg.n_layers)
    layer = composite(
        "layer",
        "decoder_layer",
        [
            layer_norm("attention_norm", d),
            _fused_attention(d, symbol("h", cfg.n_heads), cached=cfg.head != "question_answering"),
            layer_norm("mlp_norm", d),
            feed_forward("mlp", d, 4 * d, activation="gelu_new", description="feed-forward, GELU (tanh approximation)"),
        ],
        "pre-LN decoder layer: norm, causal attention with ALiBi, add; norm, GELU feed-forward, add",
    )
    children = [
        embedding("token", V, d, role="token", description="token embeddings"),
        layer_norm("embedding_norm", d, description=f"LayerNorm({d}) on the token embeddings"),
        repeat(layer, L, name="layers"),
        layer_norm("final_norm", d),
    ]
    if cfg.head == "lm":
        children.append(lm_head(d, V, tied_to="token" if cfg.tie_embeddings else ""))
    K = LABELS(cfg.num_labels)
    if cfg.head == "sequence_classification":  # scores every token; the last non-padding one's are kept (a gather)
        children.append(linear("score", d, K, bias=False, description="class scores on every token, no bias"))
    if cfg.head == "token_classification":
        children.append(linear("classifier", d, K, description="a label's scores per token"))
    if cfg.head == "question_answering":
        children.append(linear("qa_outputs", d, const(2), description="answer start and end logits per token"))
    return with_modules(composite("bloom", "model", children, "BLOOM decoder"), reference_modules(cfg))


def reference_modules(cfg: BloomConfig) -> dict[str, tuple[str, ...]]:
    """Where each block's parameters live in the transformers class `reference` builds (for `archzoo verify`):
    block path -> submodule names, inside a layer relative to the layer."""
    base = "" if cfg.head == "none" else "transformer."
    return {
        "bloom": ("",),
        "bloom.token": (f"{base}word_embeddings",),
        "bloom.embedding_norm": (f"{base}word_embeddings_layernorm",),
        "bloom.layers": (f"{base}h",),
        "bloom.layers.layer": (f"{base}h",),
        "bloom.layers.layer.attention_norm": ("input_layernorm",),
        "bloom.layers.layer.attention": ("self_attention",),
        "bloom.layers.layer.attention.qkv_proj": ("self_attention.query_key_value",),
        "bloom.layers.layer.attention.out_proj": ("self_attention.dense",),
        "bloom.layers.layer.mlp_norm": ("post_attention_layernorm",),
        "bloom.layers.layer.mlp": ("mlp",),
        "bloom.layers.layer.mlp.fc_in": ("mlp.dense_h_to_4h",),
        "bloom.layers.layer.mlp.fc_out": ("mlp.dense_4h_to_h",),
        "bloom.final_norm": (f"{base}ln_f",),
        "bloom.lm_head": ("lm_head",),
        "bloom.score": ("score",),
        "bloom.classifier": ("classifier",),
        "bloom.qa_outputs": ("qa_outputs",),
    }


def reference(cfg: BloomConfig) -> Reference:
    """BloomModel or one of its head classes, built from a BloomConfig with the same keys."""
    labelled = cfg.head in ("sequence_classification", "token_classification")
    return Reference(
        library="transformers",
        target=f"transformers.{CLASSES[cfg.head]}",
        config_class="transformers.BloomConfig",
        kwargs=dict(
            vocab_size=cfg.vocab_size,
            hidden_size=cfg.d_model,
            n_layer=cfg.n_layers,
            n_head=cfg.n_heads,
            tie_word_embeddings=cfg.tie_embeddings,
            **({"num_labels": cfg.num_labels} if labelled else {}),
        ),
    )


# ---- Hugging Face config.json: BloomConfig's keys, as transformers 5.23 defines them --------------------

_MEGATRON = (
    f"{NOT_READ}: a setting of the Megatron-DeepSpeed training code the BigScience checkpoints were converted from"
)
_SAME_PRODUCTS = (
    "splits the attention output and feed-forward down-projections into pretraining_tp slices when "
    "slow_but_exact is set: the same weights, and slices whose products add up to the same FLOPs"
)

HF_BLOOM = HFTable(
    model_type="bloom",
    config_class="BloomConfig",
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
        "bos_token_id": TOKEN_ID,
        "eos_token_id": TOKEN_ID,
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
    refused={},
    base_class="BloomModel",
    classes={name: {"head": head} for head, name in sorted(CLASSES.items(), key=lambda item: item[0] != "none")},
)


@hf_reader(HF_BLOOM)
def _from_bloom(hf: dict[str, Any], model_class: str = "BloomModel") -> dict[str, Any]:
    return dict(
        vocab_size=hf["vocab_size"],
        d_model=hf["hidden_size"],
        n_layers=hf["n_layer"],
        n_heads=hf["n_head"],
        tie_embeddings=hf["tie_word_embeddings"],
        num_labels=hf["num_labels"],
    )


ARCHITECTURE = Architecture(
    name="bloom",
    title="BLOOM",
    summary="BigScience's multilingual decoder: ALiBi positions (no position parameters), a LayerNorm on the "
    "token embeddings, fused query/key/value with biases, a GELU feed-forward of 4 d_model and a tied LM head.",
    citation="BigScience Workshop: Le Scao, Fan, Akiki, Pavlick, Ilić et al. BLOOM: A 176B-Parameter Open-Access "
    "Multilingual Language Model. 2022. arXiv:2211.05100",
    config_model=BloomConfig,
    build=build,
    seq_len=lambda cfg: cfg.max_positions,
    seq_len_note=lambda cfg: "the training context length (ALiBi positions set no limit)",
    reference=reference,
)


@hookimpl
def register_architectures(register: Callable[[Architecture], None]) -> None:
    register(ARCHITECTURE)


@hookimpl
def register_hf_readers(register: Callable[..., None]) -> None:
    register("bloom", _from_bloom)
