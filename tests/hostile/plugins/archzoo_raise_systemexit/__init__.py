"""Hostile plugin: raises SystemExit with a message from register_registry_dirs."""

from archzoo import hookimpl


@hookimpl
def register_registry_dirs(register):
    raise SystemExit("registry folder missing, giving up")
