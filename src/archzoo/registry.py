"""The registry: one YAML entry per published model, validated, and reconciled against the exact count.

An entry's id is its file name (``registry/bert/bert-base-uncased.yaml`` is ``bert-base-uncased``).
Loading reports every problem of every file, each as ``path:line: key.path: what is wrong``, with the
line read from the YAML itself. YAML is loaded with PyYAML's safe loader: no tag constructs objects.
"""

from __future__ import annotations

import fnmatch
import math
import os
import re
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Iterable, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from .architecture import ArchConfig, Architecture, describe_validation_error
from .errors import RegistryError, UnknownModelError, closest
from .host import PluginHost
from .report import Report, make_report

__all__ = [
    "Entry",
    "EntrySpec",
    "Published",
    "Registry",
    "RegistryProblem",
    "REASONS",
    "GAP_LIMIT",
    "load_registry",
    "parse_published",
    "default_registry_dirs",
    "SCHEMA_COMMENT",
]

#: Reason codes for a computed count that differs from the published figure by more than rounding.
REASONS: dict[str, str] = {
    "rounded": "the authors printed a loosely rounded or nominal figure",
    "excludes-embeddings": "the published figure leaves out the embedding matrices",
    "includes-pooler": "the published figure counts a pooler this entry's configuration does not have",
    "excludes-pooler": "the published figure leaves out a pooler this entry's configuration has",
    "head-differs": "the published figure is for another task head (classifier, LM head) than this entry's",
    "tied-weights": "the published figure counts a tied weight twice, or this entry does not tie it",
    "vocab-differs": "the published figure is for another vocabulary size than the released model",
    "retracted-by-authors": "the authors later corrected the figure",
    "typo-in-source": "the published hyperparameters do not give the published size (an error in the source)",
    "tool-omits-parameters": "the figure comes from a tool that misses parameters (e.g. nn.Parameter tensors)",
}

#: Above this relative gap, an entry must carry a reconciliation reason.
GAP_LIMIT = 0.05

SLUG = re.compile(r"^[a-z0-9]+(?:[-.][a-z0-9]+)*$")
SCHEMA_COMMENT = "# yaml-language-server: $schema="

_UNITS = {
    "": 1, "k": 10**3, "K": 10**3, "M": 10**6, "B": 10**9, "G": 10**9, "T": 10**12,
    "thousand": 10**3, "million": 10**6, "millions": 10**6, "billion": 10**9, "billions": 10**9,
    "(x10^6)": 10**6, "x10^6": 10**6, "(x10^9)": 10**9, "x10^9": 10**9,
}
_PUBLISHED = re.compile(r"^\s*(?P<number>\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?)\s*(?P<unit>[A-Za-z]*|\(?x10\^[69]\)?|\(millions\))\s*$")


def parse_published(text: str) -> tuple[int, int]:
    """``"110M"`` -> ``(110_000_000, 500_000)``: the value and the rounding of the printed figure.

    The rounding is half a unit of the last printed digit: "1.3B" can stand for 1.25B to 1.35B.
    """
    match = _PUBLISHED.match(str(text))
    if not match:
        raise ValueError(
            f"cannot read {text!r} as a parameter count; write it as printed, e.g. '110M', '1.3B', '1542M', "
            "'65 (x10^6)' or '85,802,501'"
        )
    number, unit = match["number"], match["unit"].strip("()") if match["unit"] == "(millions)" else match["unit"]
    if unit not in _UNITS:
        raise ValueError(f"unknown unit {unit!r} in {text!r}; use K, M, B or T (e.g. '110M')")
    scale = _UNITS[unit]
    digits = number.replace(",", "")
    decimals = len(digits.partition(".")[2])
    value = round(float(digits) * scale)
    return value, int(scale * 10**-decimals) // 2


# ---- the entry schema (leaf models first) ---------------------------------------------------------


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Source(_Model):
    """Where the published figure is printed."""

    title: str = Field(min_length=1)
    authors: list[str] = Field(min_length=1)
    year: int = Field(ge=1950, le=2100)
    venue: str = Field(min_length=1)
    arxiv: str | None = Field(None, pattern=r"^\d{4}\.\d{4,5}$")
    url: str | None = Field(None, pattern=r"^https?://")
    locator: str = Field(min_length=1, description="table, section or README heading that prints the figure")


