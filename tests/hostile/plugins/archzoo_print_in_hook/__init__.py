"""Hostile plugin: prints to stdout from register_architectures, then registers a working architecture."""

from archzoo import hookimpl
from archzoo_gpt import ARCHITECTURE


@hookimpl
def register_architectures(register):
    print("print_in_hook: registering chatty")
    register(ARCHITECTURE.model_copy(update={"name": "chatty"}))
