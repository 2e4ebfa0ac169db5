"""What the site shows of a model or an architecture, computed once from the registry and the plugins.

A view is plain data (numbers, LaTeX, SVG and mermaid text); `archzoo.site.pages` turns views into
markdown without computing anything, and `archzoo.site.records` into the records of the downloads. Strings from the registry and the plugins are kept as they are,
plain text: the SVG and mermaid writers escape the block names they draw, and `pages` escapes the rest
for each place it shows them. Work that is the same for every model of an architecture (the
default configuration's report, its configuration table) is cached per architecture, and LaTeX of a
formula is cached by the formula's terms, since most entries of a zoo share most of their blocks.
"""

from __future__ import annotations

import json
import math
import shlex
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import yaml

from ..architecture import Architecture, Reference
from ..blocks import Block
from ..formula import Poly
from ..registry import REASONS, Entry
from ..report import Report, human_bytes, human_count, make_report
from .diagram import mermaid as mermaid_diagram
from .svg import bar_chart, flops_plot

__all__ = [
    "ArchitectureView",
    "BlockRow",
    "ModelView",
    "architecture_view",
    "block_rows",
    "cite",
    "complexity_latex",
    "fmt_gap",
    "model_view",
]

#: Sequence lengths are plotted between these bounds (clipped around the model's own N).
PLOT_MIN_N = 16
PLOT_POINTS = 32


# ---- formulas ---------------------------------------------------------------------------------------


_LATEX: dict[tuple, str] = {}


def latex(poly: Poly, substitute: bool = False) -> str:
    """``poly.latex(substitute)``, memoised: the zoo's entries share most of their block formulas."""
    key = (
        substitute,
        tuple(poly.terms.items()),
        tuple((n, s.latex, s.order, s.value if substitute else None) for n, s in poly.symbols.items()),
    )
    text = _LATEX.get(key)
    if text is None:
        text = _LATEX[key] = poly.latex(substitute=substitute)
    return text


def complexity_latex(poly: Poly) -> str:
    """Big-O of a polynomial in LaTeX: the monomials no other monomial dominates, without coefficients.

    The same rule as `Poly.complexity`, rendered with the symbols' LaTeX names.
    """
    body = poly.dominant_terms()
    # plain parentheses, not \\left( \\right): KaTeX may then break a long one after a + on a narrow screen
    return f"O({body.latex()})" if not body.is_zero() else "O(1)"


# ---- small formatting helpers ---------------------------------------------------------------------


def fmt_gap(gap: float | None) -> str:
    """``-0.0047`` -> ``-0.47%``; ``None`` -> ``—``."""
    if gap is None:
        return "—"
    return f"{gap:+.2%}"


def _surname(author: str) -> str:
    """The last word of a name (the whole text when it has no word, so a blank name cannot fail)."""
    words = str(author).split()
    return words[-1] if words else str(author)


def cite(source: Any) -> str:
    """A short citation: ``Devlin et al. (2019). "Title". NAACL-HLT 2019``."""
    authors = list(source.authors) or [""]
    if len(authors) > 2:
        who = f"{_surname(authors[0])} et al."
    elif len(authors) == 2:
        who = f"{_surname(authors[0])} and {_surname(authors[1])}"
    else:
        who = authors[0]
    return f"{who} ({source.year}). “{source.title}”. {source.venue}"


