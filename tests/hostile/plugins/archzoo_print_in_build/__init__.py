"""Hostile plugin: its architecture's build prints to stdout, then returns GPT's block tree."""

from archzoo import hookimpl
from archzoo_gpt import ARCHITECTURE


def build(config):
    print("print_in_build: building")
    return ARCHITECTURE.build(config)


@hookimpl
def register_architectures(register):
    register(ARCHITECTURE.model_copy(update={"name": "printbuild", "build": build}))
