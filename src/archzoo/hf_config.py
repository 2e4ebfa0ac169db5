"""Hugging Face ``config.json`` files, as plugins and callers name them: the vocabulary and the reader in one place.

Two rooms behind one name. `archzoo.hf_vocabulary` is the transformers vocabulary a plugin describes its model
types in (`HFTable`, `hf_reader`, `DROPOUT`, `TOKEN_ID`, ...): plain data, imported with the plugin. The reader,
`archzoo.hf_reading` (`load_hf_config`, `read_hf_config`, `HFReading`), needs the host and the file readers, and is
imported the first time one of its names is read here (PEP 562), so that importing a plugin reads no file-reading
code. Neither room imports this module.

``python -m archzoo.hf_config src/archzoo/site/docs/methodology.md`` regenerates the methodology page's tables.
"""

from __future__ import annotations

import sys
from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .hf_vocabulary import _GENERATION_KEYS as _GENERATION_KEYS  # the tests check the generation keys
from .hf_vocabulary import (
    ACTIVATION_ONLY,
    COMMON_ACCEPTED,
    COMMON_DEFAULTS,
    COMMON_KEYS,
    DROPOUT,
    INITIALISATION,
    NORM_EPSILON,
    NOT_READ,
    ROPE_TYPES,
    TOKEN_ID,
    TRANSFORMERS_VERSION,
    USE_CACHE,
    Disposition,
    HFTable,
    check_padding_index,
    check_quantization,
    hf_reader,
    hf_table,
    rope_type,
)

if TYPE_CHECKING:
    from .hf_reading import (
        DOC_END,
        DOC_START,
        HFReading,
        KeyReading,
        load_hf_config,
        methodology_section,
        read_hf_config,
        update_methodology_page,
    )

__all__ = [
    "ACTIVATION_ONLY",
    "COMMON_ACCEPTED",
    "COMMON_DEFAULTS",
    "COMMON_KEYS",
    "DOC_END",
    "DOC_START",
    "DROPOUT",
    "INITIALISATION",
    "NORM_EPSILON",
    "NOT_READ",
    "ROPE_TYPES",
    "TOKEN_ID",
    "TRANSFORMERS_VERSION",
    "USE_CACHE",
    "Disposition",
    "HFReading",
    "HFTable",
    "KeyReading",
    "check_padding_index",
    "check_quantization",
    "hf_reader",
    "hf_table",
    "load_hf_config",
    "methodology_section",
    "read_hf_config",
    "rope_type",
    "update_methodology_page",
]

#: The names `archzoo.hf_reading` defines, read through this module (private ones for the tests that check them).
_READING = frozenset(
    {
        "DOC_END",
        "DOC_START",
        "HFReading",
        "KeyReading",
        "load_hf_config",
        "methodology_section",
        "read_hf_config",
        "update_methodology_page",
        "_reader_of",
    }
)


def __getattr__(name: str) -> Any:
    if name not in _READING:
        raise AttributeError(f"module 'archzoo.hf_config' has no attribute {name!r}")
    value = getattr(import_module(".hf_reading", __package__), name)
    globals()[name] = value  # the next lookup is an ordinary attribute
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


if __name__ == "__main__":  # python -m archzoo.hf_config src/archzoo/site/docs/methodology.md
    # through the imported module: under -m this file is __main__, whose HFTable is not the plugins' one
    from archzoo.hf_reading import update_methodology_page as update

    for name in sys.argv[1:]:
        print(f"{name}: {'updated' if update(Path(name)) else 'up to date'}")