def _set_value(value: Any) -> str:
    """A configuration value as `archzoo count --set` reads it back (YAML scalars)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, str):
        return value
    return json.dumps(value)


def config_yaml(config: dict[str, Any]) -> str:
    """A configuration as YAML; flat configurations (the usual case) without the cost of a YAML emitter."""
    lines = []
    for key, value in config.items():
        if isinstance(value, (dict, list)) or (isinstance(value, str) and not _plain_yaml_string(value)):
            return yaml.safe_dump(config, sort_keys=False, default_flow_style=False, allow_unicode=True)
        lines.append(f"{key}: {_set_value(value)}")
    return "\n".join(lines) + "\n"


@lru_cache(maxsize=4096)
def _plain_yaml_string(value: str) -> bool:
    """True when ``value`` reads back from YAML as this same string without quotes."""
    try:
        return (
            bool(value)
            and value.strip() == value
            and yaml.safe_load(value) == value
            and "#" not in value
            and ": " not in value
            and not value.startswith(("-", "?", "!", "&", "*", "[", "{", "'", '"', "@", "`", "|", ">", "%"))
        )
    except yaml.YAMLError:
        return False


def count_command(architecture: str, config: dict[str, Any]) -> str:
    """The CLI command that counts this configuration: ``archzoo count bert --set n_layers=24``."""
    parts = ["archzoo", "count", architecture]
    for key, value in config.items():
        parts += ["--set", shlex.quote(f"{key}={_set_value(value)}")]
    return " ".join(parts)


# ---- the block tree as table rows -------------------------------------------------------------------


@dataclass(frozen=True)
class BlockRow:
    """One block of a model's tree, as the breakdown table shows it, read off `Block.visits`.

    ``count`` is how many copies of the block run in one forward pass (per token, for experts) and
    ``stored`` how many sets of its weights the model holds (1 under a ``shared`` repeat, ``E`` per layer
    for experts); ``params`` is for all stored copies, ``flops`` for all copies run, ``share`` is
    ``params`` over the model's total. The formulas are for one copy.
    """

    path: str
    name: str
    depth: int
    kind: str
    description: str
    count: int
    shared: bool
    params: int
    share: float
    flops: int
    formula: str  # LaTeX, symbolic, one copy
    substituted: str  # LaTeX with the configuration's values, one copy
    tied_to: str = ""
    stored: int = 1


def block_rows(root: Block, seq_len: int, *, substitute: bool = True) -> list[BlockRow]:
    """Every block of the tree, depth first, with its counts multiplied out."""
    total = root.params.evaluate() or 1
    rows: list[BlockRow] = []
    shared_above: list[bool] = []  # by depth: whether a shared repeat holds the block at that depth
    for visit in root.visits():
        block = visit.block
        del shared_above[visit.depth :]
        shared = bool(shared_above) and shared_above[-1]
        shared_above.append(shared or (block.repeat is not None and block.shared))
        params = visit.params.evaluate()
        rows.append(
            BlockRow(
                path=visit.path,
                name=block.name,
                depth=visit.depth,
                kind=block.kind,
                description=block.description,
                count=visit.executed.evaluate(),
                shared=shared,
                params=params,
                share=params / total,
                flops=visit.flops.evaluate(N=seq_len),
                formula=latex(block.params),
                substituted=latex(block.params, substitute=True) if substitute else "",
                tied_to=block.tied_to,
                stored=visit.stored.evaluate(),
            )
        )
    return rows


def param_groups(root: Block, *, fold_below: float = 0.005) -> list[tuple[str, int]]:
    """The parameter breakdown plotted on a model page, each group with all its stored copies.

    Top-level blocks, with stacks opened and repeated layers opened one level (``layers.attention``,
    ``layers.feed_forward``); groups under ``fold_below`` of the total are folded into one bar.
    """
    params = {visit.path: visit.params.evaluate() for visit in root.visits()}
    groups: list[tuple[str, int]] = []

    def visit(block: Block, path: str, label: str) -> None:
        for child in block.children:
            child_path, name = f"{path}.{child.name}", f"{label}.{child.name}" if label else child.name
            if child.repeat is not None:
                layer = child.children[0] if len(child.children) == 1 else child
                layer_path = f"{child_path}.{layer.name}" if layer is not child else child_path
                for part in layer.children or (layer,):
                    part_path = f"{layer_path}.{part.name}" if part is not layer else layer_path
                    groups.append((f"{name}.{part.name}", params[part_path]))
            elif child.kind == "stack":
                visit(child, child_path, name)
            else:
                groups.append((name, params[child_path]))

    visit(root, root.name, "")
    total = sum(v for _, v in groups) or 1
    kept = [(n, v) for n, v in groups if v >= fold_below * total]
    folded = [(n, v) for n, v in groups if 0 < v < fold_below * total]
    if len(folded) == 1:
        kept.append(folded[0])
    elif folded:
        kept.append((f"{len(folded)} smaller blocks", sum(v for _, v in folded)))
    return kept


# ---- model views ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ModelView:
    """Everything a model page, the tables and the downloads show about one registry entry."""

    id: str
    title: str
    summary: str
    tags: tuple[str, ...]
    year: int
    architecture: str
    architecture_title: str
    source_path: str  # the YAML file, relative to the site's repository when it is inside it
    params: int
    approx: int
    approx_formula: str
    params_formula: str
    non_embedding: int
    embedding: int
    published: str | None
    published_value: int | None
    published_citation: str
    published_locator: str
    published_links: tuple[tuple[str, str], ...]
    difference: int | None
    gap: float | None
    status: str
    active_params: int  # the parameters one token uses: params unless the model holds experts
    active_formula: str
    published_active: str | None  # a mixture of experts' active parameters, as printed
    published_active_value: int | None
    active_difference: int | None
    active_gap: float | None
    active_status: str  # as status, for the published active figure; "unpublished" without one
    reason: str | None
    reason_text: str
    reason_note: str
    weights: dict[str, int]
    seq_len: int
    seq_len_meaning: str
    flops: int
    attention_flops: int
    flops_formula: str
    attention_formula: str
    other_formula: str
    time_complexity: str
    params_complexity: str
    kv_elements: int
    kv_formula: str
    kv_complexity: str
    training_bytes: dict[str, int]
    overtakes_at: int | None
    rows: tuple[BlockRow, ...]
    symbols: tuple[dict[str, Any], ...]
    config_yaml: str
    entry_config: dict[str, Any]
    command: str
    reference_code: str | None
    reference_target: str | None
    reference_measured: int | None
    reference_measured_with: str | None
    flops_svg: str
    params_svg: str
    mermaid: str

    @property
    def params_human(self) -> str:
        """The exact count as the tables print it: ``109.5M``."""
        return human_count(self.params)


def _reference_for(entry: Entry) -> Reference | None:
    """The entry's own reference when it names one, else the architecture's for this configuration."""
    spec = entry.spec.reference
    if spec is not None:
        return spec.to_reference()
    if entry.architecture.reference is None:
        return None
    try:
        return entry.architecture.reference(entry.config)
    except Exception:  # a plugin's reference hook must not break the site
        return None


def _sequence_meaning(report: Report) -> str:
    for symbol in report.root.flops.used_symbols():
        if symbol.name == "N":
            return symbol.meaning
    return "sequence length"


def _coefficients(poly: Poly) -> list[int]:
    """``[c0, c1, c2, ...]`` with ``poly(N) = sum(c_k N^k)`` for this configuration."""
    return [poly.part("N", k).evaluate(N=1) for k in range(poly.degree_in("N") + 1)]


def flops_series(report: Report) -> tuple[list[int], list[int], list[int]]:
    """N values on a log scale around the model's own N, and FLOPs (total, attention) at each."""
    seq = max(1, report.seq_len)
    overtakes = report.attention_overtakes_at
    low = min(PLOT_MIN_N, max(1, seq // 8))
    high = min(max(seq * 16, (overtakes or 0) * 4, 4096), 10**7)
    ns: list[int] = []
    for i in range(PLOT_POINTS):
        n = round(math.exp(math.log(low) + (math.log(high) - math.log(low)) * i / (PLOT_POINTS - 1)))
        if not ns or n > ns[-1]:
            ns.append(n)
    total_c = _coefficients(report.root.flops)
    attention_c = _coefficients(report.root.attention_flops)
    totals = [sum(c * n**k for k, c in enumerate(total_c)) for n in ns]
    attention = [sum(c * n**k for k, c in enumerate(attention_c)) for n in ns]
    return ns, totals, attention


def model_view(entry: Entry, *, source_path: str | None = None) -> ModelView:
    """Compute everything shown about ``entry`` (its report is computed once and cached on the entry)."""
    report = entry.report
    root = report.root
    spec = entry.spec
    arch = entry.architecture
    published = spec.published
    params = report.params
    rest = root.flops - root.attention_flops
    kv = report.kv_cache_elements_per_token
    reference = _reference_for(entry)

    links: list[tuple[str, str]] = []
    if published is not None:
        if published.source.arxiv:
            links.append((f"arXiv:{published.source.arxiv}", f"https://arxiv.org/abs/{published.source.arxiv}"))
        if published.source.url:
            links.append(("source", published.source.url))
    reconciliation = spec.reconciliation
    active_printed = published.active_value if published else None
    ns, totals, attention = flops_series(report)
    config_dump = entry.config.model_dump(mode="json")
    return ModelView(
        id=entry.id,
        title=spec.title,
        summary=spec.summary,
        tags=tuple(spec.tags),
        year=spec.year,
        architecture=arch.name,
        architecture_title=arch.title,
        source_path=source_path if source_path is not None else entry.path.as_posix(),
        params=params,
        approx=report.approx,
        approx_formula=latex(root.approx),
        params_formula=latex(root.params),
        non_embedding=report.non_embedding,
        embedding=report.embedding_params,
        published=published.params if published else None,
        published_value=published.value if published else None,
        published_citation=cite(published.source) if published else "",
        published_locator=published.source.locator if published else "",
        published_links=tuple(links),
        difference=params - published.value if published else None,
        gap=entry.gap,
        status=entry.status,
        active_params=report.active_params,
        active_formula=latex(report.active_formula),
        published_active=published.active_params if published else None,
        published_active_value=active_printed,
        active_difference=None if active_printed is None else report.active_params - active_printed,
        active_gap=entry.active_gap,
        active_status=entry.active_status,
        reason=reconciliation.reason if reconciliation else None,
        reason_text=REASONS.get(reconciliation.reason, "") if reconciliation else "",
        reason_note=reconciliation.note if reconciliation else "",
        weights=report.weight_bytes(),
        seq_len=report.seq_len,
        seq_len_meaning=_sequence_meaning(report),
        flops=report.flops,
        attention_flops=report.attention_flops,
        flops_formula=latex(root.flops),
        attention_formula=latex(root.attention_flops),
        other_formula=latex(rest),
        time_complexity=complexity_latex(root.flops),
        params_complexity=complexity_latex(root.params),
        kv_elements=kv,
        kv_formula=latex(root.kv_cache) if kv else "",
        kv_complexity=complexity_latex(root.kv_cache) if kv else "",
        training_bytes=report.training_bytes_adam(),
        overtakes_at=report.attention_overtakes_at,
        rows=tuple(block_rows(root, report.seq_len)),
        symbols=tuple(report.symbols()),
        config_yaml=config_yaml(config_dump),
        entry_config=dict(spec.config),
        command=count_command(arch.name, dict(spec.config)),
        reference_code=reference.code() if reference else None,
        reference_target=reference.target if reference else None,
        reference_measured=spec.reference.measured if spec.reference else None,
        reference_measured_with=spec.reference.measured_with if spec.reference else None,
        flops_svg=flops_plot(
            ns,
            totals,
            attention,
            seq_len=report.seq_len,
            overtakes_at=report.attention_overtakes_at,
            title=f"Forward FLOPs of {entry.id} against N",
        ),
        params_svg=bar_chart(param_groups(root), total=params, title=f"Parameters of {entry.id} by block"),
        mermaid=mermaid_diagram(root),
    )


# ---- architecture views -----------------------------------------------------------------------------


@dataclass(frozen=True)
class ArchitectureView:
    """An architecture's page: what its plugin registers and its formulas for the default configuration."""

    name: str
    title: str
    summary: str
    citation: str
    plugin: str
    plugin_version: str
    plugin_source: str
    config_fields: tuple[tuple[str, str, Any, str], ...]
    default_config_yaml: str
    default_params: int
    params_formula: str
    approx_formula: str
    flops_formula: str
    attention_formula: str
    time_complexity: str
    kv_formula: str
    seq_len: int
    rows: tuple[BlockRow, ...]
    symbols: tuple[dict[str, Any], ...]
    mermaid: str
    hf_model_types: tuple[str, ...] = ()
    error: str = ""
    models: tuple[ModelView, ...] = field(default=())


def architecture_view(
    arch: Architecture, *, plugin_version: str = "", plugin_source: str = "", models: tuple[ModelView, ...] = ()
) -> ArchitectureView:
    """The architecture's blocks and general formulas, read off its default configuration."""
    base = _architecture_base(arch, plugin_version, plugin_source)
    return ArchitectureView(**{**base.__dict__, "models": tuple(models)})


#: (id of the architecture, version, source) -> (the architecture, its view); the architecture is kept
#: so that its id cannot be reused by another object while the entry exists
_ARCH_CACHE: dict[tuple[int, str, str], tuple[Architecture, ArchitectureView]] = {}


def _architecture_base(arch: Architecture, plugin_version: str, plugin_source: str) -> ArchitectureView:
    key = (id(arch), plugin_version, plugin_source)
    cached = _ARCH_CACHE.get(key)
    if cached is not None and cached[0] is arch:
        return cached[1]
    common: dict[str, Any] = dict(
        name=arch.name,
        title=arch.title,
        summary=arch.summary,
        citation=arch.citation,
        plugin=arch.plugin,
        plugin_version=plugin_version,
        plugin_source=plugin_source,
        config_fields=tuple(arch.config_fields()),
        hf_model_types=tuple(sorted(arch.hf_model_types)),
    )
    try:
        config = arch.config_model()
        report = make_report(arch, config)
    except Exception as exc:  # an architecture without a valid default configuration
        view = ArchitectureView(
            **common,
            default_config_yaml="",
            default_params=0,
            params_formula="",
            approx_formula="",
            flops_formula="",
            attention_formula="",
            time_complexity="",
            kv_formula="",
            seq_len=0,
            rows=(),
            symbols=(),
            mermaid="",
            error=f"{type(exc).__name__}: {exc}",
        )
    else:
        root = report.root
        view = ArchitectureView(
            **common,
            default_config_yaml=yaml.safe_dump(config.model_dump(mode="json"), sort_keys=False, allow_unicode=True),
            default_params=report.params,
            params_formula=latex(root.params),
            approx_formula=latex(root.approx),
            flops_formula=latex(root.flops),
            attention_formula=latex(root.attention_flops),
            time_complexity=complexity_latex(root.flops),
            kv_formula=latex(root.kv_cache) if not root.kv_cache.is_zero() else "",
            seq_len=report.seq_len,
            rows=tuple(block_rows(root, report.seq_len, substitute=False)),
            symbols=tuple(s for s in report.symbols()),
            mermaid=mermaid_diagram(root),
        )
    _ARCH_CACHE[key] = (arch, view)
    return view


def weights_text(weights: dict[str, int]) -> str:
    """``fp32 437.9 MB · fp16 219.0 MB · ...``, in the report's order of dtypes."""
    return " · ".join(f"{dtype} {human_bytes(size)}" for dtype, size in weights.items())
