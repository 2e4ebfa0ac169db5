"""archzoo plugin: gpt-oss (OpenAI's open-weight mixtures of experts, gpt-oss-20b and gpt-oss-120b), as transformers
5.23 builds it.

A gpt-oss layer is a pre-norm decoder layer: an RMSNorm, grouped-query attention with biases on the query, key, value
and output projections and a learned *sink* per query head (``sinks``: one logit the softmax adds to every row's
denominator, then drops; a parameter, and no matmul), the residual add, an RMSNorm and a mixture of experts. Its
router, a linear with a bias, scores every expert for each token, which runs through the top ``k``; each expert is a
gated feed-forward with biases, which transformers stores fused across the experts (``gate_up_proj`` holds the gate
and up projections interleaved, ``down_proj`` the down projections, each with its bias tensor). The gate is gpt-oss's
own: the gate and up outputs clamped at ``swiglu_limit``, ``gate · σ(α · gate)`` (``α = swiglu_alpha``, 1.702 as
released: quick_gelu's slope), times ``up + 1``; element-wise, so no parameters and no FLOPs FlopCounterMode counts.
transformers' eager experts run each expert's two matmuls on the tokens routed to it, ``N k`` expert evaluations in all.

Layers alternate sliding-window (128 tokens as released) and global attention, sliding first (``layer_types``, which
GptOssConfig derives so when a file gives none): the same parameters and forward FLOPs in both kinds, but past the
window a sliding layer's decode step reads the ``W`` keys transformers' sliding cache holds (`window_runs`). Positions
are rotary (YaRN as released): no parameters, and element-wise.

The released config.json files carry ``quantization_config`` (MXFP4 experts): the checkpoints store the experts'
weights in 4-bit blocks and scales, which transformers dequantizes to the model's own tensors where its MXFP4 kernels
are missing, and ``from_config`` builds unquantized. archzoo counts that model, the one the model card's figures
describe. What autograd saves in a training step (the sinks' concatenation, the clamped gate's intermediates) is not
stated: archzoo refuses the activation memory rather than guess it.
"""

from __future__ import annotations

from typing import Any, ClassVar, Final, Literal, Self

from pydantic import Field, PositiveInt, model_validator

from archzoo import Architecture, Reference
from archzoo.blocks import (
    Block,
    check_run_layers,
    composite,
    embedding,
    experts,
    feed_forward,
    learned_tensor,
    linear,
    repeat,
    rms_norm,
    with_modules,
)
from archzoo.decoder_parts import (
    EXPERTS,
    PADDING_CHECKED,
    ROTARY_TYPE_CHECKED,
    TOP_K,
    HeadWidthConfig,
    attention_modules,
    causal_attention,
    decoder_descriptions,
    decoder_heads,
    decoder_modules,
    decoder_reference,
    decoder_symbols,
    decoder_table,
    kv_heads_field,
    labels_kwargs,
    read_rotary_decoder,
    settings_ignored,
    window_runs,
    windowed,
    with_norms,
)
from archzoo.hf_config import DROPOUT, check_quantization, hf_reader
from archzoo.plugin_parts import NumLabels, architectures_hook, head_field, hf_readers_hook, num_labels_field
from archzoo.symbols import symbol

__version__ = "0.1.0"

#: archzoo's head -> transformers' class (gpt-oss has no question answering class)
CLASSES = {
    "lm": "GptOssForCausalLM",
    "none": "GptOssModel",
    "sequence_classification": "GptOssForSequenceClassification",
    "token_classification": "GptOssForTokenClassification",
}

SLIDING: Final = "sliding_attention"
FULL: Final = "full_attention"

#: the experts and top k (archzoo.decoder_parts' shared symbols; the labels' K is archzoo.plugin_parts.LABELS)
E, K = EXPERTS, TOP_K


