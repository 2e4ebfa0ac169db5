"""archzoo plugin: BERT-style encoders (BERT, RoBERTa, XLM-RoBERTa, DistilBERT, ALBERT, ELECTRA) in transformers.

Every member embeds tokens, learned positions and (but DistilBERT) token types, adds them and normalises the sum
with a LayerNorm; post-LN layers follow (attention, add and LayerNorm, feed-forward, add and LayerNorm), with a
dense + tanh pooler on the first token where the class keeps one. N is the number of tokens of one input
sequence, at most the position table's rows (RoBERTa and XLM-RoBERTa: fewer, as their positions start after the
padding index, ``pad_token_id + 1``).

RoBERTa and XLM-RoBERTa are BERT with offset positions and a classification head of their own (dense, tanh,
output projection on the first token, no pooler); transformers' XLM-RoBERTa classes are RoBERTa's module for
module, so only the vocabulary (250,002 SentencePiece tokens in the released models) tells them apart. ALBERT
factorises the embedding (E-wide tables projected to d) and shares one layer's weights across the stack.
ELECTRA factorises the embedding too, but projects it (``embeddings_project``) only when E differs from d, shares
nothing and has no pooler; its discriminator (ElectraForPreTraining) scores every token with a dense layer and a
one-logit output, its generator (ElectraForMaskedLM) maps d to E, normalises, and reads logits off the tied token
embedding. Parameters and forward FLOPs of every class counted here equal transformers' (FlopCounterMode, eager
attention); the multiple-choice classes are refused, as their FLOPs depend on a number of choices no
configuration gives.

XLM-R XL and XXL (model type xlm-roberta-xl) are XLM-RoBERTa with pre-LN layers: a LayerNorm before the attention
and before the feed-forward of each layer, one after the last layer and none on the embeddings. That moves a
LayerNorm but adds none, so their parameters and FLOPs are those of the post-LN stack of the same widths, and the
block tree shows where each norm sits.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any, ClassVar, Literal

from pydantic import Field, NonNegativeInt, PositiveInt, model_validator

from archzoo import Architecture, Reference, hookimpl
from archzoo.architecture import TransformerConfig, check_activation
from archzoo.blocks import (
    Block,
    attention,
    composite,
    embedding,
    feed_forward,
    layer_norm,
    learned_tensor,
    linear,
    off_loss_path,
    repeat,
    with_modules,
)
from archzoo.formula import const
from archzoo.hf_config import (
    DROPOUT,
    INITIALISATION,
    NORM_EPSILON,
    NOT_READ,
    TOKEN_ID,
    TRANSFORMERS_VERSION,
    USE_CACHE,
    HFTable,
    hf_reader,
)
from archzoo.plugin_parts import LABELS, NumLabels, num_labels_field
from archzoo.symbols import declare_symbol, symbol

# the hook by which this plugin states what its layers save for backward
from .activation import register_activation_memory as register_activation_memory

__version__ = "0.1.0"

# The symbols only this plugin's formulas use (the shared ones are archzoo.symbols.symbol's).
TOKEN_TYPES = declare_symbol("T", latex="T", meaning="token types (type_vocab_size)", order=12)
EMBEDDING_WIDTH = declare_symbol("E", latex="E", meaning="factorised embedding width (embedding_size)", order=13)


#: The task heads, as transformers names their classes (BertModel, BertForMaskedLM, ...).
HEADS = (
    "none",
    "mlm",
    "causal_lm",
    "pretraining",
    "next_sentence",
    "sequence_classification",
    "token_classification",
    "question_answering",
    "discriminator",
)
_POOLED_HEADS = ("none", "pretraining", "next_sentence")  # heads whose class keeps the pooler
#: the transformers model types this plugin builds, as `BertConfig.family` names them
FAMILIES = ("bert", "roberta", "xlm-roberta", "xlm-roberta-xl", "distilbert", "albert", "electra")
#: each family's prefix of its transformers class names (BertModel, XLMRobertaForMaskedLM, ElectraForPreTraining...)
_FAMILY_CLASS_PREFIX = {
    "bert": "Bert",
    "roberta": "Roberta",
    "xlm-roberta": "XLMRoberta",
    "xlm-roberta-xl": "XLMRobertaXL",
    "distilbert": "DistilBert",
    "albert": "Albert",
    "electra": "Electra",
}


class BertConfig(TransformerConfig):
    """BERT and its siblings; defaults are BERT-base (Devlin et al. 2019)."""

    DEFAULTS: ClassVar[dict[str, Any]] = dict(vocab_size=30522, d_model=768, n_layers=12, n_heads=12)
    DESCRIPTIONS: ClassVar = dict(
        vocab_size="WordPiece vocabulary size",
        d_model="hidden width H",
        n_layers="encoder layers L",
        n_heads="attention heads A; must divide d_model",
    )

    d_ff: PositiveInt = Field(3072, description="feed-forward width (4H in BERT)")
    max_positions: PositiveInt = Field(512, description="learned position embeddings (rows of the table)")
    position_offset: NonNegativeInt = Field(
        0,
        description="index of the first position (RoBERTa: pad_token_id + 1 = 2, its positions start after the "
        "padding index); the model takes at most max_positions - position_offset tokens",
    )
    causal: bool = Field(
        False,
        description="causal self-attention with a key/value cache (transformers' is_decoder: BertLMHeadModel, "
        "RobertaForCausalLM); the same weights and eager FLOPs",
    )
    type_vocab_size: int = Field(2, ge=0, description="segment (token type) embeddings; 0 = none (DistilBERT)")
    pooler: bool | None = Field(
        None,
        description="dense + tanh pooler on the first token; null = as transformers builds it: yes for heads "
        "none, pretraining and next_sentence, and for sequence_classification without classifier_dense; "
        "never with type_vocab_size 0 (DistilBERT)",
    )
    head: Literal[HEADS] = Field(  # type: ignore[valid-type]
        "none",
        description="none (BertModel), mlm (BertForMaskedLM), causal_lm (BertLMHeadModel, RobertaForCausalLM: "
        "the masked-LM head, on the last position only in prefill), pretraining (BertForPreTraining), next_sentence "
        "(BertForNextSentencePrediction), sequence_classification, token_classification or question_answering "
        "(Bert/Roberta/DistilBert/AlbertFor...)",
    )
    num_labels: NumLabels = num_labels_field(
        "outputs of the sequence_classification and token_classification classifiers and of ALBERT's sentence-order "
        "head (transformers' num_labels); question_answering needs 2"
    )
    classifier_dense: bool = Field(
        False,
        description="sequence_classification: a dense + activation layer of its own on the first token "
        "before the classifier, instead of the pooler (RoBERTa, DistilBERT)",
    )
    tie_embeddings: bool = Field(
        True, description="the MLM decoder shares the token embedding matrix (transformers' tie_word_embeddings)"
    )
    activation: str = Field("gelu", description="feed-forward activation")
    embedding_size: PositiveInt | None = Field(
        None, description="ALBERT's factorised embedding width E (null = d_model, no factorisation)"
    )
    shared_layers: bool = Field(False, description="ALBERT: all layers share one set of weights")
    family: Literal[FAMILIES] | None = Field(  # type: ignore[valid-type]
        None,
        description="the transformers model type whose classes build this configuration: bert, roberta, "
        "xlm-roberta, xlm-roberta-xl, distilbert, albert or electra; null = read off the other keys (ALBERT from "
        "shared_layers, DistilBERT from type_vocab_size 0, RoBERTa from position_offset or classifier_dense, else "
        "BERT). The others are only ever named: xlm-roberta-xl is RoBERTa with pre-LN layers (a LayerNorm before "
        "each sublayer, one after the stack, none on the embeddings); electra has no pooler, the dense "
        "classification head, no separate MLM bias, and projects E-wide embeddings to d only when embedding_size "
        "differs from d_model",
    )

    @model_validator(mode="before")
    @classmethod
    def _defaults_of_the_family(cls, data: Any) -> Any:
        """What a named family always builds: ELECTRA never a pooler, ELECTRA and RoBERTa a dense classification
        head, ELECTRA an embeddings_project only when embedding_size differs from hidden_size; then the pooler as
        transformers builds it for the head."""
        if not isinstance(data, dict):
            return data
        family = data.get("family")
        if family in ("roberta", "xlm-roberta", "xlm-roberta-xl", "electra") and "classifier_dense" not in data:
            data = {**data, "classifier_dense": True}
        if family == "electra":
            if data.get("pooler") is None:
                data = {**data, "pooler": False}
            width = data.get("d_model", cls.model_fields["d_model"].default)
            if data.get("embedding_size") is not None and data.get("embedding_size") == width:
                data = {**data, "embedding_size": None}  # ElectraModel builds no projection for E = H
        if data.get("pooler") is None:
            head, type_vocab = data.get("head", "none"), data.get("type_vocab_size", 2)
            pooled = head in _POOLED_HEADS or (head == "sequence_classification" and not data.get("classifier_dense"))
            data = {**data, "pooler": pooled and type_vocab != 0}
        return data

    @model_validator(mode="after")
    def _check(self) -> BertConfig:
        check_activation(self.activation)  # the heads divide d_model: TransformerConfig's check, run before this
        if self.position_offset >= self.max_positions:
            raise ValueError(
                f"position_offset: positions starting at {self.position_offset} leave none of the "
                f"{self.max_positions} rows of the table; choose an offset below max_positions"
            )
        # the family first: its own heads and pooler say what to change, the generic checks below might not
        if self.family is not None and (problem := _family_problem(self)):
            raise ValueError(f"family: {self.family!r} {problem}")
        if self.head in ("pretraining", "next_sentence") and not self.pooler:
            raise ValueError(
                f"head: {self.head!r} needs the pooler (its sentence-pair head reads the pooled "
                "output); set pooler: true"
            )
        if self.head == "sequence_classification" and not (self.pooler or self.classifier_dense):
            raise ValueError(
                "head: 'sequence_classification' reads the pooler's output or a dense layer of its "
                "own; set pooler: true or classifier_dense: true"
            )
        if self.head == "question_answering" and self.num_labels != 2:
            # transformers builds the layer with num_labels outputs, but its forward pass splits them into
            # exactly two (start, end) and fails on any other number
            raise ValueError(
                f"num_labels: head 'question_answering' gives an answer's start and end logits, so it "
                f"needs 2 labels, got {self.num_labels}"
            )
        if self.head == "discriminator" and self.family != "electra":
            raise ValueError(
                "head: 'discriminator' is ELECTRA's replaced-token detection head (ElectraForPreTraining); "
                "set family: electra"
            )
        return self


def _family_problem(cfg: BertConfig) -> str:
    """Why the named family's transformers classes cannot build ``cfg`` (empty: they can)."""
    if cfg.family == "electra":
        if cfg.shared_layers:
            return "shares no layers between positions of the stack; set shared_layers: false"
        if cfg.type_vocab_size == 0:
            return "embeds token types (ElectraEmbeddings' token_type_embeddings); give type_vocab_size 1 or more"
        if cfg.position_offset:
            return "counts positions from 0 (ElectraEmbeddings); set position_offset: 0"
        if cfg.pooler:
            return "has no pooler (ElectraModel builds none); set pooler: false"
        if cfg.head in ("pretraining", "next_sentence"):
            return f"has no head {cfg.head!r}: ELECTRA's pre-training head is 'discriminator' (ElectraForPreTraining)"
        if cfg.head == "sequence_classification" and not cfg.classifier_dense:
            return "classifies with a dense layer of its own (ElectraClassificationHead); set classifier_dense: true"
        return ""
    inferred = _inferred_family(cfg)
    wanted = _FAMILY_CLASS_PREFIX[str(cfg.family)]
    if (inferred == "Roberta" and wanted in _ROBERTA_FAMILIES) or inferred == wanted:
        if cfg.head not in _FAMILY_HEADS[wanted]:
            return f"has no class for head {cfg.head!r}"
        if wanted in _ROBERTA_FAMILIES and not cfg.position_offset:
            return (
                "counts positions from the padding index plus one; set position_offset to pad_token_id + 1 "
                "(2 in the published models)"
            )
        return ""
    return (
        f"does not build this configuration: its keys read as {inferred or 'no transformers family'}'s "
        "(RoBERTa and XLM-RoBERTa (XL) need position_offset, the padding index plus one; BERT has none and no "
        "classifier_dense; ALBERT needs embedding_size and shared_layers; DistilBERT type_vocab_size 0)"
    )


