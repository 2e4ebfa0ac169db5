"""Counting registry entries: one report per distinct architecture and configuration, shared by the entries
that have them.

A zoo holds many entries of one configuration (a model and its fine-tunes, a checkpoint under two names):
building the same block tree again gives the same counts, so it is built once. Two configurations are the
same only when every value is equal and of the same type (``1``, ``1.0`` and ``true`` are three
configurations), the same keys were given, and the architecture is the same object; a configuration holding
any other kind of value is never shared.
"""

from __future__ import annotations

import math
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
    """The report of each distinct (architecture, configuration), built on first use.

    A build that fails is not kept: each entry of that configuration then reports the failure itself.
    """

    def __init__(self) -> None:
        self._reports: dict[tuple[int, tuple], tuple[Architecture, Report]] = {}

    def __len__(self) -> int:
        return len(self._reports)

    def report(self, arch: Architecture, config: ArchConfig) -> Report:
        key = configuration_key(config)
        if key is None:
            return make_report(arch, config)
        found = self._reports.get((id(arch), key))
        if found is not None:
            return found[1]
        report = make_report(arch, config)
        self._reports[(id(arch), key)] = (arch, report)  # the architecture is kept, so its id is never reused
        return report