class Published(_Model):
    """The size as its authors printed it."""

    params: str = Field(description="exactly as printed: '110M', '1.3B', '1542M'")
    source: Source

    @field_validator("params")
    @classmethod
    def _parses(cls, value: str) -> str:
        parse_published(value)
        return value

    @property
    def value(self) -> int:
        return parse_published(self.params)[0]

    @property
    def rounding(self) -> int:
        return parse_published(self.params)[1]


class EntryReference(_Model):
    """The implementation a user would load, and the arguments that build it."""

    target: str = Field(pattern=r"^(torch|transformers|timm)\.[A-Za-z0-9_.]+$",
                        description="transformers.BertModel, torch.nn.Transformer or timm.vit_base_patch16_224")
    config_class: str | None = Field(None, pattern=r"^transformers\.[A-Za-z0-9_]+Config$")
    kwargs: dict[str, Any] = {}
    model_kwargs: dict[str, Any] = {}
    measured: int | None = Field(None, gt=0, description="count pinned from a library CI cannot install (timm)")
    measured_with: str | None = Field(None, description="the library and version that measured it")

    @property
    def library(self) -> str:
        return self.target.split(".", 1)[0]


class Reconciliation(_Model):
    reason: Literal[tuple(REASONS)]  # type: ignore[valid-type]
    note: str = Field(min_length=10, description="one sentence: why the figures differ")


class EntrySpec(_Model):
    """One registry file."""

    architecture: str
    config: dict[str, Any] = {}
    title: str = Field(min_length=1)
    summary: str = Field(min_length=1)
    tags: list[str] = []
    year: int = Field(ge=1950, le=2100)
    published: Published | None = None
    reference: EntryReference | None = None
    reconciliation: Reconciliation | None = None


# ---- loaded entries -------------------------------------------------------------------------------


@dataclass(frozen=True)
class RegistryProblem:
    path: Path
    line: int
    key: str
    message: str

    def __str__(self) -> str:
        key = f"{self.key}: " if self.key else ""
        return f"{self.path}:{self.line}: {key}{self.message}"


@dataclass
class Entry:
    """A validated registry entry, with its architecture and parsed configuration."""

    id: str
    path: Path
    spec: EntrySpec
    architecture: Architecture
    config: ArchConfig
    lines: dict[tuple, int] = field(default_factory=dict, repr=False)

    @cached_property
    def report(self) -> Report:
        return make_report(self.architecture, self.config)

    @property
    def params(self) -> int:
        return self.report.params

    @property
    def gap(self) -> float | None:
        """(computed - published) / published, or None without a published figure."""
        if self.spec.published is None:
            return None
        return (self.params - self.spec.published.value) / self.spec.published.value

    @property
    def status(self) -> str:
        """``exact`` (within the printed rounding), ``reconciled``, ``unexplained`` or ``unpublished``."""
        published = self.spec.published
        if published is None:
            return "unpublished"
        if abs(self.params - published.value) <= published.rounding:
            return "exact"
        return "reconciled" if self.spec.reconciliation else "unexplained"

    def line_of(self, *key: Any) -> int:
        while key and key not in self.lines:
            key = key[:-1]
        return self.lines.get(key, 1)


