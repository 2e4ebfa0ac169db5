"""Hostile plugin: exits the process with code 4 from register_architectures."""

import sys

from archzoo import hookimpl


@hookimpl
def register_architectures(register):
    sys.exit(4)
