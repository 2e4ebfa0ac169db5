"""Hostile plugin: exits with code 6 when the plugin manager looks through its attributes."""

import sys


def __dir__():
    return ["ghost"]


def __getattr__(name):
    sys.exit(6)
