"""archzoo plugin: OpenAI Whisper (Radford et al. 2022), the speech encoder-decoder, as transformers 5.23 builds it.

**What N means.** Whisper's encoder reads 30 seconds of audio, always: ``num_mel_bins`` log-mel channels by
``2 x max_source_positions`` frames (3,000), which transformers' WhisperEncoder checks and refuses otherwise.
So the encoder runs over its full ``P_s = max_source_positions`` positions (1,500) whatever the text, and **N
is the number of decoder tokens** (at most ``max_target_positions``, 448). The encoder's FLOPs are a constant
of the configuration; only the decoder's and the LM head's grow with N.

**The encoder.** Two convolutions over time with GELU: ``Conv1d(num_mel_bins, d, kernel 3, padding 1)`` over
the 3,000 frames, then ``Conv1d(d, d, kernel 3, stride 2, padding 1)`` down to 1,500 positions. A sinusoidal
position table ``embed_positions``, ``P_s x d``: transformers never trains it (``requires_grad_(False)``),
but it is an ``nn.Embedding`` whose weight is a parameter, so ``sum(p.numel() for p in model.parameters())``
counts it, and so does archzoo. Pre-LN layers: LayerNorm, self-attention (``k_proj`` has no bias; ``q_proj``,
``v_proj`` and ``out_proj`` have one), LayerNorm, a feed-forward ``fc1``, GELU, ``fc2``. A final LayerNorm.

**The decoder.** A token embedding, a learned position table of ``max_target_positions`` rows, pre-LN layers
of causal self-attention, cross-attention to the encoder's 1,500 positions and a feed-forward, and a final
LayerNorm. ``WhisperForConditionalGeneration`` adds ``proj_out``, tied to the token embedding (no parameters
of its own unless ``tie_word_embeddings`` is false). ``scale_embedding`` is read by transformers 5.23 into an
``embed_scale`` that no forward pass multiplies by: it changes nothing.

**Heads.** ``WhisperModel`` (encoder and decoder), ``WhisperForConditionalGeneration`` (and ``proj_out``),
``WhisperForCausalLM`` (the decoder alone with ``proj_out``: its cross-attention layers are built, so counted,
but never run without an encoder output, and it computes the logits of every position, taking no
``logits_to_keep``), ``WhisperForAudioClassification`` (the encoder alone, a ``projector`` to
``classifier_proj_size`` on every position, a mean over the positions, a ``classifier``; with
``use_weighted_layer_sum`` a softmax-weighted sum of the ``L_e + 1`` hidden states, whose ``L_e + 1`` weights
are parameters and whose sum is element-wise, no FLOPs).

**Generation.** Prefill is the encoder over its 1,500 positions and the decoder over the one start token,
computing every layer's cross-attention keys and values there; a decode step at position N attends over N
cached keys in self-attention and over the 1,500 cached encoder positions in cross-attention. The self-attention
cache grows by ``2 L_d d`` elements per token; the cross-attention cache is ``2 L_d d`` per encoder position,
fixed at 1,500 positions. ``WhisperForCausalLM`` generates as a decoder alone; the audio classifier does not.
"""

from __future__ import annotations

import inspect
from dataclasses import replace
from typing import Any, Literal, Self

from pydantic import Field, PositiveInt, model_validator

