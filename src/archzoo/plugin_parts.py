"""The parts every plugin registers alike, whatever its family: the ``head`` field and its transformers classes, the
label count K, a config.json table's values as archzoo keys, and the registration hooks (`architectures_hook`,
`hf_readers_hook`). Decoders' own parts are in `archzoo.decoder_parts`, encoder-decoders' in `archzoo.seq2seq_parts`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Annotated, Any

from pydantic import Field, NonNegativeInt

from .architecture import Architecture, TokenIndex
from .hf_vocabulary import HFTable
from .hookspecs import hookimpl
from .symbols import declare_symbol

__all__ = [
    "LABELS",
    "LABELS_WORDS",
    "NumLabels",
    "PadTokenId",
    "architectures_hook",
    "describe_heads",
    "head_classes",
    "head_field",
    "hf_readers_hook",
    "num_labels_field",
    "pad_token_id_field",
    "table_values",
]

#: The one symbol the classification heads add: K, the labels (num_labels).
LABELS = declare_symbol("K", latex="K", meaning="labels (num_labels)", order=33)

#: What the heads every transformers decoder offers put on top of it, as the ``head`` field describes them.
_HEAD_WORDS = {
    "sequence_classification": "a bias-free score layer on every token, the last non-padding one's kept",
    "token_classification": "a score layer with bias on every token",
    "question_answering": "Linear(d_model, 2) on every token",
}


def describe_heads(classes: Mapping[str, str], *, prefix: str = "", note: str = "", **words: str) -> str:
    """The ``head`` field's description: each head with its transformers class (``lm``, ``none``) or what it puts on
    top (``words``, else the usual words for a decoder's score layers), then ``note`` and ``: {prefix}For...`` when
    given."""
    parts = [f"{head} ({words.get(head) or _HEAD_WORDS.get(head) or name})" for head, name in classes.items()]
    text = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " or " + parts[-1]
    return text + (f", {note}" if note else "") + (f": {prefix}For..." if prefix else "")


def head_field(classes: Mapping[str, str], *, prefix: str = "", note: str = "", **words: str) -> Any:
    """The ``head`` field of a family whose heads are ``classes`` (archzoo's head -> transformers' class), ``lm``
    by default, described by `describe_heads`: ``head: Literal[tuple(CLASSES)] = head_field(CLASSES)``."""
    return Field("lm", description=describe_heads(classes, prefix=prefix, note=note, **words))


#: how most decoders' ``num_labels`` reads
LABELS_WORDS = (
    "outputs of the sequence_classification and token_classification heads (transformers' num_labels); "
    "question_answering always has 2"
)


#: The type of the ``num_labels`` key, K: any count from 0. transformers builds a classifier of 0 outputs
#: (``Linear(d, 0)``: no weights, no FLOPs) and runs it, so archzoo counts it too; a config.json's negative count, which
#: transformers reads as no labels at all (``range(num_labels)``), is read so by `archzoo.hf_config`:
#: ``num_labels: NumLabels = num_labels_field()``.
NumLabels = NonNegativeInt


def num_labels_field(description: str = LABELS_WORDS, default: int = 2) -> Any:
    """The ``num_labels`` field, K (typed `NumLabels`): 2 labels by default, as transformers' PretrainedConfig has
    (``default``: a configuration class's own, as BartConfig's 3)."""
    return Field(default, description=description)


#: The type of the ``pad_token_id`` key: a token id or null, bounded as torch compares ids (`TokenIndex`), not as a
#: size: ``pad_token_id: PadTokenId = pad_token_id_field()``.
PadTokenId = Annotated[int | None, TokenIndex()]


def pad_token_id_field(default: int | None = None, *, no_padding_row: str = "") -> Any:
    """The ``pad_token_id`` field (typed `PadTokenId`) of a decoder whose sequence classifier keeps the last token that
    is not padding. Where the token embedding has a padding row, the id must be inside the vocabulary, as
    ``nn.Embedding`` requires (the configuration's validator calls `archzoo.hf_vocabulary.check_padding_index`). Where
    it has none (``no_padding_row`` names the family: GPT-NeoX, GPT-J) the id is only compared with the input's, so
    transformers builds and runs any integer torch can compare (it warns about one outside the vocabulary, which
    configurations on the Hub hold, such as -1), and so does archzoo."""
    usage = "the sequence classifier keeps the last token that is not padding, found with an index tensor (null: the last token)"
    if no_padding_row:
        description = (
            f"the padding token (pad_token_id; null: none): {usage}; {no_padding_row}'s token embedding has no padding "
            "row, so any integer runs"
        )
    else:
        description = (
            "the padding token (pad_token_id; null: none), inside the vocabulary (-1 counts from its end, as "
            f"nn.Embedding's padding index does): {usage}"
        )
    return Field(default, description=description)


def head_classes(classes: Mapping[str, str]) -> dict[str, dict[str, str]]:
    """An `HFTable`'s ``classes`` from a family's head -> class map: each class with the head it sets, the base
    model (head ``none``) first."""
    return {name: {"head": head} for head, name in sorted(classes.items(), key=lambda item: item[0] != "none")}


def table_values(hf: Mapping[str, Any], table: HFTable, **own: Any) -> dict[str, Any]:
    """The archzoo keys of a config.json's values (resolved as transformers resolves them), as ``table.read`` maps
    them: each read key's value under its archzoo key, a key the configuration class does not define (such as a
    ``head_dim`` the model reads when a file sets it) None when absent. Keys read only to be checked (``(checked:
    ...)``) set nothing; ``own`` gives the keys the plugin computes itself (a fraction from ``rope_parameters``)."""
    values: dict[str, Any] = {}
    for native, target in table.read.items():
        if target.startswith("(") or target in own:
            continue
        values[target] = hf[native] if native in table.defaults or native == "num_labels" else hf.get(native)
    return {**values, **own}


def architectures_hook(*architectures: Architecture) -> Callable[[Callable[[Architecture], None]], None]:
    """The plugin's ``register_architectures`` hook, registering ``architectures``:
    ``register_architectures = architectures_hook(ARCHITECTURE)``."""

    @hookimpl
    def register_architectures(register: Callable[[Architecture], None]) -> None:
        for architecture in architectures:
            register(architecture)

    return register_architectures


def hf_readers_hook(
    readers: Mapping[str, tuple[Callable[..., dict[str, Any]], str | None]],
) -> Callable[[Callable[..., None]], None]:
    """The plugin's ``register_hf_readers`` hook: each Hugging Face ``model_type`` with its reader and the
    architecture it reads into (None: the plugin's only one),
    ``register_hf_readers = hf_readers_hook({"stablelm": (_from_stablelm, "stablelm")})``."""

    @hookimpl
    def register_hf_readers(register: Callable[..., None]) -> None:
        for model_type, (reader, architecture) in readers.items():
            register(model_type, reader, architecture=architecture)

    return register_hf_readers
