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

from collections.abc import Callable
from dataclasses import replace
from typing import Any, Literal, Self

from pydantic import Field, PositiveInt, model_validator

from archzoo import ArchConfig, Architecture, Reference, hookimpl
from archzoo.architecture import check_activation, check_rotary_head_width
from archzoo.blocks import (
    Block,
    attention,
    composite,
    embedding,
    feed_forward,
    layer_norm,
    lm_head,
    repeat,
    with_modules,
)
from archzoo.formula import sym
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

#: archzoo's head -> transformers' class (transformers has no classifier classes for cohere)
CLASSES = {"lm": "CohereForCausalLM", "none": "CohereModel"}


class CohereConfig(ArchConfig):
    """A Cohere decoder; defaults are Command R (Cohere 2024, CohereForAI/c4ai-command-r-v01), which are also
    transformers' CohereConfig defaults."""

    vocab_size: PositiveInt = Field(256000, description="rows of the token embedding (and of the LM head)")
    d_model: PositiveInt = Field(8192, description="model width (hidden_size)")
    n_layers: PositiveInt = Field(40, description="decoder layers (num_hidden_layers)")
    n_heads: PositiveInt = Field(64, description="query heads (num_attention_heads)")
    n_kv_heads: PositiveInt | None = Field(
        None, description="key/value heads (num_key_value_heads; null = n_heads); must divide n_heads"
    )
    d_head: PositiveInt | None = Field(
        None, description="width of one head (head_dim; null = d_model // n_heads, rounded down as transformers does)"
    )
    d_ff: PositiveInt = Field(22528, description="hidden width of the gated feed-forward (intermediate_size)")
    max_positions: PositiveInt = Field(
        8192, description="context length (max_position_embeddings; rotary positions: no parameters)"
    )
    activation: str = Field("silu", description="activation of the feed-forward's gate (hidden_act)")
    attention_bias: bool = Field(False, description="biases on the query, key, value and output projections")
    qk_norm: bool = Field(False, description="a LayerNorm per head on the queries and the keys (use_qk_norm)")
    tie_embeddings: bool = Field(True, description="the LM head shares the token embedding matrix")
    head: Literal[tuple(CLASSES)] = Field(  # type: ignore[valid-type]
        "lm", description="lm (CohereForCausalLM) or none (CohereModel)"
    )

    @model_validator(mode="after")
    def _check(self) -> Self:
        check_activation(self.activation)
        if self.d_head is None and self.n_heads > self.d_model:
            raise ValueError(
                f"n_heads: d_model {self.d_model} leaves each of {self.n_heads} heads "
                f"{self.d_model // self.n_heads} wide; choose at most {self.d_model} heads, or give d_head"
            )
        kv = self.n_heads if self.n_kv_heads is None else self.n_kv_heads
        if self.n_heads % kv:
            raise ValueError(
                f"n_kv_heads: n_heads {self.n_heads} is not divisible by n_kv_heads {kv}; "
                "choose a divisor of n_heads (1 for multi-query attention)"
            )
        check_rotary_head_width(self.d_model, self.n_heads, self.d_head)
        return self

    @property
    def head_width(self) -> int:
        return self.d_head or self.d_model // self.n_heads


def build(cfg: CohereConfig) -> Block:
    d = symbol("d", cfg.d_model)
    V = symbol("V", cfg.vocab_size)
    L = symbol("L", cfg.n_layers)
    h = symbol("h", cfg.n_heads)
    d_h = symbol("d_h", cfg.head_width)
    inner = d if cfg.d_head is None and cfg.d_model % cfg.n_heads == 0 else h * d_h
    kv = cfg.n_heads if cfg.n_kv_heads is None else cfg.n_kv_heads
    if kv == cfg.n_heads:
        h_kv, kv_inner = h, inner
    else:
        h_kv = sym("h_kv", kv, latex="h_{kv}", meaning="key/value heads (n_kv_heads)", order=21)
        kv_inner = h_kv * d_h
    attn = attention(
        "attention",
        d,
        inner,
        kv_inner=kv_inner,
        bias=cfg.attention_bias,
        causal=True,
        heads=h,
        kv_heads=h_kv,
        d_head=d_h,
        description="causal "
        + ("grouped-query " if kv != cfg.n_heads else "")
        + "self-attention with rotary positions"
        + (", a LayerNorm per head on queries and keys" if cfg.qk_norm else ""),
    )
    if cfg.qk_norm:
        norms = [
            layer_norm("q_norm", h * d_h, bias=False, description="LayerNorm weights per query head (h × d_h)"),
            layer_norm("k_norm", h_kv * d_h, bias=False, description="LayerNorm weights per key head (h_kv × d_h)"),
        ]
        attn = replace(
            composite("attention", attn.kind, [*attn.children, *norms], attn.description),
            kv_cache=attn.kv_cache,
            heads=h,
            kv_heads=h_kv,
            d_head=d_h,
        )
    mlp = feed_forward("mlp", d, symbol("d_ff", cfg.d_ff), activation=cfg.activation, gated=True, bias=False)
    layer = composite(
        "layer",
        "decoder_layer",
        [layer_norm("norm", d, bias=False), attn, mlp],
        "parallel decoder layer: one LayerNorm (no bias), read by the attention and the feed-forward, both added "
        "to the layer's input",
    )
    children = [
        embedding("token", V, d, role="token", description="token embeddings (embed_tokens)"),
        repeat(layer, L, name="layers"),
        layer_norm("final_norm", d, bias=False),
    ]
    if cfg.head == "lm":
        children.append(lm_head(d, V, tied_to="token" if cfg.tie_embeddings else ""))
    root = composite("cohere", "model", children, "Cohere decoder")
    return with_modules(root, reference_modules(cfg))


