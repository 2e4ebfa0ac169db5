"""Hostile plugin: its architecture's build exits the process with code 5."""

import sys

from archzoo import hookimpl
from archzoo_gpt import ARCHITECTURE


def build(config):
    sys.exit(5)


@hookimpl
def register_architectures(register):
    register(ARCHITECTURE.model_copy(update={"name": "buildexit", "build": build}))
