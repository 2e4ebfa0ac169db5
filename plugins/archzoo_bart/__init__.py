"""archzoo plugin: BART (Lewis et al. 2020), and mBART, as transformers 5.23 builds them.

BART is an encoder-decoder with one token embedding shared by the encoder, the decoder and the LM head,
learned positions on each side (a table of ``max_positions + 2`` rows: BART offsets every position by 2),
a LayerNorm over the embeddings on each side (``layernorm_embedding``), post-LN layers with biases and a
GELU feed-forward. ``BartForConditionalGeneration`` adds ``final_logits_bias`` to the logits: a buffer of
``V`` zeros, not a parameter, so it is in no count (and an addition, so in no FLOP figure either).
``scale_embedding`` multiplies the token embeddings by ``sqrt(d_model)``: no parameters, no matmul FLOPs.

mBART has the same modules with pre-LN layers and one more LayerNorm closing each stack (``pre_norm``).

With ``tie_word_embeddings`` false, transformers 5.23 gives the encoder and the decoder token tables of
their own and an untied LM head, and still builds the ``shared`` table, which no forward pass then reads:
four ``V x d`` matrices, all counted, as ``sum(p.numel() for p in model.parameters())`` counts them.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Literal, Self

from pydantic import Field, PositiveInt, model_validator

from archzoo import ArchConfig, Architecture, Reference
from archzoo.architecture import check_activation, context_length
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
    seq2seq_decoder,
    seq2seq_encoder,
    with_modules,
)
from archzoo.formula import Poly, const
from archzoo.hf_config import (
    DROPOUT,
    TRANSFORMERS_VERSION,
    HFTable,
    check_padding_index,
    hf_reader,
)
from archzoo.plugin_parts import LABELS, NumLabels, architectures_hook, hf_readers_hook, num_labels_field, table_values
from archzoo.seq2seq_parts import (
    ATTRIBUTE_MAP,
    BART_STACK_PARTS,
    STACK_KEYS,
    TRAINING_ONLY,
    WEIGHT_INIT_AND_TOKEN_IDS,
    bart_layer_modules,
    check_side_heads,
    cross_attention_not_run,
    eos_classification_head,
    eos_classification_modules,
    feed_forward_widths,
    side_kwargs,
    source_target_note,
    stack_modules,
    without_cache,
)
from archzoo.symbols import declare_symbol, symbol

from .activation import CORE_READS_TWO_STACKS

if CORE_READS_TWO_STACKS:  # the formula needs a core that reads two stacks; an older one refuses BART as before
    from .activation import register_activation_memory  # noqa: F401

__version__ = "0.1.0"


#: archzoo's head -> transformers' class suffix (Bart..., MBart...)
CLASS_SUFFIX = {
    "lm": "ForConditionalGeneration",
    "none": "Model",
    "sequence_classification": "ForSequenceClassification",
    "question_answering": "ForQuestionAnswering",
    "causal_lm": "ForCausalLM",
}


#: Each side's heads, when they differ (when they agree, both are the shared ``h``): recorded on the attention blocks
#: for the readers of the tree's head layout (the activation formula, the largest live activation).
ENCODER_HEADS = declare_symbol("h_e", latex="h_{e}", meaning="encoder attention heads (n_encoder_heads)", order=21)
DECODER_HEADS = declare_symbol("h_d", latex="h_{d}", meaning="decoder attention heads (n_decoder_heads)", order=21)


class BartConfig(ArchConfig):
    """BART's hyperparameters; defaults are BART-large (transformers' BartConfig defaults, facebook/bart-large)."""

    vocab_size: PositiveInt = Field(50265, description="vocabulary size (one table shared by encoder, decoder, head)")
    max_positions: PositiveInt = Field(
        1024, description="learned positions per side; the table holds max_positions + 2 rows (BART's offset of 2)"
    )
    d_model: PositiveInt = Field(1024, description="model width")
    n_encoder_layers: PositiveInt = Field(12, description="encoder layers")
    n_decoder_layers: PositiveInt = Field(12, description="decoder layers")
    n_encoder_heads: PositiveInt = Field(16, description="encoder attention heads; must divide d_model")
    n_decoder_heads: PositiveInt = Field(
        16, description="decoder attention heads (self- and cross-attention); must divide d_model"
    )
    d_ff_encoder: PositiveInt = Field(4096, description="encoder feed-forward width")
    d_ff_decoder: PositiveInt = Field(4096, description="decoder feed-forward width")
    activation: str = Field("gelu", description="feed-forward activation")
    tie_embeddings: bool = Field(
        True,
        description="encoder, decoder and LM head share one token table; false: each has its own, beside an "
        "unread `shared` table (as transformers 5.23 builds it)",
    )
    scale_embedding: bool = Field(
        False, description="token embeddings multiplied by sqrt(d_model) (no parameters, no matmul FLOPs)"
    )
    pre_norm: bool = Field(
        False,
        description="pre-LN layers and a final LayerNorm closing each stack (mBART); false: post-LN layers (BART)",
    )
    head: Literal[tuple(CLASS_SUFFIX)] = Field(  # type: ignore[valid-type]
        "lm",
        description="lm (BartForConditionalGeneration), none (BartModel, the encoder-decoder alone), "
        "sequence_classification (dense + tanh + out_proj on the last end-of-sequence token's decoder output), "
        "question_answering (Linear(d_model, 2) on every decoder token) or causal_lm (BartForCausalLM: the decoder "
        "alone, its cross-attention layers stored but not run, and an LM head)",
    )
    num_labels: NumLabels = num_labels_field(
        "outputs of the sequence_classification head (transformers' num_labels; BartConfig's default 3)", default=3
    )

    @model_validator(mode="after")
    def _check(self) -> Self:
        check_side_heads(self, "BartAttention")
        check_activation(self.activation)
        return self


def _heads(cfg: BartConfig, *, decoder: bool) -> Poly:
    """The heads of one side's attention: the shared ``h`` when both sides have as many, else ``h_e`` or ``h_d``."""
    if cfg.n_encoder_heads == cfg.n_decoder_heads:
        return symbol("h", cfg.n_encoder_heads)
    return DECODER_HEADS(cfg.n_decoder_heads) if decoder else ENCODER_HEADS(cfg.n_encoder_heads)


