"""The record of a registry model as data, in one module: what the site's table and downloads
(``models.json``, ``models.csv``) and ``archzoo list --json``/``--csv`` say of each model.

The CLI lists from the registry index, whose rows carry the fields every record shares (`RecordSource`);
the site's record adds what only a computed view holds (FLOPs, the KV cache, active parameters). A shared
field has one name and one meaning in both; the difference from the published figure is ``difference``
in parameters in both, and its gap ``difference_relative`` (a fraction) on the site but
``difference_pct`` (a percentage, rounded to 3 places) in the CLI, as each has always printed it, both
from the one ``gap`` of the entry.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:  # only for its type: `archzoo list` imports this module and must stay light
    from .views import ModelView

__all__ = ["LIST_FIELDS", "MODEL_FIELDS", "RecordSource", "list_record", "model_record"]


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
    def params_human(self) -> str: ...
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


def _rounded(gap: float | None, scale: int, digits: int) -> float | None:
    return None if gap is None else round(scale * gap, digits)


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


# Each record is a dict written out rather than assembled from a table of getters: a listing builds
# 20,000 of them, and a call per field would make the warm `archzoo list --json` a tenth slower.


def list_record(row: RecordSource) -> dict[str, Any]:
    """What ``archzoo list --json`` and ``--csv`` print of a registry index row (`LIST_FIELDS`)."""
    return {
        "id": row.id,
        "architecture": row.architecture,
        "title": row.title,
        "year": row.year,
        "params": row.params,
        "params_human": row.params_human,
        "published": row.published,
        "published_value": row.published_value,
        "difference": _difference(row),
        "difference_pct": _rounded(row.gap, 100, 3),
        "status": row.status,
        "reason": row.reason,
    }


def model_record(view: ModelView) -> dict[str, Any]:
    """The site's record of a model view (`MODEL_FIELDS`): the fields it shares with ``archzoo list``
    taken from `list_record`, and what only a computed view holds."""
    shared = list_record(view)
    own = {
        "tags": list(view.tags),
        "non_embedding_params": view.non_embedding,
        "difference_relative": _rounded(view.gap, 1, 6),
        "active_params": view.active_params,
        "published_active": view.published_active,
        "published_active_value": view.published_active_value,
        "active_difference": view.active_difference,
        "active_difference_relative": _rounded(view.active_gap, 1, 6),
        "active_status": view.active_status,
        "seq_len": view.seq_len,
        "forward_flops": view.flops,
        "attention_flops": view.attention_flops,
        "kv_cache_elements_per_token": view.kv_elements,
        "source": view.source_path,
        "url": f"models/{view.id}/",
    }
    return {name: shared[name] if name in shared else own[name] for name in MODEL_FIELDS}
