"""Terminal rendering of reports and tables (rich), kept apart from the numbers they show."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from .blocks import BlockVisit
from .report import Report, human_bytes, human_count

if TYPE_CHECKING:
    from .registry import Entry

__all__ = ["console", "print_report", "print_table", "published_lines"]

import os
import sys

# Piped output (a file, `less`, CI logs) gets a readable width rather than rich's default 80 columns.
console = Console(highlight=False, width=None if sys.stdout.isatty() or os.environ.get("COLUMNS") else 120)


def copies_text(visit: BlockVisit) -> str:
    """How many copies of a block there are, when not one: ``× 12``, ``× 12, one set of weights``,
    ``2 of 8 per token`` (experts: executed of stored)."""
    stored, executed = visit.stored.evaluate(), visit.executed.evaluate()
    if stored == executed == 1:
        return ""
    if stored == executed:
        return f"× {stored:,}"
    if stored == 1:
        return f"× {executed:,}, one set of weights"
    return (
        f"{executed:,} of {stored:,} per token" if executed < stored else f"× {executed:,}, {stored:,} sets of weights"
    )


def published_lines(entry: Entry) -> list[str]:
    """What ``archzoo show`` prints about an entry's published figures: the total against the exact count,
    the active parameters against the exact active count (a mixture of experts that prints them), the
    source, and the reconciliation's reason."""
    spec = entry.spec
    published = spec.published
    lines = []
    if published is not None:
        src = published.source
        where = f"arXiv:{src.arxiv}" if src.arxiv else (src.url or "")
        lines.append(
            f"published: {published.params} ({published.value:,}); computed {entry.params:,}, "
            f"difference {entry.params - published.value:+,} ({entry.gap or 0:+.2%}): {entry.status}"
        )
        if published.active_params is not None and published.active_value is not None:
            active = entry.active_params
            lines.append(
                f"published active: {published.active_params} ({published.active_value:,}); computed "
                f"{active:,}, difference {active - published.active_value:+,} ({entry.active_gap or 0:+.2%}): "
                f"{entry.active_status}"
            )
        lines.append(
            f"  source: {', '.join(src.authors[:3])}{' et al.' if len(src.authors) > 3 else ''}, "
            f"{src.title}, {src.venue} {where}; {src.locator}"
        )
    else:
        lines.append("published: no figure printed by the authors")
    if spec.reconciliation:
        lines.append(f"  reason: {spec.reconciliation.reason}: {spec.reconciliation.note}")
    return lines


def _tree_rows(report: Report):
    """(depth, indented name, params, flops, formula) rows, from the tree's one walk: params of every
    stored copy, FLOPs of every executed copy, the formula of one copy. The copies are named where they
    begin (the block directly under a repeat); the blocks inside it have as many."""
    above: list[BlockVisit] = []
    for visit in report.root.visits():
        block, depth = visit.block, visit.depth
        del above[depth:]
        parent = above[-1].block if above else None
        above.append(visit)
        indent = "  " * depth + ("└ " if depth else "")
        copies = copies_text(visit) if parent is not None and parent.repeat is not None else ""
        name = block.name + (f" ({copies})" if copies else "")
        formula = (
            block.params.text() if not block.params.is_zero() else ("tied: " + block.tied_to if block.tied_to else "0")
        )
        if block.tied_to and not block.params.is_zero():
            formula += f"  (weight tied to {block.tied_to})"
        yield depth, indent + name, visit.params.evaluate(), visit.flops.evaluate(N=report.seq_len), formula


def print_report(report: Report, *, max_depth: int = 3, out: Console | None = None) -> None:
    """The summary, then the per-block tree with formulas."""
    out = out or console
    arch = report.architecture
    total = report.params
    n = report.seq_len
    summary = Table(show_header=False, box=None, pad_edge=False)
    summary.add_column(style="bold")
    summary.add_column(justify="right")
    summary.add_column(style="dim")
    _row(summary, "architecture", arch.name, arch.title)
    _row(summary, "parameters", f"{total:,}", f"{human_count(total)}  = {report.root.params.text()}")
    active = report.active_params
    if active != total:
        _row(
            summary,
            "active parameters",
            f"{active:,}",
            f"{human_count(active)}  used by one token  = {report.active_formula.text()}",
        )
    _row(summary, "leading order", f"{report.approx:,}", f"{human_count(report.approx)}  = {report.root.approx.text()}")
    _row(summary, "non-embedding", f"{report.non_embedding:,}", human_count(report.non_embedding))
    sizes = report.weight_bytes()
    _row(
        summary,
        "weights",
        human_bytes(sizes["fp32"]) + " fp32",
        "  ".join(f"{human_bytes(v)} {k}" for k, v in sizes.items() if k != "fp32"),
    )
    _row(
        summary,
        f"forward FLOPs (N={n:,})",
        f"{report.flops:,}",
        f"{human_count(report.flops)}, of which attention {human_count(report.attention_flops)}",
    )
    _row(summary, "FLOPs formula", "", report.root.flops.text())
    _row(summary, "time complexity", "", report.root.flops.complexity())
    overtakes = report.attention_overtakes_at
    _row(summary, "attention > rest from", f"N = {overtakes:,}" if overtakes else "never", "")
    kv = report.kv_cache_elements_per_token
    if kv:
        _row(
            summary,
            "KV cache per token",
            human_bytes(2 * kv) + " fp16",
            f"{kv:,} elements = {report.root.kv_cache.text()}",
        )
    cross_kv = report.cross_kv_cache_elements_per_source_token
    if cross_kv:
        _row(
            summary,
            "cross-attention KV cache per source token",
            human_bytes(2 * cross_kv) + " fp16",
            f"{cross_kv:,} elements = {report.root.cross_kv_cache.text()}",
        )
    out.print(summary)
    out.print()

    tree = Table(title=f"blocks (params of all copies, FLOPs at N={n:,}, formula of one copy)", title_justify="left")
    tree.add_column("block", no_wrap=True)
    tree.add_column("params", justify="right")
    tree.add_column("share", justify="right")
    tree.add_column("FLOPs", justify="right")
    tree.add_column("formula", overflow="fold", ratio=1)
    for depth, name, params, flops, formula in _tree_rows(report):
        if depth > max_depth:
            continue
        share = f"{100 * params / total:.1f}%" if total and params else ""
        _row(tree, name, f"{params:,}", share, human_count(flops) if flops else "", formula)
    out.print(tree)
    symbols = "  ".join(f"{s['name']}={s['value']:,}" for s in report.symbols() if s["value"] is not None)
    out.print(f"[dim]symbols: {escape(symbols)}[/dim]")


def _row(table: Table, *cells: str) -> None:
    """A row of plain text: names, titles and formulas come from registry files, config.json files and
    plugins, so rich must not read their brackets as markup."""
    table.add_row(*(Text(cell) for cell in cells))


def print_table(
    headers: list[str],
    rows: Iterable[list[str]],
    *,
    right: Iterable[int] = (),
    title: str = "",
    out: Console | None = None,
) -> None:
    """An aligned table; the columns whose index is in ``right`` are right-justified."""
    right = set(right)
    table = Table(title=Text(title) if title else None, title_justify="left")
    for i, header in enumerate(headers):
        table.add_column(header, justify="right" if i in right else "left", overflow="fold", no_wrap=i == 0)
    for row in rows:
        _row(table, *row)
    (out or console).print(table)
