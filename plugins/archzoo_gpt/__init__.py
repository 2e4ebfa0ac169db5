"""archzoo plugin: GPT-style decoders (GPT-1, GPT-2, the GPT-3 table) with learned positions."""

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
    lm_head,
    repeat,
    with_modules,
)
from archzoo.decoder_parts import decoder_reference, decoder_symbols
from archzoo.formula import const
from archzoo.hf_config import DROPOUT, INITIALISATION, NORM_EPSILON, NOT_READ, TOKEN_ID, USE_CACHE, HFTable, hf_reader
from archzoo.plugin_parts import LABELS, NumLabels, architectures_hook, hf_readers_hook, num_labels_field, table_values
from archzoo.symbols import symbol

# the hook by which this plugin states what its layers save for backward
from .activation import register_activation_memory as register_activation_memory

__version__ = "0.1.0"


class GptConfig(ArchConfig):
    """A decoder-only Transformer; defaults are GPT-2 small (Radford et al. 2019).

    Not on `archzoo.architecture.TransformerConfig`: GPT's keys read context first, as GPT-2's n_positions does,
    and moving it would reorder every GPT entry's configuration in reports and JSON."""

    vocab_size: PositiveInt = Field(50257, description="BPE vocabulary size")
    max_positions: PositiveInt = Field(1024, description="context length (learned positions)")
    d_model: PositiveInt = Field(768, description="model width")
    n_layers: PositiveInt = Field(12, description="decoder layers")
    n_heads: PositiveInt = Field(12, description="attention heads")
    d_head: PositiveInt | None = Field(None, description="width of one head (null = d_model / n_heads)")
    d_ff: PositiveInt | None = Field(None, description="feed-forward width (null = 4 d_model)")
    tie_embeddings: bool = Field(True, description="LM head shares the token embedding matrix")
    bias: bool = Field(True, description="biases in the linear layers")
    head: Literal["lm", "none", "sequence_classification", "token_classification", "question_answering"] = Field(
        "lm",
        description="lm (GPT2LMHeadModel), none (GPT2Model), sequence_classification (a bias-free score layer "
        "on every token), token_classification or question_answering (GPT2For...)",
    )
    num_labels: NumLabels = num_labels_field(
        "outputs of the sequence_classification and token_classification heads (transformers' num_labels)"
    )
    final_norm: bool = Field(True, description="LayerNorm after the last layer (GPT-2); GPT-1 has none")
    activation: str = Field("gelu_new", description="feed-forward activation")

    @model_validator(mode="after")
    def _check(self) -> GptConfig:
        if self.d_head is None:
            check_heads(self.d_model, self.n_heads, ", or give d_head explicitly (GPT-3 XL: n_heads 24, d_head 128)")
        check_activation(self.activation)
        return self


def build(cfg: GptConfig) -> Block:
    s = decoder_symbols(cfg)  # without d_head, h heads of d / h: the queries are d wide
    d, V, L, inner = s.d, s.V, s.L, s.inner
    P = symbol("P", cfg.max_positions)
    d_ff = 4 * d if cfg.d_ff is None else symbol("d_ff", cfg.d_ff)

    layer_parts = [
        layer_norm("attention_norm", d, bias=True),
        attention("attention", d, inner, bias=cfg.bias, causal=True, heads=s.h),
        layer_norm("mlp_norm", d, bias=True),
        feed_forward("mlp", d, d_ff, activation=cfg.activation, bias=cfg.bias),
    ]
    layer_description = "pre-LN decoder layer: norm, causal attention, add; norm, MLP, add"
    if not cfg.final_norm:  # GPT-1 normalises after each sub-block
        layer_parts = [layer_parts[1], layer_parts[0], layer_parts[3], layer_parts[2]]
        layer_description = "post-LN decoder layer: causal attention, add & norm; MLP, add & norm"
    children = [
        embedding("token", V, d, role="token", description="token embeddings"),
        embedding("position", P, d, role="position", description="learned position embeddings"),
        repeat(composite("layer", "decoder_layer", layer_parts, layer_description), L, name="layers"),
    ]
    if cfg.final_norm:
        children.append(layer_norm("final_norm", d))
    if cfg.head == "lm":
        children.append(lm_head(d, V, tied_to="token" if cfg.tie_embeddings else ""))
    K = LABELS(cfg.num_labels)
    if cfg.head == "sequence_classification":  # scores every token; the last non-padding one is kept
        children.append(linear("score", d, K, bias=False, description="class scores per token, no bias"))
    if cfg.head == "token_classification":
        children.append(linear("classifier", d, K, description="a label per token"))
    if cfg.head == "question_answering":
        children.append(linear("qa_outputs", d, const(2), description="answer start and end logits per token"))
    return with_modules(composite("gpt", "model", children, "GPT decoder"), reference_modules(cfg))


_GPT2_CLASSES = {
    "lm": "GPT2LMHeadModel",
    "none": "GPT2Model",
    "sequence_classification": "GPT2ForSequenceClassification",
    "token_classification": "GPT2ForTokenClassification",
    "question_answering": "GPT2ForQuestionAnswering",
}
_OPENAI_GPT_CLASSES = {
    "lm": "OpenAIGPTLMHeadModel",
    "none": "OpenAIGPTModel",
    "sequence_classification": "OpenAIGPTForSequenceClassification",
}


