"""The transformers vocabulary plugins describe their model types in: `HFTable`, `hf_reader` and the shared reasons.

A model type's plugin describes transformers' configuration class as plain data, an `HFTable`: its own fields with
their defaults, its aliases (transformers' ``attribute_map``), what each key becomes in archzoo (``read``), which
keys change no parameter or FLOP and why (``ignored``), which are refused and why (``refused``), and the model
classes archzoo counts. The plugin attaches the table to its reader function with `hf_reader` and registers the
reader with the ``register_hf_readers`` hook. The keys every ``PretrainedConfig`` understands have their
dispositions here, once (`COMMON_KEYS`).

Plain data and nothing else: no host, no file reading, no pydantic, so that a plugin (and the host checking what a
plugin registers) imports it for nothing. Reading a ``config.json`` with these tables is `archzoo.hf_reading`;
plugins import both through `archzoo.hf_config`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "ACTIVATION_ONLY",
    "COMMON_ACCEPTED",
    "COMMON_DEFAULTS",
    "COMMON_KEYS",
    "DROPOUT",
    "INITIALISATION",
    "NORM_EPSILON",
    "NOT_READ",
    "ROPE_TYPES",
    "TOKEN_ID",
    "TRANSFORMERS_VERSION",
    "USE_CACHE",
    "Disposition",
    "HFTable",
    "check_padding_index",
    "hf_reader",
    "hf_table",
    "rope_type",
]

#: The transformers release whose classes the tables describe.
TRANSFORMERS_VERSION = "5.23"

# Reasons shared by the plugins' tables: why a key changes no parameter and no FLOP.
DROPOUT = "dropout: no parameters, and FlopCounterMode counts no FLOPs for it"
INITIALISATION = "initialisation of the weights: their values, not their number"
NORM_EPSILON = "LayerNorm epsilon: a constant, not a parameter"
TOKEN_ID = "a special token's id: an index into the vocabulary, not a parameter"
USE_CACHE = "keeps keys and values between generation steps: no parameters, and one forward pass is the same"
ACTIVATION_ONLY = "an activation: no parameters, and FlopCounterMode counts no FLOPs for it"
NOT_READ = f"not read by transformers {TRANSFORMERS_VERSION} (a key that older releases or the original code wrote)"


@dataclass(frozen=True)
class HFTable:
    """What archzoo knows about one Hugging Face ``model_type``, as plain data.

    ``defaults`` holds every field the transformers configuration class adds to ``PretrainedConfig``,
    with its default; ``aliases`` is the class's ``attribute_map`` (alias -> native key); ``read`` maps a
    native key to the archzoo key it sets (``num_labels`` is the label count, resolved from ``num_labels``
    or ``id2label``); ``ignored`` maps a key to why it changes no count; ``refused`` maps a key to the
    values archzoo accepts for it and why others are refused. ``classes`` maps each model class archzoo
    counts to the archzoo keys it sets; ``base_class`` is the one ``AutoModel`` builds;
    ``unsupported_classes`` says why other classes of the type are not counted.
    """

    model_type: str
    config_class: str
    defaults: Mapping[str, Any]
    aliases: Mapping[str, str]
    read: Mapping[str, str]
    ignored: Mapping[str, str]
    refused: Mapping[str, tuple[tuple[Any, ...], str]]
    base_class: str
    classes: Mapping[str, Mapping[str, Any]]
    unsupported_classes: Mapping[str, str] = field(default_factory=dict)
    #: the label count of a file that names neither num_labels nor id2label (BartConfig's is 3)
    default_num_labels: int = 2
    #: why a config.json of the class's defaults alone cannot be counted, when transformers cannot run those
    #: defaults either (DeepseekV2Config's give every layer experts and no experts per token); empty: it can,
    #: and `archzoo.testing.check_plugin` counts one for every class
    defaults_unrunnable: str = ""
    #: the model's rotary embedding reads settings per layer type (ModernBERT's global and local layers), so
    #: rope_parameters nested under full_attention / sliding_attention is read by the plugin, not refused
    rope_per_layer_type: bool = False
    #: read keys that transformers does not use when another key is given (not null): key -> that key.
    #: ModernBertConfig computes layer_types from global_attn_every_n_layers only when layer_types is null, so
    #: ``--explain`` says such a key is not used there instead of "read as"
    superseded: Mapping[str, str] = field(default_factory=dict)
    #: sub-configurations: a field whose value is an object of another configuration class's keys (CLIPConfig's
    #: text_config and vision_config), read with that class's own table: each of its keys read, ignored or
    #: refused as in a file of that class, reported as ``text_config.hidden_size``; the reader receives the
    #: object resolved (defaults filled in), null or absent reading as the class's defaults
    nested: Mapping[str, HFTable] = field(default_factory=dict)
    #: legacy keys that replace a sub-configuration's fields when the file is loaded (CLIPConfig's
    #: text_config_dict): key -> the nested field it replaces, as transformers does: the sub-configuration class
    #: built from this key's object alone (its defaults filling the fields it does not give) overwrites every
    #: field of the nested object
    nested_overrides: Mapping[str, str] = field(default_factory=dict)
    #: classes built from one sub-configuration alone (CLIPTextModel of a clip file): class -> its nested key.
    #: from_pretrained loads such a class's configuration from the file's object under that key (the sub-class's
    #: base_config_key), as written, so it is read as a file of the sub-configuration's own model type
    class_sub_configs: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        groups = {"read": set(self.read), "ignored": set(self.ignored), "refused": set(self.refused)}
        for a, b in (("read", "ignored"), ("read", "refused"), ("ignored", "refused")):
            if both := groups[a] & groups[b]:
                raise ValueError(f"HF table {self.model_type!r}: {sorted(both)} both {a} and {b}")
        if missing := set(self.defaults) - set().union(*groups.values()) - set(self.nested):
            raise ValueError(f"HF table {self.model_type!r}: fields without a disposition: {sorted(missing)}")
        if twice := set(self.nested) & set().union(*groups.values()):
            raise ValueError(f"HF table {self.model_type!r}: {sorted(twice)} both nested and read, ignored or refused")
        if unknown := set(self.nested) - set(self.defaults):
            raise ValueError(f"HF table {self.model_type!r}: nested keys that are no field: {sorted(unknown)}")
        if bad := {c: k for c, k in self.class_sub_configs.items() if c not in self.classes or k not in self.nested}:
            raise ValueError(f"HF table {self.model_type!r}: class_sub_configs must map a class to a nested key: {bad}")
        if bad := {k: w for k, w in self.superseded.items() if k not in self.read or w not in self.read}:
            raise ValueError(f"HF table {self.model_type!r}: superseded must map a read key to a read key: {bad}")
        for key, target in self.nested_overrides.items():
            if target not in self.nested or key in self.defaults or key in set().union(*groups.values()):
                raise ValueError(
                    f"HF table {self.model_type!r}: nested override {key!r} must be no field of the class and "
                    f"replace a nested key, got {target!r}"
                )
        if bad := {a: n for a, n in self.aliases.items() if n not in self.defaults}:
            raise ValueError(f"HF table {self.model_type!r}: aliases of unknown fields: {bad}")
        if self.base_class not in self.classes:
            raise ValueError(f"HF table {self.model_type!r}: base class {self.base_class!r} is not in classes")


def check_padding_index(vocab: Any, pad: Any) -> None:
    """Refuse a ``pad_token_id`` outside a vocabulary of ``vocab`` tokens, as transformers' token embedding does
    (values of another type are left to the configuration model, which names their key)."""
    whole = [isinstance(v, int) and not isinstance(v, bool) for v in (vocab, pad)]
    if all(whole) and not -vocab <= pad < vocab:
        raise ValueError(
            f"pad_token_id: {pad:,} is outside the vocabulary of {vocab:,} tokens, and transformers' "
            "token embedding refuses such a padding index; set pad_token_id to null or to a token id"
        )


def check_quantization(quantization: Any, method: str, why: str) -> None:
    """Refuse a ``quantization_config`` (the common key every table refuses, which a family whose released files carry
    one reads) whose ``quant_method`` is not the family's ``method``: archzoo counts the unquantized model, which that
    method leaves at every weight's shape or which transformers builds from the file (``why`` says which)."""
    if quantization is None:
        return
    found = quantization.get("quant_method") if isinstance(quantization, dict) else None
    if found != method:
        raise ValueError(
            f"quantization_config: quant_method {json.dumps(found)[:40]} packs weights into tensors of other shapes; "
            f"archzoo counts the unquantized model and accepts only {why}; remove the key to count the unquantized "
            "model"
        )


