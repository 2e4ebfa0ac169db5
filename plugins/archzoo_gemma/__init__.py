"""archzoo plugin: the Gemma 2 and Gemma 3 decoders (being written; it registers nothing yet)."""

from __future__ import annotations

__version__ = "0.1.0"
