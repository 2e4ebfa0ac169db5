"""Hostile plugin: replaces sys.stdout and sys.stderr with /dev/null while it is imported."""

import os
import sys

sys.stdout = open(os.devnull, "w")
sys.stderr = sys.stdout
