"""archzoo plugin: the parallel-attention decoders GPT-NeoX (GPT-NeoX-20B, Pythia), GPT-J and Phi (Phi-1, 1.5, 2).

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

Two more architectures share the parallel layer with one LayerNorm instead of two: ``gptj`` (GPT-J: separate
query, key and value projections and an output projection, none with biases, rotary positions on the first
``rotary_dim`` channels of each head from a precomputed table of ``n_positions`` rows, which is therefore the longest
sequence it runs) and ``phi`` (Phi-1, Phi-1.5, Phi-2: biases on every projection, grouped-query attention, partial
rotary positions and optional LayerNorms on each query and key head). Both have an LM head with a bias.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, ClassVar, Literal, Self

from pydantic import Field, PositiveInt, model_validator

from archzoo import Architecture, Reference
from archzoo.architecture import TransformerConfig, check_head_count, check_kv_heads, context_length
from archzoo.blocks import Block, attention, composite, layer_norm, linear, lm_head
from archzoo.decoder_parts import (
    SPECIAL_TOKENS,
    attention_modules,
    decoder_descriptions,
    decoder_kwargs,
    decoder_model,
    decoder_modules,
    decoder_reference,
    decoder_symbols,
    decoder_table,
    fused_attention,
    fused_attention_modules,
    kv_heads,
    kv_heads_field,
    labels_kwargs,
    mlp_modules,
    partial_rotary,
    read_partial_rotary,
    rotary_fraction,
    settings_ignored,
    with_norms,
)
from archzoo.formula import Poly, const
from archzoo.hf_config import (
    DROPOUT,
    INITIALISATION,
    NORM_EPSILON,
    NOT_READ,
    USE_CACHE,
    check_padding_index,
    hf_reader,
)
from archzoo.plugin_parts import (
    LABELS,
    NumLabels,
    PadTokenId,
    architectures_hook,
    head_field,
    hf_readers_hook,
    num_labels_field,
    pad_token_id_field,
    table_values,
)
from archzoo.symbols import symbol

from .activation import register_activation_memory as register_activation_memory

__version__ = "0.1.0"


#: archzoo's head -> transformers' class
CLASSES = {
    "lm": "GPTNeoXForCausalLM",
    "none": "GPTNeoXModel",
    "sequence_classification": "GPTNeoXForSequenceClassification",
    "token_classification": "GPTNeoXForTokenClassification",
    "question_answering": "GPTNeoXForQuestionAnswering",
}

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


class NeoXConfig(TransformerConfig):
    """A GPT-NeoX decoder; defaults are GPT-NeoX-20B (Black et al. 2022), which are also transformers'
    GPTNeoXConfig defaults (GPTNeoXConfig refuses heads that do not divide the width)."""

    DEFAULTS: ClassVar[dict[str, Any]] = dict(vocab_size=50432, d_model=6144, n_layers=44, n_heads=64)
    DESCRIPTIONS: ClassVar = decoder_descriptions(
        "rows of the token embedding and of the output embedding (50,257 tokens padded)",
        "attention heads (num_attention_heads); must divide d_model",
    )

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
    head: Literal[tuple(CLASSES)] = head_field(  # type: ignore[valid-type]
        CLASSES, prefix="GPTNeoX", token_classification="a classifier with bias on every token"
    )
    num_labels: NumLabels = num_labels_field()
    pad_token_id: PadTokenId = pad_token_id_field(no_padding_row="GPT-NeoX")

    @model_validator(mode="after")
    def _check(self) -> Self:
        _check_activation(self.activation)
        d_head = self.d_model // self.n_heads
        rotary = int(d_head * self.rotary_fraction)  # as GPTNeoXAttention computes it
        if rotary % 2 and rotary == d_head:
            # the rotary embedding turns channel pairs, rotary + 1 channels, more than the head has
            raise ValueError(
                f"rotary_fraction: {self.rotary_fraction} of a {d_head}-wide head (d_model / n_heads) is {rotary} channels, an odd "
                f"number the rotary embedding rounds up to {rotary + 1}, wider than the head: transformers' forward "
                "pass fails (for 1-wide heads it widens them); choose a fraction that leaves an even number"
            )
        return self


def _fused_attention(d: Poly, bias: bool) -> Block:
    """Causal self-attention whose query, key and value come from one d -> 3d linear."""
    return fused_attention(
        d,
        3 * d,
        bias=bias,
        qkv=f"Linear({d}, 3·{d}): query, key and value fused",
        scores="softmax(Q Kᵀ / √d_h) V, partial rotary positions on Q and K: no parameters",
        description="causal self-attention with partial rotary positions; query, key and value from one fused linear",
    )


def _mlp(d: Poly, d_ff: Poly, activation: str) -> Block:
    """dense_h_to_4h, the activation (element-wise: no parameters, no FLOPs counted), dense_4h_to_h."""
    return composite(
        "mlp",
        "feed_forward",
        [linear("fc_in", d, d_ff), linear("fc_out", d_ff, d)],
        f"feed-forward, {activation}",
    )


def build(cfg: NeoXConfig) -> Block:
    s = decoder_symbols(cfg)
    d = s.d
    flow = (
        "attention and feed-forward on the same input, both added to it (parallel residual)"
        if cfg.parallel_residual
        else "attention, add; the feed-forward on the sum, add (sequential residual)"
    )
    attn, mlp = _fused_attention(d, cfg.attention_bias), _mlp(d, symbol("d_ff", cfg.d_ff), cfg.activation)
    attn = replace(attn, heads=s.h, kv_heads=s.h, d_head=s.d_h)  # the head layout, for the activation formula
    parts = [layer_norm("attention_norm", d), attn, layer_norm("mlp_norm", d), mlp]
    layer = composite("layer", "decoder_layer", parts, f"pre-LN decoder layer: {flow}")
    untied = "next-token logits: the untied output embedding (embed_out in EleutherAI's checkpoints)"
    tied_to = "token" if cfg.tie_embeddings else ""
    lm = lm_head(d, s.V, tied_to=tied_to, description="" if tied_to else untied)
    modules = reference_modules(cfg)
    return decoder_model(
        cfg, "neox", "GPT-NeoX decoder", layer, s, modules, token="embed_in", lm=lm, token_classifier="classifier"
    )


def reference_modules(cfg: NeoXConfig) -> dict[str, tuple[str, ...]]:
    """Where each block's parameters live in the transformers class `reference` builds (for `archzoo verify`):
    block path -> submodule names, inside a layer relative to the layer."""
    layer = {
        "attention_norm": "input_layernorm",
        **fused_attention_modules("attention", "query_key_value", "dense"),
        "mlp_norm": "post_attention_layernorm",
        **mlp_modules("dense_h_to_4h", "dense_4h_to_h"),
    }
    return decoder_modules(
        "neox",
        cfg.head,
        layer,
        base="gpt_neox.",
        embed="embed_in",
        final_norm="final_layer_norm",
        heads=("lm_head", "score", "classifier", "qa_outputs"),
    )


def reference(cfg: NeoXConfig) -> Reference:
    """GPTNeoXModel or one of its head classes, built from a GPTNeoXConfig with the same keys."""
    own = dict(
        attention_bias=cfg.attention_bias, use_parallel_residual=cfg.parallel_residual, pad_token_id=cfg.pad_token_id
    )
    rotary = dict(rope_parameters=partial_rotary(cfg.rotary_fraction), tie_word_embeddings=cfg.tie_embeddings)
    kwargs = dict(**decoder_kwargs(cfg), **own, **rotary, **labels_kwargs(cfg))
    return decoder_reference(CLASSES, cfg.head, "GPTNeoXConfig", kwargs)


# ---- Hugging Face config.json: GPTNeoXConfig's keys, as transformers 5.23 defines them -------------------


HF_GPT_NEOX = decoder_table(
    "gpt_neox",
    "GPTNeoXConfig",
    CLASSES,
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
        "pad_token_id": "pad_token_id",
        # rotary settings change no count; read for the fraction it turns and to refuse a type transformers
        # does not build
        # (archzoo.hf_config builds it as GPTNeoXConfig does, from rotary_pct and rotary_emb_base too)
        "rope_parameters": "rotary_fraction",
        "num_labels": "num_labels",
    },
    ignored={
        "attention_dropout": DROPOUT,
        "hidden_dropout": DROPOUT,
        "classifier_dropout": DROPOUT,
        **settings_ignored(),
        "is_decoder": "not read by GPT-NeoX's modules: every layer is causal whatever its value",
        # keys EleutherAI's GPT-NeoX-20B and early Pythia files carry from older transformers releases
        "attention_probs_dropout_prob": f"{NOT_READ}; a dropout: no parameters or FLOPs",
        "hidden_dropout_prob": f"{NOT_READ}; a dropout: no parameters or FLOPs",
    },
)


@hf_reader(HF_GPT_NEOX)
def _from_gpt_neox(hf: dict[str, Any], model_class: str = "GPTNeoXModel") -> dict[str, Any]:
    return table_values(hf, HF_GPT_NEOX, rotary_fraction=rotary_fraction(hf["rope_parameters"], 0.25, "GPTNeoXConfig"))


# ---- GPT-J and Phi: one LayerNorm feeding attention and feed-forward in parallel -------------------------


def _causal_lm_head(d: Poly, V: Poly, tied: bool) -> Block:
    """GPT-J's and Phi's LM head: a linear with a bias; tied, it reuses the token embedding's weight and keeps
    its own bias. In prefill it computes the last position's logits only, as `archzoo.blocks.lm_head` does."""
    head = linear(
        "lm_head",
        d,
        V,
        tied_to="token" if tied else "",
        description="next-token logits, with a bias" + (", weight tied to the token embedding" if tied else ""),
    )
    return replace(head, prefill_flops=head.decode_flops)