from archzoo import ArchConfig, Architecture, Reference
from archzoo.architecture import MAX_SIZE, check_activation
from archzoo.blocks import (
    Block,
    attention,
    composite,
    embedding,
    feed_forward,
    layer_norm,
    learned_tensor,
    linear,
    lm_head,
    repeat,
    seq2seq_decoder,
    seq2seq_encoder,
    with_modules,
)
from archzoo.formula import N, Poly, const
from archzoo.hf_config import (
    TRANSFORMERS_VERSION,
    USE_CACHE,
    HFTable,
    check_padding_index,
    hf_reader,
)
from archzoo.plugin_parts import (
    LABELS,
    NumLabels,
    architectures_hook,
    head_classes,
    hf_readers_hook,
    num_labels_field,
    table_values,
)
from archzoo.seq2seq_parts import (
    ATTRIBUTE_MAP,
    BART_STACK_PARTS,
    STACK_KEYS,
    TRAINING_ONLY,
    WEIGHT_INIT_AND_TOKEN_IDS,
    bart_layer_modules,
    check_side_heads,
    cross_attention_not_run,
    feed_forward_widths,
    side_kwargs,
    stack_modules,
)
from archzoo.symbols import declare_symbol, symbol

from .activation import CORE_READS_TWO_STACKS

if CORE_READS_TWO_STACKS:  # the formula needs a core that reads two stacks; an older one refuses Whisper as before
    from .activation import register_activation_memory  # noqa: F401

__version__ = "0.1.0"

#: archzoo's head -> transformers' class
CLASSES = {
    "lm": "WhisperForConditionalGeneration",
    "none": "WhisperModel",
    "causal_lm": "WhisperForCausalLM",
    "audio_classification": "WhisperForAudioClassification",
}

ZERO = const(0)
ONE = const(1)

#: The symbols Whisper adds to the shared vocabulary (d, V, L_e, L_d, d_ff).
MEL_BINS = declare_symbol("n_mel", latex="n_{\\mathrm{mel}}", meaning="log-mel channels (num_mel_bins)", order=12)
SOURCE_POSITIONS = declare_symbol(
    "P_s",
    latex="P_{s}",
    meaning="encoder positions (max_source_positions): the encoder always runs over all of them",
    order=13,
)
TARGET_POSITIONS = declare_symbol(
    "P_t", latex="P_{t}", meaning="learned decoder positions (max_target_positions)", order=14
)
#: Each side's heads, when they differ (when they agree, both are the shared ``h``).
ENCODER_HEADS = declare_symbol("h_e", latex="h_{e}", meaning="encoder attention heads (n_encoder_heads)", order=21)
DECODER_HEADS = declare_symbol("h_d", latex="h_{d}", meaning="decoder attention heads (n_decoder_heads)", order=21)
PROJECTION = declare_symbol(
    "d_p", latex="d_{p}", meaning="audio classifier's projection width (classifier_proj_size)", order=32
)


class WhisperConfig(ArchConfig):
    """Whisper's hyperparameters; defaults are whisper-tiny, which are also transformers' WhisperConfig defaults."""

    vocab_size: PositiveInt = Field(51865, description="rows of the decoder's token embedding (and of proj_out)")
    num_mel_bins: PositiveInt = Field(80, description="log-mel channels the encoder's first convolution reads")
    d_model: PositiveInt = Field(384, description="model width, encoder and decoder")
    n_encoder_layers: PositiveInt = Field(4, description="encoder layers (encoder_layers)")
    n_decoder_layers: PositiveInt = Field(4, description="decoder layers (decoder_layers)")
    n_encoder_heads: PositiveInt = Field(6, description="encoder attention heads; must divide d_model")
    n_decoder_heads: PositiveInt = Field(
        6, description="decoder attention heads (self- and cross-attention); must divide d_model"
    )
    d_ff_encoder: PositiveInt = Field(1536, description="encoder feed-forward width (encoder_ffn_dim)")
    d_ff_decoder: PositiveInt = Field(1536, description="decoder feed-forward width (decoder_ffn_dim)")
    max_source_positions: PositiveInt = Field(
        1500,
        description="encoder positions: the encoder reads 2 x this many mel frames (30 s) and always runs over all "
        "of them",
    )
    max_target_positions: PositiveInt = Field(448, description="learned decoder positions: the longest N")
    activation: str = Field("gelu", description="feed-forward activation (activation_function)")
    tie_embeddings: bool = Field(True, description="proj_out's weight is the decoder's token embedding")
    head: Literal[tuple(CLASSES)] = Field(  # type: ignore[valid-type]
        "lm",
        description="lm (WhisperForConditionalGeneration), none (WhisperModel), causal_lm (WhisperForCausalLM: the "
        "decoder alone, its cross-attention built but not run) or audio_classification "
        "(WhisperForAudioClassification: the encoder alone, a projector, a mean over positions, a classifier)",
    )
    use_weighted_layer_sum: bool = Field(
        False, description="audio_classification: a learned softmax-weighted sum of the encoder's L_e + 1 hidden states"
    )
    classifier_proj_size: PositiveInt = Field(256, description="audio_classification: the projector's width")
    num_labels: NumLabels = num_labels_field("audio_classification: the classifier's outputs")

    @model_validator(mode="after")
    def _check(self) -> Self:
        check_side_heads(self, "WhisperAttention")
        if self.head != "causal_lm" and (self.d_model % 2 or self.d_model < 4):
            raise ValueError(
                f"d_model: the encoder's sinusoidal position table needs an even width of at least 4 (transformers' "
                f"sinusoids() fails on {self.d_model}); choose an even d_model of 4 or more"
            )
        check_activation(self.activation)
        return self


