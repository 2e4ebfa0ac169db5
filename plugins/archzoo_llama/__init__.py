"""archzoo plugin: LLaMA-style decoders (RMSNorm, gated feed-forward, grouped-query attention, rotary positions).

One configuration covers the family transformers builds with the same modules: Llama, Mistral, Qwen2
(biases on q/k/v only), Gemma (a head width that is not d_model / n_heads, a tied head), OLMo (a layer
norm with no weight or bias) and Phi-3 (q/k/v and gate/up fused into one linear each: the same weights
and FLOPs). Rotary positions have no parameters, and their angles cost no matmul FLOPs in transformers'
eager forward pass (FlopCounterMode counts none), so they appear in no formula.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import Field, PositiveInt, model_validator

from archzoo import ArchConfig, Architecture, Reference, hookimpl
from archzoo.architecture import check_activation, check_heads
from archzoo.blocks import Block, attention, composite, embedding, feed_forward, linear, repeat, rms_norm, with_modules
from archzoo.formula import sym
from archzoo.hf_config import (
    DROPOUT,
    INITIALISATION,
    NORM_EPSILON,
    TOKEN_ID,
    USE_CACHE,
    HFTable,
    hf_reader,
)
from archzoo.symbols import symbol

__version__ = "0.1.0"


class LlamaConfig(ArchConfig):
    """A LLaMA-style decoder; defaults are TinyLlama-1.1B (Zhang et al. 2024)."""

    vocab_size: PositiveInt = Field(32000, description="vocabulary size")
    d_model: PositiveInt = Field(2048, description="model width")
    n_layers: PositiveInt = Field(22, description="decoder layers")
    n_heads: PositiveInt = Field(32, description="query heads")
    n_kv_heads: PositiveInt | None = Field(
        4, description="key/value heads (grouped- or multi-query attention; null = n_heads); must divide n_heads"
    )
    d_head: PositiveInt | None = Field(None, description="width of one head (null = d_model / n_heads; Gemma 7B: 256)")
    d_ff: PositiveInt = Field(5632, description="hidden width of the gated feed-forward (gate and up projections)")
    max_positions: PositiveInt = Field(2048, description="context length (rotary positions: no parameters)")
    tie_embeddings: bool = Field(False, description="LM head shares the token embedding matrix (Gemma)")
    norm: Literal["rms_norm", "layer_norm_no_affine"] = Field(
        "rms_norm",
        description="rms_norm (a weight of width d_model) or layer_norm_no_affine (OLMo: no weight, no bias)",
    )
    activation: str = Field(
        "silu", description="activation of the gate: silu (SwiGLU), gelu_pytorch_tanh (GeGLU, Gemma)"
    )
    qkv_bias: bool = Field(False, description="biases on the query, key and value projections (Qwen2)")
    out_bias: bool = Field(False, description="bias on the attention output projection")
    mlp_bias: bool = Field(False, description="biases on the gate, up and down projections")
    head: Literal["lm", "none"] = Field("lm", description="lm (*ForCausalLM) or none (the base *Model)")
    family: Literal["llama", "mistral", "qwen2", "gemma", "olmo", "phi3"] = Field(
        "llama",
        description="the transformers classes `archzoo verify` builds for this configuration (no effect on "
        "counts); another family is used where this one cannot build it",
    )

    @model_validator(mode="after")
    def _check(self) -> LlamaConfig:
        if self.d_head is None:
            check_heads(self.d_model, self.n_heads, ", or give d_head explicitly (Gemma 7B: n_heads 16, d_head 256)")
        kv = self.n_heads if self.n_kv_heads is None else self.n_kv_heads
        if self.n_heads % kv:
            raise ValueError(
                f"n_kv_heads: n_heads {self.n_heads} is not divisible by n_kv_heads {kv}; "
                "choose a divisor of n_heads (1 for multi-query attention)"
            )
        d_head = self.d_head or self.d_model // self.n_heads
        if d_head % 2:
            raise ValueError(
                f"{'d_head' if self.d_head else 'n_heads'}: rotary positions turn pairs of channels, so "
                f"a head's width must be even, got {d_head}"
                + ("" if self.d_head else f" (d_model {self.d_model} / n_heads {self.n_heads})")
                + "; choose an even head width"
            )
        check_activation(self.activation)
        return self


def _norm(name: str, d, cfg: LlamaConfig) -> Block:
    if cfg.norm == "rms_norm":
        return rms_norm(name, d)
    # OLMo's LayerNorm normalises with neither weight nor bias: no parameters, and no matmul FLOPs
    return Block(name=name, kind="layer_norm", description=f"LayerNorm({d}), no weight or bias")


def build(cfg: LlamaConfig) -> Block:
    d = symbol("d", cfg.d_model)
    V = symbol("V", cfg.vocab_size)
    L = symbol("L", cfg.n_layers)
    d_ff = symbol("d_ff", cfg.d_ff)
    h = symbol("h", cfg.n_heads)
    d_h = symbol("d_h", cfg.d_head or cfg.d_model // cfg.n_heads)
    inner = d if cfg.d_head is None else h * d_h
    if cfg.n_kv_heads is None or cfg.n_kv_heads == cfg.n_heads:
        kv_inner = inner
    else:
        h_kv = sym("h_kv", cfg.n_kv_heads, latex="h_{kv}", meaning="key/value heads (n_kv_heads)", order=21)
        kv_inner = h_kv * d_h
    kind = "SwiGLU" if cfg.activation in ("silu", "swish") else f"{cfg.activation}-gated"
    norm_name = "RMSNorm" if cfg.norm == "rms_norm" else "LayerNorm without parameters"
    layer = composite(
        "layer",
        "decoder_layer",
        [
            _norm("attention_norm", d, cfg),
            attention(
                "attention",
                d,
                inner,
                kv_inner=kv_inner,
                bias=cfg.qkv_bias,
                out_bias=cfg.out_bias,
                causal=True,
                description="causal grouped-query self-attention with rotary positions"
                if kv_inner is not inner
                else "causal self-attention with rotary positions",
            ),
            _norm("mlp_norm", d, cfg),
            feed_forward(
                "mlp",
                d,
                d_ff,
                activation=cfg.activation,
                gated=True,
                bias=cfg.mlp_bias,
                description=f"gated feed-forward ({kind}): gate, up and down projections",
            ),
        ],
        f"pre-norm decoder layer: {norm_name}, attention, add; {norm_name}, {kind}, add",
    )
    children = [
        embedding("token", V, d, role="token", description="token embeddings"),
        repeat(layer, L, name="layers"),
        _norm("final_norm", d, cfg),
    ]
    if cfg.head == "lm":
        children.append(
            linear(
                "lm_head",
                d,
                V,
                bias=False,
                tied_to="token" if cfg.tie_embeddings else "",
                description="next-token logits"
                + (", weight tied to the token embedding" if cfg.tie_embeddings else ""),
            )
        )
    return with_modules(composite("llama", "model", children, "LLaMA-style decoder"), reference_modules(cfg))


def reference_modules(cfg: LlamaConfig) -> dict[str, tuple[str, ...]]:
    """Where each block's parameters live in the transformers class `reference` builds (for `archzoo verify`):
    block path -> submodule names, inside a layer relative to the layer. The families name them alike, except
    that Phi-3 fuses q/k/v into ``qkv_proj`` and gate/up into ``gate_up_proj`` (those blocks stay unmapped)."""
    base = "model." if cfg.head == "lm" else ""
    table = {
        "llama": ("",),
        "llama.token": (f"{base}embed_tokens",),
        "llama.layers": (f"{base}layers",),
        "llama.layers.layer": (f"{base}layers",),
        "llama.layers.layer.attention_norm": ("input_layernorm",),
        "llama.layers.layer.attention": ("self_attn",),
        "llama.layers.layer.attention.q_proj": ("self_attn.q_proj",),
        "llama.layers.layer.attention.k_proj": ("self_attn.k_proj",),
        "llama.layers.layer.attention.v_proj": ("self_attn.v_proj",),
        "llama.layers.layer.attention.out_proj": ("self_attn.o_proj",),
        "llama.layers.layer.mlp_norm": ("post_attention_layernorm",),
        "llama.layers.layer.mlp": ("mlp",),
        "llama.layers.layer.mlp.fc_in": ("mlp.up_proj",),
        "llama.layers.layer.mlp.fc_gate": ("mlp.gate_proj",),
        "llama.layers.layer.mlp.fc_out": ("mlp.down_proj",),
        "llama.final_norm": (f"{base}norm",),
        "llama.lm_head": ("lm_head",),
    }
    if _reference_family(cfg) == "phi3":
        for fused in ("attention.q_proj", "attention.k_proj", "attention.v_proj", "mlp.fc_in", "mlp.fc_gate"):
            del table[f"llama.layers.layer.{fused}"]
    return table


#: model type -> transformers' class prefix
FAMILIES = {"llama": "Llama", "mistral": "Mistral", "qwen2": "Qwen2", "gemma": "Gemma", "olmo": "Olmo", "phi3": "Phi3"}


def _builds(family: str, cfg: LlamaConfig) -> bool:
    """Whether transformers' ``family`` classes build exactly this configuration."""
    rms = cfg.norm == "rms_norm"
    same_bias = cfg.qkv_bias == cfg.out_bias
    no_bias = not (cfg.qkv_bias or cfg.out_bias or cfg.mlp_bias)
    natural_head = cfg.d_head is None or cfg.d_head == cfg.d_model // cfg.n_heads  # what transformers computes
    return {
        # LlamaConfig refuses heads that do not divide d_model, even with head_dim given
        "llama": rms and same_bias and cfg.d_model % cfg.n_heads == 0,
        "mistral": rms and no_bias,
        "qwen2": rms and cfg.qkv_bias and not cfg.out_bias and not cfg.mlp_bias and natural_head,
        # GemmaRMSNorm scales by 1 + weight and the embeddings by sqrt(d): the same parameters, no matmul FLOPs
        "gemma": rms and same_bias and not cfg.mlp_bias,
        "olmo": not rms and same_bias and not cfg.mlp_bias and natural_head,
        "phi3": rms and no_bias and natural_head,
    }[family]


