"""Hostile plugin: its architecture's build returns None (a forgotten return statement)."""

from archzoo import hookimpl
from archzoo_gpt import ARCHITECTURE


def build(config):
    ARCHITECTURE.build(config)


@hookimpl
def register_architectures(register):
    register(ARCHITECTURE.model_copy(update={"name": "buildnone", "build": build}))