def hf_reader(table: HFTable) -> Callable[[Callable], Callable]:
    """Attach ``table`` to a reader ``fn(values, model_class) -> archzoo keys`` (``fn.hf_table``).

    The reader receives the file's values resolved like transformers (aliases applied, defaults filled in,
    ``num_labels`` counted) and the model class being counted; it returns archzoo keys, and raises
    ValueError naming the Hugging Face key for a value it cannot count exactly.
    """

    def attach(fn: Callable) -> Callable:
        fn.hf_table = table  # type: ignore[attr-defined]
        return fn

    return attach


def hf_table(reader: Callable) -> HFTable | None:
    """The table a reader declares, or None for a reader that declares none."""
    table = getattr(reader, "hf_table", None)
    return table if isinstance(table, HFTable) else None


# ---- the keys every PretrainedConfig understands ----------------------------------------------------

#: ``PretrainedConfig``'s own fields and their defaults in transformers 5.23 (a test checks them).
COMMON_DEFAULTS: dict[str, Any] = {
    "transformers_version": None,
    "architectures": None,
    "output_hidden_states": False,
    "return_dict": True,
    "dtype": None,
    "chunk_size_feed_forward": 0,
    "is_encoder_decoder": False,
    "id2label": None,
    "label2id": None,
    "problem_type": None,
}

