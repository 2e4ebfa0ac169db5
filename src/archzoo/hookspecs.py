"""The plugin interface: the pluggy markers and every hook an archzoo plugin can implement."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Callable

import pluggy

if TYPE_CHECKING:
    from .architecture import Architecture

__all__ = ["hookimpl", "hookspec", "register_architectures", "register_registry_dirs"]

hookspec = pluggy.HookspecMarker("archzoo")
hookimpl = pluggy.HookimplMarker("archzoo")


# ---- contributing architectures -------------------------------------------------------------------


@hookspec
def register_architectures(register: Callable[["Architecture"], None]) -> None:
    """Register the architectures this plugin provides.

    register: call it once per `archzoo.Architecture`; the host validates each one, rejects a name
        another plugin already registered, and names this plugin in every error.
    """


# ---- contributing registry entries ----------------------------------------------------------------


@hookspec
def register_registry_dirs(register: Callable[[Path], None]) -> None:
    """Register folders of registry YAML entries this plugin ships, so its models join the zoo.

    register: call it once per folder; the folder must exist.
    """