# ---- YAML with line numbers -----------------------------------------------------------------------

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _read_yaml(path: Path, problems: list[RegistryProblem]) -> tuple[Any, dict[tuple, int]] | None:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        problems.append(RegistryProblem(path, 1, "", f"cannot read the file: {exc}"))
        return None
    try:
        node = yaml.compose(text, Loader=_Loader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark else 1
        what = getattr(exc, "problem", None) or str(exc)
        problems.append(RegistryProblem(path, line, "", f"YAML syntax error: {what}; check indentation and quoting"))
        return None
    if node is None:
        problems.append(RegistryProblem(path, 1, "", "empty file; an entry is a mapping with at least "
                                                     "'architecture', 'title', 'summary' and 'year'"))
        return None
    if not isinstance(node, yaml.MappingNode):
        problems.append(RegistryProblem(path, node.start_mark.line + 1, "",
                                        f"expected a mapping of keys (architecture: ..., title: ...), got a {node.id}"))
        return None
    lines: dict[tuple, int] = {}
    duplicate = False

    def walk(n: yaml.Node, key: tuple) -> None:
        nonlocal duplicate
        lines.setdefault(key, n.start_mark.line + 1)
        if isinstance(n, yaml.MappingNode):
            seen: dict[Any, int] = {}
            for k, v in n.value:
                name = k.value if isinstance(k, yaml.ScalarNode) else str(k.value)
                if name in seen:
                    duplicate = True
                    dotted = ".".join(str(p) for p in key + (name,))
                    problems.append(RegistryProblem(path, k.start_mark.line + 1, dotted,
                                                    f"duplicate key (first given on line {seen[name]}); keep one"))
                    continue
                seen[name] = k.start_mark.line + 1
                lines[key + (name,)] = k.start_mark.line + 1
                walk(v, key + (name,))
        elif isinstance(n, yaml.SequenceNode):
            for i, item in enumerate(n.value):
                walk(item, key + (i,))

    walk(node, ())
    if duplicate:
        return None
    try:
        data = _Loader(text).get_single_data()
    except yaml.YAMLError as exc:  # a tag the safe loader refuses, e.g. !!python/object
        mark = getattr(exc, "problem_mark", None)
        problems.append(RegistryProblem(path, mark.line + 1 if mark else 1, "",
                                        f"{getattr(exc, 'problem', exc)}; registry files hold plain YAML only"))
        return None
    return data, lines


# ---- the registry ---------------------------------------------------------------------------------


def default_registry_dirs() -> list[Path]:
    """``ARCHZOO_REGISTRY`` (paths separated by ``os.pathsep``), else ``./registry``, else the source checkout's."""
    env = os.environ.get("ARCHZOO_REGISTRY", "").strip()
    if env:
        return [Path(p) for p in env.split(os.pathsep) if p]
    here = Path("registry")
    if here.is_dir():
        return [here]
    checkout = Path(__file__).resolve().parents[2] / "registry"
    return [checkout] if checkout.is_dir() else []


class Registry:
    """Every entry found in some folders, and every problem found on the way."""

    def __init__(self, entries: list[Entry], problems: list[RegistryProblem], warnings: list[RegistryProblem]):
        self.entries = {e.id: e for e in entries}
        self.problems = problems
        self.warnings = warnings

    def __len__(self) -> int:
        return len(self.entries)

    def __iter__(self):
        return iter(self.entries.values())

    def list_models(self, pattern: str = "*", architecture: str | None = None) -> list[Entry]:
        """Entries whose id matches a glob pattern, optionally of one architecture."""
        return [e for e in self.entries.values()
                if fnmatch.fnmatchcase(e.id, pattern) and (architecture is None or e.spec.architecture == architecture)]

    def get_model(self, model_id: str) -> Entry:
        try:
            return self.entries[model_id]
        except KeyError:
            raise UnknownModelError(model_id, self.entries) from None

    def is_model(self, model_id: str) -> bool:
        return model_id in self.entries

    def raise_for_problems(self) -> None:
        if self.problems:
            raise RegistryError("\n".join(str(p) for p in self.problems))


def _files(paths: Iterable[Path]) -> list[Path]:
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            files.extend(sorted(p for p in path.rglob("*") if p.suffix in (".yaml", ".yml") and p.is_file()))
        else:
            files.append(path)
    return files


def _load_entry(path: Path, host: PluginHost, problems: list[RegistryProblem],
                warnings: list[RegistryProblem]) -> Entry | None:
    before = len(problems)
    model_id = path.stem
    if not SLUG.match(model_id):
        problems.append(RegistryProblem(path, 1, "", f"id {model_id!r} (the file name) is not a safe slug: use "
                                                     "lowercase letters, digits, '-' and '.', e.g. 'bert-base-uncased.yaml'"))
    if not path.exists():
        problems.append(RegistryProblem(path, 1, "", "no such file"))
        return None
    read = _read_yaml(path, problems)
    if read is None:
        return None
    data, lines = read

    def line(key: tuple) -> int:
        while key and key not in lines:
            key = key[:-1]
        return lines.get(key, 1)

    try:
        spec = EntrySpec.model_validate(data)
    except ValidationError as exc:
        for err in exc.errors():
            loc = tuple(err["loc"])
            for text in describe_validation_error(ValidationError.from_exception_data(exc.title, [err]), "",
                                                  list(EntrySpec.model_fields) if len(loc) == 1 else None):
                key, _, message = text.removeprefix(": ").partition(": ")
                if err["type"] == "extra_forbidden" and len(loc) > 1:
                    message = "unknown key" + _known_hint(loc, data)
                problems.append(RegistryProblem(path, line(loc), key, message))
        return None
    try:
        arch = host.architecture(spec.architecture)
    except KeyError:
        known = sorted(host.architectures)
        near = closest(spec.architecture, known)
        hint = f"did you mean {near[0]!r}? " if near else ""
        problems.append(RegistryProblem(path, line(("architecture",)), "architecture",
                                        f"unknown architecture {spec.architecture!r}; {hint}loaded: {', '.join(known)}"))
        return None
    try:
        config = arch.config_model.model_validate(spec.config)
    except ValidationError as exc:
        for err in exc.errors():
            loc = ("config",) + tuple(err["loc"])
            for text in describe_validation_error(ValidationError.from_exception_data(exc.title, [err]), "",
                                                  list(arch.config_model.model_fields)):
                key, _, message = text.removeprefix(": ").partition(": ")
                if not err["loc"]:  # a cross-field check names its key at the start of the message
                    key, _, message = message.partition(": ")
                    loc = ("config", key)
                problems.append(RegistryProblem(path, line(loc), f"config.{key}", message))
        return None
    if len(problems) > before:
        return None
    entry = Entry(model_id, path, spec, arch, config, lines)
    if spec.published is not None:
        gap = entry.gap or 0.0
        if abs(gap) > GAP_LIMIT and spec.reconciliation is None:
            problems.append(RegistryProblem(
                path, line(("published", "params")), "published.params",
                f"computed {entry.params:,} differs from published {spec.published.params} by {gap:+.1%} "
                f"(over {GAP_LIMIT:.0%}); add 'reconciliation:' with a reason ({', '.join(REASONS)}) and a note, "
                "or correct the config",
            ))
            return None
        if entry.status == "unexplained":
            warnings.append(RegistryProblem(
                path, line(("published", "params")), "published.params",
                f"computed {entry.params:,} differs from published {spec.published.params} by {gap:+.2%}, more "
                "than its rounding; consider a 'reconciliation:' reason",
            ))
    return entry


def _known_hint(loc: tuple, data: Any) -> str:
    models: dict[str, type[BaseModel]] = {"published": Published, "reference": EntryReference,
                                          "reconciliation": Reconciliation}
    model = models.get(str(loc[0]))
    if model is not None and len(loc) == 3 and loc[1] == "source":
        model = Source
    if model is None:
        return ""
    near = closest(str(loc[-1]), model.model_fields)
    hint = f"; did you mean {near[0]!r}?" if near else ""
    return f"{hint} valid keys: {', '.join(model.model_fields)}"


def load_registry(paths: Iterable[Path | str] | None = None, host: PluginHost | None = None,
                  *, include_plugins: bool = True) -> Registry:
    """Load and validate every entry under ``paths`` (default: `default_registry_dirs`) and plugin folders."""
    from .host import get_host

    host = host or get_host()
    dirs = [Path(p) for p in paths] if paths is not None else default_registry_dirs()
    if include_plugins:
        dirs += host.registry_dirs()
    problems: list[RegistryProblem] = []
    warnings: list[RegistryProblem] = []
    entries: list[Entry] = []
    seen: dict[str, Path] = {}
    for path in _files(dirs):
        entry = _load_entry(path, host, problems, warnings)
        if entry is None:
            continue
        if entry.id in seen:
            problems.append(RegistryProblem(path, 1, "", f"duplicate id {entry.id!r}: also defined by {seen[entry.id]}; "
                                                         "ids are file names and must be unique across folders"))
            continue
        seen[entry.id] = path
        entries.append(entry)
    entries.sort(key=lambda e: e.id)
    return Registry(entries, problems, warnings)


def entry_json_schema() -> dict[str, Any]:
    """The JSON Schema of a registry entry, for editors (yaml-language-server) and `archzoo schema`."""
    schema = EntrySpec.model_json_schema()
    schema["title"] = "archzoo registry entry"
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    return schema