class GptOssConfig(HeadWidthConfig):
    """A gpt-oss decoder; defaults are gpt-oss-120b (OpenAI 2025, arXiv:2508.10925), which are also transformers'
    GptOssConfig defaults."""

    DEFAULTS: ClassVar[dict[str, Any]] = dict(vocab_size=201088, d_model=2880, n_layers=36, n_heads=64)
    DESCRIPTIONS: ClassVar = decoder_descriptions("rows of the token embedding (and of the LM head)")

    n_kv_heads: PositiveInt = kv_heads_field(
        8, "key/value heads (num_key_value_heads; grouped-query attention); must divide n_heads"
    )
    d_head: PositiveInt | None = Field(
        64,
        description="width of one head (head_dim, 64 as released; null, archzoo's shorthand for d_model / n_heads "
        "rounded down: a config.json gives an integer, as GptOssConfig requires)",
    )
    d_ff: PositiveInt = Field(2880, description="hidden width of each expert (intermediate_size)")
    n_experts: PositiveInt = Field(128, description="experts in each layer (num_local_experts)")
    top_k: PositiveInt = Field(4, description="experts each token runs (num_experts_per_tok)")
    max_positions: PositiveInt = Field(
        131072, description="context length (max_position_embeddings; rotary positions: no parameters)"
    )
    activation: Literal["quick_gelu"] = Field(
        "quick_gelu",
        description="the experts' gate: gpt-oss's own, x·σ(1.702 x) clamped, times up + 1 (transformers' hidden_act "
        "is not read)",
    )
    sliding_window: PositiveInt = Field(128, description="tokens a sliding-window layer attends to (sliding_window)")
    layer_types: list[Literal["sliding_attention", "full_attention"]] | None = Field(
        None,
        description="each layer's kind, sliding_attention or full_attention (null: sliding and full in turn, sliding "
        "first, as GptOssConfig derives them)",
    )
    attention_bias: bool = Field(True, description="biases on the query, key, value and output projections")
    tie_embeddings: bool = Field(False, description="the LM head shares the token embedding matrix")
    head: Literal[tuple(CLASSES)] = head_field(CLASSES, prefix="GptOss")  # type: ignore[valid-type]
    num_labels: NumLabels = num_labels_field(
        "outputs of the sequence_classification and token_classification heads (num_labels)"
    )

    @model_validator(mode="after")
    def _check(self) -> Self:
        if self.top_k > self.n_experts:
            raise ValueError(
                f"top_k: {self.top_k} experts per token, more than the {self.n_experts} experts of a layer "
                "(torch.topk fails); give at most n_experts"
            )
        if self.layer_types is not None and len(self.layer_types) != self.n_layers:
            raise ValueError(
                f"layer_types: {len(self.layer_types)} entries for {self.n_layers} layers; give one kind per layer "
                "(as transformers requires) or null"
            )
        if self.layer_types is None:
            check_run_layers(self.n_layers)  # sliding and full in turn: the runs list every layer
        return self

    def slides(self) -> list[bool]:
        """Whether each layer masks by the sliding window: ``layer_types``, or sliding and full in turn."""
        if self.layer_types is not None:
            return [kind == SLIDING for kind in self.layer_types]
        return [i % 2 == 0 for i in range(self.n_layers)]


# ---- the block tree -------------------------------------------------------------------------------------------------


def _layer(cfg: GptOssConfig, name: str, slides: bool) -> Block:
    s = decoder_symbols(cfg)
    biases = ", biases on every projection" if cfg.attention_bias else ", no biases"
    attn = causal_attention(
        s.d, s.inner, s.h, s.d_h, cfg.n_heads, cfg.n_kv_heads, bias=cfg.attention_bias, details=f"{biases}, sinks"
    )
    sinks = learned_tensor(
        "sinks",
        s.h,
        leading=False,
        description="a learned logit per query head, added to every row of the softmax's denominator (sinks)",
    )
    attn = with_norms(attn, [sinks])  # a parameter among the attention's, kept with its KV cache and heads
    if slides:  # past the window the decode step reads the W keys transformers' sliding cache layer keeps
        attn = windowed(attn, cfg.sliding_window)
    expert = feed_forward(
        "expert",
        s.d,
        symbol("d_ff", cfg.d_ff),
        activation=cfg.activation,
        gated=True,
        bias=True,
        description="one expert: gate and up projections (gate_up_proj, interleaved), gpt-oss's clamped gate, down "
        "projection (down_proj), each with a bias",
    )
    router = linear(
        "router", s.d, E(cfg.n_experts), description="router: a score per expert for each token, with a bias"
    )
    mlp = experts(expert, E(cfg.n_experts), K(cfg.top_k), router=router, name="mlp")
    what = f"sliding-window ({cfg.sliding_window:,} tokens)" if slides else "global"
    return composite(
        name,
        "decoder_layer",
        [rms_norm("attention_norm", s.d), attn, rms_norm("mlp_norm", s.d), mlp],
        f"{what} pre-norm decoder layer: RMSNorm, attention, add; RMSNorm, mixture of {cfg.n_experts} experts "
        f"(top-{cfg.top_k}), add",
    )


