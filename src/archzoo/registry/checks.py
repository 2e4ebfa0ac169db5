"""Checking one registry file: its id, its keys against the schema, its configuration against its
architecture's plugin, and its computed counts against the published ones; every problem with its line."""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from ..architecture import validate_config
from ..errors import ArchzooError, closest
from ..files import key_path
from ..host import PluginHost
from ..registry_files import WINDOWS_RESERVED, RegistryProblem
from ..validation import _describe, _got
from .counts import SharedReports
from .entry import GAP_LIMIT, Entry
from .reading import read_entry_yaml
from .schema import REASONS, SPEC_MODELS, EntrySpec

__all__ = ["SLUG", "load_entry"]

SLUG = re.compile(r"[a-z0-9]+(?:[-.][a-z0-9]+)*")  # matched with fullmatch: "$" would let a final newline in


def _coerced(raw: Any, value: Any, loc: tuple, seen: set[int]) -> Iterable[tuple[tuple, str]]:
    """Values pydantic converted silently (the string "12" to an integer, 1 to true): YAML typed them already.

    An explicit null is never a conversion: no type converts it, so a value in its place was derived by the
    model (BERT's ``pooler: null``, "as the head needs"), as when the key is left out or given as --set KEY=null.
    """
    if raw is value or raw is None or id(raw) in seen:
        return
    seen.add(id(raw))
    if isinstance(raw, dict):
        for key, item in raw.items():
            if isinstance(value, BaseModel) and key in type(value).model_fields:
                yield from _coerced(item, getattr(value, key), loc + (key,), seen)
            elif isinstance(value, dict) and key in value:
                yield from _coerced(item, value[key], loc + (key,), seen)
    elif isinstance(raw, list) and isinstance(value, (list, tuple)) and len(raw) == len(value):
        for i, (item, converted) in enumerate(zip(raw, value, strict=True)):
            yield from _coerced(item, converted, loc + (i,), seen)
    elif isinstance(value, bool) and not isinstance(raw, bool):
        yield loc, f"expected true or false, got {_got(raw)}; write true or false without quotes"
    elif isinstance(value, int) and isinstance(raw, str):
        yield loc, f"expected an integer, got {_got(raw)}; write the number without quotes"
    elif isinstance(value, int) and isinstance(raw, float):
        yield loc, f"expected an integer, got {_got(raw)}; write a whole number without a decimal point"
    elif isinstance(value, float) and isinstance(raw, str):
        yield loc, f"expected a number, got {_got(raw)}; write the number without quotes"


def _unreserved(slug: str) -> str:
    """The slug, with '-model' after its first part when that part is a device name Windows reserves."""
    device, dot, rest = slug.partition(".")
    return f"{device}-model{dot}{rest}" if device in WINDOWS_RESERVED else slug


def _safe_slug(model_id: str) -> str:
    text = re.sub(r"[^a-z0-9.]+", "-", model_id.lower())
    return re.sub(r"([-.])[-.]+", r"\1", text).strip("-.")


def load_entry(
    path: Path,
    host: PluginHost,
    problems: list[RegistryProblem],
    warnings: list[RegistryProblem],
    duplicate_of: Path | None = None,
    *,
    reports: SharedReports | None = None,
) -> Entry | None:
    """Validate one file; its problems are added sorted by line, and the entry is returned only if there are none.

    ``reports``: where entries loaded together get their reports, one per distinct configuration.
    """
    found: list[RegistryProblem] = []
    entry = _check_entry(path, host, found, warnings, duplicate_of, reports if reports is not None else SharedReports())
    found.sort(key=lambda p: p.line)
    problems.extend(found)
    return None if found else entry


