"""The site's generated pages as markdown, plain functions of views with no MkDocs in sight: a model's
page, an architecture's, the home page, the all-models page and the page shown while a registry cannot be
read.

Headings are markdown (the table of contents sees them), links between pages are relative ``.md``
links MkDocs checks in a strict build (`archzoo.site.paths`); everything else is pre-rendered HTML with
every string from a registry entry or a plugin escaped as plain text (`archzoo.site.markup`). Diagrams
are ``mermaid`` fences for ``pymdownx.superfences``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from html import escape
from typing import Any

from ..report import human_bytes, human_count
from .markup import (
    Doc,
    code_block,
    compact,
    equation,
    figure,
    front_matter,
    html_table,
    inline_math,
    md_link,
    md_table,
    paragraph,
    plain_code_block,
    raw,
    safe_url,
    source_link,
    text_html,
    text_md,
    unraw,
    yaml_block,
)
from .paths import architecture_path, model_path, page_href, relative_path
from .plots import architecture_plot, published_plot, year_plot
from .views import ArchitectureView, BlockRow, ModelView, fmt_gap, weights_text

__all__ = [
    "PAGE_BLURBS",
    "architecture_page",
    "error_page",
    "home_page",
    "model_page",
    "models_page",
    "whatif",
]

#: `archzoo.init` imports these two from here; they live in `archzoo.site.markup`.
__all__ += ["safe_url", "text_html"]

_e = text_html


def _tree_name(row: BlockRow) -> str:
    mark = "└&nbsp;" if row.depth else ""
    return (
        f'<span class="az-tree" style="--az-depth:{row.depth}">{mark}<span class="az-block" '
        f'title="{_e(row.description)}">{_e(row.name)}</span></span>'
    )


def _count(row: BlockRow) -> str:
    """How many copies run, and how many are stored when that differs: ``12 (shared)``, ``64 of 256``."""
    if row.shared:
        return f"{row.count:,} (shared)" if row.count != 1 else "1"
    if row.stored != row.count:
        return f"{row.count:,} of {row.stored:,}"
    return f"{row.count:,}"


def _share(value: float) -> str:
    if value <= 0:
        return "—"
    return f"{value:.1%}" if value >= 0.001 else "&lt;0.1%"


# ---- model page -------------------------------------------------------------------------------------


def _published_rows(view: ModelView) -> list[tuple[str, str]]:
    if view.published is None:
        return [("Published figure", "none recorded in the registry entry")]
    links = " · ".join(source_link(label, url) for label, url in view.published_links)
    source = f"{_e(view.published_citation)}, {_e(view.published_locator)}" + (f" · {links}" if links else "")
    rows = [("Published figure", f"<strong>{_e(view.published)}</strong> ({view.published_value:,}) — {source}")]
    difference = f"{view.difference:+,} ({fmt_gap(view.gap)}), status <strong>{_e(view.status)}</strong>"
    if view.reason:
        difference += f" — reason <code>{_e(view.reason)}</code>: {_e(view.reason_text)}. {_e(view.reason_note)}"
    elif view.status in ("within-rounding", "exact"):
        difference += " — within the rounding of the printed figure"
    rows.append(("Difference (computed − published)", difference))
    if view.published_active is not None and view.published_active_value is not None:
        rows.append(
            (
                "Published active parameters",
                f"<strong>{_e(view.published_active)}</strong> ({view.published_active_value:,}) — the same source",
            )
        )
        active = (
            f"{view.active_difference or 0:+,} ({fmt_gap(view.active_gap)}), status "
            f"<strong>{_e(view.active_status)}</strong>"
        )
        if view.active_status == "within-rounding":
            active += " — within the rounding of the printed figure"
        elif view.reason:
            active += f" — reason <code>{_e(view.reason)}</code>, as above"
        rows.append(("Active difference (computed − published)", active))
    return rows


def _summary_table(view: ModelView) -> str:
    approx_gap = (view.approx - view.params) / view.params if view.params else 0.0
    rows: list[tuple[str, str]] = [
        ("Parameters (exact)", f'<strong class="az-params">{view.params:,}</strong> ({human_count(view.params)})'),
        (
            "Leading-order approximation",
            f"{view.approx:,} ({human_count(view.approx)}, {approx_gap:+.2%}) = {inline_math(view.approx_formula)}",
        ),
        (
            "Non-embedding parameters",
            f"{view.non_embedding:,} ({human_count(view.non_embedding)}); embedding tables (token and "
            f"position, where the model has them) hold {view.embedding:,}",
        ),
    ]
    if view.active_params != view.params:
        share = view.active_params / view.params if view.params else 0.0
        rows.insert(
            1,
            (
                "Active parameters (exact)",
                f'<strong class="az-active">{view.active_params:,}</strong> ({human_count(view.active_params)}, '
                f"{share:.1%} of the total): those one token uses, = {inline_math(view.active_formula)}",
            ),
        )
    rows += _published_rows(view)
    rows.append(("Weights", _e(weights_text(view.weights))))
    share = view.attention_flops / view.flops if view.flops else 0.0
    rows.append(
        (
            f"Forward FLOPs at N = {view.seq_len:,}",
            f"{view.flops:,} ({human_count(view.flops)}), of which attention products "
            f"{human_count(view.attention_flops)} ({share:.1%}); N is the {_e(view.seq_len_meaning)}",
        )
    )
    if view.kv_elements:
        rows.append(
            (
                "KV cache per token",
                f"{human_bytes(2 * view.kv_elements)} in fp16 ({human_bytes(4 * view.kv_elements)} in fp32): "
                f"{view.kv_elements:,} elements = {inline_math(view.kv_formula)}; "
                f"{human_bytes(2 * view.kv_elements * view.seq_len)} in fp16 for a full context of "
                f"{view.seq_len:,} tokens",
            )
        )
    training = view.training_bytes
    rows.append(
        (
            "Training memory, Adam",
            f"{human_bytes(training['fp32'])} in fp32, {human_bytes(training['mixed_bf16'])} in mixed "
            'precision (<a href="#training-memory">assumptions</a>)',
        )
    )
    return html_table(("Quantity", "Value"), rows, css="az-summary")


def _blocks_table(rows: Sequence[BlockRow], *, substituted: bool = True, flops: bool = True) -> str:
    """The block tree as a table: a row of figures per block, and under it a row of its own with the
    parameter formula for one copy, so that a long formula never narrows the figures' columns. The
    formula with the configuration's values is in the same row, shown on demand (`_values_toggle`)."""
    headers = ["Block", "Count", "Parameters", "Share"] + (["FLOPs"] if flops else [])
    names = {"l": "left", "r": "right"}
    align = "lrrr" + ("r" if flops else "")
    # the share column gives way first on a narrow screen (the stylesheet hides it; the bar chart shows it)
    classes = ["", ' class="az-count"', "", ' class="az-share"', ""]

    def row_html(cells: Sequence[str], tag: str) -> str:
        return "".join(
            f'<{tag}{css} align="{names[a]}">{c}</{tag}>' for c, a, css in zip(cells, align, classes, strict=False)
        )

    head = row_html(headers, "th")
    body = []
    for row in rows:
        cells = [_tree_name(row), _count(row), f"{row.params:,}", _share(row.share)]
        if flops:
            cells.append(human_count(row.flops) if row.flops else "—")
        body.append(f'<tr class="az-row">{row_html(cells, "td")}</tr>')
        if row.formula == "0":
            formula = "0"
        else:
            formula = inline_math(row.formula)
            if substituted and row.substituted != row.formula:
                formula += f' <span class="az-values">{inline_math("= " + row.substituted)}</span>'
        if row.tied_to:
            formula += f" (weight tied to <code>{_e(row.tied_to)}</code>)"
        indent = f' style="--az-depth:{row.depth}"' if row.depth else ""
        body.append(f'<tr class="az-formula"><td colspan="{len(headers)}"{indent}>{formula}</td></tr>')
    table = f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"
    return raw(f'<div class="az-blocks">{table}</div>')


