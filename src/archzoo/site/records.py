"""The record of a registry model as data: one definition of every field, read by the site's table and
downloads (``models.json``, ``models.csv``) and by ``archzoo list --json``/``--csv``.

Each field is defined once, by name, as a function of the model (`FIELDS`); a record is a choice of fields
in an order. The CLI lists from the registry index, whose rows carry the fields every record shares
(`RecordSource`); the site's record adds what only a computed view holds (FLOPs, the KV cache, active
parameters). Both say the difference from the published figure in the same words: ``difference`` in
parameters, and the gap as ``difference_relative`` (a fraction, the site's) or ``difference_pct`` (a
percentage, the CLI's), both from the one ``gap`` of the entry.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

from ..report import human_count

__all__ = ["FIELDS", "LIST_FIELDS", "MODEL_FIELDS", "RecordSource", "list_record", "model_record", "record"]


class RecordSource(Protocol):
    """What every record is made from: a registry index row (`archzoo.registry_index.IndexRow`) or a
    site view (`archzoo.site.views.ModelView`) alike."""

    @property
    def id(self) -> str: ...
    @property
    def title(self) -> str: ...
    @property
    def architecture(self) -> str: ...
    @property
    def year(self) -> int: ...
    @property
    def tags(self) -> Sequence[str]: ...
    @property
    def params(self) -> int: ...
    @property
    def published(self) -> str | None: ...
    @property
    def published_value(self) -> int | None: ...
    @property
    def gap(self) -> float | None: ...
    @property
    def status(self) -> str: ...
    @property
    def reason(self) -> str | None: ...


def _difference(m: RecordSource) -> int | None:
    """Exact minus published parameters; None without a published figure."""
    return None if m.published_value is None else m.params - m.published_value


def _relative(gap: float | None, scale: float, digits: int) -> float | None:
    return None if gap is None else round(scale * gap, digits)


#: Every field of a record, by name: how it is read off a model. The shared fields take any
#: `RecordSource`; the others a site view (`ModelView`), which has every attribute they read.
FIELDS: dict[str, Callable[[Any], Any]] = {
    "id": lambda m: m.id,
    "title": lambda m: m.title,
    "architecture": lambda m: m.architecture,
    "year": lambda m: m.year,
    "tags": lambda m: list(m.tags),
    "params": lambda m: m.params,
    "params_human": lambda m: human_count(m.params),
    "published": lambda m: m.published,
    "published_value": lambda m: m.published_value,
    "difference": _difference,
    "difference_relative": lambda m: _relative(m.gap, 1, 6),
    "difference_pct": lambda m: _relative(m.gap, 100, 3),
    "status": lambda m: m.status,
    "reason": lambda m: m.reason,
    # a computed view's only
    "non_embedding_params": lambda m: m.non_embedding,
    "active_params": lambda m: m.active_params,
    "published_active": lambda m: m.published_active,
    "published_active_value": lambda m: m.published_active_value,
    "active_difference": lambda m: m.active_difference,
    "active_difference_relative": lambda m: _relative(m.active_gap, 1, 6),
    "active_status": lambda m: m.active_status,
    "seq_len": lambda m: m.seq_len,
    "forward_flops": lambda m: m.flops,
    "attention_flops": lambda m: m.attention_flops,
    "kv_cache_elements_per_token": lambda m: m.kv_elements,
    "source": lambda m: m.source_path,
    "url": lambda m: f"models/{m.id}/",
}

#: The record of the site's all-models table, ``models.json`` and ``models.csv``, in their order.
MODEL_FIELDS = (
    "id",
    "title",
    "architecture",
    "year",
    "tags",
    "params",
    "params_human",
    "non_embedding_params",
    "published",
    "published_value",
    "difference",
    "difference_relative",
    "status",
    "reason",
    "active_params",
    "published_active",
    "published_active_value",
    "active_difference",
    "active_difference_relative",
    "active_status",
    "seq_len",
    "forward_flops",
    "attention_flops",
    "kv_cache_elements_per_token",
    "source",
    "url",
)

#: The record of ``archzoo list --json`` and ``--csv``, in their order: fields of a `RecordSource` only.
LIST_FIELDS = (
    "id",
    "architecture",
    "title",
    "year",
    "params",
    "params_human",
    "published",
    "published_value",
    "difference",
    "difference_pct",
    "status",
    "reason",
)


def record(model: Any, fields: Sequence[str]) -> dict[str, Any]:
    """``model``'s record of ``fields``, in their order."""
    return {name: FIELDS[name](model) for name in fields}


def model_record(view: Any) -> dict[str, Any]:
    """The site's record of a model view (`MODEL_FIELDS`)."""
    return record(view, MODEL_FIELDS)


def list_record(row: RecordSource) -> dict[str, Any]:
    """The CLI's record of a registry index row (`LIST_FIELDS`), what ``archzoo list`` prints."""
    return record(row, LIST_FIELDS)
