"""archzoo plugin: T5 (Raffel et al. 2020) and T5 v1.1, as transformers 5.23 builds them.

An encoder and a decoder stack of pre-norm layers with RMS norms (T5LayerNorm: a weight, no bias), no bias
anywhere, one token embedding shared by both stacks, attention heads ``d_kv`` wide whatever d_model is
(inner width ``h d_h``), and relative position biases: one ``Embedding(buckets, heads)`` in the first
layer's self-attention of each stack, whose output every layer of that stack reuses (the decoder's
cross-attention has none). The feed-forward is ReLU (T5) or gated GELU (T5 v1.1: ``wi_0``, ``wi_1``, ``wo``).

The LM head. transformers 5.23's T5Config forces ``tie_word_embeddings`` to true (keeping a false one only
as ``scale_decoder_outputs``), so ``T5ForConditionalGeneration(config)`` always ties its head to the shared
embedding; ``from_pretrained`` keeps the head separate when the checkpoint holds its own
``lm_head.weight`` that differs from the embedding, as every T5 v1.1 checkpoint does. archzoo's
``tie_embeddings: false`` counts that untied model.

The references are transformers' classes through thin subclasses defined here (`REFERENCE_CLASSES`, made on
first access, so importing this plugin stays torch-free): each registers its stacks' relative position bias
on the stack as well, so that ``archzoo verify`` finds every layer alike, and unties the head where asked.

FLOPs: the relative position bias is an embedding lookup added to the scores, so it costs no matmul FLOPs
(FlopCounterMode counts none), and T5 does not scale its scores.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Literal

from pydantic import Field, PositiveInt, model_validator

from archzoo import ArchConfig, Architecture, Reference
from archzoo.architecture import check_activation
from archzoo.blocks import (
    Block,
    attention,
    composite,
    embedding,
    feed_forward,
    linear,
    lm_head,
    repeat,
    rms_norm,
    seq2seq_decoder,
    seq2seq_encoder,
    with_modules,
)
from archzoo.formula import Poly
from archzoo.hf_config import DROPOUT, INITIALISATION, NORM_EPSILON, NOT_READ, TOKEN_ID, USE_CACHE, HFTable, hf_reader
from archzoo.plugin_parts import LABELS, NumLabels, architectures_hook, hf_readers_hook, num_labels_field
from archzoo.seq2seq_parts import (
    eos_classification_head,
    eos_classification_modules,
    source_target_note,
    stack_modules,
    without_cache,
)
from archzoo.symbols import declare_symbol, symbol

from .activation import register_activation_memory as register_activation_memory

__version__ = "0.1.0"

#: relative position buckets: the rows of each stack's relative position bias
BUCKETS = declare_symbol("B", latex="B", meaning="relative position buckets (relative_attention_num_buckets)", order=12)


class T5Config(ArchConfig):
    """T5's hyper-parameters; defaults are T5-Small as transformers' T5Config gives it (google-t5/t5-small)."""

    vocab_size: PositiveInt = Field(32128, description="vocabulary size (rows of the shared token embedding)")
    d_model: PositiveInt = Field(512, description="model width")
    d_kv: PositiveInt = Field(64, description="width of one attention head, independent of d_model")
    n_heads: PositiveInt = Field(8, description="attention heads (the attention is n_heads * d_kv wide)")
    d_ff: PositiveInt = Field(2048, description="hidden width of the feed-forward (of each input projection if gated)")
    n_layers: PositiveInt = Field(6, description="encoder layers")
    n_decoder_layers: PositiveInt | None = Field(None, description="decoder layers (null = n_layers)")
    relative_attention_num_buckets: PositiveInt = Field(
        32, description="relative position buckets: rows of the position bias in each stack's first layer"
    )
    activation: str = Field("relu", description="feed-forward activation: relu (T5), gelu_new (T5 v1.1, gated)")
    gated: bool = Field(False, description="gated feed-forward, two input projections wi_0 and wi_1 (T5 v1.1)")
    tie_embeddings: bool = Field(
        True,
        description="LM head shares the token embedding (T5); false: a head of its own, as the T5 v1.1 "
        "checkpoints hold it and from_pretrained loads it",
    )
    head: Literal["lm", "none", "sequence_classification", "token_classification", "question_answering"] = Field(
        "lm",
        description="lm (T5ForConditionalGeneration), none (T5Model, or T5EncoderModel without decoder), "
        "sequence_classification (T5ForSequenceClassification: dense + tanh + out_proj on the last "
        "end-of-sequence token's decoder output), token_classification (T5ForTokenClassification: the encoder "
        "alone and a classifier per token) or question_answering (T5ForQuestionAnswering: Linear(d_model, 2) on "
        "every decoder token)",
    )
    num_labels: NumLabels = num_labels_field(
        "outputs of the classification heads (transformers' num_labels); question_answering needs 2"
    )
    decoder: bool = Field(
        True,
        description="false: the encoder stack alone (T5EncoderModel with head none, T5ForTokenClassification)",
    )

    @model_validator(mode="after")
    def _check(self) -> T5Config:
        check_activation(self.activation)
        if not self.decoder and self.head == "lm":
            raise ValueError(
                "head: an LM head reads the decoder's output, and decoder is false (T5EncoderModel); "
                "set head to none, or decoder to true"
            )
        decoder_heads = ("sequence_classification", "question_answering")
        if (self.head == "token_classification" and self.decoder) or (self.head in decoder_heads and not self.decoder):
            raise ValueError(
                f"head: {self.head!r} "
                + (
                    "is T5ForTokenClassification, the encoder alone; set decoder to false"
                    if self.decoder
                    else "reads the decoder's output, and decoder is false; set decoder to true"
                )
            )
        if self.head == "question_answering" and self.num_labels != 2:
            # T5ForQuestionAnswering builds Linear(d_model, num_labels) and splits its output into two
            raise ValueError(
                f"num_labels: head 'question_answering' gives an answer's start and end logits, so it needs 2 "
                f"labels (transformers' forward pass splits the logits into two), got {self.num_labels}"
            )
        if not self.decoder and self.n_decoder_layers is not None:
            raise ValueError(
                "n_decoder_layers: decoder is false (T5EncoderModel), so there are no decoder layers to count; "
                "leave n_decoder_layers out, or set decoder to true"
            )
        return self


def _stack(cfg: T5Config, name: str, layers: Poly, d: Poly, inner: Poly, decoder: bool) -> Block:
    d_ff = symbol("d_ff", cfg.d_ff)
    B = BUCKETS(cfg.relative_attention_num_buckets)
    h = symbol("h", cfg.n_heads)
    kind = f"{cfg.activation}-gated" if cfg.gated else cfg.activation
    mlp = feed_forward(
        "mlp",
        d,
        d_ff,
        activation=cfg.activation,
        gated=cfg.gated,
        bias=False,
        description=f"feed-forward ({kind}): "
        + ("wi_0 (activated), wi_1 (linear), their product, wo" if cfg.gated else "wi, activation, wo"),
    )
    d_h = symbol("d_h", cfg.d_kv)
    self_attention = attention(
        "self_attention",
        d,
        inner,
        bias=False,
        causal=decoder,
        heads=h,
        d_head=d_h,
        description=("causal self-attention" if decoder else "self-attention")
        + " with the stack's relative position bias added to the unscaled scores",
    )
    if decoder:
        children = [
            rms_norm("self_attention_norm", d),
            self_attention,
            rms_norm("cross_attention_norm", d),
            attention(
                "cross_attention",
                d,
                inner,
                bias=False,
                cross=True,
                heads=h,
                d_head=d_h,
                description="cross-attention to the encoder's output (no position bias)",
            ),
            rms_norm("mlp_norm", d),
            mlp,
        ]
        shown = "pre-norm decoder layer: RMSNorm, self-attention, add; RMSNorm, cross-attention, add; RMSNorm, feed-forward, add"
    else:
        children = [rms_norm("self_attention_norm", d), self_attention, rms_norm("mlp_norm", d), mlp]
        shown = "pre-norm encoder layer: RMSNorm, self-attention, add; RMSNorm, feed-forward, add"
    layer = composite("layer", "decoder_layer" if decoder else "encoder_layer", children, shown)
    return composite(
        name,
        "stack",
        [
            embedding(
                "relative_attention_bias",
                B,
                h,
                role="position",
                description=f"Embedding({B}, {h}): one bias per head and relative-position bucket, in the "
                "first layer's self-attention and reused by every layer of the stack",
            ),
            repeat(layer, layers, name="layers"),
            rms_norm("final_norm", d),
        ],
        f"{name} stack: its layers and a final RMSNorm",
    )


def build(cfg: T5Config) -> Block:
    d = symbol("d", cfg.d_model)
    V = symbol("V", cfg.vocab_size)
    inner = symbol("h", cfg.n_heads) * symbol("d_h", cfg.d_kv)
    children = [
        embedding("token", V, d, role="token", description="token embeddings, shared by the encoder and the decoder"),
        _stack(cfg, "encoder", symbol("L_e", cfg.n_layers), d, inner, decoder=False),
    ]
    if cfg.decoder:  # generation: the encoder runs in prefill only, the decoder once per token
        L_d = symbol("L_d", cfg.n_decoder_layers or cfg.n_layers)
        children[1] = seq2seq_encoder(children[1])
        children.append(seq2seq_decoder(_stack(cfg, "decoder", L_d, d, inner, decoder=True)))
    if cfg.head == "lm":
        head = lm_head(d, V, tied_to="token" if cfg.tie_embeddings else "")
        scaled = " (decoder output scaled by d^-1/2)" if cfg.tie_embeddings else ""
        children.append(replace(head, description=head.description + scaled))
    K = LABELS(cfg.num_labels)
    if cfg.head == "sequence_classification":
        children.append(eos_classification_head(d, K))
    if cfg.head == "token_classification":
        children.append(linear("classifier", d, K, description="a label's scores per token"))
    if cfg.head == "question_answering":
        children.append(linear("qa_outputs", d, K, description="answer start and end logits per decoder token"))
    title = "T5 encoder" if not cfg.decoder else "T5 encoder-decoder"
    root = composite("t5", "model", children, title)
    if cfg.head in ("sequence_classification", "question_answering"):
        # sequence classification indexes the decoder output at the input's end-of-sequence tokens, and question
        # answering passes no cache to its decoder: neither runs generation's cached calls
        root = without_cache(root)
    return with_modules(root, reference_modules(cfg))


def reference_modules(cfg: T5Config) -> dict[str, tuple[str, ...]]:
    """Where each block's parameters live in the class `reference` builds (for `archzoo verify`): block path ->
    submodule names, inside a layer relative to the layer.

    transformers keeps each stack's relative position bias in its first layer's self-attention, which would
    make layer 0 unlike the others; the reference classes here also register it on the stack, ahead of the
    layers, so that PyTorch reports it there (``encoder.relative_attention_bias``) and every layer holds alike.
    """
    gated = cfg.gated
    mlp = {
        "mlp.fc_in": ("wi_1",) if gated else ("wi",),  # wi_1 is the linear input, wi_0 the activated one
        "mlp.fc_out": ("wo",),
        **({"mlp.fc_gate": ("wi_0",)} if gated else {}),
    }
    # the classification classes hold T5Model / T5EncoderModel as `transformer`
    base = "transformer." if cfg.head in ("sequence_classification", "token_classification") else ""
    table: dict[str, tuple[str, ...]] = {
        "t5": ("",),
        "t5.token": (f"{base}shared",),
        "t5.lm_head": ("lm_head",),
        **eos_classification_modules("t5"),
        "t5.classifier": ("classifier",),
        "t5.qa_outputs": ("qa_outputs",),
    }
    stacks = [("encoder", 1)] + ([("decoder", 2)] if cfg.decoder else [])
    for stack, ff in stacks:
        layer: dict[str, tuple[str, ...]] = {
            "self_attention_norm": ("layer.0.layer_norm",),
            "self_attention": ("layer.0.SelfAttention",),
            **{f"self_attention.{p}_proj": (f"layer.0.SelfAttention.{p}",) for p in "qkv"},
            "self_attention.out_proj": ("layer.0.SelfAttention.o",),
            "mlp_norm": (f"layer.{ff}.layer_norm",),
            "mlp": (f"layer.{ff}.DenseReluDense",),
            **{k: tuple(f"layer.{ff}.DenseReluDense.{m}" for m in v) for k, v in mlp.items()},
        }
        if stack == "decoder":
            layer |= {
                "cross_attention_norm": ("layer.1.layer_norm",),
                "cross_attention": ("layer.1.EncDecAttention",),
                **{f"cross_attention.{p}_proj": (f"layer.1.EncDecAttention.{p}",) for p in "qkv"},
                "cross_attention.out_proj": ("layer.1.EncDecAttention.o",),
            }
        table |= stack_modules(
            f"t5.{stack}",
            f"{base}{stack}",
            layers="block",
            parts={"relative_attention_bias": "relative_attention_bias", "final_norm": "final_layer_norm"},
            layer=layer,
        )
    return table


def _feed_forward_proj(cfg: T5Config) -> str:
    """transformers' feed_forward_proj for the activation (its "gated-gelu" means gelu_new, gated)."""
    if cfg.gated:
        return "gated-gelu" if cfg.activation == "gelu_new" else f"gated-{cfg.activation}"
    return cfg.activation


