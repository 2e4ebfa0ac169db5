"""The parts encoder-decoder plugins build alike: modules a class stores but never runs, a model without generation's
cache, each side's feed-forward width, the classification head on the end-of-sequence token, where a stack's blocks
live in its reference module, and the keys transformers' BART-derived configurations (BART, mBART, Whisper) share.

Each part is what the BART, Whisper, T5 and Transformer plugins wrote out for themselves: a family passes its own
names (its transformers class, its module names) and keeps what is its own (Whisper's convolutions and bias-free
``k_proj``, T5's relative position bias, BART's embedding norm).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any, Protocol

from .blocks import Block, composite, linear
from .decoder_parts import SPECIAL_TOKENS
from .formula import Poly, const
from .hf_vocabulary import DROPOUT, INITIALISATION, TOKEN_ID
from .symbols import declare_symbol, symbol

__all__ = [
    "ATTRIBUTE_MAP",
    "BART_STACK_PARTS",
    "D_FF_DECODER",
    "D_FF_ENCODER",
    "LAYERDROP",
    "STACK_KEYS",
    "TRAINING_ONLY",
    "WEIGHT_INIT_AND_TOKEN_IDS",
    "SideConfig",
    "bart_layer_modules",
    "check_side_heads",
    "cross_attention_not_run",
    "eos_classification_head",
    "eos_classification_modules",
    "feed_forward_widths",
    "side_kwargs",
    "source_target_note",
    "stack_modules",
    "stored_not_run",
    "without_cache",
]

_ZERO = const(0)
_ONE = const(1)

#: Feed-forward widths of each side, when they differ (when they agree, both are the shared ``d_ff``).
D_FF_ENCODER = declare_symbol(
    "d_ff_e", latex="d_{\\mathrm{ff},e}", meaning="encoder feed-forward width (d_ff_encoder)", order=23
)
D_FF_DECODER = declare_symbol(
    "d_ff_d", latex="d_{\\mathrm{ff},d}", meaning="decoder feed-forward width (d_ff_decoder)", order=24
)


class SideConfig(Protocol):
    """A configuration with a width of its own for each side's heads and feed-forward (BART's, Whisper's)."""

    @property
    def d_model(self) -> int: ...
    @property
    def n_encoder_layers(self) -> int: ...
    @property
    def n_decoder_layers(self) -> int: ...
    @property
    def n_encoder_heads(self) -> int: ...
    @property
    def n_decoder_heads(self) -> int: ...
    @property
    def d_ff_encoder(self) -> int: ...
    @property
    def d_ff_decoder(self) -> int: ...


# ---- configuration --------------------------------------------------------------------------------------


def check_side_heads(cfg: SideConfig, attention_class: str) -> None:
    """Raise the key-naming error when either side's heads do not divide ``d_model``, as transformers'
    ``attention_class`` (``BartAttention``) refuses."""
    for key, heads in (("n_encoder_heads", cfg.n_encoder_heads), ("n_decoder_heads", cfg.n_decoder_heads)):
        if cfg.d_model % heads:
            raise ValueError(
                f"{key}: d_model {cfg.d_model} is not divisible by {key} {heads}, which transformers' "
                f"{attention_class} refuses; choose a divisor of d_model"
            )


def source_target_note(tokens: int, detail: str = "") -> str:
    """What N is for an encoder-decoder by default: ``tokens`` on each side (``detail`` says why that many)."""
    return f"{tokens} source and {tokens} target tokens{detail} unless --seq-len says otherwise"


# ---- blocks ---------------------------------------------------------------------------------------------


def feed_forward_widths(cfg: SideConfig) -> tuple[Poly, Poly]:
    """The encoder's and the decoder's feed-forward widths: the shared ``d_ff`` when they agree, else ``d_ff_e``
    and ``d_ff_d``."""
    if cfg.d_ff_encoder == cfg.d_ff_decoder:
        d_ff = symbol("d_ff", cfg.d_ff_encoder)
        return d_ff, d_ff
    return D_FF_ENCODER(cfg.d_ff_encoder), D_FF_DECODER(cfg.d_ff_decoder)


def stored_not_run(block: Block, why: str) -> Block:
    """``block`` with its parameters and none of its work: modules a class builds but its forward pass skips."""
    return replace(
        block,
        children=tuple(stored_not_run(c, why) for c in block.children),
        flops=_ZERO,
        attention_flops=_ZERO,
        backward_flops=_ZERO,
        prefill_flops=_ZERO,
        decode_flops=_ZERO,
        kv_cache=_ZERO,
        cross_kv_cache=_ZERO,
        description=f"{block.description}; {why}" if block.children or not block.description else block.description,
    )


def cross_attention_not_run(*blocks: Block, model_class: str) -> tuple[Block, ...]:
    """The cross-attention ``blocks`` (and their norm) of a decoder run alone as a causal LM (``model_class``,
    ``BartForCausalLM``): built, so counted, but with no encoder output never run (`stored_not_run`)."""
    why = f"built, but with no encoder output {model_class} never runs it"
    return tuple(stored_not_run(block, why) for block in blocks)


def without_cache(block: Block) -> Block:
    """``block`` keeping no key/value cache: a class that is never run as generation's cached calls."""
    children = tuple(without_cache(c) for c in block.children)
    return replace(block, children=children, kv_cache=_ZERO, cross_kv_cache=_ZERO)


