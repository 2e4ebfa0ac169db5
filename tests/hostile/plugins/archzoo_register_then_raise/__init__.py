"""Hostile plugin: registers one architecture, then fails before registering the rest."""

from archzoo import hookimpl
from archzoo_gpt import ARCHITECTURE


@hookimpl
def register_architectures(register):
    register(ARCHITECTURE.model_copy(update={"name": "halfway"}))
    raise RuntimeError("second architecture failed")