def transformers_kwargs(cfg: T5Config) -> dict[str, Any]:
    """transformers' T5Config keyword arguments for the configuration (tie_word_embeddings: false unties the
    head in the reference classes, as from_pretrained does for a checkpoint holding its own lm_head.weight)."""
    kwargs: dict[str, Any] = dict(
        vocab_size=cfg.vocab_size,
        d_model=cfg.d_model,
        d_kv=cfg.d_kv,
        d_ff=cfg.d_ff,
        num_layers=cfg.n_layers,
        num_heads=cfg.n_heads,
        relative_attention_num_buckets=cfg.relative_attention_num_buckets,
        feed_forward_proj=_feed_forward_proj(cfg),
    )
    if cfg.decoder:
        kwargs["num_decoder_layers"] = cfg.n_decoder_layers or cfg.n_layers
    if cfg.head == "lm" and not cfg.tie_embeddings:
        kwargs["tie_word_embeddings"] = False
    if cfg.head in ("sequence_classification", "token_classification", "question_answering"):
        kwargs["num_labels"] = cfg.num_labels
    if cfg.head == "sequence_classification":
        kwargs["eos_token_id"] = 0  # so that the all-zero input ends with an end-of-sequence token, as any does
    return kwargs


#: the transformers class each reference class extends
REFERENCE_CLASSES = {
    "ReferenceT5Model": "T5Model",
    "ReferenceT5ForConditionalGeneration": "T5ForConditionalGeneration",
    "ReferenceT5EncoderModel": "T5EncoderModel",
    "ReferenceT5ForSequenceClassification": "T5ForSequenceClassification",
    "ReferenceT5ForTokenClassification": "T5ForTokenClassification",
    "ReferenceT5ForQuestionAnswering": "T5ForQuestionAnswering",
}
#: archzoo's head (with a decoder) -> transformers' class
_HEAD_CLASSES = {
    "lm": "T5ForConditionalGeneration",
    "none": "T5Model",
    "sequence_classification": "T5ForSequenceClassification",
    "question_answering": "T5ForQuestionAnswering",
}


