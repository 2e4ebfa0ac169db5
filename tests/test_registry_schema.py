"""The committed JSON Schema that editors read stays in step with the pydantic models."""

import json
from pathlib import Path

from archzoo.registry import SCHEMA_COMMENT, entry_json_schema, load_registry

ROOT = Path(__file__).resolve().parents[1]
SCHEMA_FILE = ROOT / "src/archzoo/site/docs/schema/registry-entry.json"


def test_committed_schema_is_current():
    assert json.loads(SCHEMA_FILE.read_text()) == entry_json_schema(), (
        "src/archzoo/site/docs/schema/registry-entry.json is stale: run `archzoo schema --out src/archzoo/site/docs/schema/registry-entry.json`"
    )


def test_every_entry_points_editors_at_the_schema():
    registry = load_registry([ROOT / "registry"])
    assert len(registry) > 0
    for entry in registry:
        first = entry.path.read_text().splitlines()[0]
        assert first.startswith(SCHEMA_COMMENT), f"{entry.path}: first line must be the yaml-language-server comment"
        target = (entry.path.parent / first.removeprefix(SCHEMA_COMMENT)).resolve()
        assert target == SCHEMA_FILE, f"{entry.path}: $schema points at {target}, not {SCHEMA_FILE}"