# ---- blocks ---------------------------------------------------------------------------------------------


def conv1d(name: str, c_in: Poly, c_out: Poly, positions: Poly, *, input_grad: bool, description: str) -> Block:
    """A ``Conv1d(c_in, c_out, kernel_size=3)`` with a bias, producing ``positions`` outputs: ``2 x 3 c_in c_out``
    FLOPs per output position, as FlopCounterMode counts a convolution (the bias is an addition). Its backward
    computes the weight's gradient, and the input's when the input needs one (not for the mel frames)."""
    weight = 3 * c_in * c_out
    flops = 2 * positions * weight
    return Block(
        name=name,
        kind="convolution",
        params=weight + c_out,
        approx=weight,
        flops=flops,
        backward_flops=(2 if input_grad else 1) * flops,
        prefill_flops=flops,
        decode_flops=ZERO,  # only the encoder holds one, and the encoder runs in prefill only
        description=description,
    )


def _heads(cfg: WhisperConfig, *, decoder: bool) -> Poly:
    """The heads of one side's attention: the shared ``h`` when both sides have as many, else ``h_e`` or ``h_d``."""
    if cfg.n_encoder_heads == cfg.n_decoder_heads:
        return symbol("h", cfg.n_encoder_heads)
    return DECODER_HEADS(cfg.n_decoder_heads) if decoder else ENCODER_HEADS(cfg.n_encoder_heads)


def _attention(
    name: str,
    d: Poly,
    *,
    heads: Poly,
    tokens_q: Poly,
    tokens_kv: Poly,
    causal: bool = False,
    cross: bool = False,
    description: str,
) -> Block:
    """WhisperAttention: q, k, v and out projections, d to d, with biases except on ``k_proj``; ``heads`` recorded on
    the block for the readers of the tree's head layout (the activation formula)."""
    block = attention(
        name, d, d, tokens_q=tokens_q, tokens_kv=tokens_kv, causal=causal, cross=cross, description=description
    )
    k_proj = linear("k_proj", d, d, bias=False, tokens=tokens_kv)
    if cross:  # the source's keys: computed in prefill, read from the cache in a decode step
        k_proj = replace(k_proj, decode_flops=ZERO)
    children = tuple(k_proj if c.name == "k_proj" else c for c in block.children)
    rebuilt = composite(name, block.kind, children, block.description)
    return replace(rebuilt, kv_cache=block.kv_cache, cross_kv_cache=block.cross_kv_cache, heads=heads, kv_heads=heads)