#: The switch that shows every formula of a Blocks table with the configuration's values (CSS only:
#: ``.az-values`` is hidden until the checkbox before the table is checked).
def _values_toggle(key: str) -> str:
    return (
        f'<input type="checkbox" class="az-values-toggle" id="az-values-{key}">'
        f'<label class="az-values-label" for="az-values-{key}">show the formulas with this configuration’s '
        "values</label>"
    )


def whatif(architecture: str, model_id: str = "") -> str:
    """Where the what-if calculator goes (its script fills the element): on every model page and every
    architecture page; ``model_id`` is "" on an architecture page."""
    return f'<div class="archzoo-whatif" data-architecture="{_e(architecture)}" data-model="{_e(model_id)}"></div>'


def _card(label: str, value: str, note: str = "", css: str = "") -> str:
    """One headline figure: a short label, the figure large, a line of context under it."""
    return (
        f'<div class="az-card{(" " + css) if css else ""}"><div class="az-card-label">{label}</div>'
        f'<div class="az-card-value">{value}</div>'
        + (f'<div class="az-card-note">{note}</div>' if note else "")
        + "</div>"
    )


def _short_citation(citation: str) -> str:
    """``Devlin et al. (2019). “BERT...”. NAACL`` -> ``Devlin et al. (2019)``."""
    head, found, _ = citation.partition("). ")
    return head + ")" if found else citation