def _layer(cfg: BartConfig, d: Poly, d_ff: Poly, *, decoder: bool) -> Block:
    """One encoder or decoder layer: each sub-block followed (post-LN) or preceded (pre-LN) by its LayerNorm.
    Without an encoder (causal_lm) the decoder's cross-attention and its norm are stored but never run."""
    h = _heads(cfg, decoder=decoder)
    pairs = [
        (
            attention(
                "self_attention",
                d,
                d,
                heads=h,
                causal=decoder,
                description="causal multi-head self-attention" if decoder else "multi-head self-attention",
            ),
            layer_norm("self_attention_norm", d),
        )
    ]
    if decoder:
        cross = attention(
            "cross_attention", d, d, heads=h, cross=True, description="cross-attention to the encoder's output"
        )
        cross_norm = layer_norm("cross_attention_norm", d)
        if cfg.head == "causal_lm":
            cross, cross_norm = cross_attention_not_run(cross, cross_norm, model_class="BartForCausalLM")
        pairs.append((cross, cross_norm))
    pairs.append(
        (
            feed_forward("feed_forward", d, d_ff, activation=cfg.activation, description=f"fc1, {cfg.activation}, fc2"),
            layer_norm(
                "feed_forward_norm", d, description="LayerNorm(d) of the feed-forward sub-block (final_layer_norm)"
            ),
        )
    )
    children = [b for sub, norm in pairs for b in ((norm, sub) if cfg.pre_norm else (sub, norm))]
    parts = "self-attention" + (", cross-attention" if decoder else "") + ", feed-forward"
    style = "pre-LN: norm, sub-block, add" if cfg.pre_norm else "post-LN: sub-block, add, norm"
    side = "decoder" if decoder else "encoder"
    return composite("layer", f"{side}_layer", children, f"{style} {side} layer ({parts})")