def build(cfg: BertConfig) -> Block:
    d = symbol("d", cfg.d_model)
    V = symbol("V", cfg.vocab_size)
    P = symbol("P", cfg.max_positions)
    L = symbol("L", cfg.n_layers)
    d_ff = symbol("d_ff", cfg.d_ff)
    factorised = cfg.embedding_size is not None
    E = EMBEDDING_WIDTH(cfg.embedding_size) if cfg.embedding_size is not None else d

    parts = [
        embedding("token", V, E, role="token", description="word embeddings"),
        embedding(
            "position",
            P,
            E,
            role="position",
            description="learned position embeddings"
            + (
                f"; positions start at {cfg.position_offset}, after the padding index, so at most "
                f"{cfg.max_positions - cfg.position_offset:,} tokens"
                if cfg.position_offset
                else ""
            ),
        ),
    ]
    if cfg.type_vocab_size:
        parts.append(embedding("segment", TOKEN_TYPES(cfg.type_vocab_size), E, description="token type embeddings"))
    pre_norm = cfg.family == "xlm-roberta-xl"  # XLM-R XL and XXL: pre-LN layers, no LayerNorm on the embeddings
    if not pre_norm:
        parts.append(layer_norm("norm", E))
    embeddings = composite(
        "embeddings",
        "embeddings",
        parts,
        "token + position + segment" + ("" if pre_norm else ", then LayerNorm"),
    )
    children = [embeddings]
    if factorised:
        children.append(linear("embedding_projection", E, d, description="projects E-wide embeddings to d"))

    self_attention = attention("attention", d, d, causal=cfg.causal, heads=symbol("h", cfg.n_heads))
    ff = feed_forward("feed_forward", d, d_ff, activation=cfg.activation)
    kind = "decoder layer: causal " if cfg.causal else "encoder layer: "
    if pre_norm:
        sublayers = [layer_norm("attention_norm", d), self_attention, layer_norm("feed_forward_norm", d), ff]
        layer_text = "pre-LN " + kind + "norm, attention, add; norm, feed-forward, add"
    else:
        sublayers = [self_attention, layer_norm("attention_norm", d), ff, layer_norm("output_norm", d)]
        layer_text = "post-LN " + kind + "attention, add & norm, feed-forward, add & norm"
    layer = composite("layer", "encoder_layer", sublayers, layer_text)
    children.append(repeat(layer, L, name="layers", shared=cfg.shared_layers))
    if pre_norm:
        children.append(layer_norm("final_norm", d, description="LayerNorm after the last layer"))
    if cfg.pooler:
        pooler = linear("pooler", d, d, tokens=const(1), description="dense + tanh on the first token")
        # read by the sentence-pair head or the classifier; else (the base model, whose loss is taken from the
        # last hidden state) its output reaches no loss and autograd runs no backward through it
        read = cfg.head in ("pretraining", "next_sentence") or (
            cfg.head == "sequence_classification" and not cfg.classifier_dense
        )
        children.append(pooler if read else off_loss_path(pooler))
    K = LABELS(cfg.num_labels)
    if cfg.head in ("mlm", "causal_lm", "pretraining"):
        if cfg.tie_embeddings:
            decoder = linear(
                "decoder",
                E,
                V,
                tied_to="embeddings.token",
                description="vocabulary logits, weight tied to the token embedding",
            )
            head_parts = [decoder]
        else:
            head_parts = [linear("decoder", E, V, description="vocabulary logits, a weight of its own")]
            # BERT, RoBERTa, ALBERT; DistilBERT's projector and ELECTRA's generator_lm_head have no separate bias
            if cfg.type_vocab_size and cfg.family != "electra":
                head_parts.append(
                    learned_tensor(
                        "bias",
                        V,
                        leading=False,
                        description="the head's own bias vector: transformers ties it to the decoder's bias only "
                        "together with the weight, so an untied head keeps both",
                    )
                )
        head = composite(
            "mlm_head",
            "head",
            [
                linear("transform", d, E, description="dense + activation before the decoder"),
                layer_norm("transform_norm", E),
                *head_parts,
            ],
            "masked-language-model head",
        )
        if cfg.head == "causal_lm":  # logits_to_keep=1 in prefill: the head reads the last position only
            head = replace(
                head,
                description="language-model head (the masked-LM head's modules), on the last position only in prefill",
                prefill_flops=head.decode_flops,
                children=tuple(replace(c, prefill_flops=c.decode_flops) for c in head.children),
            )
        children.append(head)
    if cfg.head == "discriminator":
        children.append(
            composite(
                "discriminator_head",
                "head",
                [
                    linear("dense", d, d, description="dense + activation on every token"),
                    linear("prediction", d, const(1), description="one logit per token: original or replaced"),
                ],
                "ELECTRA's replaced-token detection head",
            )
        )
    if cfg.head in ("pretraining", "next_sentence"):
        # BERT's next-sentence head has 2 outputs; ALBERT's sentence-order head has num_labels
        pairs = K if cfg.shared_layers else const(2)
        children.append(
            linear("nsp_head", d, pairs, tokens=const(1), description="sentence-pair classifier on the pooled output")
        )
    if cfg.head == "sequence_classification":
        if cfg.classifier_dense:
            children.append(
                linear(
                    "classifier_dense",
                    d,
                    d,
                    tokens=const(1),
                    description="dense + activation on the first token (RoBERTa's classification "
                    "head, DistilBERT's pre_classifier)",
                )
            )
        children.append(
            linear(
                "classifier",
                d,
                K,
                tokens=const(1),
                description="classifier on "
                + ("the dense layer's output" if cfg.classifier_dense else "the pooled output"),
            )
        )
    if cfg.head == "token_classification":
        children.append(linear("classifier", d, K, description="a label per token"))
    if cfg.head == "question_answering":
        children.append(linear("qa_outputs", d, K, description="answer start and end logits per token"))
    return with_modules(composite("bert", "model", children, "BERT encoder"), reference_modules(cfg))