_GENERATION = "a generation setting: transformers moves it to GenerationConfig; it changes no module"
_GENERATION_KEYS = (
    "assistant_confidence_threshold",
    "assistant_lookbehind",
    "bad_words_ids",
    "begin_suppress_tokens",
    "diversity_penalty",
    "do_sample",
    "early_stopping",
    "encoder_no_repeat_ngram_size",
    "encoder_repetition_penalty",
    "epsilon_cutoff",
    "eta_cutoff",
    "exponential_decay_length_penalty",
    "forced_bos_token_id",
    "forced_eos_token_id",
    "length_penalty",
    "max_length",
    "min_length",
    "no_repeat_ngram_size",
    "num_assistant_tokens",
    "num_assistant_tokens_schedule",
    "num_beam_groups",
    "num_beams",
    "num_return_sequences",
    "output_scores",
    "remove_invalid_values",
    "repetition_penalty",
    "return_dict_in_generate",
    "suppress_tokens",
    "target_lookbehind",
    "temperature",
    "top_k",
    "top_p",
    "typical_p",
)

Disposition = Literal["read", "ignored", "refused"]

#: Every key any ``config.json`` may carry whatever its model type: ``(disposition, why)``; for a refused
#: key, the values accepted. A model type's own table takes precedence over this one.
COMMON_KEYS: dict[str, tuple[Disposition, str]] = {
    "model_type": ("read", "selects the model type, and with it the table of keys below"),
    "architectures": ("read", "--hf-class auto counts its first class; otherwise only a note of the classes saved"),
    "num_labels": (
        "read",
        "the number of labels of a classifier head; wins over id2label's length, as in transformers",
    ),
    "id2label": ("read", "its length is the number of labels of a classifier head (unless num_labels is given)"),
    "label2id": ("ignored", "the reverse of id2label; transformers takes the label count from id2label or num_labels"),
    "_num_labels": ("ignored", "transformers 2.x's label count; transformers 5.23 reads id2label or num_labels"),
    "problem_type": ("ignored", "chooses the loss of a classifier head, not its size"),
    "transformers_version": (
        "ignored",
        "the release that wrote the file; archzoo counts what transformers 5.23 builds",
    ),
    "_name_or_path": ("ignored", "where the file was loaded from"),
    "name_or_path": ("ignored", "where the file was loaded from"),
    "_commit_hash": ("ignored", "where the file was loaded from"),
    "output_hidden_states": ("ignored", "what the forward pass returns, not what it computes"),
    "output_attentions": ("ignored", "what the forward pass returns, not what it computes"),
    "return_dict": ("ignored", "what the forward pass returns, not what it computes"),
    "torchscript": ("ignored", "an export flag of older releases"),
    "dtype": ("ignored", "the precision the weights are stored in; archzoo reports the memory at every precision"),
    "torch_dtype": (
        "ignored",
        "the precision the weights are stored in; archzoo reports the memory at every precision",
    ),
    "use_bfloat16": (
        "ignored",
        "the precision the weights are stored in; archzoo reports the memory at every precision",
    ),
    "tf_legacy_loss": ("ignored", "a TensorFlow loss flag of older releases"),
    "xla_device": ("ignored", "a device flag of older releases"),
    "chunk_size_feed_forward": ("ignored", "runs the feed-forward on chunks of tokens: the same weights and FLOPs"),
    "is_encoder_decoder": (
        "ignored",
        "marks encoder-decoder composites; these classes build the same modules either way",
    ),
    "cross_attention_hidden_size": (
        "ignored",
        "used only when the model is the decoder of an encoder-decoder composite",
    ),
    "tie_encoder_decoder": ("ignored", "used only by encoder-decoder composites"),
    "is_decoder": ("ignored", "not read by this model type's classes"),
    "add_cross_attention": ("ignored", "not read by this model type's classes"),
    "tie_word_embeddings": ("ignored", "this model type has no output layer to tie to an input embedding"),
    "finetuning_task": ("ignored", "a note of the task the weights were trained for"),
    "tokenizer_class": ("ignored", "which tokenizer to load"),
    "prefix": ("ignored", "a text prefix for pipelines"),
    "task_specific_params": ("ignored", "settings for pipelines, not part of the model"),
    "pad_token_id": ("ignored", TOKEN_ID),
    "bos_token_id": ("ignored", TOKEN_ID),
    "eos_token_id": ("ignored", TOKEN_ID),
    "sep_token_id": ("ignored", TOKEN_ID),
    "cls_token_id": ("ignored", TOKEN_ID),
    "mask_token_id": ("ignored", TOKEN_ID),
    "decoder_start_token_id": ("ignored", TOKEN_ID),
    "use_cache": ("ignored", USE_CACHE),
    "output_past": ("ignored", "transformers 2.x's name for use_cache: " + USE_CACHE),
    "gradient_checkpointing": ("ignored", "recomputes activations during training: the same weights and forward FLOPs"),
    "attn_implementation": (
        "ignored",
        "the attention kernel: archzoo counts the eager arithmetic, which a fused kernel also does",
    ),
    "_attn_implementation": (
        "ignored",
        "the attention kernel: archzoo counts the eager arithmetic, which a fused kernel also does",
    ),
    "_attn_implementation_internal": (
        "ignored",
        "the attention kernel: archzoo counts the eager arithmetic, which a fused kernel also does",
    ),
    "experts_implementation": (
        "ignored",
        "the mixture-of-experts kernel: archzoo counts each expert's eager matmuls on the tokens routed to it, "
        "the work a fused kernel also does (and none for a model type without experts)",
    ),
    "tie_last_hidden_states": ("ignored", "which hidden state the forward pass returns"),
    "pruned_heads": (
        "refused",
        "a pruned checkpoint holds fewer attention weights than the class transformers 5.23 "
        "builds from this file (it no longer prunes heads)",
    ),
    "per_layer_config": (
        "refused",
        "per-layer overrides make the layers differ, which archzoo's layer stacks do not "
        "model (and transformers' classes of these types cannot build)",
    ),
    "auto_map": (
        "refused",
        "names custom model code (trust_remote_code); for a model type transformers builds natively it is "
        "ignored, as transformers ignores it without trust_remote_code, and archzoo counts transformers' own "
        "class; a file of any other model type is refused",
    ),
    "quantization_config": (
        "refused",
        "quantized weights are packed into other tensors; archzoo counts the "
        "unquantized model; remove the key to count it",
    ),
    **{key: ("ignored", _GENERATION) for key in _GENERATION_KEYS},
}

#: For a refused common key, the values that are accepted after all (the key's neutral values).
COMMON_ACCEPTED: dict[str, tuple[Any, ...]] = {"pruned_heads": (None, {}), "per_layer_config": (None, {})}


#: the rotary types transformers 5.23 builds (ROPE_INIT_FUNCTIONS and "default")
ROPE_TYPES = ("default", "linear", "dynamic", "yarn", "longrope", "llama3", "proportional")


def rope_type(rope: Any, config_class: str) -> str | None:
    """The rotary type a file's resolved ``rope_parameters`` name (None for null), refusing a value that is not an
    object and a type transformers does not build, in the words every plugin's reader uses."""
    if rope is None:
        return None
    if not isinstance(rope, dict):
        raise ValueError(
            f'rope_parameters: expected an object such as {{"rope_type": "default"}} or null, got '
            f"{json.dumps(rope)[:60]}"
        )
    kind = rope.get("rope_type", rope.get("type", "default"))
    if kind not in ROPE_TYPES:
        raise ValueError(
            f"rope_parameters: rope_type {json.dumps(kind)[:60]} is not one transformers' {config_class} accepts; "
            f"expected one of {', '.join(ROPE_TYPES)}"
        )
    return str(kind)
