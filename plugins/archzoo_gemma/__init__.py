"""archzoo plugin: the Gemma 2 and Gemma 3 (text) decoders, with sliding-window and global attention layers.

Each layer is a sandwich: an RMSNorm before *and* after the attention, another pair around the GeGLU feed-forward
(four RMSNorms of width ``d`` per layer; Gemma's norm scales by ``1 + w``, the same ``d`` parameters). Attention is
grouped-query with an explicit head width ``d_h`` (``h d_h`` need not be ``d``) and rotary positions; Gemma 3 adds
QK-norm, an RMSNorm of width ``d_h`` on the queries and one on the keys (``2 d_h`` parameters per layer). The token
embedding is scaled by ``sqrt(d)`` and the LM head is tied to it. The attention and final logit soft-capping
(``c tanh(x / c)``: Gemma 2 caps at 50 and 30, Gemma 3 not at all), ``query_pre_attn_scalar``, Gemma 3's two rotary
bases and the embedding scale hold no parameters and are elementwise: ``torch.utils.flop_counter.FlopCounterMode``
counts no FLOPs for them. The soft-capping and the padding id are configuration keys all the same (``attn_softcap``,
``final_softcap``, ``pad_token_id``): each tanh saves its output for backward, and a padding id makes the sequence
classifier find the last token with an index tensor, so the activation memory (`archzoo_gemma.activation`) follows
them. (Gemma 3's attention never caps its scores in transformers 5.23, whatever its ``attn_logit_softcapping``.)

Layers are sliding-window (local) or global: Gemma 2 alternates them (sliding first), Gemma 3 puts one global layer
after every five sliding ones (``sliding_window_pattern``), or ``layer_types`` lists them. The two kinds hold the same
parameters, and eager attention computes the full ``N x N`` score products under either mask, so parameters and
forward FLOPs do not depend on the pattern. The stack is an `archzoo.blocks.layer_runs` of ``sliding_layer`` and
``global_layer`` runs (each with the stack positions of its copies), so the KV cache is given per run; a stack of
one kind is a plain `repeat`, whose layer's blocks are checked one by one against transformers' modules (inside
runs only the stack as a whole is, as the kit maps a run's copies to the first indices of the module list).

What archzoo counts for the KV cache and decode step: every layer caches ``2 h_kv d_h`` elements per token.
transformers' ``DynamicCache`` keeps at most ``W - 1`` tokens in a sliding layer between steps (``W`` the window), and
the step reading a new token attends to ``W`` keys there: past the window a sliding layer's attention (a block with
``window`` set) reads ``W`` for ``N`` in the decode step (`archzoo.report.Report.decode_formula`). A prefill over ``N``
tokens computes every layer's keys and values in full (the cache keeps a view of them), which is the KV cache an
inference peak counts. Parameters, forward, training, prefill and decode FLOPs are exact at every ``N``.

Gemma 3's 4B, 12B and 27B are released as ``gemma3`` (``Gemma3ForConditionalGeneration``: a SigLIP vision tower,
a projector and this text model). archzoo counts the text model (``gemma3_text``: ``Gemma3TextModel``,
``Gemma3ForCausalLM``, ``Gemma3TextForSequenceClassification``) exactly, and not the whole model: its FLOPs depend on
the images in the prompt, which a count over ``N`` text tokens cannot state. A ``gemma3`` config.json is refused as a
type archzoo does not read (the message lists ``gemma3_text``). To count its text model, save the file's
``text_config`` object as a config.json of its own (transformers writes it with ``"model_type": "gemma3_text"``) and
count that, e.g. ``archzoo count --hf-config text_config.json --hf-class Gemma3ForCausalLM``: its parameters are the
whole model's without the vision tower and the projector, and its FLOPs those of a prompt of ``N`` text tokens and no
image, as transformers' ``Gemma3ForConditionalGeneration`` computes them.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, ClassVar, Literal, Self

from pydantic import Field, PositiveInt, model_validator

from archzoo import Architecture, Reference
from archzoo.architecture import TransformerConfig, check_activation, check_kv_heads
from archzoo.blocks import (
    Block,
    attention,
    check_run_layers,
    composite,
    embedding,
    feed_forward,
    linear,
    lm_head,
    repeat,
    rms_norm,
    with_modules,
)
from archzoo.decoder_parts import window_runs, windowed
from archzoo.formula import Poly, sym
from archzoo.hf_config import (
    DROPOUT,
    INITIALISATION,
    NORM_EPSILON,
    ROPE_TYPES,
    TOKEN_ID,
    USE_CACHE,
    HFTable,
    check_padding_index,
    hf_reader,
    rope_type,
)
from archzoo.plugin_parts import (
    LABELS,
    NumLabels,
    PadTokenId,
    architectures_hook,
    hf_readers_hook,
    pad_token_id_field,
)
from archzoo.symbols import symbol

from .activation import register_activation_memory as register_activation_memory

__version__ = "0.1.0"

SLIDING = "sliding_attention"
FULL = "full_attention"
LayerType = Literal["sliding_attention", "full_attention"]


class GemmaConfig(TransformerConfig):
    """A Gemma 2 decoder; defaults are Gemma 2 2B (Gemma Team 2024, Table 1; transformers' Gemma2Config)."""

    DEFAULTS: ClassVar[dict[str, Any]] = dict(vocab_size=256000, d_model=2304, n_layers=26, n_heads=8)
    DESCRIPTIONS: ClassVar = dict(
        vocab_size="vocabulary size",
        d_model="model width",
        n_layers="decoder layers",
        n_heads="query heads (must divide d_model, as transformers requires)",
    )

    HEADS_DIVIDE_WIDTH: ClassVar = False  # checked below, in Gemma's words: its heads have a width of their own
    n_kv_heads: PositiveInt = Field(4, description="key/value heads (grouped-query attention); must divide n_heads")
    d_head: PositiveInt = Field(256, description="width of one head (head_dim; n_heads x d_head need not be d_model)")
    d_ff: PositiveInt = Field(9216, description="hidden width of the GeGLU feed-forward (gate and up projections)")
    max_positions: PositiveInt = Field(8192, description="context length (rotary positions: no parameters)")
    activation: str = Field("gelu_pytorch_tanh", description="activation of the gate (hidden_activation): GeGLU")
    attention_bias: bool = Field(False, description="biases on the query, key, value and output projections")
    tie_embeddings: bool = Field(True, description="the LM head shares the token embedding matrix (as released)")
    qk_norm: bool = Field(False, description="an RMSNorm of width d_head on the queries and on the keys (Gemma 3)")
    sliding_window: PositiveInt = Field(4096, description="tokens a sliding-window layer attends to")
    sliding_window_pattern: PositiveInt = Field(
        2,
        description="every sliding_window_pattern-th layer is global, the others sliding (Gemma 2: 2, Gemma 3: 6); "
        "used when layer_types is null",
    )
    layer_types: list[LayerType] | None = Field(
        None, description="each layer's kind, sliding_attention or full_attention (null: from sliding_window_pattern)"
    )
    bidirectional: bool = Field(
        False, description="attend to every token, no causal mask (use_bidirectional_attention): then no KV cache"
    )
    head: Literal["lm", "none", "sequence_classification", "token_classification"] = Field(
        "lm",
        description="lm (*ForCausalLM, the head tied to the token embedding), none (the base model), "
        "sequence_classification (a bias-free score layer on every token, the last one's kept) or "
        "token_classification (a score layer with bias on every token; Gemma 2 only)",
    )
    num_labels: NumLabels = Field(2, description="outputs of the classification heads (transformers' num_labels)")
    attn_softcap: float | None = Field(
        50.0,
        description="the attention scores' soft-capping c·tanh(s / c) (attn_logit_softcapping; null: none): no "
        "parameters or FLOPs, but tanh saves its h·N² output",
    )
    final_softcap: float | None = Field(
        30.0,
        description="the LM head's logits' soft-capping c·tanh(x / c) (final_logit_softcapping; null: none): no "
        "parameters or FLOPs, but tanh saves its N·V output",
    )
    pad_token_id: PadTokenId = pad_token_id_field(0)

    @model_validator(mode="after")
    def _check(self) -> Self:
        check_run_layers(self.n_layers)  # kinds() and the runs list every layer
        check_padding_index(self.vocab_size, self.pad_token_id)
        if self.d_model % self.n_heads:
            raise ValueError(
                f"n_heads: {self.n_heads} heads do not divide d_model {self.d_model}, which transformers' Gemma "
                "configurations refuse even with head_dim given; choose a divisor of d_model"
            )
        check_kv_heads(self.n_heads, self.n_kv_heads)
        if self.d_head % 2:
            raise ValueError(
                f"d_head: rotary positions turn pairs of channels, so a head's width must be even, got {self.d_head}"
            )
        if self.layer_types is not None and len(self.layer_types) != self.n_layers:
            raise ValueError(
                f"layer_types: {len(self.layer_types)} entries for {self.n_layers} layers; give one kind per layer "
                "(as transformers requires) or null"
            )
        check_activation(self.activation)
        return self

    def kinds(self) -> list[str]:
        """Each layer's kind, as transformers computes it (``layer_types``, else the pattern)."""
        if self.layer_types is not None:
            return list(self.layer_types)
        pattern = self.sliding_window_pattern
        return [SLIDING if (i + 1) % pattern else FULL for i in range(self.n_layers)]


class Gemma3Config(GemmaConfig):
    """A Gemma 3 text decoder; defaults are Gemma 3 1B (Gemma Team 2025; its config.json, google/gemma-3-1b-pt)."""

    DEFAULTS: ClassVar[dict[str, Any]] = dict(
        vocab_size=262144, d_model=1152, n_heads=4, n_kv_heads=1, d_ff=6912, max_positions=32768
    )

    qk_norm: bool = Field(True, description="an RMSNorm of width d_head on the queries and on the keys")
    sliding_window: PositiveInt = Field(512, description="tokens a sliding-window layer attends to")
    attn_softcap: float | None = Field(
        None,
        description="attn_logit_softcapping (null as released), which Gemma3TextConfig holds and transformers' Gemma 3 "
        "attention never applies (it passes no softcap on): carried as the file gives it, it changes no figure",
    )
    final_softcap: float | None = Field(
        None,
        description="the LM head's logits' soft-capping c·tanh(x / c) (final_logit_softcapping; null: none, as "
        "released): no parameters or FLOPs, but tanh saves its N·V output",
    )
    sliding_window_pattern: PositiveInt = Field(
        6,
        description="every sliding_window_pattern-th layer is global, the others sliding; used when layer_types is null",
    )
    head: Literal["lm", "none", "sequence_classification"] = Field(  # type: ignore[assignment]
        "lm",
        description="lm (Gemma3ForCausalLM, tied head), none (Gemma3TextModel) or sequence_classification "
        "(Gemma3TextForSequenceClassification: a bias-free score layer, the last token's kept)",
    )


# ---- the block tree ------------------------------------------------------------------------------------


def _layer(cfg: GemmaConfig, kind: str, name: str) -> Block:
    d = symbol("d", cfg.d_model)
    h = symbol("h", cfg.n_heads)
    d_h = symbol("d_h", cfg.d_head)
    h_kv = sym("h_kv", cfg.n_kv_heads, latex="h_{kv}", meaning="key/value heads (n_kv_heads)", order=21)
    sliding = kind == SLIDING
    what = f"sliding-window ({cfg.sliding_window} tokens)" if sliding else "global"
    att = attention(
        "attention",
        d,
        h * d_h,
        kv_inner=h_kv * d_h,
        bias=cfg.attention_bias,
        causal=not cfg.bidirectional,
        heads=h,
        kv_heads=h_kv,
        d_head=d_h,
        description=f"{what} grouped-query self-attention with rotary positions"
        + (", QK-norm" if cfg.qk_norm else "")
        + ("" if cfg.bidirectional else ", causal"),
    )
    if sliding:  # transformers' sliding cache layer keeps the last W - 1 tokens: a decode step attends to W keys
        att = windowed(att, cfg.sliding_window)
    if cfg.qk_norm:  # RMSNorms of one head's width, applied to every query and key head: parameters, no matmul
        norms = (
            rms_norm("q_norm", d_h, description="RMSNorm(d_h) on every query head"),
            rms_norm("k_norm", d_h, description="RMSNorm(d_h) on every key head"),
        )
        att = replace(att, children=att.children + norms, params=att.params + 2 * d_h)
    mlp = feed_forward(
        "mlp",
        d,
        symbol("d_ff", cfg.d_ff),
        activation=cfg.activation,
        gated=True,
        bias=False,
        description="GeGLU feed-forward: gate, up and down projections",
    )
    return composite(
        name,
        "decoder_layer",
        [
            rms_norm("attention_norm", d),
            att,
            rms_norm("post_attention_norm", d),
            rms_norm("mlp_norm", d),
            mlp,
            rms_norm("post_mlp_norm", d),
        ],
        f"{what} sandwich layer: RMSNorm, attention, RMSNorm, add; RMSNorm, GeGLU, RMSNorm, add",
    )


def _runs(cfg: GemmaConfig) -> Block:
    """The stack, in order: runs of sliding-window and of global layers (`archzoo.decoder_parts.window_runs`), or one
    repeated layer where every layer is of one kind."""
    kinds = cfg.kinds()
    if len(set(kinds)) == 1:
        only = kinds[0]
        return repeat(_layer(cfg, only, "layer"), symbol("L", cfg.n_layers), name="layers")
    n_sliding = kinds.count(SLIDING)
    kv = 2 * cfg.n_kv_heads * cfg.d_head
    return window_runs(
        [kind == SLIDING for kind in kinds],
        _layer(cfg, SLIDING, "sliding_layer"),
        _layer(cfg, FULL, "global_layer"),
        description=f"{n_sliding} sliding-window and {len(kinds) - n_sliding} global layers; each caches "
        f"2·h_kv·d_h = {kv:,} key/value elements per token; a sliding layer's decode step attends to at most "
        f"W = {cfg.sliding_window:,} keys (transformers' DynamicCache keeps the last W - 1 tokens there)",
    )


def _heads(cfg: GemmaConfig, d: Poly, V: Poly) -> list[Block]:
    if cfg.head == "lm":
        tied = ", tied to the token embedding" if cfg.tie_embeddings else ""
        return [
            lm_head(
                d,
                V,
                tied_to="token" if cfg.tie_embeddings else "",
                description=f"next-token logits{tied}; soft-capped where final_logit_softcapping is set "
                "(elementwise: no parameters or matmul FLOPs)",
            )
        ]
    if cfg.head == "sequence_classification":
        return [
            linear(
                "score",
                d,
                LABELS(cfg.num_labels),
                bias=False,
                description="class scores on every token, no bias; the last non-padding token's are kept",
            )
        ]
    if cfg.head == "token_classification":
        return [linear("score", d, LABELS(cfg.num_labels), description="a label's scores per token")]
    return []


def build(cfg: GemmaConfig) -> Block:
    d = symbol("d", cfg.d_model)
    V = symbol("V", cfg.vocab_size)
    root_name = "gemma3" if isinstance(cfg, Gemma3Config) else "gemma2"
    root = composite(
        root_name,
        "model",
        [
            embedding("token", V, d, role="token", description="token embeddings, scaled by sqrt(d)"),
            _runs(cfg),
            rms_norm("final_norm", d),
            *_heads(cfg, d, V),
        ],
        "Gemma 3 text decoder" if root_name == "gemma3" else "Gemma 2 decoder",
    )
    base = "" if cfg.head == "none" else "model."
    return with_modules(
        root,
        {
            root_name: ("",),
            f"{root_name}.token": (f"{base}embed_tokens",),
            f"{root_name}.layers": (f"{base}layers",),
            f"{root_name}.final_norm": (f"{base}norm",),
            **_layer_modules(f"{root_name}.layers.layer", f"{base}layers"),
            # the runs of a stack of both kinds share the ModuleList: copy i of a run is the layer at its position i
            **_layer_modules(f"{root_name}.layers.sliding_layers.sliding_layer", f"{base}layers"),
            **_layer_modules(f"{root_name}.layers.global_layers.global_layer", f"{base}layers"),
            f"{root_name}.lm_head": ("lm_head",),
            f"{root_name}.score": ("score",),
        },
    )


def _layer_modules(layer: str, module_list: str) -> dict[str, tuple[str, ...]]:
    """The submodules of one layer of a stack of one kind (a plain repeat), relative to the layer."""
    return {
        layer: (module_list,),
        f"{layer}.attention_norm": ("input_layernorm",),
        f"{layer}.attention": ("self_attn",),
        f"{layer}.attention.q_proj": ("self_attn.q_proj",),
        f"{layer}.attention.k_proj": ("self_attn.k_proj",),
        f"{layer}.attention.v_proj": ("self_attn.v_proj",),
        f"{layer}.attention.out_proj": ("self_attn.o_proj",),
        f"{layer}.attention.q_norm": ("self_attn.q_norm",),
        f"{layer}.attention.k_norm": ("self_attn.k_norm",),
        f"{layer}.post_attention_norm": ("post_attention_layernorm",),
        f"{layer}.mlp_norm": ("pre_feedforward_layernorm",),
        f"{layer}.mlp": ("mlp",),
        f"{layer}.mlp.fc_in": ("mlp.up_proj",),
        f"{layer}.mlp.fc_gate": ("mlp.gate_proj",),
        f"{layer}.mlp.fc_out": ("mlp.down_proj",),
        f"{layer}.post_mlp_norm": ("post_feedforward_layernorm",),
    }


# ---- the reference: transformers' classes --------------------------------------------------------------

CLASS_SUFFIX = {
    "none": "Model",
    "lm": "ForCausalLM",
    "sequence_classification": "ForSequenceClassification",
    "token_classification": "ForTokenClassification",
}
GEMMA3_CLASSES = {
    "none": "Gemma3TextModel",
    "lm": "Gemma3ForCausalLM",
    "sequence_classification": "Gemma3TextForSequenceClassification",
}


def _kwargs(cfg: GemmaConfig) -> dict[str, Any]:
    labels = {"num_labels": cfg.num_labels} if cfg.head in ("sequence_classification", "token_classification") else {}
    return dict(
        **labels,
        vocab_size=cfg.vocab_size,
        hidden_size=cfg.d_model,
        intermediate_size=cfg.d_ff,
        num_hidden_layers=cfg.n_layers,
        num_attention_heads=cfg.n_heads,
        num_key_value_heads=cfg.n_kv_heads,
        head_dim=cfg.d_head,
        hidden_activation=cfg.activation,
        max_position_embeddings=cfg.max_positions,
        attention_bias=cfg.attention_bias,
        sliding_window=cfg.sliding_window,
        layer_types=cfg.kinds(),
        use_bidirectional_attention=cfg.bidirectional,
        tie_word_embeddings=cfg.tie_embeddings,
        pad_token_id=cfg.pad_token_id,
        attn_logit_softcapping=cfg.attn_softcap,  # a float or None: archzoo.ArchConfig refuses the integer 50 for a
        final_logit_softcapping=cfg.final_softcap,  # float key, as transformers' strict fields refuse it for a cap
    )


def reference(cfg: GemmaConfig) -> Reference | None:
    """Gemma2Model / Gemma2ForCausalLM / ... of transformers, built with the configuration's own layer kinds."""
    if cfg.qk_norm:
        return None  # Gemma 2 has no QK-norm: no Gemma 2 class builds it (the gemma3 architecture does)
    return Reference(
        library="transformers",
        target=f"transformers.Gemma2{CLASS_SUFFIX[cfg.head]}",
        config_class="transformers.Gemma2Config",
        kwargs=_kwargs(cfg),
    )


def reference_gemma3(cfg: GemmaConfig) -> Reference | None:
    """Gemma3TextModel / Gemma3ForCausalLM / Gemma3TextForSequenceClassification (text only)."""
    if not cfg.qk_norm or cfg.head not in GEMMA3_CLASSES:
        return None  # Gemma 3's text model always has QK-norm, and no token-classification class
    kwargs = _kwargs(cfg)
    if cfg.bidirectional:  # Gemma3TextConfig turns a window W into W // 2 + 1 then: give what becomes this one
        kwargs["sliding_window"] = (cfg.sliding_window - 1) * 2
    return Reference(
        library="transformers",
        target=f"transformers.{GEMMA3_CLASSES[cfg.head]}",
        config_class="transformers.Gemma3TextConfig",
        kwargs=kwargs,
    )


# ---- Hugging Face config.json ----------------------------------------------------------------------------

_EPS = NORM_EPSILON.replace("LayerNorm", "RMSNorm")
_SCALAR = "scales the attention scores by its inverse square root: a constant, no parameters or matmul FLOPs"
_ROPE = "rotary position settings: no parameters, and the rotary angles cost no matmul FLOPs in the eager forward pass"
_READ = {
    "vocab_size": "vocab_size",
    "hidden_size": "d_model",
    "intermediate_size": "d_ff",
    "num_hidden_layers": "n_layers",
    "num_attention_heads": "n_heads",
    "num_key_value_heads": "n_kv_heads",
    "head_dim": "d_head",
    "hidden_activation": "activation",
    "max_position_embeddings": "max_positions",
    "attention_bias": "attention_bias",
    "sliding_window": "sliding_window",
    "layer_types": "layer_types",
    "use_bidirectional_attention": "bidirectional",
    "pad_token_id": "pad_token_id",
    "tie_word_embeddings": "tie_embeddings",
    "num_labels": "num_labels",
    "attn_logit_softcapping": "attn_softcap",
    "final_logit_softcapping": "final_softcap",
}
_IGNORED = {
    "initializer_range": INITIALISATION,
    "use_cache": USE_CACHE,
    "bos_token_id": TOKEN_ID,
    "eos_token_id": TOKEN_ID,
    "attention_dropout": DROPOUT,
    "rms_norm_eps": _EPS,
    "query_pre_attn_scalar": _SCALAR,
    # keys the released files carry that are no field of the configuration classes: no module of transformers 5.23
    # that builds or runs the Gemma 2/3 models reads hidden_act or sliding_window_size, and only generate() reads
    # cache_implementation (archzoo.hf_keys_read's scopes of gemma2 and gemma3_text)
    "cache_implementation": "the cache generate() builds (a generation setting): no module, no parameters or FLOPs",
    "hidden_act": "an older name of hidden_activation that the files keep; the Gemma 2/3 code reads hidden_activation",
    "sliding_window_size": "an older name of sliding_window that the files keep; the Gemma 2/3 code reads sliding_window",
}

_COMMON_DEFAULTS: dict[str, Any] = dict(
    vocab_size=256000,
    hidden_size=2304,
    intermediate_size=9216,
    num_hidden_layers=26,
    num_attention_heads=8,
    num_key_value_heads=4,
    head_dim=256,
    hidden_activation="gelu_pytorch_tanh",
    max_position_embeddings=8192,
    initializer_range=0.02,
    rms_norm_eps=1e-6,
    use_cache=True,
    pad_token_id=0,
    eos_token_id=1,
    bos_token_id=2,
    tie_word_embeddings=True,
    rope_parameters=None,
    attention_bias=False,
    attention_dropout=0.0,
    query_pre_attn_scalar=256,
    sliding_window=4096,
    layer_types=None,
    final_logit_softcapping=30.0,
    attn_logit_softcapping=50.0,
    use_bidirectional_attention=None,
)

HF_GEMMA2 = HFTable(
    model_type="gemma2",
    config_class="Gemma2Config",
    defaults=_COMMON_DEFAULTS,
    aliases={},
    read={**_READ, "rope_parameters": "(checked: a rotary type transformers builds)"},
    ignored=_IGNORED,
    refused={},
    base_class="Gemma2Model",
    classes={f"Gemma2{suffix}": {"head": head} for head, suffix in CLASS_SUFFIX.items()},
)

HF_GEMMA3_TEXT = HFTable(
    model_type="gemma3_text",
    config_class="Gemma3TextConfig",
    defaults={
        **_COMMON_DEFAULTS,
        "vocab_size": 262_208,
        "max_position_embeddings": 131_072,
        "final_logit_softcapping": None,
        "attn_logit_softcapping": None,
        "use_bidirectional_attention": False,
    },
    aliases={},
    read={
        **_READ,
        "sliding_window_pattern": "sliding_window_pattern",
        "rope_parameters": "(checked: each layer kind's rotary type is one transformers builds)",
        "rope_scaling": "(checked: converted into rope_parameters.full_attention, as transformers does)",
    },
    ignored={
        **_IGNORED,
        "rope_local_base_freq": "the sliding layers' rotary base (converted into rope_parameters): " + _ROPE,
        # every file transformers 5.23 saves holds it (to_dict writes the attribute)
        "_sliding_window_pattern": "the pattern Gemma3TextConfig computed layer_types from, saved with them: loading "
        "sets it from sliding_window_pattern, computes layer_types, and only then sets the file's value, which "
        "nothing reads (the saved layer_types give the kinds)",
    },
    refused={},
    # Gemma3RotaryEmbedding builds one rotary table per layer type from rope_parameters[layer_type] (the global
    # layers' base and scaling, the sliding layers' base): settings nested under full_attention and
    # sliding_attention are what transformers itself saves for this type, not a file to refuse
    rope_per_layer_type=True,
    base_class="Gemma3TextModel",
    classes={name: {"head": head} for head, name in GEMMA3_CLASSES.items()},
)


def _shared(hf: dict[str, Any]) -> dict[str, Any]:
    check_padding_index(hf["vocab_size"], hf.get("pad_token_id"))
    if hf["sliding_window"] is None:
        raise ValueError(
            "sliding_window: null, with which transformers' Gemma models build but cannot run a forward pass (the "
            "sliding-window mask needs a window: create_sliding_window_causal_mask raises); give the window in tokens"
        )
    types = hf["layer_types"]
    if types is not None and (not isinstance(types, list) or not all(t in (SLIDING, FULL) for t in types)):
        raise ValueError(
            f"layer_types: expected a list of {SLIDING!r} and {FULL!r}, one per layer, got {str(types)[:60]}"
        )
    return dict(
        vocab_size=hf["vocab_size"],
        d_model=hf["hidden_size"],
        d_ff=hf["intermediate_size"],
        n_layers=hf["num_hidden_layers"],
        n_heads=hf["num_attention_heads"],
        n_kv_heads=hf["num_key_value_heads"],
        d_head=hf["head_dim"],
        activation=hf["hidden_activation"],
        max_positions=hf["max_position_embeddings"],
        attention_bias=hf["attention_bias"],
        tie_embeddings=hf["tie_word_embeddings"],
        sliding_window=hf["sliding_window"],
        layer_types=types,
        bidirectional=bool(hf["use_bidirectional_attention"]),
        num_labels=hf["num_labels"],
        pad_token_id=hf["pad_token_id"],
        attn_softcap=hf["attn_logit_softcapping"],
        final_softcap=hf["final_logit_softcapping"],
    )


@hf_reader(HF_GEMMA2)
def _from_gemma2(hf: dict[str, Any], model_class: str = "Gemma2Model") -> dict[str, Any]:
    rope = hf["rope_parameters"]
    if isinstance(rope, dict):
        kind = rope.get("rope_type", rope.get("type", "default"))
        if kind not in ROPE_TYPES:
            raise ValueError(
                f"rope_parameters: rope_type {str(kind)[:60]} is not one transformers' Gemma2Config accepts; "
                f"expected one of {', '.join(ROPE_TYPES)}"
            )
    return dict(_shared(hf), sliding_window_pattern=2, qk_norm=False)


def _check_gemma3_rope(hf: dict[str, Any], kinds: list[str]) -> None:
    """Refuse the rotary settings transformers' Gemma 3 cannot build (none changes a count): a port of
    ``Gemma3TextConfig.convert_rope_params_to_dict`` (rope_scaling updates the global layers' settings, each layer
    kind without settings gets the default), its ``validate_rope`` (the keys each type requires) and of
    ``Gemma3RotaryEmbedding``, which builds a table for each layer kind the model has, by its type."""
    # the reading room holds the required keys; it is loaded by then (a reader runs only while a file is read),
    # and importing it with the plugin would load file-reading code for every lookup
    from archzoo.hf_reading import ROPE_REQUIRED_KEYS

    rope, scaling = hf["rope_parameters"], hf.get("rope_scaling")
    if rope is None:
        rope = {FULL: {"rope_type": "default"}, SLIDING: {"rope_type": "default"}}
    if not isinstance(rope, dict):
        rope_type(rope, "Gemma3TextConfig")  # refuses it, in the words every reader uses
        return
    rope = {k: dict(v) if isinstance(v, dict) else v for k, v in rope.items()}
    if scaling is not None:
        if not isinstance(scaling, dict):
            raise ValueError(
                f'rope_scaling: expected an object such as {{"rope_type": "linear", "factor": 8.0}} or null, '
                f"got {str(scaling)[:60]}; transformers' Gemma3TextConfig cannot load it either"
            )
        # Gemma3TextConfig updates rope_parameters.full_attention with it, which a flat rope_parameters lacks
        # (transformers then fails with a KeyError). A flat one here is the file's, or the one archzoo's loader
        # builds from rope_theta as released files give it ({"rope_type": "default", "rope_theta": ...}), with
        # which transformers starts from the default settings instead. Only settings beyond those are surely the
        # file's; a file's own flat default settings next to rope_scaling are read like the loader's (the same
        # layers either way, where transformers fails to load the file)
        full = rope.get(FULL)
        if full is None and ({*rope} - {"rope_type", "type", "rope_theta"} or rope.get("rope_type") != "default"):
            raise ValueError(
                f"rope_scaling: Gemma3TextConfig updates rope_parameters.{FULL} with it, and this file's "
                f"rope_parameters give one flat set of settings ({str(hf['rope_parameters'])[:60]}) instead, which "
                "transformers fails to load (KeyError); give the global layers' settings nested under "
                f"rope_parameters.{FULL}, or rope_scaling alone"
            )
        rope[FULL] = {**(full if isinstance(full, dict) else {"rope_type": "default"}), **scaling}
    for kind in (FULL, SLIDING):
        params = rope.setdefault(kind, {"rope_type": "default"})
        if params is None:
            continue  # a layer kind saved without rotary settings: transformers skips it
        if not isinstance(params, dict):
            raise ValueError(f'rope_parameters: {kind}: expected an object such as {{"rope_type": "default"}}')
        name = params.get("rope_type", params.get("type", "default"))
        where = f"rope_scaling (the {kind} layers')" if kind == FULL and scaling else f"rope_parameters: {kind}"
        if name not in ROPE_TYPES:
            if kind in kinds:  # the rotary embedding looks the type up for each kind the model has
                raise ValueError(
                    f"{where}: rope_type {str(name)[:60]} is not one transformers' Gemma3TextConfig builds (its "
                    f"rotary embedding raises KeyError); expected one of {', '.join(ROPE_TYPES)}"
                )
            continue  # validate_rope only warns of a type it has no check for, and no layer of this kind uses it
        # standardize_rope_params fills rope_theta, and the pre-training length of the scaling types
        missing = sorted(ROPE_REQUIRED_KEYS[name] - {"rope_type", "rope_theta", "original_max_position_embeddings"})
        if missing := [key for key in missing if key not in params]:
            raise ValueError(
                f"{where}: the rope type {name} needs {' and '.join(missing)}, and transformers' "
                "Gemma3TextConfig refuses to load the file without it; add it"
            )


@hf_reader(HF_GEMMA3_TEXT)
def _from_gemma3_text(hf: dict[str, Any], model_class: str = "Gemma3TextModel") -> dict[str, Any]:
    window = hf["sliding_window"]
    read = _shared(hf)
    pattern = hf.get("sliding_window_pattern", 6)
    kinds = read["layer_types"] or (
        [SLIDING if (i + 1) % pattern else FULL for i in range(read["n_layers"])]
        if isinstance(pattern, int) and pattern > 0 and isinstance(read["n_layers"], int)
        else [SLIDING, FULL]  # the configuration model refuses the pattern or the layer count, naming its key
    )
    _check_gemma3_rope(hf, kinds)
    if hf["use_bidirectional_attention"] and isinstance(window, int):
        read["sliding_window"] = window // 2 + 1  # Gemma3TextConfig's own conversion (exclusive bounds)
    return dict(read, sliding_window_pattern=hf.get("sliding_window_pattern", 6), qk_norm=True)


ARCHITECTURE = Architecture(
    name="gemma2",
    title="Gemma 2",
    summary="Decoder-only Transformer with sandwich RMSNorms (before and after attention and feed-forward), GeGLU, "
    "grouped-query attention with an explicit head width, soft-capped attention and output logits, and "
    "sliding-window layers alternating with global ones; a tied LM head.",
    citation="Gemma Team. Gemma 2: Improving Open Language Models at a Practical Size. 2024. arXiv:2408.00118",
    config_model=GemmaConfig,
    build=build,
    reference=reference,
)

GEMMA3_ARCHITECTURE = Architecture(
    name="gemma3",
    title="Gemma 3 (text)",
    summary="Gemma 2's layers with QK-norm (an RMSNorm on every query and key head) and five sliding-window layers "
    "for each global one; the text model of Gemma 3 (its 1B as released; the 4B, 12B and 27B without their "
    "SigLIP vision tower).",
    citation="Gemma Team. Gemma 3 Technical Report. 2025. arXiv:2503.19786",
    config_model=Gemma3Config,
    build=build,
    reference=reference_gemma3,
)


register_architectures = architectures_hook(ARCHITECTURE, GEMMA3_ARCHITECTURE)
register_hf_readers = hf_readers_hook(
    {"gemma2": (_from_gemma2, "gemma2"), "gemma3_text": (_from_gemma3_text, "gemma3")}
)