def _reference_family(cfg: LlamaConfig) -> str | None:
    """``cfg.family`` when its classes build the configuration, else the first family that does."""
    if _builds(cfg.family, cfg):
        return cfg.family
    return next((f for f in ("llama", "qwen2", "gemma", "olmo") if _builds(f, cfg)), None)


def reference(cfg: LlamaConfig) -> Reference | None:
    """The transformers class of ``family`` (or of the first family that builds the configuration)."""
    family = _reference_family(cfg)
    if family is None:
        return None  # an output bias without q/k/v biases, or biases with OLMo's norm: no class builds it
    kwargs: dict[str, Any] = dict(
        vocab_size=cfg.vocab_size,
        hidden_size=cfg.d_model,
        intermediate_size=cfg.d_ff,
        num_hidden_layers=cfg.n_layers,
        num_attention_heads=cfg.n_heads,
        num_key_value_heads=cfg.n_kv_heads or cfg.n_heads,
        max_position_embeddings=cfg.max_positions,
        hidden_act=cfg.activation,
        tie_word_embeddings=cfg.tie_embeddings,
        pad_token_id=None,
    )  # some families' default padding index lies beyond a small vocabulary
    if family in ("llama", "gemma", "olmo"):
        kwargs["attention_bias"] = cfg.qkv_bias
    if family == "llama":
        kwargs["mlp_bias"] = cfg.mlp_bias
    if family in ("llama", "mistral", "gemma"):
        kwargs["head_dim"] = cfg.d_head or cfg.d_model // cfg.n_heads
    name = FAMILIES[family]
    return Reference(
        library="transformers",
        target=f"transformers.{name}{'ForCausalLM' if cfg.head == 'lm' else 'Model'}",
        config_class=f"transformers.{name}Config",
        kwargs=kwargs,
    )


