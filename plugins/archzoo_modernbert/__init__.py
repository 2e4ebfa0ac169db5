"""archzoo plugin: ModernBERT (Warner et al. 2024), the encoder as transformers 5.23 builds it.

ModernBERT embeds tokens (no position table: rotary positions, which have no parameters and whose rotations
are element-wise, so FlopCounterMode counts no FLOPs for them) and normalises the embedding with a LayerNorm.
Each layer is pre-LN: a LayerNorm (none in the first layer, whose input is the normalised embedding), bidirectional
attention whose query, key and value come out of one fused linear (``Wqkv``), an output linear (``Wo``), then a
LayerNorm and a gated feed-forward (``Wi`` makes the input and the gate, ``2 d_ff`` wide, as one linear; ``Wo``
brings ``d_ff`` back to ``d``). By default every linear and LayerNorm is without bias (``attention_bias``,
``mlp_bias``, ``norm_bias``). A final LayerNorm closes the stack.

Layers attend globally or locally, over a window of ``local_window`` tokens (config.json's ``local_attention``: a
token sees those at most ``local_window // 2`` away). Every ``global_every``-th layer from the first is global
(``global_attn_every_n_layers``), or ``layer_types`` lists each layer's kind. The window is a mask on the same
score products, so the kinds hold the same parameters and cost the same eager FLOPs (archzoo counts the full
``N x N`` products, as eager attention computes them); they differ in what a training step saves (each kind's
rotary table, SDPA's window mask: `archzoo_modernbert.activation`), which is why the configuration carries them.

Heads share a prediction head (``dense``, an activation and a LayerNorm): the masked-LM decoder (tied to the
token embedding, with a bias of its own) and the token and span classifiers run it on every token, the sequence
classifier on one pooled vector (``pooling``: the first token's, or the mean, element-wise, no matmul).
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal, Self

from pydantic import Field, PositiveInt, model_validator

from archzoo import Architecture, Reference
from archzoo.architecture import MAX_SIZE, TransformerConfig, check_activation
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
from archzoo.plugin_parts import LABELS, NumLabels, architectures_hook, hf_readers_hook
from archzoo.symbols import symbol

from .activation import register_activation_memory as register_activation_memory

__version__ = "0.1.0"

#: archzoo's head -> transformers' class
CLASSES = {
    "masked_lm": "ModernBertForMaskedLM",
    "none": "ModernBertModel",
    "sequence_classification": "ModernBertForSequenceClassification",
    "token_classification": "ModernBertForTokenClassification",
    "question_answering": "ModernBertForQuestionAnswering",
}

#: the two kinds of layer, as transformers' layer_types names them: local (a window) and global attention
SLIDING = "sliding_attention"
FULL = "full_attention"
LayerType = Literal["sliding_attention", "full_attention"]


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
    num_labels: NumLabels = Field(
        2,
        description="outputs of the classifiers (transformers' num_labels); question answering runs only with 2",
    )
    global_every: PositiveInt = Field(
        3,
        description="every global_every-th layer from the first attends globally, the others locally "
        "(global_attn_every_n_layers); used when layer_types is null",
    )
    layer_types: list[LayerType] | None = Field(
        None,
        description="each layer's kind, full_attention (global) or sliding_attention (local), one per layer "
        "(layer_types); null: from global_every",
    )
    local_window: int = Field(
        128,
        description="tokens a local layer's window spans (local_attention): a token attends to those at most "
        "local_window // 2 away",
    )
    pooling: Literal["cls", "mean"] = Field(
        "cls",
        description="what the sequence classifier's head reads (classifier_pooling): cls, the first token's vector, "
        "or mean, the mean of every token's",
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
        if self.layer_types is not None and len(self.layer_types) != self.n_layers:
            raise ValueError(
                f"layer_types: {len(self.layer_types)} entries for {self.n_layers} layers (n_layers); give one kind "
                "per layer, as transformers requires, or null"
            )
        if self.head == "question_answering" and self.num_labels != 2:
            raise ValueError(
                f"num_labels: ModernBertForQuestionAnswering splits its {self.num_labels} outputs per token into "
                "start and end logits, and its forward pass fails unless there are 2; set num_labels to 2"
            )
        return self

    def kinds(self) -> list[str]:
        """Each layer's kind, as transformers' ModernBertConfig computes it: ``layer_types``, else global
        (full_attention) at every index divisible by ``global_every``, local (sliding_attention) elsewhere."""
        if self.layer_types is not None:
            return list(self.layer_types)
        return [SLIDING if i % self.global_every else FULL for i in range(self.n_layers)]


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


def _pattern(cfg: ModernBertConfig) -> str:
    """The stack's kinds of layer in words: which are global, and the local layers' window."""
    kinds = cfg.kinds()
    global_at = [i for i, kind in enumerate(kinds) if kind == FULL]
    shown = ", ".join(map(str, global_at[:4])) + (", ..." if len(global_at) > 4 else "")
    where = f" (layer{'s' if len(global_at) > 1 else ''} {shown})" if global_at else ""
    local = len(kinds) - len(global_at)
    window = f", over a window of {cfg.local_window:,} tokens ({cfg.local_window // 2:,} each side)" if local else ""
    return f"{len(global_at)} global{where} and {local} local layers{window}"


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
        layer_runs("layers", runs, description=_pattern(cfg)),
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
            layer_types=cfg.kinds(),
            local_attention=cfg.local_window,
            classifier_pooling=cfg.pooling,
            pad_token_id=None,
            **({"num_labels": cfg.num_labels} if labelled else {}),
        ),
    )


# ---- Hugging Face config.json: ModernBertConfig's keys, as transformers 5.23 defines them ------------------

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
        "layer_types": "layer_types",
        # not a field: ModernBertConfig computes layer_types from it when they are null (as the released files are)
        "global_attn_every_n_layers": "global_every",
        "local_attention": "local_window",
        "classifier_pooling": "pooling",
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
        "rope_parameters": _ROPE,
        "deterministic_flash_attn": "a setting of the flash-attention kernel, which archzoo does not count with",
        "sparse_pred_ignore_index": "the label that marks a token the masked-LM loss skips; no parameters",
        # keys the configuration class converts when it loads a file, as the released files write them
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
    superseded={"global_attn_every_n_layers": "layer_types"},
    unsupported_classes={
        "ModernBertForMultipleChoice": "its forward pass takes a batch of choices per example (a third input "
        "dimension), which archzoo's forward pass of batch 1 does not model"
    },
)


def _layer_kinds(hf: dict[str, Any]) -> dict[str, Any]:
    """The archzoo keys of the layers' kinds: ``layer_types`` as the file gives them (checked as transformers
    checks them), else ``global_attn_every_n_layers`` (3 when absent), from which ModernBertConfig computes them
    with ``i % every``. A pattern that is no positive whole number but computes (2.0, -3, true) is carried as the
    kinds it computes, and so is a pattern beyond archzoo's limit for a size (`MAX_SIZE`): transformers loads it, and
    only the first layer is global; one the computation fails for is refused."""
    types, layers = hf["layer_types"], hf["num_hidden_layers"]
    every = hf.get("global_attn_every_n_layers", 3)
    whole = isinstance(every, int) and not isinstance(every, bool) and 0 < every <= MAX_SIZE
    read: dict[str, Any] = {"global_every": every} if whole else {}
    if types is not None:
        kinds = (SLIDING, FULL)
        if not isinstance(types, list) or any(kind not in kinds for kind in types):
            raise ValueError(
                f"layer_types: expected a list of {' or '.join(kinds)}, one per layer, or null, got "
                f"{str(types)[:60]}; ModernBERT's layers attend locally or globally, and transformers builds no other "
                "kind for it"
            )
        if isinstance(layers, int) and len(types) != layers:
            raise ValueError(
                f"layer_types: {len(types)} entries for {layers} layers (num_hidden_layers); give one per layer"
            )
        return {"layer_types": list(types)}  # transformers then does not use global_attn_every_n_layers
    if whole or not isinstance(layers, int) or isinstance(layers, bool):
        return read  # a layer count of another type is refused by the configuration model, naming its key
    try:
        return {"layer_types": [SLIDING if i % every else FULL for i in range(layers)]}
    except (TypeError, ZeroDivisionError):
        raise ValueError(
            f"global_attn_every_n_layers: {str(every)[:60]}: ModernBertConfig makes layer i global when "
            "i % global_attn_every_n_layers is 0, and transformers fails to load the file with this value; give a "
            "positive whole number of layers (3 in the released models), or layer_types"
        ) from None


def _pooling(hf: dict[str, Any], model_class: str) -> dict[str, Any]:
    """``pooling`` for the class that pools (ModernBertForSequenceClassification; the other classes never read
    it), after refusing what ModernBertConfig refuses for every class."""
    pooling = hf["classifier_pooling"]
    if pooling not in ("cls", "mean"):
        raise ValueError(
            f"classifier_pooling: expected cls or mean, got {str(pooling)[:60]}, which transformers' "
            "ModernBertConfig refuses; give cls (the first token's vector) or mean (every token's mean)"
        )
    return {"pooling": pooling} if model_class == CLASSES["sequence_classification"] else {}


@hf_reader(HF_MODERNBERT)
def _from_modernbert(hf: dict[str, Any], model_class: str = "ModernBertModel") -> dict[str, Any]:
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
        local_window=hf["local_attention"],
        **_layer_kinds(hf),
        **_pooling(hf, model_class),
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