def _parallel_layer(d: Poly, attention_block: Block, mlp: Block) -> Block:
    return composite(
        "layer",
        "decoder_layer",
        [layer_norm("norm", d), attention_block, mlp],
        "parallel decoder layer: one LayerNorm, its output read by the attention and the feed-forward, both "
        "added to the layer's input",
    )


#: GPT-J's head -> transformers' class (GPT-J has no token classification class)
GPTJ_CLASSES = {
    "lm": "GPTJForCausalLM",
    "none": "GPTJModel",
    "sequence_classification": "GPTJForSequenceClassification",
    "question_answering": "GPTJForQuestionAnswering",
}


class GPTJConfig(TransformerConfig):
    """A GPT-J decoder; defaults are GPT-J-6B (Wang and Komatsuzaki 2021), which are also transformers'
    GPTJConfig defaults (GPTJAttention refuses heads that do not divide the width)."""

    DEFAULTS: ClassVar[dict[str, Any]] = dict(vocab_size=50400, d_model=4096, n_layers=28, n_heads=16)
    DESCRIPTIONS: ClassVar = dict(
        vocab_size="rows of the token embedding and of the LM head (n_vocab)",
        d_model="model width (n_embd)",
        n_layers="decoder layers (n_layer)",
        n_heads="attention heads (n_head); must divide d_model",
    )

    d_ff: PositiveInt | None = Field(None, description="hidden width of the feed-forward (n_inner; null = 4 d_model)")
    max_positions: PositiveInt = Field(
        2048,
        description="context length (n_positions): the rows of the precomputed rotary table, so the longest "
        "sequence the model runs (no parameters)",
    )
    rotary_dim: PositiveInt = Field(
        64,
        description="channels of each head the rotary positions turn: no parameters and no matmul FLOPs, but "
        "GPT-J's forward pass runs only with an even number no larger than a head's width",
    )
    activation: str = Field("gelu_new", description="activation of the feed-forward (activation_function)")
    tie_embeddings: bool = Field(
        False, description="the LM head's weight is the token embedding matrix (its bias stays its own)"
    )
    head: Literal[tuple(GPTJ_CLASSES)] = head_field(  # type: ignore[valid-type]
        GPTJ_CLASSES,
        prefix="GPTJ",
        question_answering="Linear(d_model, num_labels) on every token, split into start and end logits",
    )
    num_labels: NumLabels = num_labels_field(
        "outputs of the sequence_classification and question_answering heads (transformers' num_labels; question "
        "answering runs only with 2)"
    )
    pad_token_id: PadTokenId = pad_token_id_field(no_padding_row="GPT-J")

    @model_validator(mode="after")
    def _check(self) -> Self:
        _check_activation(self.activation)
        d_head = self.d_model // self.n_heads
        if self.rotary_dim % 2 or self.rotary_dim > d_head:
            raise ValueError(
                f"rotary_dim: GPT-J turns channel pairs of each {d_head}-wide head, and its forward pass fails for "
                f"{self.rotary_dim}; choose an even number from 2 to {d_head}"
            )
        if self.head == "question_answering" and self.num_labels != 2:
            raise ValueError(
                f"num_labels: GPTJForQuestionAnswering splits its {self.num_labels} outputs per token into start "
                "and end logits, and its forward pass fails unless there are 2; set num_labels to 2"
            )
        return self


