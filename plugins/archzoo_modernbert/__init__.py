"""archzoo plugin: ModernBERT (Warner et al. 2024), the encoder as transformers 5.23 builds it.

ModernBERT embeds tokens (no position table: rotary positions, which have no parameters and whose rotations
are element-wise, so FlopCounterMode counts no FLOPs for them) and normalises the embedding with a LayerNorm.
Each layer is pre-LN: a LayerNorm (none in the first layer, whose input is the normalised embedding), bidirectional
attention whose query, key and value come out of one fused linear (``Wqkv``), an output linear (``Wo``), then a
LayerNorm and a gated feed-forward (``Wi`` makes the input and the gate, ``2 d_ff`` wide, as one linear; ``Wo``
brings ``d_ff`` back to ``d``). By default every linear and LayerNorm is without bias (``attention_bias``,
``mlp_bias``, ``norm_bias``). A final LayerNorm closes the stack.

Layers alternate between global attention and local attention over a window of ``local_attention`` tokens
(every ``global_attn_every_n_layers``-th layer is global): a mask on the same score products, so no parameters
and the same eager FLOPs (archzoo counts the full ``N x N`` products, as eager attention computes them).

Heads share a prediction head (``dense``, an activation and a LayerNorm): the masked-LM decoder (tied to the
token embedding, with a bias of its own) and the token and span classifiers run it on every token, the sequence
classifier on one pooled vector (the first token's, or the mean: element-wise, no matmul).
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal, Self

from pydantic import Field, PositiveInt, model_validator

from archzoo import Architecture, Reference
from archzoo.architecture import TransformerConfig, check_activation
from archzoo.blocks import (
    Block,
    attention,
    check_run_layers,
    composite,
    embedding,
    feed_forward,
    layer_norm,
    layer_runs,
    linear,
    with_modules,
)
from archzoo.decoder_parts import LABELS, architectures_hook, hf_readers_hook
from archzoo.formula import Poly, const
from archzoo.hf_config import (
    DROPOUT,
    INITIALISATION,
    NORM_EPSILON,
    NOT_READ,
    TOKEN_ID,
    HFTable,
    check_padding_index,
    hf_reader,
)
from archzoo.symbols import symbol

__version__ = "0.1.0"

#: archzoo's head -> transformers' class
CLASSES = {
    "masked_lm": "ModernBertForMaskedLM",
    "none": "ModernBertModel",
    "sequence_classification": "ModernBertForSequenceClassification",
    "token_classification": "ModernBertForTokenClassification",
    "question_answering": "ModernBertForQuestionAnswering",
}


class ModernBertConfig(TransformerConfig):
    """A ModernBERT encoder; defaults are ModernBERT-base (Warner et al. 2024), which are also transformers'
    ModernBertConfig defaults."""

    DEFAULTS: ClassVar[dict[str, Any]] = dict(vocab_size=50368, d_model=768, n_layers=22, n_heads=12)
    DESCRIPTIONS: ClassVar = dict(
        vocab_size="rows of the token embedding (and of the masked-LM decoder)",
        d_model="model width (hidden_size)",
        n_layers="encoder layers (num_hidden_layers)",
        n_heads="attention heads (num_attention_heads); must divide d_model",
    )

    d_ff: PositiveInt = Field(
        1152, description="hidden width of the gated feed-forward (intermediate_size; Wi makes twice it)"
    )
    max_positions: PositiveInt = Field(
        8192, description="context length (max_position_embeddings; rotary positions: no parameters)"
    )
    activation: str = Field("gelu", description="activation of the feed-forward's input (hidden_activation)")
    attention_bias: bool = Field(False, description="biases on Wqkv and the attention's Wo")
    mlp_bias: bool = Field(False, description="biases on the feed-forward's Wi and Wo")
    norm_bias: bool = Field(False, description="biases on every LayerNorm")
    classifier_bias: bool = Field(False, description="a bias on the prediction head's dense layer")
    classifier_activation: str = Field("gelu", description="activation of the prediction head")
    decoder_bias: bool = Field(True, description="a bias on the masked-LM decoder")
    tie_embeddings: bool = Field(True, description="the masked-LM decoder's weight is the token embedding matrix")
    head: Literal[tuple(CLASSES)] = Field(  # type: ignore[valid-type]
        "masked_lm",
        description="masked_lm (ModernBertForMaskedLM), none (ModernBertModel), sequence_classification (the "
        "prediction head and a classifier on the pooled first token or mean), token_classification or "
        "question_answering (the prediction head and a classifier on every token): ModernBertFor...",
    )
    num_labels: PositiveInt = Field(
        2,
        description="outputs of the classifiers (transformers' num_labels); question answering runs only with 2",
    )

    @model_validator(mode="after")
    def _check(self) -> Self:
        check_run_layers(self.n_layers)  # the stack's runs list every layer's position
        check_activation(self.activation)
        check_activation(self.classifier_activation, key="classifier_activation")
        if (self.d_model // self.n_heads) % 2:
            raise ValueError(
                f"n_heads: rotary positions turn pairs of channels, so a head's width must be even, got "
                f"{self.d_model // self.n_heads} (d_model {self.d_model} / n_heads {self.n_heads}); choose an even "
                "head width"
            )
        if self.head == "question_answering" and self.num_labels != 2:
            raise ValueError(
                f"num_labels: ModernBertForQuestionAnswering splits its {self.num_labels} outputs per token into "
                "start and end logits, and its forward pass fails unless there are 2; set num_labels to 2"
            )
        return self


def _layer(cfg: ModernBertConfig, d: Poly, *, first: bool) -> Block:
    h = symbol("h", cfg.n_heads)
    d_h = symbol("d_h", cfg.d_model // cfg.n_heads)
    attn = attention(
        "attention",
        d,
        d,
        bias=cfg.attention_bias,
        heads=h,
        d_head=d_h,
        description="bidirectional self-attention, query, key and value from one fused linear (Wqkv), rotary "
        "positions; global or local (a mask on the same products)",
    )
    mlp = feed_forward(
        "mlp",
        d,
        symbol("d_ff", cfg.d_ff),
        activation=cfg.activation,
        gated=True,
        bias=cfg.mlp_bias,
        description=f"gated feed-forward, {cfg.activation}: Wi makes input and gate as one linear, Wo",
    )
    parts = [] if first else [layer_norm("attention_norm", d, bias=cfg.norm_bias)]
    parts += [attn, layer_norm("mlp_norm", d, bias=cfg.norm_bias), mlp]
    return composite(
        "first_layer" if first else "layer",
        "encoder_layer",
        parts,
        "the first encoder layer: no LayerNorm before its attention (it reads the normalised embedding)"
        if first
        else "pre-LN encoder layer: LayerNorm, attention, add; LayerNorm, gated feed-forward, add",
    )


def build(cfg: ModernBertConfig) -> Block:
    d = symbol("d", cfg.d_model)
    V = symbol("V", cfg.vocab_size)
    L = symbol("L", cfg.n_layers)
    runs = [(_layer(cfg, d, first=True), const(1))]
    if cfg.n_layers > 1:
        runs.append((_layer(cfg, d, first=False), L - 1))
    children = [
        embedding("token", V, d, role="token", description="token embeddings (tok_embeddings)"),
        layer_norm("embedding_norm", d, bias=cfg.norm_bias),
        layer_runs("layers", runs),
        layer_norm("final_norm", d, bias=cfg.norm_bias),
    ]
    K = LABELS(cfg.num_labels)
    pooled = cfg.head == "sequence_classification"  # the head runs on one pooled vector
    if cfg.head != "none":
        head_tokens: dict[str, Any] = {"tokens": const(1)} if pooled else {}
        dense = linear("dense", d, d, bias=cfg.classifier_bias, **head_tokens)
        children.append(
            composite(
                "prediction_head",
                "head",
                [dense, layer_norm("norm", d, bias=cfg.norm_bias)],
                f"dense, {cfg.classifier_activation}, LayerNorm"
                + (" on the pooled vector (the first token's or the mean)" if pooled else " on every token"),
            )
        )
        if cfg.head == "masked_lm":
            decoder = linear(
                "decoder",
                d,
                V,
                bias=cfg.decoder_bias,
                tied_to="token" if cfg.tie_embeddings else "",
                description="masked-token logits"
                + (", weight tied to the token embedding" if cfg.tie_embeddings else "")
                + (", with a bias" if cfg.decoder_bias else ""),
            )
            children.append(decoder)
        elif cfg.head == "question_answering":
            children.append(linear("classifier", d, const(2), description="answer start and end logits per token"))
        else:
            children.append(linear("classifier", d, K, description="class scores", **head_tokens))
    root = composite("modernbert", "model", children, "ModernBERT encoder")
    return with_modules(root, reference_modules(cfg))


def reference_modules(cfg: ModernBertConfig) -> dict[str, tuple[str, ...]]:
    """Where each block's parameters live in the transformers class `reference` builds (for `archzoo verify`):
    block path -> submodule names, inside a layer relative to the layer. The fused Wqkv and Wi hold several
    blocks each (q/k/v, input/gate): those blocks stay unmapped, their parents are compared. The stack's two runs
    (the first layer, without an attention LayerNorm, and the others) share one ModuleList, copy i of a run being
    the list's layer at the run's position i."""
    base = "" if cfg.head == "none" else "model."
    modules: dict[str, tuple[str, ...]] = {
        "modernbert": ("",),
        "modernbert.token": (f"{base}embeddings.tok_embeddings",),
        "modernbert.embedding_norm": (f"{base}embeddings.norm",),
        "modernbert.layers": (f"{base}layers",),
        "modernbert.final_norm": (f"{base}final_norm",),
        "modernbert.prediction_head": ("head",),
        "modernbert.prediction_head.dense": ("head.dense",),
        "modernbert.prediction_head.norm": ("head.norm",),
        "modernbert.decoder": ("decoder",),
        "modernbert.classifier": ("classifier",),
    }
    for layer in ("first_layer", "layer"):
        path = f"modernbert.layers.{layer}s.{layer}"
        modules |= {
            path: (f"{base}layers",),
            f"{path}.attention_norm": ("attn_norm",),
            f"{path}.attention": ("attn",),
            f"{path}.attention.out_proj": ("attn.Wo",),
            f"{path}.mlp_norm": ("mlp_norm",),
            f"{path}.mlp": ("mlp",),
            f"{path}.mlp.fc_out": ("mlp.Wo",),
        }
    return modules


def reference(cfg: ModernBertConfig) -> Reference:
    """ModernBertModel or one of its head classes, built from a ModernBertConfig with the same keys."""
    labelled = cfg.head in ("sequence_classification", "token_classification", "question_answering")
    return Reference(
        library="transformers",
        target=f"transformers.{CLASSES[cfg.head]}",
        config_class="transformers.ModernBertConfig",
        kwargs=dict(
            vocab_size=cfg.vocab_size,
            hidden_size=cfg.d_model,
            num_hidden_layers=cfg.n_layers,
            num_attention_heads=cfg.n_heads,
            intermediate_size=cfg.d_ff,
            max_position_embeddings=cfg.max_positions,
            hidden_activation=cfg.activation,
            attention_bias=cfg.attention_bias,
            mlp_bias=cfg.mlp_bias,
            norm_bias=cfg.norm_bias,
            classifier_bias=cfg.classifier_bias,
            classifier_activation=cfg.classifier_activation,
            decoder_bias=cfg.decoder_bias,
            tie_word_embeddings=cfg.tie_embeddings,
            pad_token_id=None,
            **({"num_labels": cfg.num_labels} if labelled else {}),
        ),
    )


# ---- Hugging Face config.json: ModernBertConfig's keys, as transformers 5.23 defines them ------------------

_WINDOW = (
    "local attention: a mask on the same score products, so no parameters and the same eager FLOPs (archzoo "
    "counts the full N x N products, as eager attention computes them)"
)
_ROPE = "rotary position settings: no parameters, and the rotations cost no matmul FLOPs"

HF_MODERNBERT = HFTable(
    model_type="modernbert",
    config_class="ModernBertConfig",
    defaults=dict(
        vocab_size=50368,
        hidden_size=768,
        intermediate_size=1152,
        num_hidden_layers=22,
        num_attention_heads=12,
        hidden_activation="gelu",
        max_position_embeddings=8192,
        initializer_range=0.02,
        initializer_cutoff_factor=2.0,
        norm_eps=1e-05,
        norm_bias=False,
        pad_token_id=50283,
        eos_token_id=50282,
        bos_token_id=50281,
        cls_token_id=50281,
        sep_token_id=50282,
        attention_bias=False,
        attention_dropout=0.0,
        layer_types=None,
        rope_parameters=None,
        local_attention=128,
        embedding_dropout=0.0,
        mlp_bias=False,
        mlp_dropout=0.0,
        decoder_bias=True,
        classifier_pooling="cls",
        classifier_dropout=0.0,
        classifier_bias=False,
        classifier_activation="gelu",
        deterministic_flash_attn=False,
        sparse_prediction=False,
        sparse_pred_ignore_index=-100,
        tie_word_embeddings=True,
    ),
    aliases={},
    read={
        "vocab_size": "vocab_size",
        "hidden_size": "d_model",
        "intermediate_size": "d_ff",
        "num_hidden_layers": "n_layers",
        "num_attention_heads": "n_heads",
        "hidden_activation": "activation",
        "max_position_embeddings": "max_positions",
        "norm_bias": "norm_bias",
        "attention_bias": "attention_bias",
        "mlp_bias": "mlp_bias",
        "decoder_bias": "decoder_bias",
        "classifier_bias": "classifier_bias",
        "classifier_activation": "classifier_activation",
        "tie_word_embeddings": "tie_embeddings",
        # an index, not a size; read only to refuse what transformers' nn.Embedding refuses
        "pad_token_id": "(checked: inside the vocabulary)",
        "layer_types": "(checked: one of sliding_attention or full_attention per layer)",
        "num_labels": "num_labels",
    },
    ignored={
        "attention_dropout": DROPOUT,
        "embedding_dropout": DROPOUT,
        "mlp_dropout": DROPOUT,
        "classifier_dropout": DROPOUT,
        "initializer_range": INITIALISATION,
        "initializer_cutoff_factor": INITIALISATION,
        "norm_eps": NORM_EPSILON,
        "eos_token_id": TOKEN_ID,
        "bos_token_id": TOKEN_ID,
        "cls_token_id": TOKEN_ID,
        "sep_token_id": TOKEN_ID,
        "local_attention": _WINDOW,
        "rope_parameters": _ROPE,
        "classifier_pooling": "how the sequence classifier pools the tokens (the first one's, or the mean: "
        "element-wise, no matmul); the prediction head and the classifier run on one vector either way",
        "deterministic_flash_attn": "a setting of the flash-attention kernel, which archzoo does not count with",
        "sparse_pred_ignore_index": "the label that marks a token the masked-LM loss skips; no parameters",
        # keys the configuration class converts when it loads a file, as the released files write them
        "global_attn_every_n_layers": f"{_WINDOW}: the layers that are global (layer_types)",
        "global_rope_theta": _ROPE,
        "local_rope_theta": _ROPE,
        "reference_compile": f"{NOT_READ}: a setting of an earlier release's compiled forward pass",
        "repad_logits_with_grad": f"{NOT_READ}: a setting of an earlier release's unpadded forward pass",
    },
    refused={
        "sparse_prediction": (
            (False,),
            "with labels, ModernBertForMaskedLM then runs its prediction head and decoder on the masked tokens "
            "only, which archzoo's training FLOPs (every token) do not model; the released models set it false",
        ),
    },
    base_class="ModernBertModel",
    classes={name: {"head": head} for head, name in sorted(CLASSES.items(), key=lambda item: item[0] != "none")},
    rope_per_layer_type=True,
    unsupported_classes={
        "ModernBertForMultipleChoice": "its forward pass takes a batch of choices per example (a third input "
        "dimension), which archzoo's forward pass of batch 1 does not model"
    },
)


def _check_layer_types(layer_types: Any, layers: Any) -> None:
    if layer_types is None:
        return
    kinds = ("sliding_attention", "full_attention")
    if not isinstance(layer_types, list) or any(kind not in kinds for kind in layer_types):
        raise ValueError(f"layer_types: expected a list of {' or '.join(kinds)}, one per layer, or null")
    if isinstance(layers, int) and len(layer_types) != layers:
        raise ValueError(
            f"layer_types: {len(layer_types)} entries for {layers} layers (num_hidden_layers); give one per layer"
        )


@hf_reader(HF_MODERNBERT)
def _from_modernbert(hf: dict[str, Any], model_class: str = "ModernBertModel") -> dict[str, Any]:
    _check_layer_types(hf["layer_types"], hf["num_hidden_layers"])
    check_padding_index(hf["vocab_size"], hf.get("pad_token_id"))
    return dict(
        vocab_size=hf["vocab_size"],
        d_model=hf["hidden_size"],
        n_layers=hf["num_hidden_layers"],
        n_heads=hf["num_attention_heads"],
        d_ff=hf["intermediate_size"],
        max_positions=hf["max_position_embeddings"],
        activation=hf["hidden_activation"],
        attention_bias=hf["attention_bias"],
        mlp_bias=hf["mlp_bias"],
        norm_bias=hf["norm_bias"],
        classifier_bias=hf["classifier_bias"],
        classifier_activation=hf["classifier_activation"],
        decoder_bias=hf["decoder_bias"],
        tie_embeddings=hf["tie_word_embeddings"],
        num_labels=hf["num_labels"],
    )


ARCHITECTURE = Architecture(
    name="modernbert",
    title="ModernBERT",
    summary="Answer.AI and LightOn's encoder (ModernBERT-base, large): pre-LN layers without biases, fused "
    "query/key/value, rotary positions, a gated feed-forward, alternating global and local attention.",
    citation="Warner et al. Smarter, Better, Faster, Longer: A Modern Bidirectional Encoder for Fast, Memory "
    "Efficient, and Long Context Finetuning and Inference. 2024. arXiv:2412.13663",
    config_model=ModernBertConfig,
    build=build,
    reference=reference,
)

register_architectures = architectures_hook(ARCHITECTURE)
register_hf_readers = hf_readers_hook({"modernbert": (_from_modernbert, "modernbert")})
