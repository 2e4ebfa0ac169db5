"""The zoo as data for machines: ``models.json`` and ``models.csv``, the model records (`archzoo.site.records`)
with strings as the pages show them, and spreadsheet cells that never run as formulas.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from typing import Any

from .markup import displayable
from .records import MODEL_FIELDS, model_record
from .views import ModelView

__all__ = ["FORMULA_STARTS", "MODEL_FIELDS", "csv_cell", "models_csv", "models_json"]


def _record(m: ModelView) -> dict[str, Any]:
    """The model's record (`model_record`) with every string `displayable` (a lone surrogate cannot even
    be written)."""
    return {
        k: (displayable(v) if isinstance(v, str) else [displayable(t) for t in v] if isinstance(v, list) else v)
        for k, v in model_record(m).items()
    }


def models_json(models: Sequence[ModelView]) -> str:
    """``models.json``: the all-models table as a list of records, strings exactly as the pages show them."""
    return (
        json.dumps(
            {"schema": "archzoo.models/1", "fields": list(MODEL_FIELDS), "models": [_record(m) for m in models]},
            indent=1,
            ensure_ascii=False,
        )
        + "\n"
    )


#: A spreadsheet reads a cell starting with one of these as a formula (OWASP, "CSV Injection").
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r", "\n")


def csv_cell(value: Any) -> Any:
    """A value as a ``models.csv`` cell: text that a spreadsheet would run as a formula (``=HYPERLINK(...)``,
    ``+1``, ``-1``, ``@SUM(...)``) gets a leading ``'``, as OWASP recommends, so that it stays text.

    Numbers are never touched: the numeric columns (``params``, ``difference``, ``difference_relative``
    and the others) are written from ints and floats, so ``-517760`` and ``-0.004729`` stay numbers; only
    text columns (title, tags, published as printed, status, reason, source) can be quoted.
    """
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def models_csv(models: Sequence[ModelView]) -> str:
    """``models.csv``: the same records, tags joined with ``;``, text cells guarded by `csv_cell`."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(MODEL_FIELDS)
    for m in models:
        row = _record(m)
        writer.writerow(
            [csv_cell("" if row[f] is None else (";".join(row[f]) if f == "tags" else row[f])) for f in MODEL_FIELDS]
        )
    return buffer.getvalue()