#: transformers' class suffix for each head, and the families (BERT, RoBERTa, DistilBERT, ALBERT) that have it
_CLASS_SUFFIX = {
    "none": "Model",
    "mlm": "ForMaskedLM",
    "causal_lm": "ForCausalLM",  # BERT's is BertLMHeadModel (`_class_name`)
    "pretraining": "ForPreTraining",
    "next_sentence": "ForNextSentencePrediction",
    "sequence_classification": "ForSequenceClassification",
    "token_classification": "ForTokenClassification",
    "question_answering": "ForQuestionAnswering",
    "discriminator": "ForPreTraining",  # ELECTRA's (ElectraForPreTraining)
}
_ROBERTA_HEADS = {"none", "mlm", "causal_lm", "sequence_classification", "token_classification", "question_answering"}
#: the class-name prefixes of the families built as RoBERTa: positions after the padding index, the dense classifier
_ROBERTA_FAMILIES = ("Roberta", "XLMRoberta", "XLMRobertaXL")
_FAMILY_HEADS = {
    "Bert": set(_CLASS_SUFFIX),
    "Roberta": _ROBERTA_HEADS,
    "XLMRoberta": _ROBERTA_HEADS,
    "XLMRobertaXL": _ROBERTA_HEADS,
    "Electra": _ROBERTA_HEADS | {"discriminator"},
    "DistilBert": {"none", "mlm", "sequence_classification", "token_classification", "question_answering"},
    "Albert": {"none", "mlm", "pretraining", "sequence_classification", "token_classification", "question_answering"},
}