# ---- Hugging Face config.json: each model type's keys, as transformers 5.23 defines them ----------------

_ROPE = "rotary position settings: no parameters, and the rotary angles cost no matmul FLOPs in the eager forward pass"
_WINDOW = (
    "sliding-window attention: a mask on the same score products, so no parameters and the same eager "
    "FLOPs (archzoo counts the full N x N products, as eager attention computes them)"
)
_EPS = NORM_EPSILON.replace("LayerNorm", "RMSNorm")
_UNSUPPORTED_HEAD = "the llama plugin counts the base model and the causal LM only; count one of those"

_READ = {
    "vocab_size": "vocab_size",
    "hidden_size": "d_model",
    "intermediate_size": "d_ff",
    "num_hidden_layers": "n_layers",
    "num_attention_heads": "n_heads",
    "num_key_value_heads": "n_kv_heads",
    "hidden_act": "activation",
    "max_position_embeddings": "max_positions",
    "tie_word_embeddings": "tie_embeddings",
    # an index, not a size; read only to refuse what transformers' nn.Embedding refuses
    "pad_token_id": "(checked: inside the vocabulary)",
    # rotary settings change no count; read only to refuse a rotary type transformers does not build
    "rope_parameters": "(checked: a rotary type transformers builds)",
}
_IGNORED = {
    "initializer_range": INITIALISATION,
    "use_cache": USE_CACHE,
    "bos_token_id": TOKEN_ID,
    "eos_token_id": TOKEN_ID,
    "attention_dropout": DROPOUT,
}