def _stack(cfg: GptOssConfig) -> Block:
    """One repeated layer where every layer is of one kind, else the runs of sliding-window and global layers."""
    slides = cfg.slides()
    if all(slides) or not any(slides):
        return repeat(_layer(cfg, "layer", slides[0]), symbol("L", cfg.n_layers), name="layers")
    n_sliding = sum(slides)
    return window_runs(
        slides,
        _layer(cfg, "sliding_layer", True),
        _layer(cfg, "global_layer", False),
        description=f"{n_sliding} sliding-window and {len(slides) - n_sliding} global layers; a sliding layer's decode "
        f"step attends to at most W = {cfg.sliding_window:,} keys (transformers' DynamicCache keeps the last W - 1 "
        "tokens there)",
    )


def build(cfg: GptOssConfig) -> Block:
    s = decoder_symbols(cfg)
    children = [
        embedding("token", s.V, s.d, role="token", description="token embeddings (embed_tokens)"),
        _stack(cfg),
        rms_norm("final_norm", s.d),
        *decoder_heads(cfg.head, s.d, s.V, tied=cfg.tie_embeddings, num_labels=cfg.num_labels),
    ]
    root = composite("gpt_oss", "model", children, "gpt-oss decoder")
    return with_modules(root, reference_modules(cfg))


def reference_modules(cfg: GptOssConfig) -> dict[str, tuple[str, ...]]:
    """Where each block's parameters live in the transformers class `reference` builds (for `archzoo verify`):
    block path -> submodule names, inside a layer relative to the layer (the runs share the module list: copy i of a
    run is its layer i). The experts are one module of fused tensors (one expert's projections stay unmapped)."""
    rows = {
        "attention_norm": "input_layernorm",
        **attention_modules(),
        "mlp_norm": "post_attention_layernorm",
        "mlp": "mlp",
        "mlp.router": "mlp.router",
        "mlp.experts": "mlp.experts",
        "mlp.experts.expert": "mlp.experts",
    }
    return decoder_modules("gpt_oss", cfg.head, rows, runs=("sliding_layer", "global_layer"))


def reference(cfg: GptOssConfig) -> Reference:
    """GptOssModel or one of its head classes, built from a GptOssConfig with the same keys (the layer kinds given
    explicitly, so that the class never derives them); parameters on the meta device, FLOPs on the CPU."""
    kwargs = dict(
        vocab_size=cfg.vocab_size,
        hidden_size=cfg.d_model,
        num_hidden_layers=cfg.n_layers,
        num_attention_heads=cfg.n_heads,
        num_key_value_heads=cfg.n_kv_heads,
        head_dim=cfg.head_width,
        intermediate_size=cfg.d_ff,
        num_local_experts=cfg.n_experts,
        num_experts_per_tok=cfg.top_k,
        max_position_embeddings=cfg.max_positions,
        sliding_window=cfg.sliding_window,
        layer_types=[SLIDING if s else FULL for s in cfg.slides()],
        attention_bias=cfg.attention_bias,
        tie_word_embeddings=cfg.tie_embeddings,
        **labels_kwargs(cfg),
    )
    # its FLOPs need real weights (device cpu): the routing reads the router's scores
    return decoder_reference(CLASSES, cfg.head, "GptOssConfig", kwargs).model_copy(update={"device": "cpu"})


# ---- Hugging Face config.json: GptOssConfig's keys, as transformers 5.23 defines them -------------------------------

_GATE = (
    "the experts' gate (its slope α and the clamp of the gate and up outputs): element-wise, no parameters, and "
    "FlopCounterMode counts no FLOPs for it"
)
_AUX_LOSS = (
    "the load-balancing loss of training (its weight; output_router_logits computes it in the forward pass from the "
    "router's scores): no parameters, and no matmul FLOPs"
)

