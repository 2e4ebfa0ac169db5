"""The plugin interface: the pluggy markers and every hook an archzoo plugin can implement."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    from .architecture import Architecture
    from .saved_tensors import ActivationSaves

__all__ = [
    "hookimpl",
    "hookspec",
    "register_activation_memory",
    "register_architectures",
    "register_hf_readers",
    "register_registry_dirs",
]

hookspec = pluggy.HookspecMarker("archzoo")
hookimpl = pluggy.HookimplMarker("archzoo")


# ---- contributing architectures -------------------------------------------------------------------


@hookspec
def register_architectures(register: Callable[[Architecture], None]) -> None:
    """Register the architectures this plugin provides.

    register: call it once per `archzoo.Architecture`; the host validates each one, rejects a name
        another plugin already registered, and names this plugin in every error.
    """


# ---- reading Hugging Face config.json files -------------------------------------------------------


@hookspec
def register_hf_readers(register: Callable[..., None]) -> None:
    """Register the Hugging Face ``model_type``s this plugin reads, each with the function that reads it.

    register: call it as ``register(model_type, reader, architecture=None)`` once per model type.
        ``reader`` turns that type's ``config.json`` into configuration keys of ``architecture``, one of
        the architectures this plugin registers (it may be left out when the plugin registers exactly
        one); decorate it with `archzoo.hf_config.hf_reader` to declare the type's keys as an `HFTable`.
        The host rejects a model type another plugin already reads, naming both plugins.
    """


# ---- contributing registry entries ----------------------------------------------------------------


@hookspec
def register_registry_dirs(register: Callable[[Path], None]) -> None:
    """Register folders of registry YAML entries this plugin ships, so its models join the zoo.

    register: call it once per folder; the folder must exist.
    """


# ---- activation memory ----------------------------------------------------------------------------


@hookspec
def register_activation_memory(register: Callable[[ActivationSaves], None]) -> None:
    """Register what the layers of this plugin's reference classes save for backward, as formulas.

    register: call it once per `archzoo.saved_tensors.ActivationSaves`: one architecture of this plugin, the
        transformers classes its formula holds for, and functions of `archzoo.saved_tensors.SavedTerms` (the
        shared terms, read off the block tree) giving each block's saved bytes and the terms that take
        Korthikanti et al.'s layer to it. `archzoo.memory.activation_formula` refuses a class no plugin
        registers; test the formula against `archzoo.memory.measure_activations`.
    """