def _check_entry(
    path: Path,
    host: PluginHost,
    found: list[RegistryProblem],
    warnings: list[RegistryProblem],
    duplicate_of: Path | None,
    reports: SharedReports,
) -> Entry | None:
    model_id = path.stem
    device = model_id.split(".", 1)[0]
    if not SLUG.fullmatch(model_id):
        suggestion = _unreserved(_safe_slug(model_id))
        fix = (
            f"rename the file to '{suggestion}{path.suffix}'"
            if suggestion
            else "rename the file, e.g. 'bert-base-uncased.yaml'"
        )
        found.append(
            RegistryProblem(
                path,
                1,
                "",
                f"id {model_id!r} (the file name) is not a safe slug: use "
                f"lowercase letters and digits separated by single '-' or '.'; {fix}",
            )
        )
    elif device in WINDOWS_RESERVED:
        found.append(
            RegistryProblem(
                path,
                1,
                "",
                f"id {model_id!r} (the file name) starts with {device!r}, a device name Windows reserves (con, prn, "
                "aux, nul, com0-9 and lpt0-9, with any extension), so the file cannot exist on Windows; rename "
                f"the file, e.g. to '{_unreserved(model_id)}{path.suffix}'",
            )
        )
    if duplicate_of is not None:
        found.append(
            RegistryProblem(
                path,
                1,
                "",
                f"duplicate id {model_id!r}: also defined by {duplicate_of}; ids "
                "are file names and must be unique across folders, so rename one",
            )
        )
    if not path.exists():
        found.append(
            RegistryProblem(
                path,
                1,
                "",
                "no such file or folder; check the path (registry folders come "
                "from --registry, ARCHZOO_REGISTRY or ./registry)",
            )
        )
        return None
    texts: dict[tuple, str] = {}
    read = read_entry_yaml(path, found, texts)
    if read is None:
        return None
    data, lines = read

    def add(key: tuple, line_key: tuple, message: str) -> None:
        written: tuple = ()
        for part in line_key:  # a key YAML typed (2019: ...) is in `lines` as written ('2019')
            if written + (part,) not in lines and written + (str(part),) in lines:
                part = str(part)
            written += (part,)
        line_key = written
        while line_key and line_key not in lines:
            line_key = line_key[:-1]
        found.append(RegistryProblem(path, lines.get(line_key, 1), key_path(key), message))

    spec: EntrySpec | None = None
    try:
        spec = EntrySpec.model_validate(data)
    except ValidationError as exc:
        for err in exc.errors():
            key, line_key, message = _describe(err, SPEC_MODELS, texts)
            add(key, line_key, message)
    else:
        for key, message in _coerced(data, spec, (), set()):
            add(key, key, message)

    # The configuration is checked even when other keys are wrong, so one pass reports everything.
    name, config_data = data.get("architecture"), data.get("config", {})
    if not isinstance(name, str) or not isinstance(config_data, dict):
        return None  # already reported
    try:
        arch = host.architecture(name)
    except KeyError:
        known = sorted(host.architectures)
        near = closest(name, known)
        hint = f"did you mean {near[0]!r}? " if near else ""
        add(
            ("architecture",),
            ("architecture",),
            f"unknown architecture {name!r}; {hint}loaded: {', '.join(known) or 'none'} (install the plugin that "
            "provides it, or correct the name)",
        )
        return None
    try:
        config = validate_config(arch, config_data)
    except ArchzooError as exc:
        add(("config",), ("config",), str(exc))
        return None
    except ValidationError as exc:
        models: dict[tuple, type[BaseModel]] = {(): arch.config_model}
        for err in exc.errors():
            key, line_key, message = _describe(err, models, texts, ("config",))
            add(("config",) + key, ("config",) + line_key, message)
        return None
    for key, message in _coerced(config_data, config, ("config",), set()):
        add(key, key, message)
    if found or spec is None:
        return None

    entry = Entry(model_id, path, spec, arch, config, lines, reports)
    try:
        params = entry.params
    except ArchzooError as exc:  # a plugin's build failing on a valid configuration is reported, not raised
        add(("config",), ("config",), f"cannot count the parameters of this configuration: {exc}")
        return None
    if spec.published is None:
        return entry
    gap = entry.gap or 0.0
    if abs(gap) > GAP_LIMIT and spec.reconciliation is None:
        add(
            ("published", "params"),
            ("published", "params"),
            f"computed {params:,} differs from published {spec.published.params} by {gap:+.1%} "
            f"(over {GAP_LIMIT:.0%}); add 'reconciliation:' with a reason ({', '.join(REASONS)}) and a note, "
            "or correct the config",
        )
        return None
    if entry.status == "unexplained":
        warnings.append(
            RegistryProblem(
                path,
                entry.line_of("published", "params"),
                "published.params",
                f"computed {params:,} differs from published {spec.published.params} by {gap:+.2%}, more "
                "than its rounding; consider a 'reconciliation:' reason",
            )
        )
    active_gap = entry.active_gap
    if active_gap is None:
        return entry
    active_text = (
        f"computed active parameters {entry.active_params:,} differ from published {spec.published.active_params}"
    )
    if abs(active_gap) > GAP_LIMIT and spec.reconciliation is None:
        add(
            ("published", "active_params"),
            ("published", "active_params"),
            f"{active_text} by {active_gap:+.1%} (over {GAP_LIMIT:.0%}); add 'reconciliation:' with a reason "
            f"({', '.join(REASONS)}) and a note, or correct the config",
        )
        return None
    if entry.active_status == "unexplained":
        warnings.append(
            RegistryProblem(
                path,
                entry.line_of("published", "active_params"),
                "published.active_params",
                f"{active_text} by {active_gap:+.2%}, more than its rounding; consider a 'reconciliation:' reason",
            )
        )
    return entry