def reference(cfg: T5Config) -> Reference:
    """transformers' T5 class for the head, through the reference class that registers each stack's position
    bias on the stack (and keeps an untied head untied). Sequence classification reads the decoder output at
    the input's end-of-sequence tokens, a data-dependent index the meta device cannot take: it is measured on
    the CPU, with end-of-sequence token 0, so that the all-zero input ends with one."""
    if cfg.decoder:
        base = _HEAD_CLASSES[cfg.head]
    else:
        base = "T5ForTokenClassification" if cfg.head == "token_classification" else "T5EncoderModel"
    untied = cfg.head == "lm" and not cfg.tie_embeddings
    return Reference(
        **({"device": "cpu"} if cfg.head == "sequence_classification" else {}),
        library="archzoo",
        target=f"{__name__}.Reference{base}",
        kwargs=transformers_kwargs(cfg),
        inputs="encoder_decoder_token_ids" if cfg.decoder else "token_ids",
        note=f"transformers' {base} built from T5Config(**kwargs), each stack's relative position bias also "
        "registered on the stack, where every layer shares it"
        + (", and an LM head of its own, as from_pretrained loads a T5 v1.1 checkpoint" if untied else ""),
    )


# ---- Hugging Face config.json: T5Config's keys, as transformers 5.23 defines them ----------------------