def _headline(view: ModelView) -> str:
    """The first screen of a model page: exact parameters, the published figure and the difference with
    its reason, forward FLOPs at N, the weights in fp16 and the KV cache, each a figure that stands out."""
    cards = []
    params_note = human_count(view.params)
    if view.active_params != view.params:
        params_note += f" · {view.active_params:,} active ({human_count(view.active_params)})"
    cards.append(_card("Parameters (exact)", f'<span class="az-num">{view.params:,}</span>', params_note, "az-wide"))
    if view.published is None or view.published_value is None or view.difference is None:
        cards.append(_card("Published", "—", "no figure recorded in the registry entry"))
    else:
        reason = (
            f"reason <code>{_e(view.reason)}</code>: {_e(view.reason_text)}"
            if view.reason
            else "within the rounding of the printed figure"
            if view.status in ("within-rounding", "exact")
            else f"status {_e(view.status)}"
        )
        difference = f'<span class="az-num">{view.difference:+,}</span> ({fmt_gap(view.gap)})'
        cards.append(
            _card(
                "Published",
                f'<span class="az-num">{_e(view.published)}</span>',
                f"{_e(_short_citation(view.published_citation))}; difference {difference}; {reason}",
            )
        )
    cards.append(
        _card(
            f"Forward FLOPs at N = {view.seq_len:,}",
            f'<span class="az-num">{human_count(view.flops)}</span>',
            f'<span class="az-num">{view.flops:,}</span>',
        )
    )
    if "fp16" in view.weights:
        others = " · ".join(
            f'<span class="az-num">{k} {human_bytes(v)}</span>' for k, v in view.weights.items() if k != "fp16"
        )
        cards.append(
            _card("Weights in fp16", f'<span class="az-num">{human_bytes(view.weights["fp16"])}</span>', others)
        )
    if view.kv_elements:
        cards.append(
            _card(
                "KV cache per token, fp16",
                f'<span class="az-num">{human_bytes(2 * view.kv_elements)}</span>',
                f"{view.kv_elements:,} elements; {human_bytes(2 * view.kv_elements * view.seq_len)} for "
                f"{view.seq_len:,} tokens",
            )
        )
    else:
        cards.append(_card("KV cache", "none", "no cache: every token attends to the whole input at once"))
    return f'<div class="az-headline">{"".join(cards)}</div>'


def _symbols_table(symbols: Sequence[dict[str, Any]], seq_len_note: str = "") -> str:
    rows = []
    for s in symbols:
        value = s["value"]
        shown = f"{value:,}" if isinstance(value, int) else (seq_len_note or "free")
        meaning = s["meaning"] + (f" = {s['definition']}" if s.get("definition") else "")
        rows.append((inline_math(s["latex"]), _e(meaning), _e(shown)))
    return html_table(("Symbol", "Meaning", "Value"), rows, "llr", css="az-config az-symbols")


