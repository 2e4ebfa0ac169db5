"""Hostile plugin: raises a PluginError that blames the built-in 'bert' plugin."""

from archzoo import PluginError, hookimpl


@hookimpl
def register_architectures(register):
    raise PluginError("plugin 'bert': is broken")