HF_T5 = HFTable(
    model_type="t5",
    config_class="T5Config",
    defaults=dict(
        vocab_size=32128,
        d_model=512,
        d_kv=64,
        d_ff=2048,
        num_layers=6,
        num_decoder_layers=None,
        num_heads=8,
        relative_attention_num_buckets=32,
        relative_attention_max_distance=128,
        dropout_rate=0.1,
        layer_norm_epsilon=1e-6,
        initializer_factor=1.0,
        feed_forward_proj="relu",
        use_cache=True,
        pad_token_id=0,
        eos_token_id=1,
        classifier_dropout=0.0,
        is_decoder=False,
    ),
    aliases={
        "hidden_size": "d_model",
        "num_attention_heads": "num_heads",
        "num_hidden_layers": "num_layers",
        "head_dim": "d_kv",
    },
    read={
        "vocab_size": "vocab_size",
        "d_model": "d_model",
        "d_kv": "d_kv",
        "d_ff": "d_ff",
        "num_layers": "n_layers",
        "num_decoder_layers": "n_decoder_layers",
        "num_heads": "n_heads",
        "relative_attention_num_buckets": "relative_attention_num_buckets",
        "feed_forward_proj": "activation, gated",
        # transformers 5.23 writes these two beside feed_forward_proj, and applies them after it
        "dense_act_fn": "activation",
        "is_gated_act": "gated",
        "tie_word_embeddings": "tie_embeddings",
        "num_labels": "num_labels",
        # read only to refuse a file that does not say whether the LM head is tied (see _tie_embeddings)
        "scale_decoder_outputs": "(checked: the LM head's tie is known)",
        "is_decoder": "(checked: false for T5EncoderModel, whose stack would grow unused cross-attention)",
        # a PretrainedConfig field whose default T5Config makes true
        "is_encoder_decoder": "(checked: true for T5Model and T5ForConditionalGeneration)",
    },
    ignored={
        "relative_attention_max_distance": "the distance beyond which relative positions share a bucket: which "
        "bucket a pair of positions falls in, not how many buckets there are",
        "dropout_rate": DROPOUT,
        "classifier_dropout": DROPOUT,
        "layer_norm_epsilon": NORM_EPSILON.replace("LayerNorm", "T5LayerNorm (RMS norm)"),
        "initializer_factor": INITIALISATION,
        "use_cache": USE_CACHE,
        "pad_token_id": TOKEN_ID,
        "eos_token_id": TOKEN_ID,
        "n_positions": NOT_READ + "; T5 has relative positions, no position table",
    },
    refused={},
    base_class="T5Model",
    classes={
        "T5Model": {"head": "none"},
        "T5ForConditionalGeneration": {"head": "lm"},
        "T5EncoderModel": {"head": "none", "decoder": False},
        "T5ForSequenceClassification": {"head": "sequence_classification"},
        "T5ForTokenClassification": {"head": "token_classification", "decoder": False},
        "T5ForQuestionAnswering": {"head": "question_answering"},
    },
)


