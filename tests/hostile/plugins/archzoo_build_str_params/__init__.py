"""Hostile plugin: its architecture's build returns a Block whose parameter count is a string."""

from archzoo import Block, hookimpl
from archzoo_gpt import ARCHITECTURE


@hookimpl
def register_architectures(register):
    register(
        ARCHITECTURE.model_copy(
            update={
                "name": "buildstr",
                "build": lambda config: Block("buildstr", "model", params="124M"),
            }
        )
    )
