"""Calling plugin code: its output goes to stderr, and whatever it raises becomes a `PluginError` naming it.

The lowest layer that runs a plugin's code. The host runs every import, hook and ``build`` through `call_plugin`,
and so does everything that validates a configuration with a plugin's model (`archzoo.architecture`) or turns a
``config.json`` into one (the plugin's reader): one guard, imported from below by both, so that neither has to
import the other.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from typing import Any

from .errors import PluginError, PluginProblem

__all__ = ["MAX_MESSAGE", "call_plugin", "describe_exception", "plugin_error", "type_name"]

#: How much of a plugin's exception message a problem repeats.
MAX_MESSAGE = 300


def type_name(value: object) -> str:
    """What a plugin handed archzoo, for a message: ``None``, or the name of its type."""
    return "None" if value is None else type(value).__name__


def describe_exception(exc: BaseException) -> str:
    """``SystemExit: 3``, on one line and of bounded length, even when the exception cannot be printed."""
    name = type(exc).__name__
    try:
        text = str(exc)
    except KeyboardInterrupt:
        raise
    except BaseException as inner:  # a hostile __str__ must not escape the report about it
        text = f"(message not shown: str() raised {type(inner).__name__})"
    text = " ".join(text.split())
    if len(text) > MAX_MESSAGE:
        text = text[: MAX_MESSAGE - 1] + "…"
    return f"{name}: {text}" if text else name


def plugin_error(plugin: str, reason: str) -> PluginError:
    """``PluginError("plugin 'NAME': REASON")`` carrying its `PluginProblem`, so that the host records it without
    parsing the message back."""
    problem = PluginProblem(plugin, reason)
    error = PluginError(str(problem))
    error.problem = problem
    return error


@contextlib.contextmanager
def _plugin_streams() -> Iterator[None]:
    """Plugin output goes to stderr; both streams are what they were afterwards, whatever the plugin did."""
    stderr = sys.stderr
    try:
        with contextlib.redirect_stdout(stderr):
            yield
    finally:
        sys.stderr = stderr


def call_plugin(
    plugin: str,
    what: str,
    fn: Callable[..., Any],
    /,
    *args: Any,
    expected: tuple[type[BaseException], ...] = (),
    **kwargs: Any,
) -> Any:
    """Run plugin code: its stdout goes to stderr while it runs; an exception of a type in `expected`
    propagates unchanged; any other exception, SystemExit, GeneratorExit or other BaseException except
    KeyboardInterrupt becomes PluginError("plugin 'NAME': WHAT raised SystemExit: 3") (chained).

    Safe to nest: each call restores ``sys.stdout`` and ``sys.stderr`` to what they were when it began.
    """
    try:
        with _plugin_streams():
            return fn(*args, **kwargs)
    except KeyboardInterrupt:
        raise
    except BaseException as exc:
        if expected and isinstance(exc, expected):
            raise
        raise plugin_error(plugin, f"{what} raised {describe_exception(exc)}") from exc
