"""The registry: one YAML entry per published model, validated, and reconciled against the exact count.

An entry's id is its file name (``registry/bert/bert-base-uncased.yaml`` is ``bert-base-uncased``).
Loading reports every problem of every file in one pass, each as ``path:line: key.path: message``, with
the line read from the YAML itself and a message that says what is wrong (expected and got) and how to fix
it; ``tests/registry_errors/`` holds one malformed file per kind of problem. YAML is read with PyYAML's
safe loader, and any tag beyond plain YAML's (``!!python/object``, ``!include``) is refused before
anything is constructed.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from decimal import ROUND_HALF_EVEN, Decimal
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from .architecture import ArchConfig, Architecture, Reference
from .errors import ArchzooError, InputError, RegistryError, UnknownModelError, closest
from .files import (
    YAML12Loader,
    check_nodes,
    check_yaml_events,
    construct_plain,
    decode_utf8,
    key_path,
    read_user_bytes,
    yaml_character_problem,
)
from .host import PluginHost, call_plugin
from .registry_index import (
    WINDOWS_RESERVED,
    RegistryProblem,
    default_registry_dirs,
    registry_folders,
    split_plugin_problems,
    yaml_files,
)
from .report import Report, make_report
from .validation import _describe, _got

__all__ = [
    "GAP_LIMIT",
    "REASONS",
    "SCHEMA_COMMENT",
    "Entry",
    "EntrySpec",
    "Published",
    "Registry",
    "RegistryProblem",
    "default_registry_dirs",
    "find_model",
    "load_registry",
    "parse_published",
    "registry_folders",
    "split_plugin_problems",
    "yaml_files",
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

SLUG = re.compile(r"[a-z0-9]+(?:[-.][a-z0-9]+)*")  # matched with fullmatch: "$" would let a final newline in
SCHEMA_COMMENT = "# yaml-language-server: $schema="

_UNITS = {
    "": 1,
    "k": 10**3,
    "K": 10**3,
    "M": 10**6,
    "B": 10**9,
    "G": 10**9,
    "T": 10**12,
    "thousand": 10**3,
    "million": 10**6,
    "millions": 10**6,
    "billion": 10**9,
    "billions": 10**9,
    "(x10^6)": 10**6,
    "x10^6": 10**6,
    "(x10^9)": 10**9,
    "x10^9": 10**9,
}
_PUBLISHED = re.compile(
    r"^\s*(?P<number>\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?)\s*(?P<unit>[A-Za-z]*|\(?x10\^[69]\)?|\(millions\))\s*$"
)


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
        if unit[-1:] in ("B", "b") and unit[:-1] in _UNITS and unit[:-1]:  # MB, GB: bytes, not parameters
            raise ValueError(
                f"{text!r} reads as a size in bytes ({unit!r}); write the parameter count as printed "
                f"with K, M, B or T, e.g. '{number}{unit[:-1]}'"
            )
        raise ValueError(f"unknown unit {unit!r} in {text!r}; use K, M, B or T (e.g. '110M')")
    scale = _UNITS[unit]
    digits = Decimal(number.replace(",", ""))
    decimals = max(0, -digits.as_tuple().exponent)  # type: ignore[operator]
    value = int((digits * scale).to_integral_value(ROUND_HALF_EVEN))
    return value, scale // 10**decimals // 2 if scale >= 10**decimals else 0


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
    """The size as its authors printed it: the total, and for a mixture of experts the active parameters."""

    params: str = Field(description="exactly as printed: '110M', '1.3B', '1542M'")
    active_params: str | None = Field(
        None,
        description="a mixture of experts' active parameters (those one token uses), exactly as printed: '13B'",
    )
    source: Source

    @field_validator("params", "active_params")
    @classmethod
    def _parses(cls, value: str | None) -> str | None:
        if value is not None and parse_published(value)[0] <= 0:
            raise ValueError(
                f"a published size of {value!r} parameters cannot be right; write the figure as printed, e.g. '110M'"
            )
        return value

    @property
    def value(self) -> int:
        return parse_published(self.params)[0]

    @property
    def rounding(self) -> int:
        return parse_published(self.params)[1]

    @property
    def active_value(self) -> int | None:
        return None if self.active_params is None else parse_published(self.active_params)[0]

    @property
    def active_rounding(self) -> int | None:
        return None if self.active_params is None else parse_published(self.active_params)[1]


class EntryReference(_Model):
    """The implementation a user would load, and the arguments that build it."""

    target: str = Field(
        pattern=r"^(torch|transformers|timm)\.[A-Za-z0-9_.]+$",
        description="transformers.BertModel, torch.nn.Transformer or timm.vit_base_patch16_224",
    )
    config_class: str | None = Field(None, pattern=r"^transformers\.[A-Za-z0-9_]+Config$")
    kwargs: dict[str, Any] = {}
    model_kwargs: dict[str, Any] = {}
    measured: int | None = Field(None, gt=0, description="count pinned from a library CI cannot install (timm)")
    measured_with: str | None = Field(None, description="the library and version that measured it")

    @property
    def library(self) -> str:
        return self.target.split(".", 1)[0]

    def to_reference(self) -> Reference:
        """The `archzoo.Reference` that builds it (`archzoo verify`, the model page's code)."""
        return Reference(
            library=self.library,  # type: ignore[arg-type]  # the target's pattern allows only the three
            target=self.target,
            config_class=self.config_class,
            kwargs=self.kwargs,
            model_kwargs=self.model_kwargs,
        )


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
        """``within-rounding`` (of the printed figure), ``reconciled``, ``unexplained`` or ``unpublished``."""
        published = self.spec.published
        if published is None:
            return "unpublished"
        return self._status(self.params, published.value, published.rounding)

    def _status(self, computed: int, printed: int, rounding: int) -> str:
        gap = (computed - printed) / printed
        if abs(computed - printed) <= rounding and abs(gap) <= GAP_LIMIT:
            return "within-rounding"  # a one-digit figure ("1B") spans ±50%: beyond 5% it needs a reason
        return "reconciled" if self.spec.reconciliation else "unexplained"

    @property
    def active_params(self) -> int:
        """The parameters one token uses (`Report.active_params`): ``params`` unless the model holds experts."""
        return self.report.active_params

    @property
    def active_gap(self) -> float | None:
        """(computed - published) / published for the active parameters, or None without a published figure."""
        printed = self.spec.published.active_value if self.spec.published else None
        return None if printed is None else (self.active_params - printed) / printed

    @property
    def active_status(self) -> str:
        """The status of the published active figure, as `status` is of the total's; ``unpublished`` without one.
        One ``reconciliation`` explains both figures."""
        published = self.spec.published
        if published is None or published.active_value is None or published.active_rounding is None:
            return "unpublished"
        return self._status(self.active_params, published.active_value, published.active_rounding)

    def figures(self) -> dict[str, Any]:
        """The computed and published figures side by side, and how they compare, as plain JSON data (what
        ``archzoo show --json`` gives next to the entry): the total, then the active parameters."""
        published = self.spec.published
        return {
            "params": self.params,
            "published_value": published.value if published else None,
            "gap": self.gap,
            "status": self.status,
            "active_params": self.active_params,
            "published_active_value": published.active_value if published else None,
            "active_gap": self.active_gap,
            "active_status": self.active_status,
        }

    def line_of(self, *key: Any) -> int:
        while key and key not in self.lines:
            key = key[:-1]
        return self.lines.get(key, 1)


# ---- YAML with line numbers -----------------------------------------------------------------------

_Loader = YAML12Loader


def _syntax_error(path: Path, text: str, exc: yaml.YAMLError) -> RegistryProblem:
    """A YAML syntax error as ``path:line: what; how to fix``, worded the same with or without libyaml."""
    character = yaml_character_problem(exc, text)
    if character:
        return RegistryProblem(path, character[0], "", character[1])
    if _Loader.__mro__[1] is not yaml.SafeLoader:  # libyaml words its errors differently: re-read with PyYAML's parser
        try:
            yaml.compose(text, Loader=yaml.SafeLoader)
        except yaml.YAMLError as pure:
            exc = pure
    problem = str(getattr(exc, "problem", None) or exc)
    context = str(getattr(exc, "context", None) or "")
    mark, context_mark = getattr(exc, "problem_mark", None), getattr(exc, "context_mark", None)
    line = mark.line + 1 if mark else 1
    if "quoted scalar" in context and context_mark is not None:
        return RegistryProblem(
            path,
            context_mark.line + 1,
            "",
            "YAML syntax error: the quoted value that starts on this line is never closed; add the closing quote",
        )
    run_on = _run_on_quote(text, line)
    if run_on is not None:  # an unclosed quote ends at the next quote in the file, where reading then fails
        return RegistryProblem(
            path,
            run_on,
            "",
            f"YAML syntax error: the quoted value that starts on this line is "
            f"not closed on it and runs on to the next quote, on line {line}; "
            "add the closing quote",
        )
    if "'\\t'" in problem or "\t" in problem:
        return RegistryProblem(
            path, line, "", "YAML syntax error: a tab character where YAML expects indentation; indent with spaces only"
        )
    if problem.startswith("mapping values are not allowed"):
        return RegistryProblem(
            path,
            line,
            "",
            "YAML syntax error: unexpected ':' (mapping values are not allowed "
            "here); indent this key like the keys beside it, or quote a value "
            "that contains ': '",
        )
    if "single document" in context:
        return RegistryProblem(
            path,
            line,
            "",
            "YAML syntax error: a second document ('---'); a registry file "
            "holds one entry, so split it into one file per entry",
        )
    if "block mapping" in context and "found '<block mapping start>'" in problem:
        return RegistryProblem(
            path,
            line,
            "",
            "YAML syntax error: this line is indented less than the key above "
            "it but more than its parent; indent it like the keys beside it",
        )
    if "block mapping" in context and "found '<scalar>'" in problem:
        return RegistryProblem(
            path,
            line,
            "",
            "YAML syntax error: text after a quoted value; a value that starts "
            "with a quote ends at the closing quote, so quote the whole value",
        )
    if context.startswith("while parsing a flow") and context_mark is not None:
        lines_ = text.splitlines()
        row_index = min(context_mark.line, len(lines_) - 1)
        while row_index > 0 and not ("[" in lines_[row_index] or "{" in lines_[row_index]):
            row_index -= 1  # at the end of the file the mark sits past the opener: walk back to it
        row = lines_[row_index] if lines_ else ""
        at = max(("[", "{"), key=row.rfind) if ("[" in row or "{" in row) else ("[" if "sequence" in context else "{")
        opening, closing = (at, "]" if at == "[" else "}")
        got = problem.split("got ")[-1].replace("'<stream end>'", "the end of the file")
        return RegistryProblem(
            path,
            row_index + 1,
            "",
            f"YAML syntax error: the '{opening}' that starts on "
            f"this line is not closed (found {got} "
            f"on line {line}); add the missing ',' or '{closing}'",
        )
    what = f"{context}, {problem}" if context else problem
    return RegistryProblem(path, line, "", f"YAML syntax error: {what}; check indentation and quoting")


def _run_on_quote(text: str, error_line: int) -> int | None:
    """The line of a quoted value that spans lines and ends on ``error_line``: most likely an unclosed quote."""
    try:
        for token in yaml.scan(text, Loader=yaml.SafeLoader):
            if token.start_mark.line + 1 > error_line:
                break
            if (
                isinstance(token, yaml.ScalarToken)
                and token.style in ('"', "'")
                and token.start_mark.line < token.end_mark.line
                and token.end_mark.line + 1 == error_line
            ):
                return token.start_mark.line + 1
    except yaml.YAMLError:
        pass
    return None


def _read_yaml(
    path: Path, problems: list[RegistryProblem], texts: dict[tuple, str] | None = None
) -> tuple[Any, dict[tuple, int]] | None:
    """The file's data and the line of every key path, or None after adding the problems that prevent reading it.

    ``texts`` receives every scalar as written (``2010.11930``, which YAML reads as the float 2010.1193).

    Only the safe loader's plain tags are accepted: a tag such as ``!!python/object/apply`` is reported
    from the node graph and nothing is constructed.
    """
    try:
        text = decode_utf8(read_user_bytes(path), str(path))
        check_yaml_events(text)
    except InputError as exc:
        problems.append(RegistryProblem(path, exc.line or 1, exc.key, exc.message))
        return None
    try:
        node = yaml.compose(text, Loader=_Loader)
    except yaml.YAMLError as exc:
        problems.append(_syntax_error(path, text, exc))
        return None
    if node is None:
        problems.append(
            RegistryProblem(
                path,
                1,
                "",
                "empty file; an entry is a mapping with at least 'architecture', 'title', 'summary' and 'year'",
            )
        )
        return None
    if not isinstance(node, yaml.MappingNode):
        value = node.value if len(node.value) <= 40 else node.value[:37] + "..."
        kind = "list" if isinstance(node, yaml.SequenceNode) else f"single value {value!r}"
        problems.append(
            RegistryProblem(
                path,
                node.start_mark.line + 1,
                "",
                f"expected a mapping of keys (architecture: ..., title: ...), got a {kind}",
            )
        )
        return None
    lines: dict[tuple, int] = {}
    before = len(problems)

    def refuse(n: yaml.Node, key: tuple, message: str) -> None:
        problems.append(RegistryProblem(path, n.start_mark.line + 1, key_path(key), message))

    check_nodes(node, refuse, holder="registry files", lines=lines, texts=texts)
    if len(problems) > before:
        return None
    try:
        return construct_plain(node), lines
    except InputError as exc:
        problems.append(RegistryProblem(path, exc.line or 1, "", exc.message))
        return None


# ---- the registry ---------------------------------------------------------------------------------


class Registry:
    """Every entry found in some folders, and every problem found on the way."""

    def __init__(
        self,
        entries: list[Entry],
        problems: list[RegistryProblem],
        warnings: list[RegistryProblem],
        plugin_problems: list[RegistryProblem] | None = None,
    ):
        self.entries = {e.id: e for e in entries}
        self.problems = problems
        self.warnings = warnings
        self.plugin_problems = plugin_problems or []

    def __len__(self) -> int:
        return len(self.entries)

    def __iter__(self):
        return iter(self.entries.values())

    def list_models(self, pattern: str = "*", architecture: str | None = None) -> list[Entry]:
        """Entries whose id matches a glob pattern, optionally of one architecture."""
        return [
            e
            for e in self.entries.values()
            if fnmatch.fnmatchcase(e.id, pattern) and (architecture is None or e.spec.architecture == architecture)
        ]

    def get_model(self, model_id: str) -> Entry:
        """The entry with this id; an invalid file of that name, or the closest ids, in the error."""
        try:
            return self.entries[model_id]
        except KeyError:
            broken = [p for p in self.problems + self.plugin_problems if p.path.stem == model_id]
            if broken:
                raise RegistryError(
                    f"registry entry {model_id!r} is invalid: {broken[0]} "
                    f"(`archzoo validate {broken[0].path}` lists every problem)"
                ) from None
            raise UnknownModelError(model_id, self.entries) from None

    def is_model(self, model_id: str) -> bool:
        return model_id in self.entries

    def raise_for_problems(self) -> None:
        if self.problems:
            raise RegistryError("\n".join(str(p) for p in self.problems))


def _files(paths: Iterable[Path], problems: list[RegistryProblem], *, stem: str | None = None) -> list[Path]:
    """The YAML files under ``paths``, as `yaml_files` finds them."""
    return [Path(name) for name in yaml_files(paths, problems, stem=stem)]


# ---- describing validation errors -----------------------------------------------------------------

#: The schema model at each key path of an entry, for required keys, valid keys and descriptions.
_SPEC_MODELS: dict[tuple, type[BaseModel]] = {
    (): EntrySpec,
    ("published",): Published,
    ("published", "source"): Source,
    ("reference",): EntryReference,
    ("reconciliation",): Reconciliation,
}


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


# ---- loading --------------------------------------------------------------------------------------


def _unreserved(slug: str) -> str:
    """The slug, with '-model' after its first part when that part is a device name Windows reserves."""
    device, dot, rest = slug.partition(".")
    return f"{device}-model{dot}{rest}" if device in WINDOWS_RESERVED else slug


def _safe_slug(model_id: str) -> str:
    text = re.sub(r"[^a-z0-9.]+", "-", model_id.lower())
    return re.sub(r"([-.])[-.]+", r"\1", text).strip("-.")


def _load_entry(
    path: Path,
    host: PluginHost,
    problems: list[RegistryProblem],
    warnings: list[RegistryProblem],
    duplicate_of: Path | None = None,
) -> Entry | None:
    """Validate one file; its problems are added sorted by line, and the entry is returned only if there are none."""
    found: list[RegistryProblem] = []
    entry = _check_entry(path, host, found, warnings, duplicate_of)
    found.sort(key=lambda p: p.line)
    problems.extend(found)
    return None if found else entry


def _check_entry(
    path: Path,
    host: PluginHost,
    found: list[RegistryProblem],
    warnings: list[RegistryProblem],
    duplicate_of: Path | None,
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
    read = _read_yaml(path, found, texts)
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
            key, line_key, message = _describe(err, _SPEC_MODELS, texts)
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
        config = call_plugin(
            arch.plugin,
            "its configuration model",
            arch.config_model.model_validate,
            config_data,
            expected=(ValidationError,),
        )
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

    entry = Entry(model_id, path, spec, arch, config, lines)
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


def load_registry(
    paths: Iterable[Path | str] | None = None, host: PluginHost | None = None, *, plugin_registries: Iterable[str] = ()
) -> Registry:
    """Load and validate every entry under ``paths`` (default: `default_registry_dirs`) and the folders
    of the plugins named in ``plugin_registries`` (see `registry_folders`).

    Every problem of every file is collected in one pass (``Registry.problems``); files with problems are
    left out and the others load. A problem in a folder a plugin ships is the plugin's, not the user's:
    it goes to ``Registry.plugin_problems``, naming the plugin, and never fails a build of other folders.
    """
    from .host import get_host

    host = host or get_host()
    dirs, owners = registry_folders(paths, host, plugin_registries)
    problems: list[RegistryProblem] = []
    warnings: list[RegistryProblem] = []
    entries: list[Entry] = []
    first: dict[str, Path] = {}
    for path in _files(dirs, problems):
        duplicate_of = first.setdefault(path.stem, path)
        entry = _load_entry(path, host, problems, warnings, duplicate_of if duplicate_of != path else None)
        if entry is not None:
            entries.append(entry)
    entries.sort(key=lambda e: e.id)
    problems, plugin_problems = split_plugin_problems(problems, owners)
    return Registry(entries, problems, warnings, plugin_problems)


def find_model(
    model_id: str,
    paths: Iterable[Path | str] | None = None,
    host: PluginHost | None = None,
    *,
    plugin_registries: Iterable[str] = (),
) -> Entry:
    """The entry with this id, loading that one file only (the folders are listed, nothing else is read).

    The same answers as ``load_registry(...).get_model(model_id)``: the entry; an error naming its first
    problem when its file is invalid (or its id is defined twice); else the closest ids.
    """
    from .host import get_host

    host = host or get_host()
    dirs, owners = registry_folders(paths, host, plugin_registries)
    listing: list[RegistryProblem] = []
    named = _files(dirs, listing, stem=model_id)
    if not named:
        raise UnknownModelError(model_id, {f.stem for f in _files(dirs, listing)})
    problems: list[RegistryProblem] = []
    warnings: list[RegistryProblem] = []
    entry = _load_entry(named[0], host, problems, warnings, None)
    for other in named[1:]:
        _load_entry(other, host, problems, warnings, named[0])
    if entry is None or problems:
        first = problems[0]
        owner = split_plugin_problems([first], owners)[1]
        shown = owner[0] if owner else first
        raise RegistryError(
            f"registry entry {model_id!r} is invalid: {shown} (`archzoo validate {first.path}` lists every problem)"
        )
    return entry


def entry_json_schema() -> dict[str, Any]:
    """The JSON Schema of a registry entry, for editors (yaml-language-server) and `archzoo schema`."""
    schema = EntrySpec.model_json_schema()
    schema["title"] = "archzoo registry entry"
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    return schema