def _check_activation(activation: str) -> None:
    if activation in LEARNED_ACTIVATIONS:
        raise ValueError(
            f"activation: {activation} is a module with learned parameters, which archzoo does not count; choose "
            f"one without parameters ({', '.join(ACTIVATIONS[:5])}, ...)"
        )
    if activation not in ACTIVATIONS:
        raise ValueError(
            f"activation: unknown activation {activation!r}; expected one of transformers' {', '.join(ACTIVATIONS)}"
        )


def build_gptj(cfg: GPTJConfig) -> Block:
    s = decoder_symbols(cfg)
    d = s.d
    d_ff = 4 * d if cfg.d_ff is None else symbol("d_ff", cfg.d_ff)
    attn = attention(
        "attention",
        d,
        d,
        bias=False,
        causal=True,
        heads=s.h,
        d_head=s.d_h,
        description="causal self-attention, rotary positions on the first rotary_dim channels of each head, no biases",
    )
    if cfg.head == "question_answering":  # GPTJForQuestionAnswering hands its base model no cache
        attn = replace(attn, kv_cache=const(0))
    layer = _parallel_layer(d, attn, _mlp(d, d_ff, cfg.activation))
    lm, answers = _causal_lm_head(d, s.V, cfg.tie_embeddings), LABELS(cfg.num_labels)
    return decoder_model(
        cfg, "gptj", "GPT-J decoder", layer, s, gptj_reference_modules(cfg), token="wte", lm=lm, answers=answers
    )