def reference_modules(cfg: GptConfig) -> dict[str, tuple[str, ...]]:
    """Where each block's parameters live in the transformers class `reference` builds (for `archzoo verify`):
    block path -> submodule names, inside a layer relative to the layer."""
    base = "" if cfg.head == "none" else "transformer."
    token, position = ("wte", "wpe") if cfg.final_norm else ("tokens_embed", "positions_embed")  # GPT-2, GPT-1
    return {
        "gpt": ("",),
        "gpt.token": (base + token,),
        "gpt.position": (base + position,),
        "gpt.layers": (f"{base}h",),
        "gpt.layers.layer": (f"{base}h",),
        "gpt.layers.layer.attention_norm": ("ln_1",),
        "gpt.layers.layer.attention": ("attn",),
        "gpt.layers.layer.mlp_norm": ("ln_2",),
        "gpt.layers.layer.mlp": ("mlp",),
        "gpt.final_norm": (f"{base}ln_f",),
        "gpt.lm_head": ("lm_head",),
        "gpt.score": ("score",),
        "gpt.classifier": ("classifier",),
        "gpt.qa_outputs": ("qa_outputs",),
    }


def reference(cfg: GptConfig) -> Reference | None:
    if cfg.d_head is not None and cfg.d_head * cfg.n_heads != cfg.d_model:
        return None  # transformers' GPT-2 ties the head width to d_model / n_heads
    if not cfg.bias:
        return None
    labels = (
        {"num_labels": cfg.num_labels}
        if cfg.head in ("sequence_classification", "token_classification") and cfg.num_labels != 2
        else {}
    )
    # the keys GPT-2's and GPT-1's configurations name alike, in their order
    keys = dict(
        vocab_size=cfg.vocab_size,
        n_positions=cfg.max_positions,
        n_embd=cfg.d_model,
        n_layer=cfg.n_layers,
        n_head=cfg.n_heads,
    )
    tail = dict(tie_word_embeddings=cfg.tie_embeddings, **labels)
    if cfg.final_norm:
        kwargs = dict(**keys, n_inner=cfg.d_ff, activation_function=cfg.activation, **tail)
        return decoder_reference(_GPT2_CLASSES, cfg.head, "GPT2Config", kwargs)
    # GPT-1: a feed-forward of 4 d_model, and only the activations and heads OpenAIGPTModel has
    if cfg.d_ff is not None and cfg.d_ff != 4 * cfg.d_model:
        return None
    if cfg.activation not in OPENAI_GPT_ACTIVATIONS or cfg.head not in _OPENAI_GPT_CLASSES:
        return None
    return decoder_reference(_OPENAI_GPT_CLASSES, cfg.head, "OpenAIGPTConfig", dict(**keys, afn=cfg.activation, **tail))


#: the only activations transformers' OpenAI GPT accepts (its ACT_FNS)
OPENAI_GPT_ACTIVATIONS = ("relu", "silu", "gelu", "swish")

# ---- Hugging Face config.json: each model type's keys, as transformers 5.23 defines them ----------------

_GPT_ALIASES = {
    "hidden_size": "n_embd",
    "max_position_embeddings": "n_positions",
    "num_attention_heads": "n_head",
    "num_hidden_layers": "n_layer",
}
_SUMMARY = "used only by the DoubleHeads model's multiple-choice summary, which archzoo does not count"
_GPT_IGNORED = {
    "resid_pdrop": DROPOUT,
    "embd_pdrop": DROPOUT,
    "attn_pdrop": DROPOUT,
    "layer_norm_epsilon": NORM_EPSILON,
    "initializer_range": INITIALISATION,
    "summary_type": _SUMMARY,
    "summary_use_proj": _SUMMARY,
    "summary_activation": _SUMMARY,
    "summary_proj_to_labels": _SUMMARY,
    "summary_first_dropout": _SUMMARY,
    "summary_last_dropout": _SUMMARY,
    "bos_token_id": TOKEN_ID,
    "eos_token_id": TOKEN_ID,
    "pad_token_id": TOKEN_ID,
    "n_ctx": f"{NOT_READ}; transformers reads the context length from n_positions",
}
_DOUBLE_HEADS = (
    "its multiple-choice head reads one sequence per answer choice, so its FLOPs depend on a number "
    "of choices that config.json does not give"
)

