"""Hostile plugin: its architecture's build returns a list instead of a Block."""

from archzoo import hookimpl
from archzoo_gpt import ARCHITECTURE


@hookimpl
def register_architectures(register):
    register(ARCHITECTURE.model_copy(update={"name": "buildlist", "build": lambda config: []}))
