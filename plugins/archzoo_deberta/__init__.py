"""archzoo plugin: DeBERTa-v2 and DeBERTa-v3 (He et al. 2021, 2023), the encoder transformers 5.23 builds as
``deberta-v2``.

DeBERTa is a post-LN encoder like BERT whose attention adds *disentangled* relative-position terms to the
content-to-content scores ``Q Kᵀ``. A table of ``2k`` relative-position embeddings (``rel_embeddings``: ``k`` is
``position_buckets`` when set, else ``max_relative_positions``, else the context), normalised by a LayerNorm
(``norm_rel_ebd``), is projected in every layer to position keys and queries: by the layer's own key and query
projections (``share_att_key``, DeBERTa-v3) or by projections of their own. Content-to-position attention
(``c2p``) multiplies each query by the ``2k`` position keys, position-to-content (``p2c``) each key by the ``2k``
position queries: two more matmuls of ``2 N · 2k · h d_h`` FLOPs each, and the two projections of the ``2k``
rows, ``2 · 2k · d · h d_h`` each, whatever ``N`` is. Gathering the scores of each token pair from those products
is indexing, not a matmul, so FlopCounterMode counts it nowhere, and neither does the position bucketing.

DeBERTa-v3 (``position_biased_input`` false) has no absolute position table; the token table may be narrower
than the model (``embedding_size``, projected up by ``embed_proj``). The masked-LM head of transformers'
default (``legacy``) is BERT's: a dense layer to ``embedding_size``, an activation, a LayerNorm and a decoder
tied to the token table with a bias of its own.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, ClassVar, Literal, Self

from pydantic import Field, PositiveInt, field_validator, model_validator

from archzoo import Architecture, Reference
from archzoo.architecture import TransformerConfig, check_activation
from archzoo.blocks import (
    ZERO,
    Block,
    attention,
    composite,
    embedding,
    layer_norm,
    learned_tensor,
    linear,
    repeat,
    with_modules,
)
from archzoo.formula import N, Poly, const
from archzoo.hf_config import (
    DROPOUT,
    INITIALISATION,
    NORM_EPSILON,
    TOKEN_ID,
    HFTable,
    check_padding_index,
    hf_reader,
)
from archzoo.plugin_parts import LABELS, NumLabels, architectures_hook, hf_readers_hook, num_labels_field
from archzoo.symbols import declare_symbol, symbol

from .activation import register_activation_memory as register_activation_memory

__version__ = "0.1.0"

#: archzoo's head -> transformers' class
CLASSES = {
    "masked_lm": "DebertaV2ForMaskedLM",
    "none": "DebertaV2Model",
    "sequence_classification": "DebertaV2ForSequenceClassification",
    "token_classification": "DebertaV2ForTokenClassification",
    "question_answering": "DebertaV2ForQuestionAnswering",
}

#: The relative distances each side of a token: the position table has 2k rows.
SPAN = declare_symbol(
    "k", latex="k", meaning="relative-position span (position_buckets, else max_relative_positions)", order=26
)
#: The width of the token table when it is narrower than the model.
EMBEDDING = declare_symbol("E", latex="E", meaning="token embedding width (embedding_size)", order=12)
#: Rows of the token-type table.
TYPES = declare_symbol("T", latex="T", meaning="token types (type_vocab_size)", order=13)


class DebertaConfig(TransformerConfig):
    """A DeBERTa-v2/v3 encoder; defaults are DeBERTa-v3-base (He et al. 2023, microsoft/deberta-v3-base)."""

    DEFAULTS: ClassVar[dict[str, Any]] = dict(vocab_size=128100, d_model=768, n_layers=12, n_heads=12)
    DESCRIPTIONS: ClassVar = dict(
        vocab_size="rows of the token embedding",
        d_model="model width (hidden_size)",
        n_layers="encoder layers (num_hidden_layers)",
        n_heads="attention heads (num_attention_heads); must divide d_model",
    )

    d_ff: PositiveInt = Field(3072, description="hidden width of the feed-forward (intermediate_size)")
    activation: str = Field("gelu", description="activation of the feed-forward and the masked-LM head (hidden_act)")
    max_positions: PositiveInt = Field(512, description="context length (max_position_embeddings)")
    position_biased_input: bool = Field(
        False, description="an absolute position table added to the token embeddings (DeBERTa-v2: true)"
    )
    type_vocab_size: int = Field(0, ge=0, description="rows of the token-type table (0: none)")
    embedding_size: PositiveInt | None = Field(
        None, description="width of the token table (null = d_model); narrower ones are projected up"
    )
    relative_attention: bool = Field(True, description="disentangled relative-position attention")
    position_buckets: int = Field(
        256, description="log-bucketed relative distances each side (k; 0 or less: max_relative_positions)"
    )
    max_relative_positions: int = Field(
        -1, description="relative distances each side without buckets (0 or less: max_positions)"
    )
    pos_att_type: tuple[Literal["c2p", "p2c"], ...] = Field(
        ("p2c", "c2p"), description="the relative terms: c2p (content to position), p2c (position to content)"
    )
    share_att_key: bool = Field(
        True, description="the position keys and queries come from the layer's own key and query projections (v3)"
    )
    norm_rel_embeddings: bool = Field(True, description="a LayerNorm on the relative-position table (norm_rel_ebd)")
    legacy: bool = Field(
        True,
        description="the masked-LM head transformers uses by default (a decoder from embedding_size with a bias); "
        "false: a head reading the token table directly",
    )
    pooler_hidden_size: PositiveInt | None = Field(
        None, description="width of the sequence classifier's pooler (null = d_model; it must be d_model)"
    )
    pooler_activation: str = Field("gelu", description="activation of the sequence classifier's pooler")
    tie_embeddings: bool = Field(True, description="the masked-LM decoder's weight is the token embedding matrix")
    head: Literal[tuple(CLASSES)] = Field(  # type: ignore[valid-type]
        "masked_lm",
        description="masked_lm (DebertaV2ForMaskedLM), none (DebertaV2Model), sequence_classification (a pooler "
        "on the first token and a classifier), token_classification or question_answering (a classifier on every "
        "token): DebertaV2For...",
    )
    num_labels: NumLabels = num_labels_field(
        "outputs of the classifiers (num_labels); question answering runs only with 2"
    )

    @field_validator("pos_att_type", mode="before")
    @classmethod
    def _pos_att_type_list(cls, value: Any) -> Any:
        # YAML and --set write a sequence as a list; the configuration keeps it as a tuple (it is frozen)
        return tuple(value) if isinstance(value, list) else value

    @model_validator(mode="after")
    def _check(self) -> Self:
        check_activation(self.activation)
        check_activation(self.pooler_activation, key="pooler_activation")
        if self.pooler_hidden_size not in (None, self.d_model):
            raise ValueError(
                f"pooler_hidden_size: the pooler reads the first token's {self.d_model} channels, so its width must "
                f"be d_model, got {self.pooler_hidden_size}; remove it"
            )
        if not self.legacy and self.head == "masked_lm" and (self.embedding_size or self.d_model) != self.d_model:
            raise ValueError(
                "embedding_size: the non-legacy masked-LM head multiplies d_model-wide states by the token table, "
                "so the table must be d_model wide; remove embedding_size or set legacy to true"
            )
        if self.head == "question_answering" and self.num_labels != 2:
            raise ValueError(
                f"num_labels: DebertaV2ForQuestionAnswering splits its {self.num_labels} outputs per token into "
                "start and end logits, and its forward pass fails unless there are 2; set num_labels to 2"
            )
        return self

    @property
    def span(self) -> int:
        """k: the relative distances each side the position table holds."""
        if self.position_buckets > 0:
            return self.position_buckets
        return self.max_relative_positions if self.max_relative_positions >= 1 else self.max_positions


def _attention(cfg: DebertaConfig, d: Poly) -> Block:
    h = symbol("h", cfg.n_heads)
    d_h = symbol("d_h", cfg.d_model // cfg.n_heads)
    inner = d
    plain = attention(
        "attention",
        d,
        inner,
        heads=h,
        d_head=d_h,
        description="bidirectional self-attention with disentangled relative positions",
    )
    if not cfg.relative_attention:
        return replace(plain, description="bidirectional multi-head self-attention (no relative positions)")
    k = SPAN(cfg.span)
    rows = 2 * k  # the position table's rows, projected in every layer whatever N is
    parts = list(plain.children)
    scores = next(child for child in parts if child.kind == "attention_core")
    extra: list[Block] = []
    projections = ("p2c", "c2p") if cfg.share_att_key else cfg.pos_att_type
    for term in ("p2c", "c2p"):
        if term not in projections:
            continue
        which = "query" if term == "p2c" else "key"
        proj = linear(f"pos_{which}_proj", d, inner, tokens=rows)
        if cfg.share_att_key:
            proj = replace(
                proj,
                params=ZERO,
                approx=ZERO,
                description=f"the layer's {which} projection applied to the 2k position rows (shared weights)",
            )
        extra.append(proj)
    for term in cfg.pos_att_type:
        product = 2 * N * rows * inner
        extra.append(
            replace(
                scores,
                name=f"{term}_scores",
                flops=product,
                attention_flops=product,
                backward_flops=2 * product,
                prefill_flops=product,
                decode_flops=ZERO,
                description=(
                    "content-to-position scores: each query times the 2k position keys, then gathered"
                    if term == "c2p"
                    else "position-to-content scores: each key times the 2k position queries, then gathered"
                ),
            )
        )
    return replace(composite("attention", plain.kind, [*parts, *extra], plain.description), heads=h, d_head=d_h)


def build(cfg: DebertaConfig) -> Block:
    d = symbol("d", cfg.d_model)
    V = symbol("V", cfg.vocab_size)
    L = symbol("L", cfg.n_layers)
    E = d if cfg.embedding_size in (None, cfg.d_model) else EMBEDDING(cfg.embedding_size)
    d_ff = symbol("d_ff", cfg.d_ff)
    layer = composite(
        "layer",
        "encoder_layer",
        [
            _attention(cfg, d),
            layer_norm("attention_norm", d),
            linear("fc_in", d, d_ff),
            linear("fc_out", d_ff, d),
            layer_norm("output_norm", d),
        ],
        f"post-LN encoder layer: attention, add, LayerNorm; feed-forward ({cfg.activation}), add, LayerNorm",
    )
    embeddings: list[Block] = [embedding("token", V, E, role="token", description="token embeddings")]
    if cfg.position_biased_input:
        P = symbol("P", cfg.max_positions)
        embeddings.append(embedding("position", P, E, role="position", description="absolute position table"))
    if cfg.type_vocab_size:
        T = TYPES(cfg.type_vocab_size)
        embeddings.append(embedding("token_type", T, E, description="token-type table"))
    if E is not d:
        embeddings.append(linear("embed_proj", E, d, bias=False, description=f"Linear({E}, {d}): the table to d"))
    embeddings.append(layer_norm("embedding_norm", d))
    stack: list[Block] = [repeat(layer, L, name="layers")]
    if cfg.norm_rel_embeddings:  # built whenever norm_rel_ebd asks for it, used only with relative attention
        stack.insert(0, layer_norm("relative_norm", d, description=f"LayerNorm({d}) on the 2k position rows"))
    if cfg.relative_attention:
        k = SPAN(cfg.span)
        stack.insert(0, embedding("relative", 2 * k, d, description="relative-position table (rel_embeddings)"))
    children = [*embeddings, *stack]
    K = LABELS(cfg.num_labels)
    if cfg.head == "masked_lm":
        width = E if cfg.legacy else d
        children.append(
            composite(
                "mlm_head",
                "head",
                [
                    linear("dense", d, width),
                    layer_norm("norm", width),
                    linear(
                        "decoder",
                        width,
                        V,
                        tied_to="token" if cfg.tie_embeddings or not cfg.legacy else "",
                        description="masked-token logits"
                        + (", weight tied to the token embedding" if cfg.tie_embeddings or not cfg.legacy else "")
                        + ", with a bias",
                    ),
                ],
                f"dense, {cfg.activation}, LayerNorm, decoder",
            )
        )
        if cfg.legacy and not cfg.tie_embeddings:
            # the legacy head's own bias parameter, tied to the decoder's only when the embeddings are tied
            children.append(
                learned_tensor(
                    "unused_bias",
                    V,
                    leading=False,
                    description="the legacy head's bias vector, which an untied decoder does not read (it has its own)",
                )
            )
    elif cfg.head == "sequence_classification":
        one = const(1)  # the pooler and the classifier run on the first token only
        children.append(
            linear("pooler", d, d, tokens=one, description=f"dense, {cfg.pooler_activation} on the first token")
        )
        children.append(linear("classifier", d, K, tokens=one, description="class scores"))
    elif cfg.head == "token_classification":
        children.append(linear("classifier", d, K, description="a label's scores per token"))
    elif cfg.head == "question_answering":
        children.append(linear("qa_outputs", d, const(2), description="answer start and end logits per token"))
    root = composite("deberta", "model", children, "DeBERTa encoder")
    return with_modules(root, reference_modules(cfg))


def reference_modules(cfg: DebertaConfig) -> dict[str, tuple[str, ...]]:
    """Where each block's parameters live in the transformers class `reference` builds (for `archzoo verify`):
    block path -> submodule names, inside a layer relative to the layer."""
    base = "" if cfg.head == "none" else "deberta."
    layer = "deberta.layers.layer"
    mlm = "cls.predictions" if cfg.legacy else "lm_predictions.lm_head"
    return {
        "deberta": ("",),
        "deberta.token": (f"{base}embeddings.word_embeddings",),
        "deberta.position": (f"{base}embeddings.position_embeddings",),
        "deberta.token_type": (f"{base}embeddings.token_type_embeddings",),
        "deberta.embed_proj": (f"{base}embeddings.embed_proj",),
        "deberta.embedding_norm": (f"{base}embeddings.LayerNorm",),
        "deberta.relative": (f"{base}encoder.rel_embeddings",),
        "deberta.relative_norm": (f"{base}encoder.LayerNorm",),
        "deberta.layers": (f"{base}encoder.layer",),
        layer: (f"{base}encoder.layer",),
        f"{layer}.attention": ("attention.self", "attention.output.dense"),
        f"{layer}.attention.q_proj": ("attention.self.query_proj",),
        f"{layer}.attention.k_proj": ("attention.self.key_proj",),
        f"{layer}.attention.v_proj": ("attention.self.value_proj",),
        # with share_att_key the position projections are the layer's own: no module of their own
        **(
            {}
            if cfg.share_att_key
            else {
                f"{layer}.attention.pos_query_proj": ("attention.self.pos_query_proj",),
                f"{layer}.attention.pos_key_proj": ("attention.self.pos_key_proj",),
            }
        ),
        f"{layer}.attention.out_proj": ("attention.output.dense",),
        f"{layer}.attention_norm": ("attention.output.LayerNorm",),
        f"{layer}.fc_in": ("intermediate.dense",),
        f"{layer}.fc_out": ("output.dense",),
        f"{layer}.output_norm": ("output.LayerNorm",),
        "deberta.pooler": ("pooler.dense",),
        "deberta.classifier": ("classifier",),
        "deberta.qa_outputs": ("qa_outputs",),
        "deberta.mlm_head": (mlm,) if cfg.tie_embeddings or not cfg.legacy else (),
        "deberta.unused_bias": ("cls.predictions.bias",),
    }


def reference(cfg: DebertaConfig) -> Reference:
    """DebertaV2Model or one of its head classes, built from a DebertaV2Config with the same keys."""
    labelled = cfg.head in ("sequence_classification", "token_classification", "question_answering")
    optional = {
        "embedding_size": cfg.embedding_size,
        "pooler_hidden_size": cfg.pooler_hidden_size,
    }
    return Reference(
        library="transformers",
        target=f"transformers.{CLASSES[cfg.head]}",
        config_class="transformers.DebertaV2Config",
        kwargs=dict(
            vocab_size=cfg.vocab_size,
            hidden_size=cfg.d_model,
            num_hidden_layers=cfg.n_layers,
            num_attention_heads=cfg.n_heads,
            intermediate_size=cfg.d_ff,
            hidden_act=cfg.activation,
            max_position_embeddings=cfg.max_positions,
            position_biased_input=cfg.position_biased_input,
            type_vocab_size=cfg.type_vocab_size,
            relative_attention=cfg.relative_attention,
            position_buckets=cfg.position_buckets,
            max_relative_positions=cfg.max_relative_positions,
            pos_att_type=list(cfg.pos_att_type),
            share_att_key=cfg.share_att_key,
            norm_rel_ebd="layer_norm" if cfg.norm_rel_embeddings else "none",
            legacy=cfg.legacy,
            pooler_hidden_act=cfg.pooler_activation,
            tie_word_embeddings=cfg.tie_embeddings,
            pad_token_id=None,
            **{key: value for key, value in optional.items() if value is not None},
            **({"num_labels": cfg.num_labels} if labelled else {}),
        ),
    )


# ---- Hugging Face config.json: DebertaV2Config's keys, as transformers 5.23 defines them ----------------------

_NO_CONV = "a setting of the convolution after the first layer (conv_kernel_size), which archzoo refuses"

HF_DEBERTA_V2 = HFTable(
    model_type="deberta-v2",
    config_class="DebertaV2Config",
    defaults=dict(
        vocab_size=128100,
        hidden_size=1536,
        num_hidden_layers=24,
        num_attention_heads=24,
        intermediate_size=6144,
        hidden_act="gelu",
        hidden_dropout_prob=0.1,
        attention_probs_dropout_prob=0.1,
        max_position_embeddings=512,
        type_vocab_size=0,
        initializer_range=0.02,
        layer_norm_eps=1e-07,
        relative_attention=False,
        max_relative_positions=-1,
        pad_token_id=0,
        bos_token_id=None,
        eos_token_id=None,
        position_biased_input=True,
        pos_att_type=None,
        pooler_dropout=0.0,
        pooler_hidden_act="gelu",
        legacy=True,
        tie_word_embeddings=True,
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
        "type_vocab_size": "type_vocab_size",
        "relative_attention": "relative_attention",
        "max_relative_positions": "max_relative_positions",
        "position_biased_input": "position_biased_input",
        "pos_att_type": "pos_att_type",
        "pooler_hidden_act": "pooler_activation",
        "legacy": "legacy",
        "tie_word_embeddings": "tie_embeddings",
        # not DebertaV2Config fields: the modules read them from the configuration when a file sets them
        "embedding_size": "embedding_size",
        "position_buckets": "position_buckets",
        "share_att_key": "share_att_key",
        "norm_rel_ebd": "norm_rel_embeddings",
        "pooler_hidden_size": "pooler_hidden_size",
        "attention_head_size": "(checked: d_model / n_heads, the only width the output projection accepts)",
        # an index, not a size; read only to refuse what transformers' nn.Embedding refuses
        "pad_token_id": "(checked: inside the vocabulary)",
        "num_labels": "num_labels",
    },
    ignored={
        "hidden_dropout_prob": DROPOUT,
        "attention_probs_dropout_prob": DROPOUT,
        "pooler_dropout": DROPOUT,
        "cls_dropout": DROPOUT,
        "initializer_range": INITIALISATION,
        "layer_norm_eps": NORM_EPSILON,
        "bos_token_id": TOKEN_ID,
        "eos_token_id": TOKEN_ID,
        "conv_groups": _NO_CONV,
        "conv_act": _NO_CONV,
    },
    refused={
        "conv_kernel_size": (
            (0,),
            "the convolution DeBERTa-v2-xlarge runs beside its first layer (ConvLayer) is not counted by archzoo",
        ),
    },
    base_class="DebertaV2Model",
    classes={name: {"head": head} for head, name in sorted(CLASSES.items(), key=lambda item: item[0] != "none")},
    unsupported_classes={
        "DebertaV2ForMultipleChoice": "its forward pass takes a batch of choices per example (a third input "
        "dimension), which archzoo's forward pass of batch 1 does not model"
    },
)


def _terms(value: Any) -> tuple[str, ...]:
    """pos_att_type as DebertaV2Config reads it ("p2c|c2p" or a list); only c2p and p2c change the model."""
    if value is None:
        return ()
    if isinstance(value, str):
        value = [part.strip() for part in value.lower().split("|")]
    if not isinstance(value, list) or not all(isinstance(part, str) for part in value):
        raise ValueError(
            f'pos_att_type: expected a string such as "p2c|c2p", a list of strings or null, got {value!r:.60}'
        )
    return tuple(part for part in ("p2c", "c2p") if part in value)


@hf_reader(HF_DEBERTA_V2)
def _from_deberta_v2(hf: dict[str, Any], model_class: str = "DebertaV2Model") -> dict[str, Any]:
    check_padding_index(hf["vocab_size"], hf.get("pad_token_id"))
    width, heads, size = hf["hidden_size"], hf["num_attention_heads"], hf.get("attention_head_size")
    if size is not None and isinstance(width, int) and isinstance(heads, int) and heads and size * heads != width:
        raise ValueError(
            f"attention_head_size: {heads} heads of {size} make {size * heads} channels, but the attention's output "
            f"projection takes hidden_size {width}, so transformers' forward pass fails; remove attention_head_size"
        )
    norm = hf.get("norm_rel_ebd", "none")
    if not isinstance(norm, str):
        raise ValueError(f'norm_rel_ebd: expected a string such as "layer_norm" or "none", got {norm!r:.60}')
    config = dict(
        vocab_size=hf["vocab_size"],
        d_model=width,
        n_layers=hf["num_hidden_layers"],
        n_heads=heads,
        d_ff=hf["intermediate_size"],
        activation=hf["hidden_act"],
        max_positions=hf["max_position_embeddings"],
        type_vocab_size=hf["type_vocab_size"],
        relative_attention=hf["relative_attention"],
        max_relative_positions=hf["max_relative_positions"],
        position_buckets=hf.get("position_buckets", -1),
        position_biased_input=hf["position_biased_input"],
        pos_att_type=_terms(hf["pos_att_type"]),
        share_att_key=hf.get("share_att_key", False),
        norm_rel_embeddings="layer_norm" in [part.strip() for part in norm.lower().split("|")],
        pooler_activation=hf["pooler_hidden_act"],
        legacy=hf["legacy"],
        tie_embeddings=hf["tie_word_embeddings"],
        num_labels=hf["num_labels"],
    )
    for key in ("embedding_size", "pooler_hidden_size"):
        if hf.get(key) is not None:
            config[key] = hf[key]
    return config


ARCHITECTURE = Architecture(
    name="deberta",
    title="DeBERTa-v2/v3",
    summary="Microsoft's encoder (DeBERTa-v3 xsmall to large): BERT's post-LN layers with disentangled "
    "relative-position attention (content-to-position and position-to-content terms from a shared table of "
    "relative positions), no absolute positions in v3.",
    citation="He et al. DeBERTa: Decoding-enhanced BERT with Disentangled Attention. ICLR 2021. arXiv:2006.03654; "
    "He et al. DeBERTaV3: Improving DeBERTa using ELECTRA-Style Pre-Training with Gradient-Disentangled Embedding "
    "Sharing. ICLR 2023. arXiv:2111.09543",
    config_model=DebertaConfig,
    build=build,
    reference=reference,
)

register_architectures = architectures_hook(ARCHITECTURE)
register_hf_readers = hf_readers_hook({"deberta-v2": (_from_deberta_v2, "deberta")})