def gptj_reference_modules(cfg: GPTJConfig) -> dict[str, tuple[str, ...]]:
    """Block path -> submodules of the class `gptj_reference` builds, inside a layer relative to the layer."""
    layer = {
        "norm": "ln_1",
        **attention_modules("attn", out="out_proj"),
        **mlp_modules("fc_in", "fc_out"),
    }
    return decoder_modules(
        "gptj",
        cfg.head,
        layer,
        base="transformer.",
        embed="wte",
        layers="h",
        final_norm="ln_f",
        heads=("lm_head", "score", "qa_outputs"),
    )


def gptj_reference(cfg: GPTJConfig) -> Reference:
    """GPTJModel or one of its head classes, built from a GPTJConfig with the same keys."""
    kwargs = dict(
        vocab_size=cfg.vocab_size,
        n_embd=cfg.d_model,
        n_layer=cfg.n_layers,
        n_head=cfg.n_heads,
        n_inner=cfg.d_ff,
        n_positions=cfg.max_positions,
        rotary_dim=cfg.rotary_dim,
        activation_function=cfg.activation,
        tie_word_embeddings=cfg.tie_embeddings,
        pad_token_id=cfg.pad_token_id,
        **labels_kwargs(cfg, ("sequence_classification", "question_answering")),
    )
    return decoder_reference(GPTJ_CLASSES, cfg.head, "GPTJConfig", kwargs)


