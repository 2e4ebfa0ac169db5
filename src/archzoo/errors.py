"""Every error archzoo raises for a user's mistake: each says where, what was expected, and how to fix it."""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = [
    "ArchzooError",
    "CheckpointError",
    "ConfigError",
    "EnvironmentVariableError",
    "HFConfigError",
    "InputError",
    "PluginError",
    "PluginProblem",
    "RegistryError",
    "UnknownArchitectureError",
    "UnknownModelError",
    "YAMLSyntaxError",
    "closest",
]


def closest(name: str, choices: Iterable[str], n: int = 3) -> list[str]:
    """The known names nearest to a misspelt one, best first."""
    choices = list(choices)
    matches = difflib.get_close_matches(name, choices, n=n, cutoff=0.5)
    if not matches:
        matches = [c for c in choices if name.lower() in c.lower() or c.lower() in name.lower()][:n]
    return matches


def _did_you_mean(name: str, choices: Iterable[str]) -> str:
    choices = sorted(choices)
    near = closest(name, choices)
    hint = f"; did you mean {' or '.join(repr(c) for c in near)}?" if near else ""
    return hint


class ArchzooError(Exception):
    """Base class: a problem the user can fix, reported as one line without a traceback."""

    def __str__(self) -> str:  # KeyError subclasses would otherwise print their message quoted
        return str(self.args[0]) if self.args else ""


class ConfigError(ArchzooError, ValueError):
    """A configuration value is missing, mistyped or out of range."""


class InputError(ArchzooError, ValueError):
    """A file or value a user gave cannot be read: too large, too deep, not UTF-8, not plain YAML or JSON.

    Reads as ``source:line: key: message``; ``source``, ``line``, ``key`` and ``message`` are kept apart
    for callers that report problems their own way (the registry's problem list).
    """

    def __init__(self, message: str, *, source: str = "", line: int | None = None, key: str = ""):
        where = f"{source}{f':{line}' if line else ''}: " if source else ""
        super().__init__(f"{where}{key + ': ' if key else ''}{message}")
        self.message = message
        self.source = source
        self.line = line
        self.key = key


class YAMLSyntaxError(InputError):
    """Text the YAML parser cannot read at all (an unclosed quote or bracket, a stray ``:``), as opposed to
    YAML that reads but holds what archzoo refuses (a tag, a duplicate key, a character that is not text)."""


class CheckpointError(ArchzooError, ValueError):
    """A checkpoint cannot be read: not safetensors, an index that disagrees with its shards, a file missing."""


class HFConfigError(ArchzooError, ValueError):
    """A Hugging Face ``config.json`` cannot be read as one of the supported model types."""


class EnvironmentVariableError(ArchzooError, ValueError):
    """An environment variable archzoo reads holds a value it cannot use; the message names the variable."""


@dataclass(frozen=True)
class PluginProblem:
    """A plugin that could not be used, and why."""

    plugin: str
    reason: str

    def __str__(self) -> str:
        return f"plugin {self.plugin!r}: {self.reason}"


class PluginError(ArchzooError, RuntimeError):
    """A plugin failed to import, raised in a hook, registered something invalid (strict mode), or its code
    raised or returned something archzoo cannot use when called through `archzoo.plugin_guard.call_plugin` or
    `archzoo.host.build_blocks`. Errors raised there carry ``.problem``, the `PluginProblem` naming the
    plugin, so the host records it without parsing the message back."""

    problem: PluginProblem | None = None

    @property
    def reason(self) -> str:
        """What went wrong, without the plugin's name in front (the whole message when there is no problem)."""
        return self.problem.reason if self.problem is not None else str(self)


class RegistryError(ArchzooError, ValueError):
    """A registry entry is malformed; the message starts with ``path:line:``."""


class UnknownArchitectureError(ArchzooError, KeyError):
    """No loaded plugin registers this architecture."""

    def __init__(self, name: str, known: Iterable[str]):
        known = sorted(known)
        super().__init__(
            f"unknown architecture {name!r}{_did_you_mean(name, known)} "
            f"(loaded: {', '.join(known) or 'none'}; `archzoo plugins` lists them)"
        )
        self.name = name


class UnknownModelError(ArchzooError, KeyError):
    """No registry entry has this id."""

    def __init__(self, model_id: str, known: Iterable[str]):
        known = sorted(known)
        super().__init__(f"unknown model {model_id!r}{_did_you_mean(model_id, known)} (`archzoo list` shows every id)")
        self.model_id = model_id
