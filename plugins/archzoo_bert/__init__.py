"""archzoo plugin: BERT-style encoders (BERT, RoBERTa, DistilBERT, ALBERT), as Hugging Face builds them."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, PositiveInt, model_validator

from archzoo import ArchConfig, Architecture, Reference, hookimpl
from archzoo.architecture import check_activation, check_heads
from archzoo.blocks import (
    attention,
    composite,
    embedding,
    feed_forward,
    layer_norm,
    linear,
    repeat,
)
from archzoo.formula import const
from archzoo.symbols import symbol

__version__ = "0.1.0"


class BertConfig(ArchConfig):
    """BERT and its siblings; defaults are BERT-base (Devlin et al. 2019)."""

    vocab_size: PositiveInt = Field(30522, description="WordPiece vocabulary size")
    d_model: PositiveInt = Field(768, description="hidden width H")
    n_layers: PositiveInt = Field(12, description="encoder layers L")
    n_heads: PositiveInt = Field(12, description="attention heads A; must divide d_model")
    d_ff: PositiveInt = Field(3072, description="feed-forward width (4H in BERT)")
    max_positions: PositiveInt = Field(512, description="learned position embeddings")
    type_vocab_size: int = Field(2, ge=0, description="segment (token type) embeddings; 0 = none (DistilBERT)")
    pooler: bool | None = Field(
        None,
        description="dense + tanh pooler on the first token; null = as transformers builds it: "
        "yes, except for head mlm and for type_vocab_size 0 (DistilBERT)",
    )
    head: Literal["none", "mlm", "pretraining"] = Field(
        "none", description="none (BertModel), mlm (BertForMaskedLM) or pretraining (BertForPreTraining)"
    )
    activation: str = Field("gelu", description="feed-forward activation")
    embedding_size: PositiveInt | None = Field(
        None, description="ALBERT's factorised embedding width E (null = d_model, no factorisation)"
    )
    shared_layers: bool = Field(False, description="ALBERT: all layers share one set of weights")

    @model_validator(mode="before")
    @classmethod
    def _default_pooler(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("pooler") is None:
            head, type_vocab = data.get("head", "none"), data.get("type_vocab_size", 2)
            data = {**data, "pooler": head != "mlm" and type_vocab != 0}
        return data

    @model_validator(mode="after")
    def _check(self) -> "BertConfig":
        check_heads(self.d_model, self.n_heads)
        check_activation(self.activation)
        if self.head == "pretraining" and not self.pooler:
            raise ValueError("head: 'pretraining' needs the pooler (its next-sentence head reads the pooled output); set pooler: true")
        return self


def build(cfg: BertConfig):
    d = symbol("d", cfg.d_model)
    V = symbol("V", cfg.vocab_size)
    P = symbol("P", cfg.max_positions)
    L = symbol("L", cfg.n_layers)
    d_ff = symbol("d_ff", cfg.d_ff)
    factorised = cfg.embedding_size is not None
    E = symbol("E", cfg.embedding_size) if factorised else d

    parts = [
        embedding("token", V, E, role="token", description="word embeddings"),
        embedding("position", P, E, role="position", description="learned position embeddings"),
    ]
    if cfg.type_vocab_size:
        parts.append(embedding("segment", symbol("T", cfg.type_vocab_size), E, description="token type embeddings"))
    parts.append(layer_norm("norm", E))
    embeddings = composite("embeddings", "embeddings", parts, "token + position + segment, then LayerNorm")
    children = [embeddings]
    if factorised:
        children.append(linear("embedding_projection", E, d, description="projects E-wide embeddings to d"))

    layer = composite(
        "layer",
        "encoder_layer",
        [
            attention("attention", d, d),
            layer_norm("attention_norm", d),
            feed_forward("feed_forward", d, d_ff, activation=cfg.activation),
            layer_norm("output_norm", d),
        ],
        "post-LN encoder layer: attention, add & norm, feed-forward, add & norm",
    )
    children.append(repeat(layer, L, name="layers", shared=cfg.shared_layers))
    if cfg.pooler:
        children.append(linear("pooler", d, d, tokens=const(1), description="dense + tanh on the first token"))
    if cfg.head in ("mlm", "pretraining"):
        children.append(
            composite(
                "mlm_head",
                "head",
                [
                    linear("transform", d, E, description="dense + activation before the decoder"),
                    layer_norm("transform_norm", E),
                    linear("decoder", E, V, tied_to="embeddings.token", description="vocabulary logits, weight tied to the token embedding"),
                ],
                "masked-language-model head",
            )
        )
    if cfg.head == "pretraining":
        children.append(linear("nsp_head", d, const(2), tokens=const(1), description="next-sentence classifier on the pooled output"))
    return composite("bert", "model", children, "BERT encoder")


def reference(cfg: BertConfig) -> Reference | None:
    if cfg.embedding_size is not None or cfg.shared_layers:
        if not (cfg.embedding_size is not None and cfg.shared_layers):
            return None
        kwargs: dict[str, Any] = dict(
            vocab_size=cfg.vocab_size, embedding_size=cfg.embedding_size, hidden_size=cfg.d_model,
            num_hidden_layers=cfg.n_layers, num_attention_heads=cfg.n_heads, intermediate_size=cfg.d_ff,
            max_position_embeddings=cfg.max_positions, type_vocab_size=cfg.type_vocab_size,
            hidden_act=cfg.activation,
        )
        if cfg.type_vocab_size == 0:
            return None
        albert = dict(library="transformers", config_class="transformers.AlbertConfig", kwargs=kwargs)
        if cfg.head == "none":
            return Reference(target="transformers.AlbertModel", model_kwargs={"add_pooling_layer": cfg.pooler}, **albert)
        if cfg.head == "mlm":  # AlbertForMaskedLM builds its encoder without the pooler
            return None if cfg.pooler else Reference(target="transformers.AlbertForMaskedLM", **albert)
        # sentence-order prediction: a Linear(d, 2) on the pooled output, like BERT's next-sentence head
        return Reference(target="transformers.AlbertForPreTraining", **albert)
    kwargs = dict(
        vocab_size=cfg.vocab_size, hidden_size=cfg.d_model, num_hidden_layers=cfg.n_layers,
        num_attention_heads=cfg.n_heads, intermediate_size=cfg.d_ff, max_position_embeddings=cfg.max_positions,
        hidden_act=cfg.activation,
    )
    if cfg.type_vocab_size == 0:
        if cfg.pooler or cfg.head == "pretraining":
            return None
        target = {"none": "DistilBertModel", "mlm": "DistilBertForMaskedLM"}[cfg.head]
        return Reference(
            library="transformers", target=f"transformers.{target}", config_class="transformers.DistilBertConfig",
            kwargs=dict(vocab_size=cfg.vocab_size, dim=cfg.d_model, n_layers=cfg.n_layers, n_heads=cfg.n_heads,
                        hidden_dim=cfg.d_ff, max_position_embeddings=cfg.max_positions, activation=cfg.activation),
        )
    kwargs["type_vocab_size"] = cfg.type_vocab_size
    if cfg.head == "none":
        return Reference(library="transformers", target="transformers.BertModel", config_class="transformers.BertConfig",
                         kwargs=kwargs, model_kwargs={"add_pooling_layer": cfg.pooler})
    if cfg.head == "mlm":
        if cfg.pooler:
            return None  # BertForMaskedLM drops the pooler
        return Reference(library="transformers", target="transformers.BertForMaskedLM",
                         config_class="transformers.BertConfig", kwargs=kwargs)
    return Reference(library="transformers", target="transformers.BertForPreTraining",
                     config_class="transformers.BertConfig", kwargs=kwargs)


# ---- Hugging Face config.json readers; a missing key takes transformers' default for that type -----


def _from_bert(hf: dict[str, Any]) -> dict[str, Any]:
    return dict(
        vocab_size=hf.get("vocab_size", 30522), d_model=hf.get("hidden_size", 768),
        n_layers=hf.get("num_hidden_layers", 12), n_heads=hf.get("num_attention_heads", 12),
        d_ff=hf.get("intermediate_size", 3072), max_positions=hf.get("max_position_embeddings", 512),
        type_vocab_size=hf.get("type_vocab_size", 2), activation=hf.get("hidden_act", "gelu"), pooler=True,
    )


def _from_roberta(hf: dict[str, Any]) -> dict[str, Any]:
    return _from_bert({"vocab_size": 50265, **hf})


def _from_distilbert(hf: dict[str, Any]) -> dict[str, Any]:
    return dict(
        vocab_size=hf.get("vocab_size", 30522), d_model=hf.get("dim", 768), n_layers=hf.get("n_layers", 6),
        n_heads=hf.get("n_heads", 12), d_ff=hf.get("hidden_dim", 3072),
        max_positions=hf.get("max_position_embeddings", 512), type_vocab_size=0, pooler=False,
        activation=hf.get("activation", "gelu"),
    )


def _from_albert(hf: dict[str, Any]) -> dict[str, Any]:
    for key in ("num_hidden_groups", "inner_group_num"):
        if hf.get(key, 1) != 1:
            raise ValueError(f"{key}: only 1 is supported (one shared layer group), got {hf[key]}")
    return dict(
        vocab_size=hf.get("vocab_size", 30000), embedding_size=hf.get("embedding_size", 128),
        d_model=hf.get("hidden_size", 4096), n_layers=hf.get("num_hidden_layers", 12),
        n_heads=hf.get("num_attention_heads", 64), d_ff=hf.get("intermediate_size", 16384),
        max_positions=hf.get("max_position_embeddings", 512), type_vocab_size=hf.get("type_vocab_size", 2),
        activation=hf.get("hidden_act", "gelu_new"), pooler=True, shared_layers=True,
    )


ARCHITECTURE = Architecture(
    name="bert",
    title="BERT",
    summary="Bidirectional Transformer encoder with learned positions, segment embeddings and a pooler; "
    "covers RoBERTa, DistilBERT and ALBERT.",
    citation="Devlin, Chang, Lee, Toutanova. BERT: Pre-training of Deep Bidirectional Transformers for "
    "Language Understanding. NAACL 2019. arXiv:1810.04805",
    config_model=BertConfig,
    build=build,
    seq_len=lambda cfg: cfg.max_positions,
    max_seq_len=lambda cfg: cfg.max_positions,
    reference=reference,
    hf_model_types={"bert": _from_bert, "roberta": _from_roberta, "distilbert": _from_distilbert, "albert": _from_albert},
)


@hookimpl
def register_architectures(register):
    register(ARCHITECTURE)
