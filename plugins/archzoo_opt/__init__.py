"""archzoo plugin: OPT decoders (Zhang et al. 2022), as transformers builds OPTModel and OPTForCausalLM.

OPT is a GPT-3-style decoder with learned positions, a ReLU feed-forward and an LM head tied to the token
embedding, with four switches transformers 5.23 reads from its configuration: pre- or post-LayerNorm layers
(``do_layer_norm_before``; OPT-350m is post-LN), biases in every linear layer (``enable_bias``), LayerNorms
with or without weight and bias (``layer_norm_elementwise_affine``), and a token embedding narrower than the
model (``word_embed_proj_dim``; OPT-350m embeds in 512 and projects in and out of its 1024-wide layers with
two bias-free linears). Its position table holds two rows more than the context (``OPTLearnedPositionalEmbedding``
offsets every position by 2, a fairseq legacy), and a final LayerNorm exists only in pre-LN models.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, PositiveInt, model_validator

from archzoo import ArchConfig, Architecture, Reference
from archzoo.architecture import check_activation, check_heads, context_length
from archzoo.blocks import (
    Block,
    attention,
    composite,
    embedding,
    feed_forward,
    layer_norm,
    linear,
    repeat,
    with_modules,
)
from archzoo.decoder_parts import (
    PADDING_CHECKED,
    SPECIAL_TOKENS,
    decoder_heads,
    decoder_reference,
    decoder_symbols,
    decoder_table,
    labels_kwargs,
)
from archzoo.formula import Poly
from archzoo.hf_config import (
    DROPOUT,
    INITIALISATION,
    NOT_READ,
    USE_CACHE,
    check_padding_index,
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
from archzoo.symbols import declare_symbol, symbol

# the hook by which this plugin states what its layers save for backward
from .activation import register_activation_memory as register_activation_memory

__version__ = "0.1.0"

#: The one symbol only this plugin's formulas use (the shared ones are archzoo.symbols.symbol's).
EMBEDDING_WIDTH = declare_symbol("E", latex="E", meaning="word embedding width (word_embed_proj_dim)", order=13)

#: OPTLearnedPositionalEmbedding's offset: the table holds max_position_embeddings + 2 rows
POSITION_OFFSET = 2


#: archzoo's head -> transformers' class
CLASSES = {
    "lm": "OPTForCausalLM",
    "none": "OPTModel",
    "sequence_classification": "OPTForSequenceClassification",
    "question_answering": "OPTForQuestionAnswering",
}


class OptConfig(ArchConfig):
    """An OPT decoder; defaults are OPT-125m (Zhang et al. 2022, Table 1).

    Not on `archzoo.architecture.TransformerConfig`: OPT's keys read in the order of its paper's table (the
    context before the width), and moving it would reorder every OPT entry's configuration in reports and JSON."""

    vocab_size: PositiveInt = Field(50272, description="vocabulary size (rows of the token embedding)")
    max_positions: PositiveInt = Field(
        2048, description="context length; the learned position table holds max_positions + 2 rows (OPT's offset)"
    )
    d_model: PositiveInt = Field(768, description="model width (hidden_size)")
    n_layers: PositiveInt = Field(12, description="decoder layers")
    n_heads: PositiveInt = Field(12, description="attention heads; must divide d_model")
    d_ff: PositiveInt = Field(3072, description="feed-forward width (ffn_dim)")
    d_embed: PositiveInt | None = Field(
        None,
        description="width of the token embedding (word_embed_proj_dim; null = d_model); another width adds "
        "bias-free project_in and project_out linears (OPT-350m: 512)",
    )
    pre_norm: bool = Field(True, description="LayerNorm before each sub-block (do_layer_norm_before); OPT-350m: false")
    final_norm: bool | None = Field(
        None,
        description="LayerNorm after the last layer (null = pre_norm: transformers builds one for pre-LN models "
        "only; false = _remove_final_layer_norm)",
    )
    bias: bool = Field(True, description="biases in the attention and feed-forward linears (enable_bias)")
    norm_affine: bool = Field(
        True, description="LayerNorms with a weight and a bias (layer_norm_elementwise_affine); false: no parameters"
    )
    activation: str = Field("relu", description="feed-forward activation (activation_function)")
    tie_embeddings: bool = Field(True, description="LM head shares the token embedding matrix")
    head: Literal[tuple(CLASSES)] = head_field(  # type: ignore[valid-type]
        CLASSES,
        prefix="OPT",
        note="both on the embedding width",
        question_answering="Linear(width, 2) on every token",
    )
    num_labels: NumLabels = num_labels_field("outputs of the sequence_classification head (transformers' num_labels)")

    @model_validator(mode="after")
    def _check(self) -> OptConfig:
        check_heads(self.d_model, self.n_heads)  # OPTAttention refuses heads that do not divide the width
        check_activation(self.activation)
        if self.final_norm and not self.pre_norm:
            raise ValueError(
                "final_norm: transformers' OPT builds a final LayerNorm only in pre-LN models; set pre_norm "
                "to true, or final_norm to null or false"
            )
        return self

    @property
    def has_final_norm(self) -> bool:
        return self.pre_norm if self.final_norm is None else self.final_norm

    @property
    def projects(self) -> bool:
        """Whether the token embedding is narrower or wider than the model (project_in and project_out)."""
        return self.d_embed is not None and self.d_embed != self.d_model