def _feed_forward(cfg: WhisperConfig, d: Poly, d_ff: Poly, tokens: Poly) -> list[Block]:
    return [
        layer_norm("feed_forward_norm", d, description="LayerNorm(d) before the feed-forward (final_layer_norm)"),
        feed_forward(
            "feed_forward", d, d_ff, activation=cfg.activation, tokens=tokens, description=f"fc1, {cfg.activation}, fc2"
        ),
    ]


def _encoder(cfg: WhisperConfig, d: Poly, d_ff: Poly) -> Block:
    """The audio encoder: always over its P_s positions, from 2 P_s mel frames."""
    M = MEL_BINS(cfg.num_mel_bins)
    P_s = SOURCE_POSITIONS(cfg.max_source_positions)
    L_e = symbol("L_e", cfg.n_encoder_layers)
    layer = composite(
        "layer",
        "encoder_layer",
        [
            layer_norm("self_attention_norm", d),
            _attention(
                "self_attention",
                d,
                heads=_heads(cfg, decoder=False),
                tokens_q=P_s,
                tokens_kv=P_s,
                description="multi-head self-attention over the encoder's positions (k_proj without bias)",
            ),
            *_feed_forward(cfg, d, d_ff, P_s),
        ],
        "pre-LN encoder layer: norm, self-attention, add; norm, feed-forward, add",
    )
    children = [
        conv1d(
            "conv1",
            M,
            d,
            2 * P_s,
            input_grad=False,
            description="Conv1d(num_mel_bins, d, kernel 3, padding 1) over the 2 P_s mel frames, GELU",
        ),
        conv1d(
            "conv2",
            d,
            d,
            P_s,
            input_grad=True,
            description="Conv1d(d, d, kernel 3, stride 2, padding 1): P_s positions, GELU",
        ),
        embedding(
            "position",
            P_s,
            d,
            role="position",
            description="sinusoidal positions: never trained, but an nn.Embedding weight, so a parameter",
        ),
        repeat(layer, L_e, name="layers"),
        layer_norm("final_norm", d, description="LayerNorm(d) closing the encoder (layer_norm)"),
    ]
    return composite("encoder", "stack", children, "audio encoder over 30 s of log-mel frames")


def _decoder(cfg: WhisperConfig, d: Poly, d_ff: Poly, V: Poly) -> Block:
    P_s = SOURCE_POSITIONS(cfg.max_source_positions)
    L_d = symbol("L_d", cfg.n_decoder_layers)
    cross = _attention(
        "cross_attention",
        d,
        heads=_heads(cfg, decoder=True),
        tokens_q=N,
        tokens_kv=P_s,
        cross=True,
        description="cross-attention to the encoder's P_s positions (k_proj without bias)",
    )
    cross_norm = layer_norm("cross_attention_norm", d, description="LayerNorm(d) (encoder_attn_layer_norm)")
    if cfg.head == "causal_lm":
        cross, cross_norm = cross_attention_not_run(cross, cross_norm, model_class="WhisperForCausalLM")
    layer = composite(
        "layer",
        "decoder_layer",
        [
            layer_norm("self_attention_norm", d),
            _attention(
                "self_attention",
                d,
                heads=_heads(cfg, decoder=True),
                tokens_q=N,
                tokens_kv=N,
                causal=True,
                description="causal multi-head self-attention (k_proj without bias)",
            ),
            cross_norm,
            cross,
            *_feed_forward(cfg, d, d_ff, N),
        ],
        "pre-LN decoder layer: norm, causal self-attention, add; norm, cross-attention, add; norm, feed-forward, add",
    )
    children = [
        embedding("token", V, d, role="token", description="token embeddings (embed_tokens)"),
        embedding(
            "position",
            TARGET_POSITIONS(cfg.max_target_positions),
            d,
            role="position",
            description="learned positions, max_target_positions rows",
        ),
        repeat(layer, L_d, name="layers"),
        layer_norm("final_norm", d, description="LayerNorm(d) closing the decoder (layer_norm)"),
    ]
    return composite("decoder", "stack", children, "text decoder")


