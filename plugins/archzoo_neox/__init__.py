"""archzoo plugin: GPT-NeoX decoders (EleutherAI: GPT-NeoX-20B, the Pythia suite), as transformers builds them.

A GPT-NeoX layer reads its input through two LayerNorms with biases: one feeds the attention, whose query, key
and value come out of one fused linear (``query_key_value``, the same weights and FLOPs as three), the other the
feed-forward (``dense_h_to_4h``, an activation, ``dense_4h_to_h``, all with biases). With
``use_parallel_residual`` (GPT-NeoX-20B, Pythia) both branches read the layer's input and are added to it
together; without it the feed-forward reads the attention's sum, as in GPT-2. Either way the modules, their
parameters and their matmuls are the same, so the option changes no count. Rotary positions turn a fraction of
each head's channels (``rotary_pct``, ``partial_rotary_factor``: a quarter in GPT-NeoX-20B and Pythia): they have
no parameters, and their angles and rotations are element-wise, so FlopCounterMode counts no FLOPs for them. The
output embedding (``lm_head``, ``embed_out`` in EleutherAI's checkpoints) is untied from ``embed_in`` unless
``tie_word_embeddings`` says otherwise.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from typing import Any, Literal, Self

from pydantic import Field, PositiveInt, model_validator

from archzoo import ArchConfig, Architecture, Reference, hookimpl
from archzoo.architecture import check_heads
from archzoo.blocks import (
    Block,
    attention,
    composite,
    embedding,
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

__version__ = "0.1.0"


#: archzoo's head -> transformers' class
CLASSES = {
    "lm": "GPTNeoXForCausalLM",
    "none": "GPTNeoXModel",
    "sequence_classification": "GPTNeoXForSequenceClassification",
    "token_classification": "GPTNeoXForTokenClassification",
    "question_answering": "GPTNeoXForQuestionAnswering",
}

#: The one symbol the heads add (shared in meaning with the bert and gpt plugins' K).
LABELS = declare_symbol("K", latex="K", meaning="labels (num_labels)", order=33)

#: transformers' activations (ACT2CLS) that hold no parameters; each is element-wise, so FlopCounterMode counts
#: no FLOPs for any of them
ACTIVATIONS = (
    "gelu",
    "gelu_10",
    "gelu_accurate",
    "gelu_fast",
    "gelu_new",
    "gelu_python",
    "gelu_python_tanh",
    "gelu_pytorch_tanh",
    "hardswish",
    "laplace",
    "leaky_relu",
    "linear",
    "mish",
    "quick_gelu",
    "relu",
    "relu2",
    "relu6",
    "sigmoid",
    "silu",
    "sqrtsoftplus",
    "swish",
    "tanh",
)
#: transformers' activations that are modules with learned parameters, which archzoo does not count
LEARNED_ACTIVATIONS = ("prelu", "xielu")


class NeoXConfig(ArchConfig):
    """A GPT-NeoX decoder; defaults are GPT-NeoX-20B (Black et al. 2022), which are also transformers'
    GPTNeoXConfig defaults."""

    vocab_size: PositiveInt = Field(
        50432, description="rows of the token embedding and of the output embedding (50,257 tokens padded)"
    )
    d_model: PositiveInt = Field(6144, description="model width (hidden_size)")
    n_layers: PositiveInt = Field(44, description="decoder layers (num_hidden_layers)")
    n_heads: PositiveInt = Field(64, description="attention heads (num_attention_heads); must divide d_model")
    d_ff: PositiveInt = Field(24576, description="hidden width of the feed-forward (intermediate_size)")
    max_positions: PositiveInt = Field(
        2048, description="context length (max_position_embeddings; rotary positions: no parameters)"
    )
    activation: str = Field("gelu", description="activation of the feed-forward (hidden_act): no parameters")
    attention_bias: bool = Field(True, description="biases on the fused query/key/value and the output projection")
    parallel_residual: bool = Field(
        True,
        description="attention and feed-forward both read the layer's input (use_parallel_residual); false: the "
        "feed-forward reads the attention's sum. The same modules and matmuls either way: no effect on counts",
    )
    rotary_fraction: float = Field(
        0.25,
        ge=0,
        le=1,
        description="fraction of each head's channels the rotary positions turn (rotary_pct, "
        "partial_rotary_factor): no parameters and no matmul FLOPs, so no effect on counts",
    )
    tie_embeddings: bool = Field(False, description="the LM head shares the token embedding matrix")
    head: Literal[tuple(CLASSES)] = Field(  # type: ignore[valid-type]
        "lm",
        description="lm (GPTNeoXForCausalLM), none (GPTNeoXModel), sequence_classification (a bias-free score "
        "layer on every token, the last non-padding one's kept), token_classification (a classifier with bias on "
        "every token) or question_answering (Linear(d_model, 2) on every token): GPTNeoXFor...",
    )
    num_labels: PositiveInt = Field(
        2,
        description="outputs of the sequence_classification and token_classification heads (transformers' "
        "num_labels); question_answering always has 2",
    )

    @model_validator(mode="after")
    def _check(self) -> Self:
        check_heads(self.d_model, self.n_heads)  # GPTNeoXConfig refuses heads that do not divide the width
        if self.activation in LEARNED_ACTIVATIONS:
            raise ValueError(
                f"activation: {self.activation} is a module with learned parameters, which archzoo does not "
                f"count; choose one without parameters ({', '.join(ACTIVATIONS[:5])}, ...)"
            )
        if self.activation not in ACTIVATIONS:
            raise ValueError(
                f"activation: unknown activation {self.activation!r}; expected one of transformers' "
                f"{', '.join(ACTIVATIONS)}"
            )
        return self


def _fused_attention(d: Poly, bias: bool) -> Block:
    """Causal self-attention whose query, key and value come from one d -> 3d linear."""
    split = attention("attention", d, d, causal=True, bias=bias)  # for its attention products and its KV cache
    scores = next(child for child in split.children if child.kind == "attention_core")
    fused = composite(
        "attention",
        "self_attention",
        [
            linear("qkv_proj", d, 3 * d, bias=bias, description=f"Linear({d}, 3·{d}): query, key and value fused"),
            replace(scores, description="softmax(Q Kᵀ / √d_h) V, partial rotary positions on Q and K: no parameters"),
            linear("out_proj", d, d, bias=bias),
        ],
        "causal self-attention with partial rotary positions; query, key and value from one fused linear",
    )
    return replace(fused, kv_cache=split.kv_cache)


def _mlp(d: Poly, d_ff: Poly, activation: str) -> Block:
    """dense_h_to_4h, the activation (element-wise: no parameters, no FLOPs counted), dense_4h_to_h."""
    return composite(
        "mlp",
        "feed_forward",
        [linear("fc_in", d, d_ff), linear("fc_out", d_ff, d)],
        f"feed-forward, {activation}",
    )


def build(cfg: NeoXConfig) -> Block:
    d = symbol("d", cfg.d_model)
    V = symbol("V", cfg.vocab_size)
    L = symbol("L", cfg.n_layers)
    flow = (
        "attention and feed-forward on the same input, both added to it (parallel residual)"
        if cfg.parallel_residual
        else "attention, add; the feed-forward on the sum, add (sequential residual)"
    )
    layer = composite(
        "layer",
        "decoder_layer",
        [
            layer_norm("attention_norm", d),
            _fused_attention(d, cfg.attention_bias),
            layer_norm("mlp_norm", d),
            _mlp(d, symbol("d_ff", cfg.d_ff), cfg.activation),
        ],
        f"pre-LN decoder layer: {flow}",
    )
    children = [
        embedding("token", V, d, role="token", description="token embeddings (embed_in)"),
        repeat(layer, L, name="layers"),
        layer_norm("final_norm", d),
    ]
    if cfg.head == "lm":
        untied = "next-token logits: the untied output embedding (embed_out in EleutherAI's checkpoints)"
        tied_to = "token" if cfg.tie_embeddings else ""
        children.append(lm_head(d, V, tied_to=tied_to, description="" if tied_to else untied))
    K = LABELS(cfg.num_labels)
    if cfg.head == "sequence_classification":  # scores every token; the last non-padding one's are kept (a gather)
        children.append(linear("score", d, K, bias=False, description="class scores on every token, no bias"))
    if cfg.head == "token_classification":
        children.append(linear("classifier", d, K, description="a label's scores per token"))
    if cfg.head == "question_answering":
        children.append(linear("qa_outputs", d, const(2), description="answer start and end logits per token"))
    root = composite("neox", "model", children, "GPT-NeoX decoder")
    return with_modules(root, reference_modules(cfg))


def reference_modules(cfg: NeoXConfig) -> dict[str, tuple[str, ...]]:
    """Where each block's parameters live in the transformers class `reference` builds (for `archzoo verify`):
    block path -> submodule names, inside a layer relative to the layer."""
    base = "" if cfg.head == "none" else "gpt_neox."
    layer = "neox.layers.layer"
    return {
        "neox": ("",),
        "neox.token": (f"{base}embed_in",),
        "neox.layers": (f"{base}layers",),
        layer: (f"{base}layers",),
        f"{layer}.attention_norm": ("input_layernorm",),
        f"{layer}.attention": ("attention",),
        f"{layer}.attention.qkv_proj": ("attention.query_key_value",),
        f"{layer}.attention.out_proj": ("attention.dense",),
        f"{layer}.mlp_norm": ("post_attention_layernorm",),
        f"{layer}.mlp": ("mlp",),
        f"{layer}.mlp.fc_in": ("mlp.dense_h_to_4h",),
        f"{layer}.mlp.fc_out": ("mlp.dense_4h_to_h",),
        "neox.final_norm": (f"{base}final_layer_norm",),
        "neox.lm_head": ("lm_head",),
        "neox.score": ("score",),
        "neox.classifier": ("classifier",),
        "neox.qa_outputs": ("qa_outputs",),
    }


def reference(cfg: NeoXConfig) -> Reference:
    """GPTNeoXModel or one of its head classes, built from a GPTNeoXConfig with the same keys."""
    labelled = cfg.head in ("sequence_classification", "token_classification")
    return Reference(
        library="transformers",
        target=f"transformers.{CLASSES[cfg.head]}",
        config_class="transformers.GPTNeoXConfig",
        kwargs=dict(
            vocab_size=cfg.vocab_size,
            hidden_size=cfg.d_model,
            num_hidden_layers=cfg.n_layers,
            num_attention_heads=cfg.n_heads,
            intermediate_size=cfg.d_ff,
            max_position_embeddings=cfg.max_positions,
            hidden_act=cfg.activation,
            attention_bias=cfg.attention_bias,
            use_parallel_residual=cfg.parallel_residual,
            rope_parameters={
                "rope_type": "default",
                "rope_theta": 10000.0,
                "partial_rotary_factor": cfg.rotary_fraction,
            },
            tie_word_embeddings=cfg.tie_embeddings,
            **({"num_labels": cfg.num_labels} if labelled else {}),
        ),
    )


# ---- Hugging Face config.json: GPTNeoXConfig's keys, as transformers 5.23 defines them -------------------

_ROTARY = (
    "a rotary position setting: no parameters, and the rotary angles and rotations are element-wise, so "
    "FlopCounterMode counts no FLOPs for them"
)
_CONVERTED_ROTARY = "GPTNeoXConfig's own conversion moves it into rope_parameters ({}) while loading; " + _ROTARY

#: the rotary types transformers 5.23 builds (ROPE_INIT_FUNCTIONS and "default")
ROPE_TYPES = ("default", "linear", "dynamic", "yarn", "longrope", "llama3", "proportional")

HF_GPT_NEOX = HFTable(
    model_type="gpt_neox",
    config_class="GPTNeoXConfig",
    defaults=dict(
        vocab_size=50432,
        hidden_size=6144,
        num_hidden_layers=44,
        num_attention_heads=64,
        intermediate_size=24576,
        hidden_act="gelu",
        attention_dropout=0.0,
        hidden_dropout=0.0,
        classifier_dropout=0.1,
        max_position_embeddings=2048,
        initializer_range=0.02,
        layer_norm_eps=1e-05,
        use_cache=True,
        bos_token_id=0,
        eos_token_id=2,
        pad_token_id=None,
        tie_word_embeddings=False,
        use_parallel_residual=True,
        rope_parameters=None,
        attention_bias=True,
        is_decoder=False,
    ),
    aliases={},
    read={
        "vocab_size": "vocab_size",
        "hidden_size": "d_model",
        "num_hidden_layers": "n_layers",
        "num_attention_heads": "n_heads",
        "intermediate_size": "d_ff",
        "hidden_act": "activation",
        "max_position_embeddings": "max_positions",
        "tie_word_embeddings": "tie_embeddings",
        "use_parallel_residual": "parallel_residual",
        "attention_bias": "attention_bias",
        # rotary settings change no count; read for the fraction it turns and to refuse a type transformers
        # does not build
        "rope_parameters": "rotary_fraction",
        # no field: GPTNeoXConfig's conversion takes it for rope_parameters' partial_rotary_factor when that has none
        "rotary_pct": "rotary_fraction",
        "num_labels": "num_labels",
    },
    ignored={
        "attention_dropout": DROPOUT,
        "hidden_dropout": DROPOUT,
        "classifier_dropout": DROPOUT,
        "initializer_range": INITIALISATION,
        "layer_norm_eps": NORM_EPSILON,
        "use_cache": USE_CACHE,
        "bos_token_id": TOKEN_ID,
        "eos_token_id": TOKEN_ID,
        "pad_token_id": TOKEN_ID + " (GPT-NeoX's token embedding has no padding index)",
        "is_decoder": "not read by GPT-NeoX's modules: every layer is causal whatever its value",
        "rotary_emb_base": _CONVERTED_ROTARY.format("rope_theta"),
        # keys EleutherAI's GPT-NeoX-20B and early Pythia files carry from older transformers releases
        "attention_probs_dropout_prob": f"{NOT_READ}; a dropout: no parameters or FLOPs",
        "hidden_dropout_prob": f"{NOT_READ}; a dropout: no parameters or FLOPs",
    },
    refused={},
    base_class="GPTNeoXModel",
    classes={name: {"head": head} for head, name in sorted(CLASSES.items(), key=lambda item: item[0] != "none")},
)


def _rotary_fraction(rope: Any, rotary_pct: Any) -> Any:
    """The fraction of each head the rotary positions turn, as GPTNeoXConfig resolves it: rope_parameters'
    partial_rotary_factor, else the legacy rotary_pct, else 0.25. A rotary type transformers does not build is
    refused (the other rotary settings change no count)."""
    fallback = 0.25 if rotary_pct is None else rotary_pct
    if rope is None:
        return fallback
    if not isinstance(rope, dict):
        raise ValueError(
            f'rope_parameters: expected an object such as {{"rope_type": "default"}} or null, '
            f"got {json.dumps(rope)[:60]}"
        )
    kind = rope.get("rope_type", rope.get("type", "default"))
    if kind not in ROPE_TYPES:
        raise ValueError(
            f"rope_parameters: rope_type {json.dumps(kind)[:60]} is not one transformers' GPTNeoXConfig "
            f"accepts; expected one of {', '.join(ROPE_TYPES)}"
        )
    fraction = rope.get("partial_rotary_factor")
    return fallback if fraction is None else fraction


@hf_reader(HF_GPT_NEOX)
def _from_gpt_neox(hf: dict[str, Any], model_class: str = "GPTNeoXModel") -> dict[str, Any]:
    return dict(
        vocab_size=hf["vocab_size"],
        d_model=hf["hidden_size"],
        n_layers=hf["num_hidden_layers"],
        n_heads=hf["num_attention_heads"],
        d_ff=hf["intermediate_size"],
        max_positions=hf["max_position_embeddings"],
        activation=hf["hidden_act"],
        attention_bias=hf["attention_bias"],
        parallel_residual=hf["use_parallel_residual"],
        rotary_fraction=_rotary_fraction(hf["rope_parameters"], hf.get("rotary_pct")),
        tie_embeddings=hf["tie_word_embeddings"],
        num_labels=hf["num_labels"],
    )


ARCHITECTURE = Architecture(
    name="neox",
    title="GPT-NeoX",
    summary="EleutherAI's decoder (GPT-NeoX-20B, Pythia): pre-LN layers with LayerNorms with biases, fused "
    "query/key/value with biases, rotary positions on a fraction of each head (no parameters), attention and "
    "feed-forward in parallel or in sequence, and an untied output embedding.",
    citation="Black et al. GPT-NeoX-20B: An Open-Source Autoregressive Language Model. 2022. arXiv:2204.06745; "
    "Biderman et al. Pythia: A Suite for Analyzing Large Language Models Across Training and Scaling. ICML 2023. "
    "arXiv:2304.01373",
    config_model=NeoXConfig,
    build=build,
    seq_len=lambda cfg: cfg.max_positions,
    reference=reference,
)


@hookimpl
def register_architectures(register: Callable[[Architecture], None]) -> None:
    register(ARCHITECTURE)


@hookimpl
def register_hf_readers(register: Callable[..., None]) -> None:
    register("gpt_neox", _from_gpt_neox)