def model_page(view: ModelView, *, page_path: str | None = None, directory_urls: bool = True) -> str:
    """The markdown of a model's page.

    Headings are markdown (the table of contents sees them); everything else is pre-rendered HTML
    (`archzoo.site.mdext` passes it through unparsed), with links written as MkDocs publishes pages.
    """
    page_path = page_path or model_path(view.id)

    def href(target: str) -> str:
        return escape(page_href(page_path, target, directory_urls))

    tags = " ".join(f"<code>{_e(t)}</code>" for t in view.tags)
    doc = Doc()
    doc.md(
        front_matter(
            title=view.id,
            description=f"{view.title}: {view.params:,} parameters. {view.summary}",
            search={"exclude": True},
            archzoo_search={
                "title": view.title,
                "tags": list(view.tags),
                "architecture": view.architecture,
                "summary": view.summary,
                "params": view.params,
            },
        )
    )
    doc.md(f"# {text_md(view.id)}")
    doc.p(
        f'<strong>{_e(view.title)}</strong> · <a href="{href(architecture_path(view.architecture))}">'
        f"{_e(view.architecture_title)}</a> architecture · {_e(view.year)}" + (f" · tags: {tags}" if tags else "")
    )
    doc.p(_e(view.summary))
    doc.html(_headline(view))
    doc.html(whatif(view.architecture, view.id))
    doc.md("## Details").html(unraw(_summary_table(view)))
    doc.md("## Blocks")
    doc.p(
        f"Every block of the model, with how many times it runs in one forward pass (for experts: per token, "
        f"and of how many stored), its parameters (all stored copies; a shared layer's weights count once), "
        f"its share of the {view.params:,} parameters and its forward FLOPs at N = {view.seq_len:,}; under "
        "each block, its parameter formula for one copy."
    )
    doc.html(_values_toggle("blocks"))
    doc.html(unraw(_blocks_table(view.rows)))
    doc.md("### Symbols").html(unraw(_symbols_table(view.symbols, f"{view.seq_len:,} here")))
    doc.html(unraw(figure(view.params_svg, f"Parameters of {view.id} by block (all copies).")))
    doc.md("## Complexity")
    doc.p(
        "Forward FLOPs for a batch of one sequence of N tokens, counting 2 FLOPs per multiply–accumulate "
        f'(<a href="{href("methodology.md")}#conventions">conventions</a>):'
    )
    doc.html(equation(f"F(N) = {view.flops_formula}"))
    qk, av = inline_math("QK^{\\top}"), inline_math("AV")
    doc.p(f"split into the attention products {qk} and {av} and everything else:")
    doc.html(equation(f"F_{{\\mathrm{{attn}}}}(N) = {view.attention_formula}"))
    doc.html(equation(f"F_{{\\mathrm{{rest}}}}(N) = {view.other_formula}"))
    overtakes = (
        (
            f"from <strong>N = {view.overtakes_at:,}</strong> tokens"
            + (
                ""
                if view.overtakes_at <= view.seq_len
                else f", beyond this model's N = {view.seq_len:,}: at its own length the rest dominates"
            )
        )
        if view.overtakes_at
        else "never: no N² term"
    )
    doc.html(
        '<ul class="az-facts">'
        f"<li><strong>Time</strong>: {inline_math(view.time_complexity)} FLOPs per forward pass</li>"
        f"<li><strong>Memory</strong>: {_memory_text(view)}</li>"
        f"<li><strong>Attention overtakes the rest</strong> {overtakes}</li>"
        "</ul>"
    )
    doc.html(
        unraw(
            figure(
                view.flops_svg,
                f"Forward FLOPs of {view.id} against N, log–log: attention products, everything else, and their total.",
            )
        )
    )
    doc.md("## Block diagram")
    doc.md("```mermaid\n" + view.mermaid + "\n```")
    doc.md("## Configuration")
    doc.p("The full configuration, with the architecture's defaults for the keys the registry entry leaves out:")
    doc.html(unraw(yaml_block(view.config_yaml)))
    doc.md("## Reproduce this")
    doc.p("Count this configuration with archzoo:").html(unraw(plain_code_block(view.command, "bash")))
    if view.reference_code:
        doc.p(
            f"Build the reference implementation (<code>{_e(view.reference_target)}</code>) on the meta device "
            "and count its parameters with PyTorch:"
        )
        doc.html(unraw(code_block(view.reference_code, "python")))
    if view.reference_measured:
        doc.p(
            f"Measured on the reference: {view.reference_measured:,} parameters"
            + (f" ({_e(view.reference_measured_with)})." if view.reference_measured_with else ".")
        )
    doc.md("## Training memory")
    doc.p(
        "Weights, gradients and Adam's two moments, per parameter; activations, temporary buffers and "
        "framework overhead are not included. In fp32: 4 bytes of weights + 4 of gradients + 8 of Adam "
        "moments = 16 bytes per parameter. In mixed precision (bf16): 2 (bf16 weights) + 2 (bf16 "
        "gradients) + 4 (fp32 master weights) + 8 (fp32 moments) = 16 bytes per parameter."
    )
    doc.html(
        unraw(
            html_table(
                ("Recipe", "Bytes per parameter", "Total"),
                [
                    ("fp32", "16", human_bytes(view.training_bytes["fp32"])),
                    ("mixed precision, bf16", "16", human_bytes(view.training_bytes["mixed_bf16"])),
                ],
                "lrr",
            )
        )
    )
    doc.p(
        f'Registry entry: <code class="az-path">{_e(view.source_path)}</code> · <a href="{href("models/index.md")}">all models</a>'
        f' · <a href="{href("index.md")}">home</a>'
    )
    return doc.text()