def build(cfg: WhisperConfig) -> Block:
    d = symbol("d", cfg.d_model)
    V = symbol("V", cfg.vocab_size)
    d_ff_e, d_ff_d = feed_forward_widths(cfg)
    if cfg.head == "audio_classification":
        P_s = SOURCE_POSITIONS(cfg.max_source_positions)
        C = PROJECTION(cfg.classifier_proj_size)
        children = [_encoder(cfg, d, d_ff_e)]
        if cfg.use_weighted_layer_sum:
            children.append(
                learned_tensor(
                    "layer_weights",
                    symbol("L_e", cfg.n_encoder_layers) + 1,
                    leading=False,
                    description="L_e + 1 weights of the hidden states' softmax-weighted sum (element-wise: no FLOPs)",
                )
            )
        children += [
            linear("projector", d, C, tokens=P_s, description="Linear(d, d_p) on every encoder position"),
            linear("classifier", C, LABELS(cfg.num_labels), tokens=ONE, description="class scores of the mean"),
        ]
        root = composite("whisper", "model", children, "Whisper encoder with an audio classification head")
        return with_modules(root, reference_modules(cfg))
    if cfg.head == "causal_lm":  # the decoder alone; its class takes no logits_to_keep: every position's logits
        head = linear(
            "lm_head",
            d,
            V,
            bias=False,
            tied_to="decoder.token" if cfg.tie_embeddings else "",
            description="next-token logits of every position (proj_out)"
            + (", weight tied to the token embedding" if cfg.tie_embeddings else ""),
        )
        root = composite(
            "whisper", "model", [_decoder(cfg, d, d_ff_d, V), head], "Whisper decoder alone, as a causal LM"
        )
        return with_modules(root, reference_modules(cfg))
    children = [
        seq2seq_encoder(_encoder(cfg, d, d_ff_e)),  # generation: runs in prefill only
        seq2seq_decoder(_decoder(cfg, d, d_ff_d, V)),
    ]
    if cfg.head == "lm":
        children.append(
            lm_head(
                d,
                V,
                tied_to="decoder.token" if cfg.tie_embeddings else "",
                description="next-token logits (proj_out)"
                + (", weight tied to the token embedding" if cfg.tie_embeddings else ""),
            )
        )
    root = composite("whisper", "model", children, "Whisper speech encoder-decoder")
    return with_modules(root, reference_modules(cfg))


def reference_modules(cfg: WhisperConfig) -> dict[str, tuple[str, ...]]:
    """Where each block's parameters live in the transformers class `reference` builds (for `archzoo verify`):
    block path -> submodule names, inside a layer relative to the layer."""
    base = "model." if cfg.head in ("lm", "causal_lm") else ""
    table: dict[str, tuple[str, ...]] = {
        "whisper": ("",),
        "whisper.lm_head": ("proj_out",),
        "whisper.layer_weights": ("layer_weights",),
        "whisper.projector": ("projector",),
        "whisper.classifier": ("classifier",),
        "whisper.encoder.conv1": (f"{base}encoder.conv1",),
        "whisper.encoder.conv2": (f"{base}encoder.conv2",),
    }
    for side in ("encoder", "decoder"):
        table |= stack_modules(
            f"whisper.{side}",
            f"{base}{side}",
            parts=BART_STACK_PARTS,
            layer=bart_layer_modules(decoder=side == "decoder"),
        )
    if cfg.head == "causal_lm":  # WhisperForCausalLM wraps the decoder: model.decoder
        table["whisper.decoder"] = ("model.decoder",)
    return table


