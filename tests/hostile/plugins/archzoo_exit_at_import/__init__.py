"""Hostile plugin: exits the process with code 3 while it is imported."""

import sys

sys.exit(3)