def _table(
    model_type: str,
    family: str,
    defaults: dict[str, Any],
    read: dict[str, str],
    ignored: dict[str, str],
    refused: dict[str, tuple[tuple[Any, ...], str]] | None = None,
    heads: tuple[str, ...] = (),
) -> HFTable:
    return HFTable(
        model_type=model_type,
        config_class=f"{family}Config",
        defaults=defaults,
        aliases={},
        read={**_READ, **read},
        ignored={**{k: v for k, v in _IGNORED.items() if k in defaults}, **ignored},
        refused=refused or {},
        base_class=f"{family}Model",
        classes={f"{family}Model": {"head": "none"}, f"{family}ForCausalLM": {"head": "lm"}},
        unsupported_classes={f"{family}For{h}": _UNSUPPORTED_HEAD for h in heads},
    )


HF_LLAMA = _table(
    "llama",
    "Llama",
    defaults=dict(
        vocab_size=32000,
        hidden_size=4096,
        intermediate_size=11008,
        num_hidden_layers=32,
        num_attention_heads=32,
        num_key_value_heads=None,
        hidden_act="silu",
        max_position_embeddings=2048,
        initializer_range=0.02,
        rms_norm_eps=1e-06,
        use_cache=True,
        pad_token_id=None,
        bos_token_id=1,
        eos_token_id=2,
        pretraining_tp=1,
        tie_word_embeddings=False,
        rope_parameters=None,
        attention_bias=False,
        attention_dropout=0.0,
        mlp_bias=False,
        head_dim=None,
    ),
    read={"attention_bias": "qkv_bias, out_bias", "mlp_bias": "mlp_bias", "head_dim": "d_head"},
    ignored={
        "rms_norm_eps": _EPS,
        "pretraining_tp": "tensor-parallel slicing of the original training code; transformers 5.23's Llama "
        "does not read it (the same weights and FLOPs)",
    },
    heads=("QuestionAnswering", "SequenceClassification", "TokenClassification"),
)