def _family(cfg: BertConfig) -> str | None:
    """Which transformers family builds this configuration (its class-name prefix), or None when none does: the
    family it names (checked by the configuration model), else the one its keys read as."""
    if cfg.family is not None:
        return _FAMILY_CLASS_PREFIX[cfg.family]
    return _inferred_family(cfg)


def _inferred_family(cfg: BertConfig) -> str | None:
    """The family a configuration that names none reads as, or None when none builds it (only BERT and RoBERTa
    read is_decoder; only RoBERTa offsets its positions)."""
    if cfg.embedding_size is not None or cfg.shared_layers:
        albert = cfg.embedding_size is not None and cfg.shared_layers and cfg.type_vocab_size
        return "Albert" if albert and not cfg.causal and not cfg.position_offset else None
    if cfg.type_vocab_size == 0:
        return "DistilBert" if not cfg.causal and not cfg.position_offset else None
    return "Roberta" if cfg.classifier_dense or cfg.position_offset else "Bert"


def _class_name(family: str, head: str) -> str:
    return "BertLMHeadModel" if (family, head) == ("Bert", "causal_lm") else f"{family}{_CLASS_SUFFIX[head]}"


def _class_builds_this_pooler(family: str, cfg: BertConfig) -> bool:
    """Whether the head's class builds exactly cfg.pooler (and the classification head cfg asks for)."""
    if family == "Electra":  # no pooler in any class; the dense classification head
        return not cfg.pooler and (cfg.head != "sequence_classification" or cfg.classifier_dense)
    if cfg.head == "none":
        return family != "DistilBert" or not cfg.pooler
    if cfg.head == "sequence_classification":
        # BERT and ALBERT classify the pooled output; RoBERTa and DistilBERT have a dense layer and no pooler
        dense = family in (*_ROBERTA_FAMILIES, "DistilBert")
        return cfg.classifier_dense == dense and cfg.pooler == (not dense)
    return cfg.pooler == (cfg.head in _POOLED_HEADS)


#: the attribute holding the base model in each family's head classes (BertForMaskedLM.bert, ...)
_BASE_ATTRIBUTE = {
    "Bert": "bert",
    "Roberta": "roberta",
    "XLMRoberta": "roberta",
    "XLMRobertaXL": "roberta",
    "DistilBert": "distilbert",
    "Albert": "albert",
    "Electra": "electra",
}


