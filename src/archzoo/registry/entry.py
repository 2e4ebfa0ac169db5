"""A loaded registry entry: its schema, architecture and configuration, and how its computed counts
reconcile with the figures its authors published."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..architecture import ArchConfig, Architecture
from .counts import SharedReports
from .schema import EntrySpec

if TYPE_CHECKING:
    from ..report import Report

__all__ = ["GAP_LIMIT", "Entry"]

#: Above this relative gap, an entry must carry a reconciliation reason.
GAP_LIMIT = 0.05


@dataclass
class Entry:
    """A validated registry entry, with its architecture and parsed configuration."""

    id: str
    path: Path
    spec: EntrySpec
    architecture: Architecture
    config: ArchConfig
    lines: dict[tuple, int] = field(default_factory=dict, repr=False)
    #: Where the counts and report come from: entries loaded together share them per distinct configuration.
    reports: SharedReports = field(default_factory=SharedReports, repr=False, compare=False)

    @cached_property
    def report(self) -> Report:
        return self.reports.report(self.architecture, self.config)

    @cached_property
    def params(self) -> int:
        return self.reports.params(self.architecture, self.config)

    @property
    def gap(self) -> float | None:
        """(computed - published) / published, or None without a published figure."""
        if self.spec.published is None:
            return None
        return (self.params - self.spec.published.value) / self.spec.published.value

    @property
    def status(self) -> str:
        """``within-rounding`` (of the printed figure), ``reconciled``, ``unexplained`` or ``unpublished``."""
        published = self.spec.published
        if published is None:
            return "unpublished"
        return self._status(self.params, published.value, published.rounding)

    def _status(self, computed: int, printed: int, rounding: int) -> str:
        gap = (computed - printed) / printed
        if abs(computed - printed) <= rounding and abs(gap) <= GAP_LIMIT:
            return "within-rounding"  # a one-digit figure ("1B") spans ±50%: beyond 5% it needs a reason
        return "reconciled" if self.spec.reconciliation else "unexplained"

    @cached_property
    def active_params(self) -> int:
        """The parameters one token uses (`Report.active_params`): ``params`` unless the model holds experts."""
        return self.reports.active_params(self.architecture, self.config)

    @property
    def active_gap(self) -> float | None:
        """(computed - published) / published for the active parameters, or None without a published figure."""
        printed = self.spec.published.active_value if self.spec.published else None
        return None if printed is None else (self.active_params - printed) / printed

    @property
    def active_status(self) -> str:
        """The status of the published active figure, as `status` is of the total's; ``unpublished`` without one.
        One ``reconciliation`` explains both figures."""
        published = self.spec.published
        if published is None or published.active_value is None or published.active_rounding is None:
            return "unpublished"
        return self._status(self.active_params, published.active_value, published.active_rounding)

    def figures(self) -> dict[str, Any]:
        """The computed and published figures side by side, and how they compare, as plain JSON data (what
        ``archzoo show --json`` gives next to the entry): the total, then the active parameters."""
        published = self.spec.published
        return {
            "params": self.params,
            "published_value": published.value if published else None,
            "gap": self.gap,
            "status": self.status,
            "active_params": self.active_params,
            "published_active_value": published.active_value if published else None,
            "active_gap": self.active_gap,
            "active_status": self.active_status,
        }

    def line_of(self, *key: Any) -> int:
        while key and key not in self.lines:
            key = key[:-1]
        return self.lines.get(key, 1)
