"""archzoo: exact parameter counts, FLOPs and memory of Transformer models, from their building blocks."""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

# The public names are imported on first use (PEP 562): `archzoo count` and `archzoo list` start in a fraction of
# the time importing pydantic, the report and the host up front would take. A plugin's `from archzoo import
# Architecture` imports what it names, as before.
if TYPE_CHECKING:
    from .architecture import ArchConfig, Architecture, Reference, parse_config
    from .blocks import Block
    from .errors import (
        ArchzooError,
        ConfigError,
        EnvironmentVariableError,
        HFConfigError,
        PluginError,
        RegistryError,
        UnknownArchitectureError,
        UnknownModelError,
    )
    from .formula import Poly
    from .hookspecs import hookimpl, hookspec
    from .host import PluginHost, get_host
    from .report import Report, make_report

__version__ = "0.1.0"

__all__ = [
    "ArchConfig",
    "Architecture",
    "ArchzooError",
    "Block",
    "ConfigError",
    "EnvironmentVariableError",
    "HFConfigError",
    "PluginError",
    "PluginHost",
    "Poly",
    "Reference",
    "RegistryError",
    "Report",
    "UnknownArchitectureError",
    "UnknownModelError",
    "count",
    "get_host",
    "hookimpl",
    "hookspec",
    "make_report",
    "parse_config",
]

#: Where each public name lives.
_HOMES = {
    "ArchConfig": "architecture",
    "Architecture": "architecture",
    "Reference": "architecture",
    "parse_config": "architecture",
    "Block": "blocks",
    "ArchzooError": "errors",
    "ConfigError": "errors",
    "EnvironmentVariableError": "errors",
    "HFConfigError": "errors",
    "PluginError": "errors",
    "RegistryError": "errors",
    "UnknownArchitectureError": "errors",
    "UnknownModelError": "errors",
    "Poly": "formula",
    "hookimpl": "hookspecs",
    "hookspec": "hookspecs",
    "PluginHost": "host",
    "get_host": "host",
    "Report": "report",
    "make_report": "report",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'archzoo' has no attribute {name!r}")
    value = getattr(import_module(f".{home}", __name__), name)
    globals()[name] = value  # the next lookup is an ordinary attribute
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


def count(architecture: str, seq_len: int | None = None, **config) -> Report:
    """The report for one configuration: ``archzoo.count("bert", n_layers=24).params``."""
    from .architecture import parse_config
    from .host import get_host
    from .report import make_report

    arch = get_host().architecture(architecture)
    return make_report(arch, parse_config(arch, config), seq_len)