def reference_modules(cfg: BertConfig) -> dict[str, tuple[str, ...]]:
    """Where each block's parameters live in the transformers class `reference` builds (for `archzoo verify`):
    block path -> submodule names, inside a layer relative to the layer."""
    family = _family(cfg)
    if family is None:
        return {}
    base = "" if cfg.head == "none" else _BASE_ATTRIBUTE[family] + "."
    table: dict[str, tuple[str, ...]] = {
        "bert": ("",),
        "bert.embeddings": (f"{base}embeddings",),
        "bert.embeddings.token": (f"{base}embeddings.word_embeddings",),
        "bert.embeddings.position": (f"{base}embeddings.position_embeddings",),
        "bert.embeddings.segment": (f"{base}embeddings.token_type_embeddings",),
        "bert.embeddings.norm": (f"{base}embeddings.LayerNorm",),
        "bert.pooler": (f"{base}pooler",),
        "bert.classifier": ("classifier",),
        "bert.qa_outputs": ("qa_outputs",),
    }
    if family == "DistilBert":
        layers = f"{base}transformer.layer"
        table.update(
            {
                "bert.layers.layer.attention": ("attention",),
                "bert.layers.layer.attention_norm": ("sa_layer_norm",),
                "bert.layers.layer.feed_forward": ("ffn",),
                "bert.layers.layer.output_norm": ("output_layer_norm",),
                "bert.mlm_head": ("vocab_transform", "vocab_layer_norm", "vocab_projector"),
                "bert.classifier_dense": ("pre_classifier",),
            }
        )
        table["bert.layers"] = table["bert.layers.layer"] = (layers,)
    elif family == "Albert":  # one layer, shared: the repeat is the layer group, the layer its one member
        table.update(
            {
                "bert.embedding_projection": (f"{base}encoder.embedding_hidden_mapping_in",),
                "bert.layers": (f"{base}encoder.albert_layer_groups",),
                "bert.layers.layer": (f"{base}encoder.albert_layer_groups.0.albert_layers.0",),
                "bert.layers.layer.attention": (
                    "attention.query",
                    "attention.key",
                    "attention.value",
                    "attention.dense",
                ),
                "bert.layers.layer.attention_norm": ("attention.LayerNorm",),
                "bert.layers.layer.feed_forward": ("ffn", "ffn_output"),
                "bert.layers.layer.output_norm": ("full_layer_layer_norm",),
                "bert.mlm_head": ("predictions",),
                "bert.nsp_head": ("sop_classifier",),
            }
        )
    else:
        table.update(
            {
                "bert.layers": (f"{base}encoder.layer",),
                "bert.layers.layer": (f"{base}encoder.layer",),
                "bert.layers.layer.attention": ("attention.self", "attention.output.dense"),
                "bert.layers.layer.attention_norm": ("attention.output.LayerNorm",),
                "bert.layers.layer.feed_forward": ("intermediate", "output.dense"),
                "bert.layers.layer.output_norm": ("output.LayerNorm",),
            }
        )
        if family == "XLMRobertaXL":  # pre-LN: the attention's own LayerNorm, one before the feed-forward, one last
            table.update(
                {
                    "bert.layers.layer.attention_norm": ("attention.self_attn_layer_norm",),
                    "bert.layers.layer.feed_forward_norm": ("LayerNorm",),
                    "bert.final_norm": (f"{base}encoder.LayerNorm",),
                }
            )
            del table["bert.layers.layer.output_norm"], table["bert.embeddings.norm"]
        if family in _ROBERTA_FAMILIES:
            table.update({"bert.mlm_head": ("lm_head",), "bert.classifier_dense": ("classifier.dense",)})
            if cfg.head == "sequence_classification":
                table["bert.classifier"] = ("classifier.out_proj",)
            if family == "XLMRoberta" and cfg.head in ("mlm", "causal_lm") and cfg.tie_embeddings:
                # XLM-RoBERTa's head classes create lm_head before roberta, so named_parameters() reports the
                # shared matrix as lm_head.decoder.weight, a checkpoint as the word embedding: neither side's
                # blocks can name where it lives for both, so these three are left unmapped
                for path in ("bert.embeddings", "bert.embeddings.token", "bert.mlm_head"):
                    del table[path]
        elif family == "Electra":
            table.update(
                {
                    "bert.embedding_projection": (f"{base}embeddings_project",),
                    "bert.mlm_head": ("generator_predictions", "generator_lm_head"),
                    "bert.discriminator_head": ("discriminator_predictions",),
                    "bert.classifier_dense": ("classifier.dense",),
                }
            )
            if cfg.head == "sequence_classification":
                table["bert.classifier"] = ("classifier.out_proj",)
        else:
            table.update({"bert.mlm_head": ("cls.predictions",), "bert.nsp_head": ("cls.seq_relationship",)})
    return table


def reference(cfg: BertConfig) -> Reference | None:
    family = _family(cfg)
    if family is None or cfg.head not in _FAMILY_HEADS[family] or not _class_builds_this_pooler(family, cfg):
        return None
    if family == "DistilBert":
        kwargs: dict[str, Any] = dict(
            vocab_size=cfg.vocab_size,
            dim=cfg.d_model,
            n_layers=cfg.n_layers,
            n_heads=cfg.n_heads,
            hidden_dim=cfg.d_ff,
            max_position_embeddings=cfg.max_positions,
            activation=cfg.activation,
        )
    else:
        kwargs = dict(
            vocab_size=cfg.vocab_size,
            hidden_size=cfg.d_model,
            num_hidden_layers=cfg.n_layers,
            num_attention_heads=cfg.n_heads,
            intermediate_size=cfg.d_ff,
            max_position_embeddings=cfg.max_positions,
            hidden_act=cfg.activation,
        )
        if family in ("Albert", "Electra"):
            kwargs = dict(
                vocab_size=cfg.vocab_size,
                # ELECTRA without a factorised embedding: E = H, and ElectraModel builds no projection
                embedding_size=cfg.embedding_size if cfg.embedding_size is not None else cfg.d_model,
                **{k: v for k, v in kwargs.items() if k != "vocab_size"},
            )
        kwargs["type_vocab_size"] = cfg.type_vocab_size
    if not cfg.tie_embeddings:
        kwargs["tie_word_embeddings"] = False
    if cfg.causal:
        kwargs["is_decoder"] = True
    if cfg.position_offset:  # RoBERTa's positions start at pad_token_id + 1
        kwargs["pad_token_id"] = cfg.position_offset - 1
    labelled = cfg.head in ("sequence_classification", "token_classification", "question_answering") or (
        family == "Albert" and cfg.head == "pretraining"
    )
    if labelled and cfg.num_labels != 2:
        kwargs["num_labels"] = cfg.num_labels
    pooling_argument = cfg.head == "none" and family not in ("DistilBert", "Electra")  # ElectraModel takes none
    model_kwargs = {"add_pooling_layer": cfg.pooler} if pooling_argument else {}
    return Reference(
        library="transformers",
        target=f"transformers.{_class_name(family, cfg.head)}",
        config_class=f"transformers.{family}Config",
        kwargs=kwargs,
        model_kwargs=model_kwargs,
    )


# ---- Hugging Face config.json: each model type's keys, as transformers 5.23 defines them ----------------