HF_MISTRAL = _table(
    "mistral",
    "Mistral",
    defaults=dict(
        vocab_size=32000,
        hidden_size=4096,
        intermediate_size=14336,
        num_hidden_layers=32,
        num_attention_heads=32,
        num_key_value_heads=8,
        head_dim=None,
        hidden_act="silu",
        max_position_embeddings=131072,
        initializer_range=0.02,
        rms_norm_eps=1e-06,
        use_cache=True,
        pad_token_id=None,
        bos_token_id=1,
        eos_token_id=2,
        tie_word_embeddings=False,
        rope_parameters=None,
        sliding_window=4096,
        attention_dropout=0.0,
    ),
    read={"head_dim": "d_head"},
    ignored={"rms_norm_eps": _EPS, "sliding_window": _WINDOW},
    heads=("QuestionAnswering", "SequenceClassification", "TokenClassification"),
)

HF_QWEN2 = _table(
    "qwen2",
    "Qwen2",
    defaults=dict(
        vocab_size=151936,
        hidden_size=4096,
        intermediate_size=22016,
        num_hidden_layers=32,
        num_attention_heads=32,
        num_key_value_heads=32,
        hidden_act="silu",
        max_position_embeddings=32768,
        initializer_range=0.02,
        rms_norm_eps=1e-06,
        use_cache=True,
        tie_word_embeddings=False,
        rope_parameters=None,
        use_sliding_window=False,
        sliding_window=4096,
        max_window_layers=28,
        layer_types=None,
        attention_dropout=0.0,
        pad_token_id=None,
        bos_token_id=None,
        eos_token_id=None,
    ),
    read={},
    ignored={
        "rms_norm_eps": _EPS,
        "use_sliding_window": _WINDOW,
        "sliding_window": _WINDOW,
        "max_window_layers": _WINDOW,
        "layer_types": _WINDOW,
    },
    heads=("QuestionAnswering", "SequenceClassification", "TokenClassification"),
)

HF_GEMMA = _table(
    "gemma",
    "Gemma",
    defaults=dict(
        vocab_size=256000,
        hidden_size=3072,
        intermediate_size=24576,
        num_hidden_layers=28,
        num_attention_heads=16,
        num_key_value_heads=16,
        head_dim=256,
        hidden_act="gelu_pytorch_tanh",
        max_position_embeddings=8192,
        initializer_range=0.02,
        rms_norm_eps=1e-06,
        use_cache=True,
        pad_token_id=0,
        eos_token_id=1,
        bos_token_id=2,
        tie_word_embeddings=True,
        rope_parameters=None,
        attention_bias=False,
        attention_dropout=0.0,
        use_bidirectional_attention=None,
    ),
    read={"attention_bias": "qkv_bias, out_bias", "head_dim": "d_head"},
    ignored={
        "rms_norm_eps": _EPS,
        "use_bidirectional_attention": "drops the causal mask: the same score products, so no parameters and "
        "the same eager FLOPs",
    },
    heads=("SequenceClassification", "TokenClassification"),
)

HF_OLMO = _table(
    "olmo",
    "Olmo",
    defaults=dict(
        vocab_size=50304,
        hidden_size=4096,
        intermediate_size=11008,
        num_hidden_layers=32,
        num_attention_heads=32,
        num_key_value_heads=None,
        hidden_act="silu",
        max_position_embeddings=2048,
        initializer_range=0.02,
        use_cache=True,
        pad_token_id=1,
        bos_token_id=None,
        eos_token_id=50279,
        tie_word_embeddings=False,
        rope_parameters=None,
        attention_bias=False,
        attention_dropout=0.0,
        clip_qkv=None,
    ),
    read={"attention_bias": "qkv_bias, out_bias"},
    ignored={"clip_qkv": "clamps the query, key and value activations: no parameters, and no matmul FLOPs"},
    heads=("SequenceClassification",),
)

