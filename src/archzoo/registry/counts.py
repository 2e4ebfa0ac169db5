"""Counting registry entries: the counts of each distinct architecture and configuration computed once, and
shared by the entries that have them.

A zoo holds many entries of one configuration (a model and its fine-tunes, a checkpoint under two names):
building the same block tree again gives the same counts, so it is built once. Two configurations are the
same only when every value is equal and of the same type (``1``, ``1.0`` and ``true`` are three
configurations), the same keys were given, and the architecture is the same object; a configuration holding
any other kind of value is never shared.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from ..report import make_report

if TYPE_CHECKING:
    from ..architecture import ArchConfig, Architecture
    from ..report import Report

__all__ = ["SharedReports", "configuration_key"]

_PLAIN = (str, int, bool, type(None))


def _canonical(value: Any) -> Any:
    """``value`` as a hashable tree that tells apart what equality would not (types, the sign of zero);
    ``KeyError`` for a value whose equality archzoo cannot vouch for."""
    kind = type(value)
    if kind in _PLAIN:
        return (kind.__name__, value)
    if kind is float:
        return ("float", value.hex() if math.isfinite(value) else repr(value))
    if kind in (list, tuple):
        return (kind.__name__, tuple(_canonical(item) for item in value))
    if kind is dict:
        return ("dict", tuple((_canonical(k), _canonical(v)) for k, v in value.items()))
    if isinstance(value, BaseModel):
        return (
            kind,
            _canonical(dict(vars(value))),
            tuple(sorted(value.model_fields_set)),
            _canonical(value.__pydantic_extra__ or {}),
            _canonical(value.__pydantic_private__ or {}),
        )
    raise KeyError(kind)


def configuration_key(config: ArchConfig) -> tuple | None:
    """What makes two configurations build the same block tree, or None when it cannot be told."""
    try:
        return _canonical(config)
    except (KeyError, TypeError, AttributeError):
        return None


class SharedReports:
    """The counts of each distinct (architecture, configuration), computed once, and its report while it is
    among the `KEEP` most recently used.

    An index of a large zoo counts every entry and keeps none: holding every report (a block tree each)
    would hold the whole zoo's trees in memory, so only the counts are kept for every configuration. A
    build that fails is not kept: each entry of that configuration then reports the failure itself.
    """

    #: Reports kept for entries loaded after them (a `Registry` keeps its entries' reports anyway).
    KEEP = 64

    def __init__(self) -> None:
        self._counts: dict[tuple[int, tuple], list[int | None]] = {}  # [params, active params or None]
        self._reports: OrderedDict[tuple[int, tuple], Report] = OrderedDict()
        self._architectures: dict[int, Architecture] = {}  # kept, so an id is never reused for another

    def __len__(self) -> int:
        """How many distinct configurations were counted."""
        return len(self._counts)

    def _key(self, arch: Architecture, config: ArchConfig) -> tuple[int, tuple] | None:
        key = configuration_key(config)
        if key is None:
            return None
        self._architectures.setdefault(id(arch), arch)
        return id(arch), key

    def report(self, arch: Architecture, config: ArchConfig) -> Report:
        """The report of ``config``: the one kept, else a new one."""
        key = self._key(arch, config)
        if key is None:
            return make_report(arch, config)
        report = self._reports.get(key)
        if report is not None:
            self._reports.move_to_end(key)
            return report
        report = make_report(arch, config)
        self._counts.setdefault(key, [report.params, None])
        self._reports[key] = report
        if len(self._reports) > self.KEEP:
            self._reports.popitem(last=False)
        return report

    def params(self, arch: Architecture, config: ArchConfig) -> int:
        """`Report.params` of ``config``, built only the first time."""
        key = self._key(arch, config)
        counts = self._counts.get(key) if key is not None else None
        if counts is not None and counts[0] is not None:
            return counts[0]
        return self.report(arch, config).params

    def active_params(self, arch: Architecture, config: ArchConfig) -> int:
        """`Report.active_params` of ``config``, built only the first time it is asked for."""
        key = self._key(arch, config)
        counts = self._counts.get(key) if key is not None else None
        if counts is not None and counts[1] is not None:
            return counts[1]
        active = self.report(arch, config).active_params
        if key is not None:
            self._counts[key][1] = active
        return active
