"""The plugin host: finds plugins through the ``archzoo`` entry-point group and collects what they register.

Loading is lazy and happens once. A plugin that fails to import, raises in a hook or registers
something invalid is recorded as a `PluginProblem` naming it, and every other plugin keeps working;
strict mode (``--strict`` or ``ARCHZOO_STRICT=1``) turns the first problem into a `PluginError`.

Environment:
    ARCHZOO_PLUGINS        comma-separated entry-point names: load only these plugins.
    ARCHZOO_STRICT         1 to make any plugin problem an error.
    ARCHZOO_TRACE_PLUGINS  1 to print every hook call to stderr.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from types import ModuleType
from typing import Any, Iterable

import pluggy
from pydantic import ValidationError

from . import hookspecs
from .architecture import Architecture
from .errors import PluginError, UnknownArchitectureError, closest

__all__ = ["PluginHost", "PluginInfo", "PluginProblem", "get_host", "reset_host", "ENTRY_POINT_GROUP"]

ENTRY_POINT_GROUP = "archzoo"
ENV_PLUGINS = "ARCHZOO_PLUGINS"
ENV_STRICT = "ARCHZOO_STRICT"
ENV_TRACE = "ARCHZOO_TRACE_PLUGINS"


@dataclass
class PluginInfo:
    """A loaded plugin: where it came from and what it registered."""

    name: str
    version: str
    source: str
    module: str
    architectures: list[str] = field(default_factory=list)
    registry_dirs: list[Path] = field(default_factory=list)


@dataclass(frozen=True)
class PluginProblem:
    """A plugin that could not be used, and why."""

    plugin: str
    reason: str

    def __str__(self) -> str:
        return f"plugin {self.plugin!r}: {self.reason}"


def _env_flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")


class PluginHost:
    """Loads plugins once and holds the architectures and registry folders they contribute."""

    def __init__(
        self,
        *,
        strict: bool | None = None,
        only: Iterable[str] | None = None,
        extra_plugins: dict[str, ModuleType | object] | None = None,
        entry_points: bool = True,
    ):
        self.strict = _env_flag(ENV_STRICT) if strict is None else strict
        if only is None and os.environ.get(ENV_PLUGINS, "").strip():
            only = [n.strip() for n in os.environ[ENV_PLUGINS].split(",") if n.strip()]
        self.only = set(only) if only is not None else None
        self._extra = dict(extra_plugins or {})
        self._use_entry_points = entry_points
        self.pm = pluggy.PluginManager("archzoo")
        self.pm.add_hookspecs(hookspecs)
        self.plugins: dict[str, PluginInfo] = {}
        self.problems: list[PluginProblem] = []
        self._architectures: dict[str, Architecture] = {}
        self._loaded = False

    # ---- loading -------------------------------------------------------------------------------
    def _problem(self, plugin: str, reason: str) -> None:
        problem = PluginProblem(plugin, reason)
        if self.strict:
            raise PluginError(f"{problem} (strict mode: unset {ENV_STRICT} or drop --strict to skip it)")
        self.problems.append(problem)

    def _register_module(self, name: str, plugin: Any, info: PluginInfo) -> None:
        try:
            self.pm.register(plugin, name=name)
            self.pm.check_pending()
        except Exception as exc:  # a misspelt hook, or a plugin registered twice
            if self.pm.is_registered(plugin):
                self.pm.unregister(plugin)
            self._problem(name, f"cannot be registered: {exc}")
            return
        self.plugins[name] = info

    def load(self) -> "PluginHost":
        """Import and register every plugin, then collect registrations; does nothing the second time."""
        if self._loaded:
            return self
        self._loaded = True
        if _env_flag(ENV_TRACE):
            self.pm.trace.root.setwriter(lambda text: sys.stderr.write(text))
            self.pm.enable_tracing()
        available = set(self._extra)
        if self._use_entry_points:
            entry_points = sorted(metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name)
            available |= {ep.name for ep in entry_points}
            for ep in entry_points:
                if self.only is not None and ep.name not in self.only:
                    continue
                dist = ep.dist
                dist_name = dist.metadata["Name"] if dist is not None else "?"
                version = dist.version if dist is not None else "?"
                try:
                    module = ep.load()
                except Exception as exc:
                    self._problem(ep.name, f"failed to import {ep.value!r}: {type(exc).__name__}: {exc}")
                    continue
                source = f"entry point {ENTRY_POINT_GROUP}:{ep.name} in {dist_name} {version}"
                self._register_module(ep.name, module, PluginInfo(ep.name, version, source, ep.value))
        for name, plugin in self._extra.items():
            if self.only is not None and name not in self.only:
                continue
            module_name = getattr(plugin, "__name__", type(plugin).__name__)
            version = str(getattr(plugin, "__version__", "?"))
            self._register_module(name, plugin, PluginInfo(name, version, "registered in process", module_name))
        for name in sorted((self.only or set()) - available):
            near = closest(name, available)
            hint = f"did you mean {near[0]!r}? " if near else ""
            self._problem(name, f"named in {ENV_PLUGINS}, but no installed plugin has that name; {hint}"
                                f"installed: {', '.join(sorted(available)) or 'none'}")
        self._collect()
        return self

    def _call_each(self, hook_name: str, make_register) -> None:
        """Call one hook plugin by plugin, so that one plugin's exception cannot stop the others."""
        for name in list(self.plugins):
            plugin = self.pm.get_plugin(name)
            others = [p for n, p in self.pm.list_name_plugin() if n != name]
            caller = self.pm.subset_hook_caller(hook_name, remove_plugins=others)
            if not any(impl.plugin is plugin for impl in caller.get_hookimpls()):
                continue
            try:
                caller(register=make_register(name))
            except PluginError:
                raise
            except Exception as exc:
                self._problem(name, f"raised in {hook_name}: {type(exc).__name__}: {exc}")

    def _collect(self) -> None:
        def architecture_register(plugin: str):
            def register(arch: Architecture | dict) -> None:
                try:
                    if isinstance(arch, dict):
                        arch = Architecture.model_validate(arch)
                    if not isinstance(arch, Architecture):
                        raise TypeError(f"expected an archzoo.Architecture, got {type(arch).__name__}")
                except (ValidationError, TypeError) as exc:
                    detail = str(exc).splitlines()
                    self._problem(plugin, f"registered an invalid architecture: {' '.join(detail[:3])}")
                    return
                owner = self._architectures.get(arch.name)
                if owner is not None:
                    self._problem(
                        plugin,
                        f"registers architecture {arch.name!r}, already registered by plugin {owner.plugin!r}; "
                        f"rename it or restrict plugins with {ENV_PLUGINS}",
                    )
                    return
                arch = arch.model_copy(update={"plugin": plugin})
                self._architectures[arch.name] = arch
                self.plugins[plugin].architectures.append(arch.name)

            return register

        def registry_register(plugin: str):
            def register(folder: Path | str) -> None:
                path = Path(folder)
                if not path.is_dir():
                    self._problem(plugin, f"registered registry folder {str(path)!r}, which is not a folder")
                    return
                self.plugins[plugin].registry_dirs.append(path)

            return register

        self._call_each("register_architectures", architecture_register)
        self._call_each("register_registry_dirs", registry_register)

    # ---- queries -------------------------------------------------------------------------------
    @property
    def architectures(self) -> dict[str, Architecture]:
        self.load()
        return dict(sorted(self._architectures.items()))

    def architecture(self, name: str) -> Architecture:
        """The architecture registered under ``name``, or an error naming the closest ones."""
        self.load()
        try:
            return self._architectures[name]
        except KeyError:
            raise UnknownArchitectureError(name, self._architectures) from None

    def registry_dirs(self) -> list[Path]:
        self.load()
        return [d for info in self.plugins.values() for d in info.registry_dirs]

    def hf_model_types(self) -> dict[str, Architecture]:
        """Every Hugging Face ``model_type`` some architecture can read, mapped to that architecture."""
        return {t: arch for arch in self.architectures.values() for t in arch.hf_model_types}


_HOST: PluginHost | None = None


def get_host(*, strict: bool | None = None) -> PluginHost:
    """The process-wide host, loaded on first use."""
    global _HOST
    if _HOST is None:
        _HOST = PluginHost(strict=strict)
    return _HOST.load()


def reset_host(host: PluginHost | None = None) -> None:
    """Forget the process-wide host (tests use this to load a different set of plugins)."""
    global _HOST
    _HOST = host