def _stack(cfg: BartConfig, side: Literal["encoder", "decoder"], V: Poly, d: Poly, d_ff: Poly) -> Block:
    decoder = side == "decoder"
    L = symbol("L_d" if decoder else "L_e", cfg.n_decoder_layers if decoder else cfg.n_encoder_layers)
    P = symbol("P", cfg.max_positions)
    children = []
    if cfg.head == "causal_lm":
        children.append(embedding("token", V, d, role="token", description="the decoder's token embeddings"))
    elif not cfg.tie_embeddings:
        children.append(embedding("token", V, d, role="token", description=f"the {side}'s own token embeddings"))
    children += [
        embedding(
            "position",
            P + 2,
            d,
            role="position",
            description="learned positions: max_positions + 2 rows (positions are offset by 2)",
        ),
        layer_norm("embedding_norm", d, description="LayerNorm(d) over the embeddings (layernorm_embedding)"),
        repeat(_layer(cfg, d, d_ff, decoder=decoder), L, name="layers"),
    ]
    if cfg.pre_norm:
        children.append(layer_norm("final_norm", d, description="LayerNorm(d) closing the stack (mBART)"))
    return composite(side, "stack", children, f"{side} stack")


def build(cfg: BartConfig) -> Block:
    d = symbol("d", cfg.d_model)
    V = symbol("V", cfg.vocab_size)
    d_ff_e, d_ff_d = feed_forward_widths(cfg)
    title = "mBART" if cfg.pre_norm else "BART"
    if cfg.head == "causal_lm":  # the decoder alone, with an LM head (tied to its token embedding)
        children = [
            _stack(cfg, "decoder", V, d, d_ff_d),
            lm_head(d, V, tied_to="decoder.token" if cfg.tie_embeddings else ""),
        ]
        root = composite("bart", "model", children, f"{title} decoder alone, as a causal language model")
        if cfg.n_decoder_layers > cfg.n_encoder_layers:
            # transformers sizes the class's key/value cache by encoder_layers, so its cached calls fail
            root = without_cache(root)
        return with_modules(root, reference_modules(cfg))
    shared = (
        "token embeddings shared by the encoder, the decoder" + (" and the LM head" if cfg.head == "lm" else "")
        if cfg.tie_embeddings
        else "the `shared` table, built but read by no forward pass when the embeddings are untied"
    )
    children = [
        embedding("shared", V, d, role="token", description=shared),
        seq2seq_encoder(_stack(cfg, "encoder", V, d, d_ff_e)),  # generation: runs in prefill only
        seq2seq_decoder(_stack(cfg, "decoder", V, d, d_ff_d)),
    ]
    if cfg.head == "lm":
        head = lm_head(d, V, tied_to="shared" if cfg.tie_embeddings else "")
        children.append(
            replace(head, description=f"{head.description}; final_logits_bias is a buffer, not a parameter")
        )
    if cfg.head == "sequence_classification":
        children.append(eos_classification_head(d, LABELS(cfg.num_labels)))
    if cfg.head == "question_answering":
        qa = linear("qa_outputs", d, const(2), description="answer start and end logits per decoder token")
        # generation's first call runs the decoder over one start token, and so the head
        children.append(replace(qa, prefill_flops=qa.decode_flops))
    root = composite("bart", "model", children, f"{title} encoder-decoder")
    if cfg.head == "sequence_classification":
        # its head indexes the decoder output at the input's end-of-sequence tokens, so the decoder must read as
        # many tokens as the encoder: generation's one-token decoder calls cannot run through it
        root = without_cache(root)
    return with_modules(root, reference_modules(cfg))


def reference_modules(cfg: BartConfig) -> dict[str, tuple[str, ...]]:
    """Where each block's parameters live in the transformers class `reference` builds (for `archzoo verify`):
    block path -> submodule names, inside a layer relative to the layer. BART and mBART name them alike."""
    base = "" if cfg.head == "none" else "model."
    table: dict[str, tuple[str, ...]] = {
        "bart": ("",),
        "bart.shared": (f"{base}shared",),
        "bart.lm_head": ("lm_head",),
        **eos_classification_modules("bart"),
        "bart.qa_outputs": ("qa_outputs",),
    }
    for side in ("encoder", "decoder"):
        table |= stack_modules(
            f"bart.{side}",
            f"{base}{side}",
            parts={**BART_STACK_PARTS, "embedding_norm": "layernorm_embedding"},
            layer=bart_layer_modules(decoder=side == "decoder"),
        )
    return table