def reference_inputs(model: Any, seq_len: int, device: str) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """One forward pass of batch 1 of a transformers Whisper class: the 30 s of log-mel frames its encoder
    requires (``num_mel_bins`` by ``max_source_positions`` times the two convolutions' strides, read off the
    built encoder) where it has an encoder, and ``seq_len`` decoder tokens where it has a decoder
    (``decoder_input_ids``, or ``input_ids`` for the decoder alone)."""
    import torch

    taken = inspect.signature(model.forward).parameters
    kwargs: dict[str, Any] = {}
    if "input_features" in taken:
        encoder = model.get_encoder() if hasattr(model, "get_encoder") else model.encoder
        frames = encoder.max_source_positions * encoder.conv1.stride[0] * encoder.conv2.stride[0]
        # in the weights' dtype, as a feature extractor's output is cast for a 16-bit model (a conv refuses a mix)
        kwargs["input_features"] = torch.zeros(
            1, encoder.conv1.in_channels, frames, device=device, dtype=encoder.conv1.weight.dtype
        )
    tokens = torch.zeros(1, seq_len, dtype=torch.long, device=device)
    if "decoder_input_ids" in taken:
        kwargs["decoder_input_ids"] = tokens
    elif "input_features" not in taken:  # WhisperForCausalLM: the decoder alone reads the tokens
        kwargs["input_ids"] = tokens
    return (), kwargs


def reference(cfg: WhisperConfig) -> Reference:
    """transformers' Whisper class for the head, from a WhisperConfig with the same keys."""
    return Reference(
        library="transformers",
        target=f"transformers.{CLASSES[cfg.head]}",
        config_class="transformers.WhisperConfig",
        kwargs=dict(
            vocab_size=cfg.vocab_size,
            num_mel_bins=cfg.num_mel_bins,
            **side_kwargs(cfg),
            max_source_positions=cfg.max_source_positions,
            max_target_positions=cfg.max_target_positions,
            activation_function=cfg.activation,
            tie_word_embeddings=cfg.tie_embeddings,
            use_weighted_layer_sum=cfg.use_weighted_layer_sum,
            classifier_proj_size=cfg.classifier_proj_size,
            num_labels=cfg.num_labels,
            pad_token_id=None,  # the default padding index, 50256, lies beyond a small vocabulary
        ),
        inputs="archzoo_whisper.reference_inputs",
    )


def _seq_len_note(cfg: WhisperConfig) -> str:
    if cfg.head == "audio_classification":
        return (
            f"N changes nothing here: the classifier reads 30 s of audio, the encoder's {cfg.max_source_positions} "
            "positions, and no tokens"
        )
    return (
        f"N is the number of decoder tokens ({cfg.max_target_positions} unless --seq-len says otherwise); the "
        f"encoder always runs over its {cfg.max_source_positions} positions (30 s of audio)"
    )


ARCHITECTURE = Architecture(
    name="whisper",
    title="Whisper",
    summary="Speech encoder-decoder: two convolutions over 30 s of log-mel frames and a pre-LN encoder over its "
    "1,500 positions, and a pre-LN text decoder with cross-attention, as transformers' "
    "WhisperForConditionalGeneration; N is the number of decoder tokens.",
    citation="Radford et al. Robust Speech Recognition via Large-Scale Weak Supervision. ICML 2023. arXiv:2212.04356",
    config_model=WhisperConfig,
    build=build,
    seq_len=lambda cfg: cfg.max_target_positions,
    seq_len_note=_seq_len_note,
    # the audio classifier reads no tokens, so N is not bounded by the decoder's positions there
    max_seq_len=lambda cfg: MAX_SIZE if cfg.head == "audio_classification" else cfg.max_target_positions,
    reference=reference,
)


# ---- Hugging Face config.json: WhisperConfig's keys, as transformers 5.23 defines them -------------------

_GENERATION = "a generation setting read by WhisperGenerationMixin.generate; it changes no module"
_SPEC_AUGMENT = (
    "SpecAugment: zeroes spans of the mel frames in training only (an assignment, no parameters and no FLOPs)"
)