#: Phi's head -> transformers' class (Phi has no question answering class)
PHI_CLASSES = {
    "lm": "PhiForCausalLM",
    "none": "PhiModel",
    "sequence_classification": "PhiForSequenceClassification",
    "token_classification": "PhiForTokenClassification",
}


class PhiConfig(TransformerConfig):
    """A Phi decoder (Phi-1, Phi-1.5, Phi-2); defaults are Phi-2 (Microsoft 2023, microsoft/phi-2)."""

    DEFAULTS: ClassVar[dict[str, Any]] = dict(vocab_size=51200, d_model=2560, n_layers=32, n_heads=32)
    DESCRIPTIONS: ClassVar = decoder_descriptions(
        "rows of the token embedding and of the LM head",
        "query heads (num_attention_heads); a head is d_model // n_heads wide, rounded down",
    )

    HEADS_DIVIDE_WIDTH: ClassVar = False  # PhiAttention rounds a head's width down
    n_kv_heads: PositiveInt | None = kv_heads_field()
    d_ff: PositiveInt = Field(10240, description="hidden width of the feed-forward (intermediate_size)")
    max_positions: PositiveInt = Field(
        2048, description="context length (max_position_embeddings; rotary positions: no parameters)"
    )
    activation: str = Field("gelu_new", description="activation of the feed-forward (hidden_act)")
    qk_norm: bool = Field(
        False, description="a LayerNorm of one head's width on the queries and one on the keys (qk_layernorm)"
    )
    rotary_fraction: float = Field(
        0.4,
        ge=0,
        le=1,
        description="fraction of each head's channels the rotary positions turn (partial_rotary_factor): no "
        "parameters and no matmul FLOPs, but transformers' Phi runs only when it leaves an even number of channels",
    )
    tie_embeddings: bool = Field(
        False, description="the LM head's weight is the token embedding matrix (its bias stays its own)"
    )
    head: Literal[tuple(PHI_CLASSES)] = head_field(PHI_CLASSES, prefix="Phi")  # type: ignore[valid-type]
    num_labels: NumLabels = num_labels_field(
        "outputs of the sequence_classification and token_classification heads (num_labels)"
    )
    pad_token_id: PadTokenId = pad_token_id_field()

    @model_validator(mode="after")
    def _check(self) -> Self:
        check_padding_index(self.vocab_size, self.pad_token_id)
        check_head_count(self.d_model, self.n_heads, "or a wider d_model")
        check_kv_heads(self.n_heads, self.n_kv_heads)
        _check_activation(self.activation)
        d_head = self.d_model // self.n_heads
        rotary = int(d_head * self.rotary_fraction)  # as PhiAttention computes it
        if rotary % 2:
            # the rotary embedding turns channel pairs, rotary + 1 channels, against the rotary channels of Q and K
            raise ValueError(
                f"rotary_fraction: {self.rotary_fraction} of a {d_head}-wide head (d_model / n_heads) is {rotary} channels, an odd "
                f"number the rotary embedding rounds up to {rotary + 1}: transformers' forward pass fails (for 1 "
                "channel it widens the heads); choose a fraction that leaves an even number"
            )
        return self