def _cache_too_small(cfg: BartConfig) -> bool:
    """Whether transformers' *ForCausalLM runs only without a cache: its DynamicCache holds num_hidden_layers,
    which is encoder_layers, and fails on a decoder with more layers."""
    return cfg.head == "causal_lm" and cfg.n_decoder_layers > cfg.n_encoder_layers


def reference(cfg: BartConfig) -> Reference:
    """transformers' BART classes, or mBART's for pre-LN layers (the only difference between the two).
    Sequence classification reads the decoder output at the input's end-of-sequence tokens, a data-dependent
    index the meta device cannot take: it is measured on the CPU, with end-of-sequence token 0, so that the
    all-zero input ends with one (as every tokenised input does)."""
    family = "MBart" if cfg.pre_norm else "Bart"
    extra: dict[str, Any] = {}
    if cfg.head == "sequence_classification":
        extra = dict(device="cpu", note="the head indexes the end-of-sequence tokens: measured on the CPU")
    return Reference(
        library="transformers",
        target=f"transformers.{family}{CLASS_SUFFIX[cfg.head]}",
        config_class=f"transformers.{family}Config",
        kwargs=dict(
            vocab_size=cfg.vocab_size,
            max_position_embeddings=cfg.max_positions,
            **side_kwargs(cfg),
            activation_function=cfg.activation,
            tie_word_embeddings=cfg.tie_embeddings,
            scale_embedding=cfg.scale_embedding,
            pad_token_id=None,  # the default padding index, 1, lies beyond a one-token vocabulary
            num_labels=cfg.num_labels,
            **({"eos_token_id": 0} if cfg.head == "sequence_classification" else {}),
            **({"use_cache": False} if _cache_too_small(cfg) else {}),
        ),
        inputs="token_ids" if cfg.head == "causal_lm" else "encoder_decoder_token_ids",
        **extra,
    )


ARCHITECTURE = Architecture(
    name="bart",
    title="BART",
    summary="Encoder-decoder Transformer with one token embedding shared by encoder, decoder and LM head, "
    "learned positions and a LayerNorm over the embeddings on each side, and post-LN GELU layers (pre-LN with "
    "a final LayerNorm per stack for mBART), as transformers' BartForConditionalGeneration.",
    citation="Lewis et al. BART: Denoising Sequence-to-Sequence Pre-training for Natural Language Generation, "
    "Translation, and Comprehension. ACL 2020. arXiv:1910.13461; Liu et al. Multilingual Denoising "
    "Pre-training for Neural Machine Translation. TACL 2020. arXiv:2001.08210",
    config_model=BartConfig,
    build=build,
    seq_len_note=lambda cfg: source_target_note(cfg.max_positions, " (the learned positions of each side)"),
    max_seq_len=context_length,
    reference=reference,
)


# ---- Hugging Face config.json: BartConfig's and MBartConfig's keys, as transformers 5.23 defines them -------

_GENERATION = "a generation setting: transformers moves it to GenerationConfig; it changes no module"
_DEPRECATED = "a deprecated alias of the abstract BartPreTrainedModel, which builds no model"


def _defaults(decoder_start_token_id: int | None) -> dict[str, Any]:
    """The fields BartConfig and MBartConfig add to PreTrainedConfig, with their defaults (the same fields;
    only decoder_start_token_id's default differs)."""
    return dict(
        vocab_size=50265,
        max_position_embeddings=1024,
        encoder_layers=12,
        encoder_ffn_dim=4096,
        encoder_attention_heads=16,
        decoder_layers=12,
        decoder_ffn_dim=4096,
        decoder_attention_heads=16,
        encoder_layerdrop=0.0,
        decoder_layerdrop=0.0,
        activation_function="gelu",
        d_model=1024,
        dropout=0.1,
        attention_dropout=0.0,
        activation_dropout=0.0,
        init_std=0.02,
        classifier_dropout=0.0,
        scale_embedding=False,
        use_cache=True,
        pad_token_id=1,
        bos_token_id=0,
        eos_token_id=2,
        decoder_start_token_id=decoder_start_token_id,
        forced_eos_token_id=2,
        is_decoder=False,
        tie_word_embeddings=True,
    )