def _memory_text(view: ModelView) -> str:
    parts = [f"weights {inline_math(view.params_complexity)}"]
    if view.kv_elements:
        per_context = "N \\cdot " + view.kv_complexity
        parts.append(
            f"KV cache {inline_math(view.kv_complexity)} per token, so {inline_math(per_context)} for N tokens"
        )
    square, quadratic = inline_math("N \\times N"), inline_math("O(N^{2})")
    parts.append(
        f"eager attention materialises one {square} score matrix per head, {quadratic}; fused kernels avoid it"
    )
    return "; ".join(parts)


# ---- architecture page ------------------------------------------------------------------------------


def _models_table(
    models: Sequence[ModelView], page_path: str, *, architecture: bool = False, tags: bool = False
) -> str:
    """Models as a markdown table (MkDocs checks its links); every text cell goes through `text_md`."""
    headers = (
        ["Model", "Title"]
        + (["Architecture"] if architecture else [])
        + ["Parameters", "Active", "Published", "Difference", "Forward FLOPs"]
    )
    align = "ll" + ("l" if architecture else "") + "rrrrr"
    rows = []
    for m in models:
        title = text_md(m.title) + (
            f' <span class="az-tags">{text_md(" ".join(m.tags))}</span>' if tags and m.tags else ""
        )
        row = [md_link(m.id, relative_path(page_path, model_path(m.id))), title]
        if architecture:
            row.append(md_link(m.architecture, relative_path(page_path, architecture_path(m.architecture))))
        published = text_md(m.published) if m.published else "—"
        if m.published_active:
            published += f" ({text_md(m.published_active)} active)"
        row += [
            f"{m.params:,}",
            # the parameters one token uses; a dense model's are all of them, sorted as such
            f"{m.active_params:,}" if m.active_params != m.params else f'<span data-v="{m.params}">—</span>',
            published,
            fmt_gap(m.gap) + (f" ({fmt_gap(m.active_gap)} active)" if m.active_gap is not None else ""),
            f'<span data-v="{int(m.flops)}">{human_count(m.flops)}</span> <span class="az-n">(N = {m.seq_len:,})</span>',
        ]
        rows.append(row)
    return md_table(headers, rows, align)


def _default(value: Any) -> str:
    """A configuration default as JSON (what a registry entry writes), or its repr when it is not JSON."""
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return repr(value)