HF_GPT2 = HFTable(
    model_type="gpt2",
    config_class="GPT2Config",
    defaults=dict(
        vocab_size=50257,
        n_positions=1024,
        n_embd=768,
        n_layer=12,
        n_head=12,
        n_inner=None,
        activation_function="gelu_new",
        resid_pdrop=0.1,
        embd_pdrop=0.1,
        attn_pdrop=0.1,
        layer_norm_epsilon=1e-05,
        initializer_range=0.02,
        summary_type="cls_index",
        summary_use_proj=True,
        summary_activation=None,
        summary_proj_to_labels=True,
        summary_first_dropout=0.1,
        scale_attn_weights=True,
        use_cache=True,
        bos_token_id=50256,
        eos_token_id=50256,
        pad_token_id=None,
        scale_attn_by_inverse_layer_idx=False,
        reorder_and_upcast_attn=False,
        add_cross_attention=False,
        tie_word_embeddings=True,
    ),
    aliases=_GPT_ALIASES,
    read={
        "vocab_size": "vocab_size",
        "n_positions": "max_positions",
        "n_embd": "d_model",
        "n_layer": "n_layers",
        "n_head": "n_heads",
        "n_inner": "d_ff",
        "activation_function": "activation",
        "tie_word_embeddings": "tie_embeddings",
        "num_labels": "num_labels",
    },
    ignored={
        **_GPT_IGNORED,
        "scale_attn_weights": "scales the attention scores by a constant: no parameters, and no matmul FLOPs",
        "scale_attn_by_inverse_layer_idx": "scales the attention scores by a constant: no parameters, and no "
        "matmul FLOPs",
        "reorder_and_upcast_attn": "computes the same score product in float32 (with baddbmm): the same FLOPs",
        "use_cache": USE_CACHE,
    },
    refused={
        "add_cross_attention": (
            (False,),
            "cross-attention layers for an encoder-decoder are not modelled by the gpt plugin",
        )
    },
    base_class="GPT2Model",
    classes={
        "GPT2Model": {"head": "none"},
        "GPT2LMHeadModel": {"head": "lm"},
        "GPT2ForSequenceClassification": {"head": "sequence_classification"},
        "GPT2ForTokenClassification": {"head": "token_classification"},
        "GPT2ForQuestionAnswering": {"head": "question_answering"},
    },
    unsupported_classes={"GPT2DoubleHeadsModel": _DOUBLE_HEADS},
)

HF_OPENAI_GPT = HFTable(
    model_type="openai-gpt",
    config_class="OpenAIGPTConfig",
    defaults=dict(
        vocab_size=40478,
        n_positions=512,
        n_embd=768,
        n_layer=12,
        n_head=12,
        afn="gelu",
        resid_pdrop=0.1,
        embd_pdrop=0.1,
        attn_pdrop=0.1,
        layer_norm_epsilon=1e-05,
        initializer_range=0.02,
        summary_type="cls_index",
        summary_use_proj=True,
        summary_activation=None,
        summary_proj_to_labels=True,
        summary_first_dropout=0.1,
        pad_token_id=None,
        bos_token_id=None,
        eos_token_id=None,
        tie_word_embeddings=True,
    ),
    aliases=_GPT_ALIASES,
    read={
        "vocab_size": "vocab_size",
        "n_positions": "max_positions",
        "n_embd": "d_model",
        "n_layer": "n_layers",
        "n_head": "n_heads",
        "afn": "activation",
        "tie_word_embeddings": "tie_embeddings",
        "num_labels": "num_labels",
    },
    ignored={**_GPT_IGNORED, "n_special": NOT_READ, "predict_special_tokens": NOT_READ},
    refused={},
    base_class="OpenAIGPTModel",
    classes={
        "OpenAIGPTModel": {"head": "none"},
        "OpenAIGPTLMHeadModel": {"head": "lm"},
        "OpenAIGPTForSequenceClassification": {"head": "sequence_classification"},
    },
    unsupported_classes={"OpenAIGPTDoubleHeadsModel": _DOUBLE_HEADS},
)


@hf_reader(HF_GPT2)
def _from_gpt2(hf: dict[str, Any], model_class: str = "GPT2Model") -> dict[str, Any]:
    return table_values(hf, HF_GPT2)


@hf_reader(HF_OPENAI_GPT)
def _from_openai_gpt(hf: dict[str, Any], model_class: str = "OpenAIGPTModel") -> dict[str, Any]:
    if isinstance(hf["afn"], str) and hf["afn"] not in OPENAI_GPT_ACTIVATIONS:
        raise ValueError(
            f"afn: transformers' OpenAI GPT builds only {', '.join(OPENAI_GPT_ACTIVATIONS[:-1])} or "
            f"{OPENAI_GPT_ACTIVATIONS[-1]}, got {hf['afn']!r}; choose one of them"
        )
    return table_values(hf, HF_OPENAI_GPT, final_norm=False)


ARCHITECTURE = Architecture(
    name="gpt",
    title="GPT",
    summary="Decoder-only Transformer with learned positions and causal self-attention; covers GPT-1, "
    "GPT-2 and the GPT-3 model table.",
    citation="Radford, Wu, Child, Luan, Amodei, Sutskever. Language Models are Unsupervised Multitask "
    "Learners. OpenAI 2019; Brown et al. Language Models are Few-Shot Learners. NeurIPS 2020, arXiv:2005.14165",
    config_model=GptConfig,
    build=build,
    max_seq_len=context_length,
    reference=reference,
)

register_architectures = architectures_hook(ARCHITECTURE)
register_hf_readers = hf_readers_hook({"gpt2": (_from_gpt2, None), "openai-gpt": (_from_openai_gpt, None)})
