"""archzoo: exact parameter counts, FLOPs and memory of Transformer models, from their building blocks."""

from .architecture import ArchConfig, Architecture, Reference, parse_config
from .blocks import Block
from .errors import (
    ArchzooError,
    ConfigError,
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


def count(architecture: str, seq_len: int | None = None, **config) -> Report:
    """The report for one configuration: ``archzoo.count("bert", n_layers=24).params``."""
    arch = get_host().architecture(architecture)
    return make_report(arch, parse_config(arch, config), seq_len)