HF_WHISPER = HFTable(
    model_type="whisper",
    config_class="WhisperConfig",
    defaults=dict(
        vocab_size=51865,
        num_mel_bins=80,
        encoder_layers=4,
        encoder_attention_heads=6,
        decoder_layers=4,
        decoder_attention_heads=6,
        decoder_ffn_dim=1536,
        encoder_ffn_dim=1536,
        encoder_layerdrop=0.0,
        decoder_layerdrop=0.0,
        decoder_start_token_id=50257,
        use_cache=True,
        activation_function="gelu",
        d_model=384,
        dropout=0.0,
        attention_dropout=0.0,
        activation_dropout=0.0,
        init_std=0.02,
        scale_embedding=False,
        max_source_positions=1500,
        max_target_positions=448,
        pad_token_id=50256,
        bos_token_id=50256,
        eos_token_id=50256,
        suppress_tokens=None,
        begin_suppress_tokens=(220, 50256),
        use_weighted_layer_sum=False,
        classifier_proj_size=256,
        apply_spec_augment=False,
        mask_time_prob=0.05,
        mask_time_length=10,
        mask_time_min_masks=2,
        mask_feature_prob=0.0,
        mask_feature_length=10,
        mask_feature_min_masks=0,
        median_filter_width=7,
        tie_word_embeddings=True,
    ),
    aliases={"num_key_value_heads": "encoder_attention_heads", **ATTRIBUTE_MAP},
    read={
        "vocab_size": "vocab_size",
        "num_mel_bins": "num_mel_bins",
        **STACK_KEYS,
        "max_source_positions": "max_source_positions",
        "max_target_positions": "max_target_positions",
        "activation_function": "activation",
        "tie_word_embeddings": "tie_embeddings",
        "use_weighted_layer_sum": "use_weighted_layer_sum",
        "classifier_proj_size": "classifier_proj_size",
        "num_labels": "num_labels",
        # an index, not a size; read only to refuse what the decoder's nn.Embedding refuses
        "pad_token_id": "(checked: inside the vocabulary, for the classes with a decoder)",
    },
    ignored={
        **TRAINING_ONLY,
        **WEIGHT_INIT_AND_TOKEN_IDS,
        "use_cache": USE_CACHE,
        "scale_embedding": f"transformers {TRANSFORMERS_VERSION}'s Whisper computes embed_scale from it and never "
        "multiplies by it; a scale would be element-wise anyway (no parameters, no FLOPs)",
        "suppress_tokens": _GENERATION,
        "begin_suppress_tokens": _GENERATION,
        "median_filter_width": "smooths the cross-attention weights when generate computes token timestamps",
        # no field of WhisperConfig, but in every config.json the Hub's Whisper models were first written with
        "forced_decoder_ids": "the language and task tokens WhisperGenerationMixin.generate forces (read by "
        "generation_whisper only); it changes no module",
        "apply_spec_augment": _SPEC_AUGMENT,
        "mask_time_prob": _SPEC_AUGMENT,
        "mask_time_length": _SPEC_AUGMENT,
        "mask_time_min_masks": _SPEC_AUGMENT,
        "mask_feature_prob": _SPEC_AUGMENT,
        "mask_feature_length": _SPEC_AUGMENT,
        "mask_feature_min_masks": _SPEC_AUGMENT,
    },
    refused={},
    base_class="WhisperModel",
    classes=head_classes(CLASSES),
)


@hf_reader(HF_WHISPER)
def _from_whisper(hf: dict[str, Any], model_class: str = "WhisperModel") -> dict[str, Any]:
    if model_class != "WhisperForAudioClassification":  # the encoder-only class has no token embedding
        check_padding_index(hf["vocab_size"], hf["pad_token_id"])
    return table_values(hf, HF_WHISPER)


register_architectures = architectures_hook(ARCHITECTURE)
register_hf_readers = hf_readers_hook({"whisper": (_from_whisper, None)})