HF_PHI3 = _table(
    "phi3",
    "Phi3",
    defaults=dict(
        vocab_size=32064,
        hidden_size=3072,
        intermediate_size=8192,
        num_hidden_layers=32,
        num_attention_heads=32,
        num_key_value_heads=None,
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        attention_dropout=0.0,
        hidden_act="silu",
        max_position_embeddings=4096,
        original_max_position_embeddings=4096,
        initializer_range=0.02,
        rms_norm_eps=1e-05,
        use_cache=True,
        tie_word_embeddings=False,
        rope_parameters=None,
        bos_token_id=1,
        eos_token_id=32000,
        pad_token_id=32000,
        sliding_window=None,
    ),
    read={},
    ignored={
        "rms_norm_eps": _EPS,
        "resid_pdrop": DROPOUT,
        "embd_pdrop": DROPOUT,
        "sliding_window": _WINDOW,
        "original_max_position_embeddings": "the context length the rotary scaling (longrope) starts from: " + _ROPE,
    },
    heads=("SequenceClassification", "TokenClassification"),
)


#: the rotary types transformers 5.23 builds (ROPE_INIT_FUNCTIONS and "default"); Phi-3 takes two of them
ROPE_TYPES = ("default", "linear", "dynamic", "yarn", "longrope", "llama3", "proportional")
_PHI3_ROPE_TYPES = ("default", "longrope")


def _check_rope(rope: Any, family: str) -> None:
    """Refuse a rotary type transformers refuses to build (its other rotary settings change no count)."""
    if rope is None:
        return
    if not isinstance(rope, dict):
        raise ValueError(
            f'rope_parameters: expected an object such as {{"rope_type": "default"}} or null, '
            f"got {json.dumps(rope)[:60]}"
        )
    kind = rope.get("rope_type", rope.get("type", "default"))
    allowed = _PHI3_ROPE_TYPES if family == "phi3" else ROPE_TYPES
    if kind not in allowed:
        raise ValueError(
            f"rope_parameters: rope_type {json.dumps(kind)[:60]} is not one transformers' "
            f"{FAMILIES[family]}Config accepts; expected one of {', '.join(allowed)}"
        )


def _common(hf: dict[str, Any], family: str) -> dict[str, Any]:
    """The keys every type reads alike; num_key_value_heads null means one key/value head per query head."""
    vocab, pad = hf["vocab_size"], hf.get("pad_token_id")
    if isinstance(vocab, int) and isinstance(pad, int) and not isinstance(pad, bool) and not -vocab <= pad < vocab:
        raise ValueError(
            f"pad_token_id: {pad} is outside the vocabulary of {vocab:,} tokens, and transformers' "
            "token embedding refuses such a padding index; set pad_token_id to null or to a token id"
        )
    _check_rope(hf["rope_parameters"], family)
    return dict(
        family=family,
        vocab_size=hf["vocab_size"],
        d_model=hf["hidden_size"],
        d_ff=hf["intermediate_size"],
        n_layers=hf["num_hidden_layers"],
        n_heads=hf["num_attention_heads"],
        n_kv_heads=hf["num_key_value_heads"],
        activation=hf["hidden_act"],
        max_positions=hf["max_position_embeddings"],
        tie_embeddings=hf["tie_word_embeddings"],
    )