#: what the table reads quantization_config for
_MXFP4 = (
    "(checked: MXFP4, the released checkpoints' storage of the experts, which transformers dequantizes where its "
    "kernels are missing and from_config does not apply: the unquantized model is counted; another method is refused)"
)
#: keys of OpenAI's own configuration that the released files keep
_ORIGINAL = (
    "a key of OpenAI's original configuration, kept in the released files: GptOssConfig stores it as a plain "
    "attribute, and no module of transformers 5.23's gpt-oss code reads it"
)

HF_GPT_OSS = decoder_table(
    "gpt_oss",
    "GptOssConfig",
    CLASSES,
    defaults=dict(
        num_hidden_layers=36,
        num_local_experts=128,
        vocab_size=201088,
        hidden_size=2880,
        intermediate_size=2880,
        head_dim=64,
        num_attention_heads=64,
        num_key_value_heads=8,
        sliding_window=128,
        tie_word_embeddings=False,
        hidden_act="silu",
        initializer_range=0.02,
        max_position_embeddings=131072,
        rms_norm_eps=1e-05,
        rope_parameters=None,
        attention_dropout=0.0,
        num_experts_per_tok=4,
        swiglu_alpha=1.702,
        swiglu_limit=7.0,
        router_aux_loss_coef=0.001,
        output_router_logits=False,
        use_cache=True,
        layer_types=None,
        pad_token_id=None,
        bos_token_id=None,
        eos_token_id=None,
        attention_bias=True,
    ),
    read={
        "vocab_size": "vocab_size",
        "hidden_size": "d_model",
        "intermediate_size": "d_ff",
        "num_hidden_layers": "n_layers",
        "num_attention_heads": "n_heads",
        "num_key_value_heads": "n_kv_heads",
        "head_dim": "d_head",
        "num_local_experts": "n_experts",
        "num_experts_per_tok": "top_k",
        "max_position_embeddings": "max_positions",
        "sliding_window": "sliding_window",
        "layer_types": "layer_types",
        "attention_bias": "attention_bias",
        "tie_word_embeddings": "tie_embeddings",
        "pad_token_id": PADDING_CHECKED,
        "rope_parameters": ROTARY_TYPE_CHECKED,
        "num_labels": "num_labels",
        "quantization_config": _MXFP4,
    },
    ignored={
        "hidden_act": "stored, never read: gpt-oss's experts compute their own gate (swiglu_alpha, swiglu_limit)",
        "experts_per_token": _ORIGINAL,
        "initial_context_length": _ORIGINAL,
        "swiglu_alpha": _GATE,
        "swiglu_limit": _GATE,
        "attention_dropout": DROPOUT,
        "classifier_dropout": DROPOUT,
        "router_aux_loss_coef": _AUX_LOSS,
        "output_router_logits": _AUX_LOSS,
        **settings_ignored("rms_norm_eps"),
    },
    aliases={"num_experts": "num_local_experts"},
)


@hf_reader(HF_GPT_OSS)
def _from_gpt_oss(hf: dict[str, Any], model_class: str = "GptOssModel") -> dict[str, Any]:
    if hf["sliding_window"] is None:
        raise ValueError(
            "sliding_window: null, with which transformers' gpt-oss builds but cannot run a forward pass (it builds "
            "the sliding-window mask whatever the layers' kinds, and that mask needs a window); give the window in "
            "tokens"
        )
    check_quantization(
        hf.get("quantization_config"),
        "mxfp4",
        "gpt-oss's mxfp4, the released checkpoints' storage of the experts, which transformers does not apply when it "
        "builds the model from the file",
    )
    return read_rotary_decoder(hf, HF_GPT_OSS)


ARCHITECTURE = Architecture(
    name="gpt_oss",
    title="gpt-oss",
    summary="OpenAI's open-weight mixture-of-experts decoder (gpt-oss-20b, gpt-oss-120b): pre-norm layers with "
    "RMSNorm, grouped-query attention with biases and a learned sink per head, alternating sliding-window and global "
    "layers, and a mixture of gated experts with biases (top-4 of 32 or 128) behind a router with a bias; rotary "
    "positions, an untied LM head. All experts are parameters; one token uses k per layer (the active parameters).",
    citation="OpenAI. gpt-oss-120b & gpt-oss-20b Model Card. 2025. arXiv:2508.10925",
    config_model=GptOssConfig,
    build=build,
    reference=reference,
)

register_architectures = architectures_hook(ARCHITECTURE)
register_hf_readers = hf_readers_hook({"gpt_oss": (_from_gpt_oss, "gpt_oss")})