def architecture_page(view: ArchitectureView, *, directory_urls: bool = True) -> str:
    """The markdown of an architecture's page: its plugin, configuration keys, blocks, formulas, models.

    Everything the plugin wrote (title, summary, citation, configuration descriptions and defaults,
    block names) is plain text: headings go through `text_md`, the rest is pre-rendered HTML."""
    page_path = architecture_path(view.name)
    plugin = f"<code>{_e(view.plugin)}</code>" + (f" {_e(view.plugin_version)}" if view.plugin_version else "")
    doc = Doc()
    doc.md(front_matter(title=view.title, description=view.summary))
    doc.md(f"# {text_md(view.title)}")
    doc.p(_e(view.summary))
    doc.p(
        f"Architecture <code>{_e(view.name)}</code>, registered by the plugin {plugin}"
        + (f" ({_e(view.plugin_source)})" if view.plugin_source else "")
        + "."
    )
    doc.p(f"Reference: {_e(view.citation)}")
    if view.hf_model_types:
        doc.p(
            "Reads Hugging Face <code>config.json</code> files of model type "
            + ", ".join(f"<code>{_e(t)}</code>" for t in view.hf_model_types)
            + " (<code>archzoo count --hf-config</code>)."
        )
    doc.md(f"## Models ({len(view.models)})")
    if view.models:
        # on a phone the title and active columns give way (the stylesheet hides them: az-models)
        doc.md(compact(_models_table(view.models, page_path), "az-models"))
        doc.html(
            unraw(
                figure(
                    architecture_plot(view, directory_urls),
                    f"Exact parameters and forward FLOPs of each {view.title} model at its own sequence length "
                    "N, log–log, coloured by N. Each point opens its model's page.",
                )
            )
        )
    else:
        doc.p("No registry entry uses this architecture yet.")
    doc.md("## Configuration")
    doc.html(
        unraw(
            html_table(
                ("Key", "Type", "Default", "Meaning"),
                css="az-config",
                rows=[
                    (f"<code>{_e(k)}</code>", f"<code>{_e(t)}</code>", f"<code>{_e(_default(d))}</code>", _e(desc))
                    for k, t, d, desc in view.config_fields
                ],
            )
        )
    )
    doc.html(whatif(view.name))
    if view.error:
        doc.p(f"The default configuration cannot be built ({_e(view.error)}), so no formulas are shown.")
        return doc.text()
    doc.md("## General formulas")
    doc.p(
        f"For the default configuration ({view.default_params:,} parameters); other configurations change "
        "which blocks exist (a pooler, a head, tied weights) and the values of the symbols."
    )
    doc.html(equation(f"\\text{{params}} = {view.params_formula}"))
    doc.html(equation(f"\\text{{leading order}} = {view.approx_formula}"))
    doc.html(equation(f"F(N) = {view.flops_formula}"))
    doc.html(equation(f"F_{{\\mathrm{{attn}}}}(N) = {view.attention_formula}"))
    doc.p(f"Time complexity: {inline_math(view.time_complexity)}.")
    if view.kv_formula:
        doc.p(f"KV cache per token: {inline_math(view.kv_formula)} elements.")
    doc.md("### Symbols").html(unraw(_symbols_table(view.symbols)))
    doc.md("## Blocks")
    doc.p("The blocks of the default configuration, with their parameter formulas for one copy.")
    doc.html(unraw(_blocks_table(view.rows, substituted=False, flops=False)))
    if view.mermaid:
        doc.md("```mermaid\n" + view.mermaid + "\n```")
    doc.md("## Default configuration")
    doc.html(unraw(code_block(view.default_config_yaml, "yaml")))
    return doc.text()


# ---- home and all-models pages ----------------------------------------------------------------------


#: What the home page says of each of archzoo's own pages, when the site includes it.
PAGE_BLURBS = {
    "methodology.md": "what counts as a parameter, how FLOPs are counted, how every figure is verified, and "
    "why popular tools disagree.",
    "writing-entries.md": "add a model to the zoo: every field, the reason codes, the rounding and 5% rules.",
    "writing-plugins.md": "add an architecture, or a registry of models, as a plugin.",
    "performance.md": "how the site and the registry scale to thousands of models.",
    "peers.md": "what torchinfo, fvcore, thop, ptflops, calflops, DeepSpeed and accelerate report for the same "
    "models, and why each differs from the exact figure.",
}