def reference_modules(cfg: CohereConfig) -> dict[str, tuple[str, ...]]:
    """Where each block's parameters live in the transformers class `reference` builds (for `archzoo verify`):
    block path -> submodule names, inside a layer relative to the layer."""
    base = "" if cfg.head == "none" else "model."
    layer = "cohere.layers.layer"
    return {
        "cohere": ("",),
        "cohere.token": (f"{base}embed_tokens",),
        "cohere.layers": (f"{base}layers",),
        layer: (f"{base}layers",),
        f"{layer}.norm": ("input_layernorm",),
        f"{layer}.attention": ("self_attn",),
        f"{layer}.attention.q_proj": ("self_attn.q_proj",),
        f"{layer}.attention.k_proj": ("self_attn.k_proj",),
        f"{layer}.attention.v_proj": ("self_attn.v_proj",),
        f"{layer}.attention.out_proj": ("self_attn.o_proj",),
        f"{layer}.attention.q_norm": ("self_attn.q_norm",),
        f"{layer}.attention.k_norm": ("self_attn.k_norm",),
        f"{layer}.mlp": ("mlp",),
        f"{layer}.mlp.fc_in": ("mlp.up_proj",),
        f"{layer}.mlp.fc_gate": ("mlp.gate_proj",),
        f"{layer}.mlp.fc_out": ("mlp.down_proj",),
        "cohere.final_norm": (f"{base}norm",),
        "cohere.lm_head": ("lm_head",),
    }


def reference(cfg: CohereConfig) -> Reference:
    """CohereModel or CohereForCausalLM, built from a CohereConfig with the same keys."""
    return Reference(
        library="transformers",
        target=f"transformers.{CLASSES[cfg.head]}",
        config_class="transformers.CohereConfig",
        kwargs=dict(
            vocab_size=cfg.vocab_size,
            hidden_size=cfg.d_model,
            num_hidden_layers=cfg.n_layers,
            num_attention_heads=cfg.n_heads,
            num_key_value_heads=cfg.n_kv_heads or cfg.n_heads,
            intermediate_size=cfg.d_ff,
            max_position_embeddings=cfg.max_positions,
            hidden_act=cfg.activation,
            attention_bias=cfg.attention_bias,
            use_qk_norm=cfg.qk_norm,
            tie_word_embeddings=cfg.tie_embeddings,
            pad_token_id=None,
            bos_token_id=None,
            eos_token_id=None,
            **({"head_dim": cfg.d_head} if cfg.d_head is not None else {}),
        ),
    )


# ---- Hugging Face config.json: CohereConfig's keys, as transformers 5.23 defines them -----------------------

HF_COHERE = HFTable(
    model_type="cohere",
    config_class="CohereConfig",
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
    aliases={},
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
        # an index, not a size; read only to refuse what transformers' nn.Embedding refuses
        "pad_token_id": "(checked: inside the vocabulary)",
        # rotary settings change no count; read to refuse a type transformers does not build
        "rope_parameters": "(checked: a rotary type transformers builds)",
    },
    ignored={
        "logit_scale": "a factor on the logits: element-wise, no parameters and no matmul",
        "attention_dropout": DROPOUT,
        "initializer_range": INITIALISATION,
        "layer_norm_eps": NORM_EPSILON,
        "use_cache": USE_CACHE,
        "bos_token_id": TOKEN_ID,
        "eos_token_id": TOKEN_ID,
    },
    refused={},
    base_class="CohereModel",
    classes={name: {"head": head} for head, name in sorted(CLASSES.items(), key=lambda item: item[0] != "none")},
)


@hf_reader(HF_COHERE)
def _from_cohere(hf: dict[str, Any], model_class: str = "CohereModel") -> dict[str, Any]:
    check_padding_index(hf["vocab_size"], hf.get("pad_token_id"))
    rope_type(hf["rope_parameters"], "CohereConfig")  # rotary settings change no count: only a type is checked
    return dict(
        vocab_size=hf["vocab_size"],
        d_model=hf["hidden_size"],
        n_layers=hf["num_hidden_layers"],
        n_heads=hf["num_attention_heads"],
        n_kv_heads=hf["num_key_value_heads"],
        d_head=hf.get("head_dim"),
        d_ff=hf["intermediate_size"],
        max_positions=hf["max_position_embeddings"],
        activation=hf["hidden_act"],
        attention_bias=hf["attention_bias"],
        qk_norm=hf["use_qk_norm"],
        tie_embeddings=hf["tie_word_embeddings"],
    )


ARCHITECTURE = Architecture(
    name="cohere",
    title="Cohere Command R",
    summary="Cohere's decoder (Command R, Command R+, Aya 23): parallel layers with one bias-free LayerNorm, "
    "grouped-query attention with an optional LayerNorm per head on queries and keys, a gated SiLU feed-forward, "
    "rotary positions, a tied LM head.",
    citation="Cohere. Command R and Command R+ model cards (CohereForAI/c4ai-command-r-v01, c4ai-command-r-plus). 2024",
    config_model=CohereConfig,
    build=build,
    seq_len=lambda cfg: cfg.max_positions,
    reference=reference,
)


@hookimpl
def register_architectures(register: Callable[[Architecture], None]) -> None:
    register(ARCHITECTURE)


@hookimpl
def register_hf_readers(register: Callable[..., None]) -> None:
    register("cohere", _from_cohere, architecture="cohere")