def _table(
    model_type: str,
    prefix: str,
    decoder_start_token_id: int | None,
    deprecated: tuple[str, ...],
    default_num_labels: int = 2,
) -> HFTable:
    return HFTable(
        model_type=model_type,
        config_class=f"{prefix}Config",
        defaults=_defaults(decoder_start_token_id),
        aliases=ATTRIBUTE_MAP,
        read={
            "vocab_size": "vocab_size",
            "max_position_embeddings": "max_positions",
            **STACK_KEYS,
            "activation_function": "activation",
            "tie_word_embeddings": "tie_embeddings",
            "scale_embedding": "scale_embedding",
            # an index, not a size; read only to refuse what transformers' nn.Embedding refuses
            "pad_token_id": "(checked: inside the vocabulary)",
            "num_labels": "num_labels",
            # no count; read only to refuse what transformers' *ForCausalLM cannot run
            "use_cache": "(checked: with more decoder than encoder layers, *ForCausalLM runs only without a cache)",
        },
        ignored={
            **TRAINING_ONLY,
            "classifier_dropout": DROPOUT,
            **WEIGHT_INIT_AND_TOKEN_IDS,
            "forced_eos_token_id": _GENERATION,
            "is_decoder": f"{prefix}ForCausalLM sets it to true itself, and the other classes build the same modules "
            "either way",
        },
        refused={},
        base_class=f"{prefix}Model",
        classes={
            f"{prefix}{suffix}": {"head": head}
            for head, suffix in sorted(CLASS_SUFFIX.items(), key=lambda item: item[0] != "none")
        },
        unsupported_classes={name: _DEPRECATED for name in deprecated},
        default_num_labels=default_num_labels,
    )


HF_BART = _table(
    "bart",
    "Bart",
    2,
    deprecated=("BartPretrainedModel", "PretrainedBartModel"),
    default_num_labels=3,  # BartConfig: num_labels 3 when the file names neither num_labels nor id2label
)
HF_MBART = _table("mbart", "MBart", None, deprecated=())


def _read(hf: dict[str, Any], table: HFTable, model_class: str, *, pre_norm: bool) -> dict[str, Any]:
    check_padding_index(hf["vocab_size"], hf["pad_token_id"])
    layers = hf["encoder_layers"], hf["decoder_layers"]
    whole = all(isinstance(n, int) and not isinstance(n, bool) for n in layers)
    if model_class.endswith("ForCausalLM") and whole and layers[1] > layers[0] and hf["use_cache"] is not False:
        raise ValueError(
            f"decoder_layers: {layers[1]} decoder layers, more than encoder_layers {layers[0]}: transformers "
            f"{TRANSFORMERS_VERSION}'s {model_class} sizes its key/value cache by encoder_layers and fails on "
            "the decoder's next layer whenever it uses the cache; set use_cache to false (then it runs, and "
            "archzoo counts it, without a cache)"
        )
    return table_values(hf, table, pre_norm=pre_norm)


@hf_reader(HF_BART)
def _from_bart(hf: dict[str, Any], model_class: str = "BartModel") -> dict[str, Any]:
    return _read(hf, HF_BART, model_class, pre_norm=False)


@hf_reader(HF_MBART)
def _from_mbart(hf: dict[str, Any], model_class: str = "MBartModel") -> dict[str, Any]:
    return _read(hf, HF_MBART, model_class, pre_norm=True)  # pre-LN layers, and a LayerNorm closing each stack


#: Hugging Face model type -> its reader
HF_READERS = {"bart": _from_bart, "mbart": _from_mbart}

register_architectures = architectures_hook(ARCHITECTURE)
register_hf_readers = hf_readers_hook({model_type: (reader, None) for model_type, reader in HF_READERS.items()})
