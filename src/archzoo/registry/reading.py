"""Reading one registry file: its YAML data and the line of every key, through archzoo's one YAML reader
(`archzoo.files.read_yaml`), with syntax errors worded for a person editing the file by hand."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from ..errors import InputError
from ..files import YAMLProblem, decode_utf8, entry_syntax_problem, read_user_bytes, read_yaml
from ..registry_files import RegistryProblem

__all__ = ["read_entry_yaml"]


def _one_entry(node: yaml.Node | None) -> YAMLProblem | None:
    """Why a document is not one entry (a mapping of keys), or None."""
    if node is None:
        return (1, "", "empty file; an entry is a mapping with at least 'architecture', 'title', 'summary' and 'year'")
    if isinstance(node, yaml.MappingNode):
        return None
    value = node.value if len(node.value) <= 40 else node.value[:37] + "..."
    kind = "list" if isinstance(node, yaml.SequenceNode) else f"single value {value!r}"
    return (
        node.start_mark.line + 1,
        "",
        f"expected a mapping of keys (architecture: ..., title: ...), got a {kind}",
    )


def read_entry_yaml(
    path: Path, problems: list[RegistryProblem], texts: dict[tuple, str] | None = None
) -> tuple[Any, dict[tuple, int]] | None:
    """The file's data and the line of every key path, or None after adding the problems that prevent reading it.

    ``texts`` receives every scalar as written (``2010.11930``, which YAML reads as the float 2010.1193).

    Only the safe loader's plain tags are accepted: a tag such as ``!!python/object/apply`` is reported
    from the node graph and nothing is constructed.
    """
    try:
        text = decode_utf8(read_user_bytes(path), str(path))
    except InputError as exc:
        problems.append(RegistryProblem(path, exc.line or 1, exc.key, exc.message))
        return None
    lines: dict[tuple, int] = {}
    data, found = read_yaml(
        text, holder="registry files", syntax=entry_syntax_problem, root=_one_entry, lines=lines, texts=texts
    )
    if found:
        problems.extend(RegistryProblem(path, line, key, message) for line, key, message in found)
        return None
    return data, lines