def _norm(name: str, d: Poly, cfg: OptConfig) -> Block:
    return layer_norm(name, d, affine=cfg.norm_affine)


def build(cfg: OptConfig) -> Block:
    s = decoder_symbols(cfg)
    d, V, L = s.d, s.V, s.L
    P = symbol("P", cfg.max_positions)
    d_ff = symbol("d_ff", cfg.d_ff)
    width = EMBEDDING_WIDTH(cfg.d_embed) if cfg.projects and cfg.d_embed is not None else d

    attention_norm = _norm("attention_norm", d, cfg)
    self_attention = attention("attention", d, d, bias=cfg.bias, causal=True, heads=s.h)
    mlp_norm = _norm("mlp_norm", d, cfg)
    mlp = feed_forward("mlp", d, d_ff, activation=cfg.activation, bias=cfg.bias)
    if cfg.pre_norm:
        parts = [attention_norm, self_attention, mlp_norm, mlp]
        layer_description = "pre-LN decoder layer: norm, causal attention, add; norm, feed-forward, add"
    else:
        parts = [self_attention, attention_norm, mlp, mlp_norm]
        layer_description = "post-LN decoder layer: causal attention, add & norm; feed-forward, add & norm"

    children = [
        embedding("token", V, width, role="token", description="token embeddings"),
        embedding(
            "position",
            P + POSITION_OFFSET,
            d,
            role="position",
            description=f"learned position embeddings: P + {POSITION_OFFSET} rows (OPT offsets positions by "
            f"{POSITION_OFFSET})",
        ),
    ]
    if cfg.projects:
        children.append(linear("project_in", width, d, bias=False, description="token embeddings up to d_model"))
    children.append(repeat(composite("layer", "decoder_layer", parts, layer_description), L, name="layers"))
    if cfg.has_final_norm:
        children.append(_norm("final_norm", d, cfg))
    if cfg.projects:
        children.append(linear("project_out", d, width, bias=False, description="back to the embedding width"))
    children += decoder_heads(cfg.head, width, V, tied=cfg.tie_embeddings, num_labels=cfg.num_labels)
    return with_modules(composite("opt", "model", children, "OPT decoder"), reference_modules(cfg))


def reference_modules(cfg: OptConfig) -> dict[str, tuple[str, ...]]:
    """Where each block's parameters live in the transformers class `reference` builds (for `archzoo verify`):
    block path -> submodule names, inside a layer relative to the layer."""
    base = "decoder." if cfg.head == "none" else "model.decoder."
    return {
        "opt": ("",),
        "opt.token": (f"{base}embed_tokens",),
        "opt.position": (f"{base}embed_positions",),
        "opt.project_in": (f"{base}project_in",),
        "opt.layers": (f"{base}layers",),
        "opt.layers.layer": (f"{base}layers",),
        "opt.layers.layer.attention_norm": ("self_attn_layer_norm",),
        "opt.layers.layer.attention": ("self_attn",),
        "opt.layers.layer.attention.q_proj": ("self_attn.q_proj",),
        "opt.layers.layer.attention.k_proj": ("self_attn.k_proj",),
        "opt.layers.layer.attention.v_proj": ("self_attn.v_proj",),
        "opt.layers.layer.attention.out_proj": ("self_attn.out_proj",),
        "opt.layers.layer.mlp_norm": ("final_layer_norm",),  # the layer's second norm, despite its name
        "opt.layers.layer.mlp": ("fc1", "fc2"),
        "opt.layers.layer.mlp.fc_in": ("fc1",),
        "opt.layers.layer.mlp.fc_out": ("fc2",),
        "opt.final_norm": (f"{base}final_layer_norm",),
        "opt.project_out": (f"{base}project_out",),
        "opt.lm_head": ("lm_head",),
        "opt.score": ("score",),
        "opt.qa_outputs": ("qa_outputs",),
    }


