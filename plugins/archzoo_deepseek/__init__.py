"""archzoo plugin: the DeepSeek-V2 and DeepSeek-V3 decoders (being written; it registers nothing yet)."""

from __future__ import annotations

__version__ = "0.1.0"