def eos_classification_head(d: Poly, labels: Poly) -> Block:
    """The sequence classification head of BART and T5 (``classification_head``: ``dense``, tanh, ``out_proj``) on
    one token, the decoder's output at the input's last end-of-sequence token (picked by an index: no FLOPs)."""
    return composite(
        "classification_head",
        "head",
        [
            linear("dense", d, d, tokens=_ONE, description="dense + tanh on one token"),
            linear("out_proj", d, labels, tokens=_ONE, description="class scores"),
        ],
        "classification head on the last end-of-sequence token's decoder output",
    )


# ---- reference modules ----------------------------------------------------------------------------------


def eos_classification_modules(root: str) -> dict[str, tuple[str, ...]]:
    """Where `eos_classification_head`'s blocks live in the classes that have it (``BartForSequenceClassification``,
    ``T5ForSequenceClassification``): ``classification_head`` beside the model, its ``dense`` and ``out_proj``."""
    head = f"{root}.classification_head"
    return {
        head: ("classification_head",),
        f"{head}.dense": ("classification_head.dense",),
        f"{head}.out_proj": ("classification_head.out_proj",),
    }


def stack_modules(
    path: str,
    module: str,
    *,
    layers: str = "layers",
    parts: Mapping[str, str] | None = None,
    layer: Mapping[str, tuple[str, ...]] | None = None,
) -> dict[str, tuple[str, ...]]:
    """Where an encoder's or decoder's blocks live in the reference module (for `archzoo verify`): the stack at block
    path ``path`` (``bart.encoder``) is the submodule ``module`` (``model.encoder``), its ``parts`` (block -> name
    of its submodule in the stack), its repeated layers the module list ``layers`` of the stack, and ``layer`` the
    blocks of one layer (block -> submodule names, relative to the layer)."""
    rows: dict[str, tuple[str, ...]] = {path: (module,)}
    rows |= {f"{path}.{block}": (f"{module}.{name}",) for block, name in (parts or {}).items()}
    rows[f"{path}.layers"] = rows[f"{path}.layers.layer"] = (f"{module}.{layers}",)
    rows |= {f"{path}.layers.layer.{block}": names for block, names in (layer or {}).items()}
    return rows


#: The submodules of a stack of transformers' BART and of the classes written from it (mBART, Whisper): block ->
#: name in the stack.
BART_STACK_PARTS = {"token": "embed_tokens", "position": "embed_positions", "final_norm": "layer_norm"}


def bart_layer_modules(*, decoder: bool) -> dict[str, tuple[str, ...]]:
    """The blocks of one encoder or decoder layer of transformers' BART and of the classes written from it (mBART,
    Whisper) -> their submodules in the layer: self-attention (``self_attn``), the decoder's cross-attention
    (``encoder_attn``), each with its projections and LayerNorm, and the feed-forward (``fc1``, ``fc2``,
    ``final_layer_norm``)."""
    rows: dict[str, tuple[str, ...]] = {
        "self_attention_norm": ("self_attn_layer_norm",),
        "feed_forward": ("fc1", "fc2"),
        "feed_forward.fc_in": ("fc1",),
        "feed_forward.fc_out": ("fc2",),
        "feed_forward_norm": ("final_layer_norm",),
    }
    attentions = {"self_attention": "self_attn"}
    if decoder:
        attentions["cross_attention"] = "encoder_attn"
        rows["cross_attention_norm"] = ("encoder_attn_layer_norm",)
    for block, name in attentions.items():
        rows[block] = (name,)
        for proj in ("q_proj", "k_proj", "v_proj", "out_proj"):
            rows[f"{block}.{proj}"] = (f"{name}.{proj}",)
    return rows


# ---- Hugging Face config.json: the keys of BART-derived configurations ----------------------------------

LAYERDROP = (
    "LayerDrop skips whole layers at random in training only; the forward pass archzoo counts (eval) runs "
    "every layer, and every layer's weights exist either way"
)

#: The keys of BartConfig and the configurations written from it (MBartConfig, WhisperConfig) that act in training
#: only, with why they change no figure.
TRAINING_ONLY = {
    "encoder_layerdrop": LAYERDROP,
    "decoder_layerdrop": LAYERDROP,
    "dropout": DROPOUT,
    "attention_dropout": DROPOUT,
    "activation_dropout": DROPOUT,
}

#: Their keys of the weights' initialisation and of the special tokens' ids (the decoder's start token with the
#: others): values and indices, not sizes.
WEIGHT_INIT_AND_TOKEN_IDS = {"init_std": INITIALISATION, **SPECIAL_TOKENS, "decoder_start_token_id": TOKEN_ID}

#: Their attribute_map: the generic names transformers gives the encoder's keys.
ATTRIBUTE_MAP = {
    "num_attention_heads": "encoder_attention_heads",
    "hidden_size": "d_model",
    "num_hidden_layers": "encoder_layers",
}

#: Their keys of the two stacks' sizes -> archzoo's keys (`SideConfig`), in one run, as each family's table lists them.
STACK_KEYS = {
    "d_model": "d_model",
    "encoder_layers": "n_encoder_layers",
    "decoder_layers": "n_decoder_layers",
    "encoder_attention_heads": "n_encoder_heads",
    "decoder_attention_heads": "n_decoder_heads",
    "encoder_ffn_dim": "d_ff_encoder",
    "decoder_ffn_dim": "d_ff_decoder",
}


def side_kwargs(cfg: SideConfig) -> dict[str, Any]:
    """The `STACK_KEYS` of a reference's transformers configuration, from archzoo's configuration."""
    return {native: getattr(cfg, key) for native, key in STACK_KEYS.items()}