_LEGACY_POSITIONS = (
    f"{NOT_READ}; transformers {TRANSFORMERS_VERSION} builds absolute position embeddings only, whatever this says"
)
_BERT_IGNORED = {
    "hidden_dropout_prob": DROPOUT,
    "attention_probs_dropout_prob": DROPOUT,
    "classifier_dropout": DROPOUT,
    "initializer_range": INITIALISATION,
    "layer_norm_eps": NORM_EPSILON,
    "pad_token_id": TOKEN_ID,
    "bos_token_id": TOKEN_ID,
    "eos_token_id": TOKEN_ID,
    "use_cache": USE_CACHE,
    "position_embedding_type": _LEGACY_POSITIONS,
}
_BERT_REFUSED = {
    "add_cross_attention": (
        (False,),
        "cross-attention layers for an encoder-decoder are not modelled by the bert plugin",
    ),
}
_BERT_READ = {
    "vocab_size": "vocab_size",
    "hidden_size": "d_model",
    "num_hidden_layers": "n_layers",
    "num_attention_heads": "n_heads",
    "intermediate_size": "d_ff",
    "max_position_embeddings": "max_positions",
    "type_vocab_size": "type_vocab_size",
    "hidden_act": "activation",
    "tie_word_embeddings": "tie_embeddings",
    "num_labels": "num_labels",
    "is_decoder": "causal",
}
_MULTIPLE_CHOICE = (
    "its input holds one sequence per answer choice, so its FLOPs depend on a number of choices "
    "that config.json does not give"
)


def _heads(prefix: str, *suffixes: str) -> dict[str, dict[str, Any]]:
    by_suffix = {suffix: head for head, suffix in _CLASS_SUFFIX.items() if head != "discriminator"}
    if prefix == "Electra":  # ELECTRA's ForPreTraining is its discriminator, not BERT's masked LM + next sentence
        by_suffix["ForPreTraining"] = "discriminator"
    return {f"{prefix}{suffix}": {"head": by_suffix[suffix]} for suffix in suffixes}


HF_BERT = HFTable(
    model_type="bert",
    config_class="BertConfig",
    defaults=dict(
        vocab_size=30522,
        hidden_size=768,
        num_hidden_layers=12,
        num_attention_heads=12,
        intermediate_size=3072,
        hidden_act="gelu",
        hidden_dropout_prob=0.1,
        attention_probs_dropout_prob=0.1,
        max_position_embeddings=512,
        type_vocab_size=2,
        initializer_range=0.02,
        layer_norm_eps=1e-12,
        pad_token_id=0,
        use_cache=True,
        classifier_dropout=None,
        is_decoder=False,
        add_cross_attention=False,
        bos_token_id=None,
        eos_token_id=None,
        tie_word_embeddings=True,
    ),
    aliases={},
    read=_BERT_READ,
    ignored={
        **_BERT_IGNORED,
        **{
            key: f"{NOT_READ}; transformers' pooler is always one dense + tanh layer on the first token"
            for key in (
                "directionality",
                "pooler_fc_size",
                "pooler_num_attention_heads",
                "pooler_num_fc_layers",
                "pooler_size_per_head",
                "pooler_type",
            )
        },
    },
    refused=_BERT_REFUSED,
    base_class="BertModel",
    classes={
        **_heads(
            "Bert",
            "Model",
            "ForPreTraining",
            "ForMaskedLM",
            "ForNextSentencePrediction",
            "ForSequenceClassification",
            "ForTokenClassification",
            "ForQuestionAnswering",
        ),
        "BertLMHeadModel": {"head": "causal_lm"},
    },
    unsupported_classes={"BertForMultipleChoice": _MULTIPLE_CHOICE},
)

HF_ROBERTA = HFTable(
    model_type="roberta",
    config_class="RobertaConfig",
    defaults={**HF_BERT.defaults, "vocab_size": 50265, "pad_token_id": 1, "bos_token_id": 0, "eos_token_id": 2},
    aliases={},
    # RoBERTa's positions start after the padding index, which sets how many tokens it takes
    read={**_BERT_READ, "pad_token_id": "position_offset"},
    ignored={k: v for k, v in _BERT_IGNORED.items() if k != "pad_token_id"},
    refused=_BERT_REFUSED,
    base_class="RobertaModel",
    classes=_heads(
        "Roberta",
        "Model",
        "ForMaskedLM",
        "ForCausalLM",
        "ForSequenceClassification",
        "ForTokenClassification",
        "ForQuestionAnswering",
    ),
    unsupported_classes={"RobertaForMultipleChoice": _MULTIPLE_CHOICE},
)

HF_XLM_ROBERTA = HFTable(
    model_type="xlm-roberta",
    config_class="XLMRobertaConfig",
    # XLMRobertaConfig's fields and defaults are RobertaConfig's but for the vocabulary (BERT's 30,522)
    defaults={**HF_ROBERTA.defaults, "vocab_size": 30522},
    aliases={},
    read=HF_ROBERTA.read,
    ignored=HF_ROBERTA.ignored,
    refused=_BERT_REFUSED,
    base_class="XLMRobertaModel",
    classes=_heads(
        "XLMRoberta",
        "Model",
        "ForMaskedLM",
        "ForCausalLM",
        "ForSequenceClassification",
        "ForTokenClassification",
        "ForQuestionAnswering",
    ),
    unsupported_classes={"XLMRobertaForMultipleChoice": _MULTIPLE_CHOICE},
)

HF_XLM_ROBERTA_XL = HFTable(
    model_type="xlm-roberta-xl",
    config_class="XLMRobertaXLConfig",
    # XLMRobertaXLConfig's fields are RoBERTa's; its defaults are XLM-R XL's (Goyal et al. 2021)
    defaults={
        **HF_ROBERTA.defaults,
        "vocab_size": 250880,
        "hidden_size": 2560,
        "num_hidden_layers": 36,
        "num_attention_heads": 32,
        "intermediate_size": 10240,
        "max_position_embeddings": 514,
        "type_vocab_size": 1,
        "layer_norm_eps": 1e-05,
    },
    aliases={},
    read=HF_ROBERTA.read,
    ignored=HF_ROBERTA.ignored,
    refused=_BERT_REFUSED,
    base_class="XLMRobertaXLModel",
    classes=_heads(
        "XLMRobertaXL",
        "Model",
        "ForMaskedLM",
        "ForCausalLM",
        "ForSequenceClassification",
        "ForTokenClassification",
        "ForQuestionAnswering",
    ),
    unsupported_classes={"XLMRobertaXLForMultipleChoice": _MULTIPLE_CHOICE},
)

