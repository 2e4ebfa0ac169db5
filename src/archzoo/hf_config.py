"""Hugging Face ``config.json`` files, read as archzoo configurations of the base model (``AutoModel``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .architecture import ArchConfig, Architecture, parse_config
from .errors import ConfigError, HFConfigError
from .files import load_json, read_user_text
from .host import PluginHost, call_plugin

__all__ = ["read_hf_config"]

# Options that change the parameter count in ways no plugin models yet; refusing them beats a wrong count.
_UNSUPPORTED: dict[str, tuple[Any, ...]] = {
    "position_embedding_type": ("absolute", None),
    "is_decoder": (False, None),
    "add_cross_attention": (False, None),
    "sinusoidal_pos_embds": (False, True, None),  # DistilBERT keeps the (frozen) table as parameters
}


def read_hf_config(
    path: str | Path, host: PluginHost, overrides: dict[str, Any] | None = None
) -> tuple[Architecture, ArchConfig]:
    """The architecture and configuration a ``config.json`` describes, or an `HFConfigError` saying why not.

    ``overrides`` (archzoo keys, as from ``--set``) replace what the file gives before validation.
    """
    path = Path(path)
    data = load_json(read_user_text(path, HFConfigError), str(path), HFConfigError)
    if not isinstance(data, dict):
        raise HFConfigError(f"{path}: expected a JSON object with a 'model_type' key, got {type(data).__name__}")
    model_type = data.get("model_type")
    readers = host.hf_model_types()
    if model_type is not None and not isinstance(model_type, str):
        raise HFConfigError(f"{path}: model_type: expected text such as \"bert\", got {json.dumps(model_type)}")
    if model_type is None:
        raise HFConfigError(
            f"{path}: model_type: missing; a Hugging Face config.json names its model type "
            f"(supported: {', '.join(sorted(readers))})"
        )
    if model_type not in readers:
        raise HFConfigError(
            f"{path}: model_type: {model_type!r} is not supported (supported: {', '.join(sorted(readers))}); "
            "a plugin can add it through Architecture.hf_model_types"
        )
    for key, allowed in _UNSUPPORTED.items():
        if key in data and data[key] not in allowed:
            raise HFConfigError(
                f"{path}: {key}: {data[key]!r} is not supported (archzoo counts {allowed[0]!r} only); "
                "remove the key or count the model another way"
            )
    arch = readers[model_type]
    try:
        values = call_plugin(arch.plugin, f"its reader of model type {model_type!r}", arch.hf_model_types[model_type],
                             data, expected=(ValueError, TypeError))
    except (ValueError, TypeError) as exc:
        raise HFConfigError(f"{path}: {exc}") from None
    values = {k: v for k, v in values.items() if v is not None}
    source = f"{path} (as {arch.name})"
    if overrides:
        values.update(overrides)
        source += " and --set"
    try:
        return arch, parse_config(arch, values, source=source)
    except ConfigError as exc:
        raise HFConfigError(str(exc)) from None