def _activation(hf: dict[str, Any]) -> tuple[Any, Any]:
    """(activation, gated) as T5Config resolves them: from feed_forward_proj ("gated-gelu" means gelu_new),
    then replaced by dense_act_fn and is_gated_act where the file gives them (transformers sets those last)."""
    proj = hf["feed_forward_proj"]
    if not isinstance(proj, str):
        raise ValueError(f'feed_forward_proj: expected text such as "relu" or "gated-gelu", got {proj!r}')
    parts = proj.split("-")
    if (len(parts) > 1 and parts[0] != "gated") or len(parts) > 2:
        raise ValueError(
            f"feed_forward_proj: {proj!r} is not an activation transformers' T5Config accepts; expected "
            '"ACTIVATION" or "gated-ACTIVATION", such as "relu" or "gated-gelu"'
        )
    activation = "gelu_new" if proj == "gated-gelu" else parts[-1]
    return hf.get("dense_act_fn", activation), hf.get("is_gated_act", parts[0] == "gated")


def _tie_embeddings(hf: dict[str, Any], model_class: str) -> Any:
    """Whether the LM head is tied, as from_pretrained loads the checkpoint such a file comes with.

    A file that says ``tie_word_embeddings: false`` (as the T5 v1.1 checkpoints' files, written before
    transformers 5, do) comes with a checkpoint holding its own lm_head.weight, which from_pretrained keeps.
    transformers 5.23 writes ``tie_word_embeddings: true`` for every T5, and ``scale_decoder_outputs: false``
    where the configuration was created untied: the head is then separate if the checkpoint holds its own
    (a v1.1 checkpoint re-saved) and tied if not (a model made from that configuration), so such a file is refused.
    """
    tied = hf.get("tie_word_embeddings", True)
    scaled = hf.get("scale_decoder_outputs", True)
    if model_class == "T5ForConditionalGeneration" and tied is True and scaled is False:
        raise ValueError(
            "scale_decoder_outputs: false beside tie_word_embeddings: true is how transformers 5 saves a T5 "
            "created with tie_word_embeddings false, and the file alone does not say whether its LM head is "
            "tied: from_pretrained keeps a head of its own when the checkpoint holds lm_head.weight (every T5 "
            "v1.1 and FLAN-T5 checkpoint does) and ties it otherwise; in a copy of the file, set "
            "tie_word_embeddings to false to count a separate head, or remove scale_decoder_outputs (it only "
            "scales the decoder's output) to count a tied one"
        )
    return tied