_SEQUENCE_SUMMARY = (
    "read only by ElectraForMultipleChoice's sequence summary, a class archzoo refuses (its FLOPs depend on a "
    "number of choices config.json does not give); no other class reads it"
)
HF_ELECTRA = HFTable(
    model_type="electra",
    config_class="ElectraConfig",
    defaults=dict(
        vocab_size=30522,
        embedding_size=128,
        hidden_size=256,
        num_hidden_layers=12,
        num_attention_heads=4,
        intermediate_size=1024,
        hidden_act="gelu",
        hidden_dropout_prob=0.1,
        attention_probs_dropout_prob=0.1,
        max_position_embeddings=512,
        type_vocab_size=2,
        initializer_range=0.02,
        layer_norm_eps=1e-12,
        summary_type="first",
        summary_use_proj=True,
        summary_activation="gelu",
        summary_last_dropout=0.1,
        pad_token_id=0,
        use_cache=True,
        classifier_dropout=None,
        is_decoder=False,
        add_cross_attention=False,
        bos_token_id=None,
        eos_token_id=None,
        tie_word_embeddings=True,
    ),
    aliases={},
    read={**_BERT_READ, "embedding_size": "embedding_size"},
    ignored={
        **_BERT_IGNORED,
        **{
            key: _SEQUENCE_SUMMARY
            for key in (
                "summary_type",
                "summary_use_proj",
                "summary_activation",
                "summary_last_dropout",
                "summary_proj_to_labels",
                "summary_first_dropout",
            )
        },
    },
    refused=_BERT_REFUSED,
    base_class="ElectraModel",
    classes=_heads(
        "Electra",
        "Model",
        "ForPreTraining",
        "ForMaskedLM",
        "ForCausalLM",
        "ForSequenceClassification",
        "ForTokenClassification",
        "ForQuestionAnswering",
    ),
    unsupported_classes={"ElectraForMultipleChoice": _MULTIPLE_CHOICE},
)

HF_DISTILBERT = HFTable(
    model_type="distilbert",
    config_class="DistilBertConfig",
    defaults=dict(
        vocab_size=30522,
        max_position_embeddings=512,
        sinusoidal_pos_embds=False,
        n_layers=6,
        n_heads=12,
        dim=768,
        hidden_dim=3072,
        dropout=0.1,
        attention_dropout=0.1,
        activation="gelu",
        initializer_range=0.02,
        qa_dropout=0.1,
        seq_classif_dropout=0.2,
        pad_token_id=0,
        eos_token_id=None,
        bos_token_id=None,
        tie_word_embeddings=True,
    ),
    aliases={"hidden_size": "dim", "num_attention_heads": "n_heads", "num_hidden_layers": "n_layers"},
    read={
        "vocab_size": "vocab_size",
        "max_position_embeddings": "max_positions",
        "n_layers": "n_layers",
        "n_heads": "n_heads",
        "dim": "d_model",
        "hidden_dim": "d_ff",
        "activation": "activation",
        "tie_word_embeddings": "tie_embeddings",
        "num_labels": "num_labels",
    },
    ignored={
        "sinusoidal_pos_embds": "the position table is an nn.Embedding either way (sinusoids only initialise it), "
        "so its parameters count the same",
        "dropout": DROPOUT,
        "attention_dropout": DROPOUT,
        "qa_dropout": DROPOUT,
        "seq_classif_dropout": DROPOUT,
        "initializer_range": INITIALISATION,
        "pad_token_id": TOKEN_ID,
        "eos_token_id": TOKEN_ID,
        "bos_token_id": TOKEN_ID,
        "tie_weights_": NOT_READ,
    },
    refused={},
    base_class="DistilBertModel",
    classes=_heads(
        "DistilBert",
        "Model",
        "ForMaskedLM",
        "ForSequenceClassification",
        "ForTokenClassification",
        "ForQuestionAnswering",
    ),
    unsupported_classes={"DistilBertForMultipleChoice": _MULTIPLE_CHOICE},
)

HF_ALBERT = HFTable(
    model_type="albert",
    config_class="AlbertConfig",
    defaults=dict(
        vocab_size=30000,
        embedding_size=128,
        hidden_size=4096,
        num_hidden_layers=12,
        num_hidden_groups=1,
        num_attention_heads=64,
        intermediate_size=16384,
        inner_group_num=1,
        hidden_act="gelu_new",
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
        max_position_embeddings=512,
        type_vocab_size=2,
        initializer_range=0.02,
        layer_norm_eps=1e-12,
        classifier_dropout_prob=0.1,
        pad_token_id=0,
        bos_token_id=2,
        eos_token_id=3,
        tie_word_embeddings=True,
    ),
    aliases={},
    read={**{k: v for k, v in _BERT_READ.items() if k != "is_decoder"}, "embedding_size": "embedding_size"},
    ignored={
        "hidden_dropout_prob": DROPOUT,
        "attention_probs_dropout_prob": DROPOUT,
        "classifier_dropout_prob": DROPOUT,
        "initializer_range": INITIALISATION,
        "layer_norm_eps": NORM_EPSILON,
        "pad_token_id": TOKEN_ID,
        "bos_token_id": TOKEN_ID,
        "eos_token_id": TOKEN_ID,
        "position_embedding_type": _LEGACY_POSITIONS,
        **{key: NOT_READ for key in ("down_scale_factor", "gap_size", "net_structure_type", "num_memory_blocks")},
    },
    refused={
        "num_hidden_groups": (
            (1,),
            "more than one group of shared layers is not modelled by the bert plugin "
            "(its ALBERT shares one set of weights across all layers)",
        ),
        "inner_group_num": (
            (1,),
            "several distinct layers inside a shared group are not modelled by the bert "
            "plugin (its ALBERT shares one layer)",
        ),
    },
    base_class="AlbertModel",
    classes=_heads(
        "Albert",
        "Model",
        "ForPreTraining",
        "ForMaskedLM",
        "ForSequenceClassification",
        "ForTokenClassification",
        "ForQuestionAnswering",
    ),
    unsupported_classes={"AlbertForMultipleChoice": _MULTIPLE_CHOICE},
)


