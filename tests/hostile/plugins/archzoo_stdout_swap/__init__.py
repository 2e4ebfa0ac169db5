"""Hostile plugin: replaces sys.stdout and sys.stderr with /dev/null while it is imported."""

import os
import sys

sys.stdout = open(os.devnull, "w")  # noqa: SIM115 (kept open on purpose: the hostile act)
sys.stderr = sys.stdout
