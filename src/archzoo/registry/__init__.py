"""The registry: one YAML entry per published model, validated, and reconciled against the exact count.

An entry's id is its file name (``registry/bert/bert-base-uncased.yaml`` is ``bert-base-uncased``).
Loading reports every problem of every file in one pass, each as ``path:line: key.path: message``, with
the line read from the YAML itself and a message that says what is wrong (expected and got) and how to fix
it; ``tests/registry_errors/`` holds one malformed file per kind of problem. YAML is read with PyYAML's
safe loader, and any tag beyond plain YAML's (``!!python/object``, ``!include``) is refused before
anything is constructed.

One job per module, each importing only those above it:

- `published`: a size as printed ("110M") read as its value and rounding;
- `schema`: the pydantic models of an entry file, and its JSON Schema;
- `counts`: one report per distinct architecture and configuration, shared by the entries that have it;
- `entry`: a loaded entry and how its counts reconcile with the published figures;
- `reading`: one file's YAML, the line of every key, and syntax errors worded for hand editing;
- `checks`: one file checked (id, schema, configuration, counts), every problem with its line;
- `loading`: the `Registry` of some folders, and `find_model` reading one file.

The folders, the file listing and the cached index (which needs none of this) are `archzoo.registry_index`.
"""

from __future__ import annotations

from ..registry_files import RegistryProblem, default_registry_dirs, registry_folders, split_plugin_problems, yaml_files
from .checks import SLUG, load_entry
from .counts import SharedReports
from .entry import GAP_LIMIT, Entry
from .loading import Registry, find_model, load_registry
from .published import parse_published
from .schema import (
    REASONS,
    SCHEMA_COMMENT,
    EntryReference,
    EntrySpec,
    Published,
    Reconciliation,
    Source,
    entry_json_schema,
)

#: The name the site's loader imports (`archzoo.site.generate`); `load_entry` is the same function.
_load_entry = load_entry

__all__ = [
    "GAP_LIMIT",
    "REASONS",
    "SCHEMA_COMMENT",
    "SLUG",
    "Entry",
    "EntryReference",
    "EntrySpec",
    "Published",
    "Reconciliation",
    "Registry",
    "RegistryProblem",
    "SharedReports",
    "Source",
    "default_registry_dirs",
    "entry_json_schema",
    "find_model",
    "load_entry",
    "load_registry",
    "parse_published",
    "registry_folders",
    "split_plugin_problems",
    "yaml_files",
]