def build_phi(cfg: PhiConfig) -> Block:
    s = decoder_symbols(cfg)
    d, d_h = s.d, s.d_h
    h_kv, kv_inner = kv_heads(cfg.n_heads, cfg.n_kv_heads, s.h, d_h, s.inner)
    attn = attention(
        "attention",
        d,
        s.inner,
        kv_inner=kv_inner,
        causal=True,
        heads=s.h,
        kv_heads=h_kv,
        d_head=d_h,
        description="causal "
        + ("grouped-query " if kv_inner is not s.inner else "")
        + "self-attention with partial rotary positions, biases on every projection",
    )
    if cfg.qk_norm:
        norms = [
            layer_norm("q_norm", d_h, description=f"LayerNorm({d_h}) on each query head"),
            layer_norm("k_norm", d_h, description=f"LayerNorm({d_h}) on each key head"),
        ]
        attn = with_norms(attn, norms)
    layer = _parallel_layer(d, attn, _mlp(d, symbol("d_ff", cfg.d_ff), cfg.activation))
    lm = _causal_lm_head(d, s.V, cfg.tie_embeddings)
    return decoder_model(cfg, "phi", "Phi decoder", layer, s, phi_reference_modules(cfg), token="embed_tokens", lm=lm)


def phi_reference_modules(cfg: PhiConfig) -> dict[str, tuple[str, ...]]:
    """Block path -> submodules of the class `phi_reference` builds, inside a layer relative to the layer."""
    layer = {
        "norm": "input_layernorm",
        **attention_modules(out="dense", norms=("q_layernorm", "k_layernorm")),
        **mlp_modules("fc1", "fc2"),
    }
    return decoder_modules("phi", cfg.head, layer, final_norm="final_layernorm")


def phi_reference(cfg: PhiConfig) -> Reference:
    """PhiModel or one of its head classes, built from a PhiConfig with the same keys."""
    own = dict(qk_layernorm=cfg.qk_norm, rope_parameters=partial_rotary(cfg.rotary_fraction))
    tail = dict(tie_word_embeddings=cfg.tie_embeddings, pad_token_id=cfg.pad_token_id, **labels_kwargs(cfg))
    return decoder_reference(PHI_CLASSES, cfg.head, "PhiConfig", dict(**decoder_kwargs(cfg), **own, **tail))


HF_GPTJ = decoder_table(
    "gptj",
    "GPTJConfig",
    GPTJ_CLASSES,
    defaults=dict(
        vocab_size=50400,
        n_positions=2048,
        n_embd=4096,
        n_layer=28,
        n_head=16,
        rotary_dim=64,
        n_inner=None,
        activation_function="gelu_new",
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        attn_pdrop=0.0,
        layer_norm_epsilon=1e-05,
        initializer_range=0.02,
        use_cache=True,
        bos_token_id=50256,
        eos_token_id=50256,
        pad_token_id=None,
        tie_word_embeddings=False,
    ),
    aliases={
        "max_position_embeddings": "n_positions",
        "hidden_size": "n_embd",
        "num_attention_heads": "n_head",
        "num_hidden_layers": "n_layer",
    },
    read={
        "vocab_size": "vocab_size",
        "n_embd": "d_model",
        "n_layer": "n_layers",
        "n_head": "n_heads",
        "n_inner": "d_ff",
        "n_positions": "max_positions",
        "rotary_dim": "rotary_dim",
        "activation_function": "activation",
        "tie_word_embeddings": "tie_embeddings",
        "pad_token_id": "pad_token_id",
        "num_labels": "num_labels",
    },
    ignored={
        "resid_pdrop": DROPOUT,
        "embd_pdrop": DROPOUT,
        "attn_pdrop": DROPOUT,
        "layer_norm_epsilon": NORM_EPSILON,
        "initializer_range": INITIALISATION,
        "use_cache": USE_CACHE,
        **SPECIAL_TOKENS,
        # keys EleutherAI's GPT-J-6B file carries from the mesh-transformer-jax conversion and GPT-2's configuration
        "rotary": f"{NOT_READ}: GPT-J always turns rotary_dim channels",
        "scale_attn_weights": f"{NOT_READ}: GPT-J always scales the scores by the square root of a head's width",
        **{
            key: f"{NOT_READ}: a setting of GPT-2's sequence-summary head, which GPT-J has no class for"
            for key in (
                "summary_activation",
                "summary_first_dropout",
                "summary_proj_to_labels",
                "summary_type",
                "summary_use_proj",
            )
        },
    },
)