def _head_dim(hf: dict[str, Any]) -> dict[str, Any]:
    """d_head: head_dim when given; else transformers' hidden_size // num_attention_heads, which d_head null
    means when the heads divide the width (when they do not, transformers rounds down, and so does archzoo)."""
    if hf.get("head_dim") is not None:
        return {"d_head": hf["head_dim"]}
    width, heads = hf["hidden_size"], hf["num_attention_heads"]
    if not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in (width, heads)) or width % heads == 0:
        return {}  # the configuration model reports a bad value under its own key
    if width < heads:
        raise ValueError(
            f"num_attention_heads: {heads} heads of a {width}-wide model leave each head "
            f"{width // heads} wide; choose at most {width} heads"
        )
    return {"d_head": width // heads}


@hf_reader(HF_LLAMA)
def _from_llama(hf: dict[str, Any], model_class: str = "LlamaModel") -> dict[str, Any]:
    width, heads = hf["hidden_size"], hf["num_attention_heads"]
    if isinstance(width, int) and isinstance(heads, int) and heads > 0 and width % heads:
        raise ValueError(
            f"num_attention_heads: {heads} heads do not divide hidden_size {width}, which transformers' "
            "LlamaConfig refuses even when head_dim is given; choose a divisor of hidden_size"
        )
    return dict(
        _common(hf, "llama"),
        **_head_dim(hf),
        qkv_bias=hf["attention_bias"],
        out_bias=hf["attention_bias"],
        mlp_bias=hf["mlp_bias"],
    )


@hf_reader(HF_MISTRAL)
def _from_mistral(hf: dict[str, Any], model_class: str = "MistralModel") -> dict[str, Any]:
    return dict(_common(hf, "mistral"), **_head_dim(hf))


@hf_reader(HF_QWEN2)
def _from_qwen2(hf: dict[str, Any], model_class: str = "Qwen2Model") -> dict[str, Any]:
    return dict(_common(hf, "qwen2"), **_head_dim(hf), qkv_bias=True)  # Qwen2Attention: biases on q, k and v; none on o


@hf_reader(HF_GEMMA)
def _from_gemma(hf: dict[str, Any], model_class: str = "GemmaModel") -> dict[str, Any]:
    # GemmaRMSNorm scales by (1 + weight) and the embeddings by sqrt(d): the same parameters, no matmul FLOPs
    return dict(_common(hf, "gemma"), **_head_dim(hf), qkv_bias=hf["attention_bias"], out_bias=hf["attention_bias"])


@hf_reader(HF_OLMO)
def _from_olmo(hf: dict[str, Any], model_class: str = "OlmoModel") -> dict[str, Any]:
    return dict(
        _common(hf, "olmo"),
        **_head_dim(hf),
        norm="layer_norm_no_affine",
        qkv_bias=hf["attention_bias"],
        out_bias=hf["attention_bias"],
    )


@hf_reader(HF_PHI3)
def _from_phi3(hf: dict[str, Any], model_class: str = "Phi3Model") -> dict[str, Any]:
    return dict(
        _common(hf, "phi3"), **_head_dim(hf)
    )  # qkv_proj and gate_up_proj fuse the same weights into one linear each


ARCHITECTURE = Architecture(
    name="llama",
    title="LLaMA-style decoder",
    summary="Decoder-only Transformer with RMSNorm, a gated feed-forward (SwiGLU or GeGLU), grouped-query "
    "attention and rotary positions; covers LLaMA, Llama 2, TinyLlama, Mistral, Qwen2, Gemma, OLMo and Phi-3.",
    citation="Touvron et al. LLaMA: Open and Efficient Foundation Language Models. 2023. arXiv:2302.13971; "
    "Touvron et al. Llama 2: Open Foundation and Fine-Tuned Chat Models. 2023. arXiv:2307.09288",
    config_model=LlamaConfig,
    build=build,
    seq_len=lambda cfg: cfg.max_positions,
    reference=reference,
)

#: Hugging Face model type -> its reader
HF_READERS = {
    "llama": _from_llama,
    "mistral": _from_mistral,
    "qwen2": _from_qwen2,
    "gemma": _from_gemma,
    "olmo": _from_olmo,
    "phi3": _from_phi3,
}


@hookimpl
def register_architectures(register):
    register(ARCHITECTURE)


@hookimpl
def register_hf_readers(register):
    for model_type, reader in HF_READERS.items():
        register(model_type, reader)
