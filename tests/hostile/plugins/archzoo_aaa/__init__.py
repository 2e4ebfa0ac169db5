"""Hostile plugin: its entry point sorts before every built-in, and it registers GPT under the name 'bert'."""

from archzoo import hookimpl
from archzoo_gpt import ARCHITECTURE


@hookimpl
def register_architectures(register):
    register(ARCHITECTURE.model_copy(update={"name": "bert"}))