def home_page(
    models: Sequence[ModelView],
    architectures: Sequence[ArchitectureView],
    *,
    top: int = 5,
    title: str = "archzoo model zoo",
    description: str = "",
    static_pages: Sequence[tuple[str, str]] = (),
    directory_urls: bool = True,
) -> str:
    """The landing page: the owner's title and description, the zoo in two pictures, the largest and
    smallest models, the architectures, and the site's other pages. Its front matter has no title, so the browser's title is
    the site's name once (the theme shows ``page - site`` for every other page)."""
    page_path = "index.md"
    by_size = sorted(models, key=lambda m: (m.params, m.id))
    front = front_matter(None, description)
    method = next((path for _, path in static_pages if path == "methodology.md"), None)
    archzoo = "[archzoo](methodology.md)" if method else "archzoo"
    parts = [p for p in (front, f"# {text_md(title)}", paragraph(description)) if p]
    parts += [
        f"Every page of this site is computed by {archzoo} from the model's configuration and the building "
        "blocks of its architecture: the exact parameter count with the formula behind every block, forward "
        "FLOPs as a function of the sequence length, memory for inference and training, and the published "
        "figure it is reconciled with.",
        f"The zoo holds **{len(models):,} models** of **{len(architectures):,} architectures**. "
        "Search by id, title or tag with the search box at the top of the page (press <kbd>/</kbd>), "
        "or sort and filter them all on the [all models](models/index.md) page "
        "([models.json](models.json), [models.csv](models.csv)).",
    ]
    if models:
        parts += [
            "## The zoo in pictures",
            figure(
                year_plot(models, page_path, directory_urls),
                "Exact parameters of every model against the year of its paper (log scale), coloured by "
                "architecture; models of one year are spread side by side. Each point opens its model's page.",
            ),
            figure(
                published_plot(models, page_path, directory_urls),
                "How far each paper's printed figure is from the exact count, (exact − published) / published, "
                "coloured by the reason the registry entry gives; on the zero line the figures agree. "
                "Models without a published figure are left out. Each point opens its model's page.",
            ),
            "## Largest models",
            compact(_home_models_table(list(reversed(by_size))[:top], page_path)),
            "## Smallest models",
            compact(_home_models_table(by_size[:top], page_path)),
        ]
    parts += [
        "## Architectures",
        compact(
            md_table(
                ("Architecture", "Models", "Summary"),
                [
                    (
                        md_link(a.title, architecture_path(a.name))
                        + f'<br><code class="az-plugin">{text_md(a.plugin)}</code>',
                        str(len(a.models)),
                        text_md(a.summary),
                    )
                    for a in architectures
                ],
                "lrl",
            )
        ),
    ]
    more = [
        f"- {md_link(name, path)}" + (f": {PAGE_BLURBS[path]}" if path in PAGE_BLURBS else "")
        for name, path in static_pages
    ]
    if more:
        parts += ["## More", "\n".join(more)]
    return "\n\n".join(parts) + "\n"


def _home_models_table(models: Sequence[ModelView], page_path: str) -> str:
    """The home page's few models: what fits a phone (the all-models page has every column)."""
    rows = []
    for m in models:
        published = text_md(m.published) if m.published else "—"
        if m.published_active:
            published += f" ({text_md(m.published_active)} active)"
        rows.append(
            (
                md_link(m.id, relative_path(page_path, model_path(m.id)))
                + f'<br><span class="az-tags">{text_md(m.title)}, {m.year}</span>',
                f"{m.params:,}",
                published,
                fmt_gap(m.gap),
            )
        )
    return md_table(("Model", "Parameters", "Published", "Difference"), rows, "lrrr")


def models_page(models: Sequence[ModelView]) -> str:
    """Every model in one sortable, filterable table (the sorting and filtering are ``archzoo.js``)."""
    page_path = model_path("index")
    parts = [
        # not in the search index: every row is a model page, indexed on its own (and parsing a table of
        # thousands of rows would be the search plugin's single largest cost)
        front_matter(
            title="All models",
            description="Every model of the zoo: exact parameters, published figures and forward FLOPs.",
            hide=["toc"],
            search={"exclude": True},
        ),
        "# All models",
        f"{len(models):,} models. Click a column heading to sort; type in the box to filter by id, title, "
        "architecture or tag. The same data: [models.json](../models.json) · [models.csv](../models.csv). "
        "Difference is (computed − published) / published; FLOPs are for one forward pass at the model's "
        "own sequence length N. In models.csv a text cell that would start with `=`, `+`, `-` or `@` starts "
        "with `'` instead, so that a spreadsheet keeps it as text and never runs it as a formula; numbers "
        "are written as numbers.",
        '<div class="az-filter" markdown="0"><input type="search" id="az-filter" placeholder="Filter models…" '
        'aria-label="Filter models"> <span id="az-filter-count"></span></div>',
        '<div class="az-sortable" markdown="1">',
        _models_table(models, page_path, architecture=True, tags=True),
        "</div>",
    ]
    return "\n\n".join(parts) + "\n"


def error_page(message: str) -> str:
    """What a site being served shows while its registry cannot be read: the problems, as ``archzoo
    validate`` prints them (``file:line: key: message``); the page reloads once the files are fixed."""
    return (
        "\n\n".join(
            [
                front_matter(title="The registry cannot be read", description="The site is waiting for a fix."),
                "# The registry cannot be read",
                "The site rebuilds as soon as the files are saved again; this page then reloads by itself.",
                raw(f'<pre class="az-error">{text_html(message)}</pre>'),
            ]
        )
        + "\n"
    )