@hf_reader(HF_GPTJ)
def _from_gptj(hf: dict[str, Any], model_class: str = "GPTJModel") -> dict[str, Any]:
    return table_values(hf, HF_GPTJ)


HF_PHI = decoder_table(
    "phi",
    "PhiConfig",
    PHI_CLASSES,
    defaults=dict(
        vocab_size=51200,
        hidden_size=2048,
        intermediate_size=8192,
        num_hidden_layers=24,
        num_attention_heads=32,
        num_key_value_heads=None,
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        attention_dropout=0.0,
        hidden_act="gelu_new",
        max_position_embeddings=2048,
        initializer_range=0.02,
        layer_norm_eps=1e-05,
        use_cache=True,
        tie_word_embeddings=False,
        rope_parameters=None,
        qk_layernorm=False,
        bos_token_id=1,
        eos_token_id=2,
        pad_token_id=None,
    ),
    read={
        "vocab_size": "vocab_size",
        "hidden_size": "d_model",
        "intermediate_size": "d_ff",
        "num_hidden_layers": "n_layers",
        "num_attention_heads": "n_heads",
        "num_key_value_heads": "n_kv_heads",
        "hidden_act": "activation",
        "max_position_embeddings": "max_positions",
        "tie_word_embeddings": "tie_embeddings",
        "qk_layernorm": "qk_norm",
        "pad_token_id": "pad_token_id",
        # rotary settings change no count; read for the fraction it turns and to refuse a type transformers
        # does not build
        "rope_parameters": "rotary_fraction",
        "num_labels": "num_labels",
    },
    ignored={
        "resid_pdrop": DROPOUT,
        "embd_pdrop": DROPOUT,
        "attention_dropout": DROPOUT,
        **settings_ignored(),
    },
)


@hf_reader(HF_PHI)
def _from_phi(hf: dict[str, Any], model_class: str = "PhiModel") -> dict[str, Any]:
    return read_partial_rotary(hf, HF_PHI, 0.5)  # PhiConfig's own default fraction


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
    reference=reference,
)


GPTJ_ARCHITECTURE = Architecture(
    name="gptj",
    title="GPT-J",
    summary="EleutherAI's GPT-J: one LayerNorm per layer feeding attention (no biases, rotary positions on the "
    "first rotary_dim channels of each head) and a feed-forward in parallel, and an LM head with a bias.",
    citation="Wang and Komatsuzaki. GPT-J-6B: A 6 Billion Parameter Autoregressive Language Model. 2021. "
    "https://github.com/kingoflolz/mesh-transformer-jax",
    config_model=GPTJConfig,
    build=build_gptj,
    seq_len_note=lambda cfg: "the model's context length: the rows of its precomputed rotary table",
    max_seq_len=context_length,
    reference=gptj_reference,
)

PHI_ARCHITECTURE = Architecture(
    name="phi",
    title="Phi",
    summary="Microsoft's Phi-1, Phi-1.5 and Phi-2: one LayerNorm per layer feeding attention (biases on every "
    "projection, partial rotary positions, optional query/key LayerNorms) and a feed-forward in parallel, and an "
    "LM head with a bias.",
    citation="Javaheripi, Bubeck et al. Phi-2: The surprising power of small language models. Microsoft Research "
    "blog, 2023; Li et al. Textbooks Are All You Need II: phi-1.5 technical report. 2023. arXiv:2309.05463",
    config_model=PhiConfig,
    build=build_phi,
    reference=phi_reference,
)

register_architectures = architectures_hook(ARCHITECTURE, GPTJ_ARCHITECTURE, PHI_ARCHITECTURE)
register_hf_readers = hf_readers_hook(
    {"gpt_neox": (_from_gpt_neox, "neox"), "gptj": (_from_gptj, "gptj"), "phi": (_from_phi, "phi")}
)