def reference(cfg: OptConfig) -> Reference:
    """OPTModel or OPTForCausalLM, built from an OPTConfig with the same keys."""
    kwargs = dict(
        vocab_size=cfg.vocab_size,
        hidden_size=cfg.d_model,
        num_hidden_layers=cfg.n_layers,
        num_attention_heads=cfg.n_heads,
        ffn_dim=cfg.d_ff,
        max_position_embeddings=cfg.max_positions,
        word_embed_proj_dim=cfg.d_embed or cfg.d_model,
        do_layer_norm_before=cfg.pre_norm,
        _remove_final_layer_norm=cfg.pre_norm and not cfg.has_final_norm,
        enable_bias=cfg.bias,
        layer_norm_elementwise_affine=cfg.norm_affine,
        activation_function=cfg.activation,
        tie_word_embeddings=cfg.tie_embeddings,
        pad_token_id=None,  # OPT's default padding index 1 lies beyond a one-token vocabulary
        **labels_kwargs(cfg, ("sequence_classification",)),
    )
    return decoder_reference(CLASSES, cfg.head, "OPTConfig", kwargs)


# ---- Hugging Face config.json: OPTConfig's keys, as transformers 5.23 defines them ----------------------

HF_OPT = decoder_table(
    "opt",
    "OPTConfig",
    CLASSES,
    defaults=dict(
        vocab_size=50272,
        hidden_size=768,
        num_hidden_layers=12,
        ffn_dim=3072,
        max_position_embeddings=2048,
        do_layer_norm_before=True,
        _remove_final_layer_norm=False,
        word_embed_proj_dim=None,
        dropout=0.1,
        attention_dropout=0.0,
        num_attention_heads=12,
        activation_function="relu",
        layerdrop=0.0,
        init_std=0.02,
        use_cache=True,
        pad_token_id=1,
        bos_token_id=2,
        eos_token_id=2,
        enable_bias=True,
        layer_norm_elementwise_affine=True,
        tie_word_embeddings=True,
    ),
    read={
        "vocab_size": "vocab_size",
        "hidden_size": "d_model",
        "num_hidden_layers": "n_layers",
        "ffn_dim": "d_ff",
        "max_position_embeddings": "max_positions",
        "do_layer_norm_before": "pre_norm",
        "_remove_final_layer_norm": "final_norm",
        "word_embed_proj_dim": "d_embed",
        "num_attention_heads": "n_heads",
        "activation_function": "activation",
        "enable_bias": "bias",
        "layer_norm_elementwise_affine": "norm_affine",
        "tie_word_embeddings": "tie_embeddings",
        "num_labels": "num_labels",
        "pad_token_id": PADDING_CHECKED,
    },
    ignored={
        "dropout": DROPOUT,
        "attention_dropout": DROPOUT,
        "activation_dropout": f"{NOT_READ}: " + DROPOUT,
        "layerdrop": "skips whole layers at random in training only: the same weights, and one eval forward "
        "pass runs every layer",
        "init_std": INITIALISATION,
        "use_cache": USE_CACHE,
        **SPECIAL_TOKENS,
    },
)


@hf_reader(HF_OPT)
def _from_opt(hf: dict[str, Any], model_class: str = "OPTModel") -> dict[str, Any]:
    check_padding_index(hf["vocab_size"], hf["pad_token_id"])
    remove = hf["_remove_final_layer_norm"]
    # OPTDecoder builds its final LayerNorm when do_layer_norm_before and not _remove_final_layer_norm: false
    # leaves final_norm null (it follows pre_norm); a value that is not a boolean is reported under its key
    final_norm = False if remove is True else None if remove is False else remove
    return table_values(hf, HF_OPT, final_norm=final_norm)


ARCHITECTURE = Architecture(
    name="opt",
    title="OPT",
    summary="Meta's Open Pre-trained Transformers: GPT-3-style decoders with learned positions (offset by 2), "
    "ReLU feed-forward and a tied LM head; pre- or post-LN, and OPT-350m's projected 512-wide embedding.",
    citation="Zhang, Roller, Goyal, Artetxe, Chen, Chen, Dewan, Diab, Li, Lin et al. OPT: Open Pre-trained "
    "Transformer Language Models. 2022. arXiv:2205.01068",
    config_model=OptConfig,
    build=build,
    max_seq_len=context_length,
    reference=reference,
)

register_architectures = architectures_hook(ARCHITECTURE)
register_hf_readers = hf_readers_hook({"opt": (_from_opt, None)})