def _segments(hf: dict[str, Any]) -> int:
    value = hf["type_vocab_size"]
    if type(value) is int and value == 0:
        raise ValueError(
            "type_vocab_size: 0 builds an empty segment table that the forward pass cannot index "
            "(transformers looks up segment 0); give at least 1"
        )
    return value


@hf_reader(HF_BERT)
def _from_bert(hf: dict[str, Any], model_class: str = "BertModel") -> dict[str, Any]:
    return dict(
        vocab_size=hf["vocab_size"],
        d_model=hf["hidden_size"],
        n_layers=hf["num_hidden_layers"],
        n_heads=hf["num_attention_heads"],
        d_ff=hf["intermediate_size"],
        max_positions=hf["max_position_embeddings"],
        type_vocab_size=_segments(hf),
        activation=hf["hidden_act"],
        tie_embeddings=hf["tie_word_embeddings"],
        num_labels=hf["num_labels"],
        causal=hf.get("is_decoder", False),  # ALBERT does not read it
    )


@hf_reader(HF_ROBERTA)
def _from_roberta(hf: dict[str, Any], model_class: str = "RobertaModel") -> dict[str, Any]:
    return {**_from_bert(hf, model_class), "classifier_dense": True, "position_offset": _position_offset(hf)}


def _position_offset(hf: dict[str, Any]) -> Any:
    """RoBERTa's first position, pad_token_id + 1: its position ids count from just after the padding index
    (create_position_ids_from_input_ids), so the table's first pad_token_id + 1 rows are never read by a token."""
    pad = hf["pad_token_id"]
    if pad is None:
        raise ValueError(
            "pad_token_id: null, but RoBERTa's positions start after the padding index (pad_token_id + 1), which "
            "transformers cannot compute without one; give the padding token's id (1 in RoBERTa's files)"
        )
    if not isinstance(pad, int) or isinstance(pad, bool):
        return pad  # the configuration model names the key and the type it expects
    if pad < 0:
        raise ValueError(
            f"pad_token_id: {pad} makes RoBERTa's position ids start at {pad + 1} and count up from there, so a "
            "token reads a position before the table; give a padding token id of 0 or more"
        )
    return pad + 1


@hf_reader(HF_XLM_ROBERTA)
def _from_xlm_roberta(hf: dict[str, Any], model_class: str = "XLMRobertaModel") -> dict[str, Any]:
    return {**_from_roberta(hf, model_class), "family": "xlm-roberta"}


@hf_reader(HF_XLM_ROBERTA_XL)
def _from_xlm_roberta_xl(hf: dict[str, Any], model_class: str = "XLMRobertaXLModel") -> dict[str, Any]:
    return {**_from_roberta(hf, model_class), "family": "xlm-roberta-xl"}


@hf_reader(HF_ELECTRA)
def _from_electra(hf: dict[str, Any], model_class: str = "ElectraModel") -> dict[str, Any]:
    # embedding_size equal to hidden_size builds no embeddings_project: the configuration model drops it then
    if hf["embedding_size"] is None:  # ALBERT's and BERT's null means "d_model"; ElectraConfig refuses it
        raise ValueError(
            "embedding_size: null, but ElectraConfig requires an integer (transformers will not load the file); "
            "give the embedding width (the hidden size, when the embeddings are not factorised)"
        )
    return {
        **_from_bert(hf, model_class),
        "embedding_size": hf["embedding_size"],
        "family": "electra",
        "classifier_dense": True,
    }


@hf_reader(HF_DISTILBERT)
def _from_distilbert(hf: dict[str, Any], model_class: str = "DistilBertModel") -> dict[str, Any]:
    return dict(
        vocab_size=hf["vocab_size"],
        d_model=hf["dim"],
        n_layers=hf["n_layers"],
        n_heads=hf["n_heads"],
        d_ff=hf["hidden_dim"],
        max_positions=hf["max_position_embeddings"],
        type_vocab_size=0,
        activation=hf["activation"],
        tie_embeddings=hf["tie_word_embeddings"],
        num_labels=hf["num_labels"],
        classifier_dense=True,
    )


@hf_reader(HF_ALBERT)
def _from_albert(hf: dict[str, Any], model_class: str = "AlbertModel") -> dict[str, Any]:
    return {**_from_bert(hf, model_class), "embedding_size": hf["embedding_size"], "shared_layers": True}


ARCHITECTURE = Architecture(
    name="bert",
    title="BERT",
    summary="Bidirectional Transformer encoder with learned positions, segment embeddings and a pooler; "
    "covers RoBERTa, XLM-RoBERTa (and its pre-LN XL), DistilBERT, ALBERT and ELECTRA.",
    citation="Devlin, Chang, Lee, Toutanova. BERT: Pre-training of Deep Bidirectional Transformers for "
    "Language Understanding. NAACL 2019. arXiv:1810.04805",
    config_model=BertConfig,
    build=build,
    seq_len=lambda cfg: cfg.max_positions - cfg.position_offset,
    seq_len_note=lambda cfg: (
        "the model's context length"
        + (f": positions start at {cfg.position_offset}, after the padding index" if cfg.position_offset else "")
    ),
    max_seq_len=lambda cfg: cfg.max_positions - cfg.position_offset,
    reference=reference,
)


@hookimpl
def register_architectures(register: Callable[[Architecture], None]) -> None:
    register(ARCHITECTURE)


@hookimpl
def register_hf_readers(register: Callable[..., None]) -> None:
    register("bert", _from_bert)
    register("roberta", _from_roberta)
    register("distilbert", _from_distilbert)
    register("albert", _from_albert)
    register("xlm-roberta", _from_xlm_roberta)
    register("xlm-roberta-xl", _from_xlm_roberta_xl)
    register("electra", _from_electra)