@hf_reader(HF_T5)
def _from_t5(hf: dict[str, Any], model_class: str = "T5Model") -> dict[str, Any]:
    encoder_only = model_class in ("T5EncoderModel", "T5ForTokenClassification")
    if encoder_only and hf["is_decoder"] is True:
        raise ValueError(
            f"is_decoder: true makes {model_class} build its stack as a decoder, with cross-attention weights "
            "the encoder never runs; archzoo counts the encoder T5 uses; set is_decoder to false"
        )
    if not encoder_only and hf.get("is_encoder_decoder", True) is not True:
        raise ValueError(
            f"is_encoder_decoder: {model_class} is an encoder-decoder, and with this set to false transformers "
            "builds and runs it differently (its decoder caches cross-attention keys with its own); set "
            "is_encoder_decoder to true"
        )
    activation, gated = _activation(hf)
    values = dict(
        vocab_size=hf["vocab_size"],
        d_model=hf["d_model"],
        d_kv=hf["d_kv"],
        d_ff=hf["d_ff"],
        n_layers=hf["num_layers"],
        n_heads=hf["num_heads"],
        relative_attention_num_buckets=hf["relative_attention_num_buckets"],
        activation=activation,
        gated=gated,
        tie_embeddings=_tie_embeddings(hf, model_class),
        num_labels=hf["num_labels"],
    )
    if not encoder_only:
        values["n_decoder_layers"] = hf["num_decoder_layers"]  # null: as many as the encoder, as in T5Config
    return values


ARCHITECTURE = Architecture(
    name="t5",
    title="T5 (encoder-decoder)",
    summary="The text-to-text encoder-decoder Transformer: pre-norm RMS-normed layers without biases, one token "
    "embedding shared by encoder, decoder and (in T5) the LM head, relative position biases, and a ReLU "
    "(T5) or gated-GELU (T5 v1.1) feed-forward.",
    citation="Raffel et al. Exploring the Limits of Transfer Learning with a Unified Text-to-Text Transformer. "
    "JMLR 21(140), 2020. arXiv:1910.10683",
    config_model=T5Config,
    build=build,
    seq_len=lambda cfg: 512,
    seq_len_note=lambda cfg: source_target_note(512) if cfg.decoder else "512 tokens unless --seq-len says otherwise",
    reference=reference,
)

register_architectures = architectures_hook(ARCHITECTURE)
register_hf_readers = hf_readers_hook({"t5": (_from_t5, None)})


def _reference_class(name: str) -> type:
    import torch
    import transformers
    from torch import nn

    base = getattr(transformers, REFERENCE_CLASSES[name])

    def __init__(self: Any, **config_kwargs: Any) -> None:
        config = transformers.T5Config(**config_kwargs)
        config._attn_implementation = "eager"  # FLOPs of the attention products are counted
        base.__init__(self, config)
        if config_kwargs.get("tie_word_embeddings") is False and hasattr(self, "lm_head"):
            # T5Config always ties; from_pretrained unties when the checkpoint holds its own lm_head.weight
            self.lm_head.weight = nn.Parameter(torch.empty_like(self.shared.weight))
            self.all_tied_weights_keys.pop("lm_head.weight", None)  # so that tie_weights() leaves it alone
        model = getattr(self, "transformer", self)  # the classification classes hold the model as `transformer`
        for stack in (model.encoder, getattr(model, "decoder", None)):
            if stack is not None:
                # the same module, registered first on the stack: named_parameters() reports it there
                bias = stack.block[0].layer[0].SelfAttention.relative_attention_bias
                stack._modules = {"relative_attention_bias": bias, **stack._modules}

    doc = (
        f"transformers' {base.__name__}, built from T5Config keyword arguments, with each stack's relative position "
        "bias also registered on the stack (the same module; PyTorch reports it there, ahead of the layers), "
        "and with tie_word_embeddings false an LM head of its own (as from_pretrained loads T5 v1.1)."
    )
    cls = type(name, (base,), {"__init__": __init__, "__doc__": doc, "__module__": __name__})
    cls.__qualname__ = name  # as if defined at module level, where it is found
    return cls


def __getattr__(name: str) -> Any:
    # the reference classes need torch and transformers, so they are made on first access
    if name in REFERENCE_CLASSES:
        cls = _reference_class(name)
        globals()[name] = cls
        return cls
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
