"""Terminal rendering of reports and tables (rich), kept apart from the numbers they show.

On a terminal a table fits the window without ever splitting a number or a word: a numeric column keeps
its width and never wraps; a text column shrinks to its own minimum, its cells ending in an ellipsis ("…")
when cut; and when even that leaves no room, columns are left out in the order each table states (the
exact count last), with a line saying which. Piped output (a file, ``less``, CI logs) is plain text: the
same columns aligned with spaces, one row a line, nothing cut, wrapped or dropped.

Every text this module prints goes through `printable`, the one cleaner of text that comes from a file
(a checkpoint's tensor names, a registry's or a plugin's text): a control character, which could recolour,
retitle or rewrite the terminal, is shown escaped instead. The width comes from ``COLUMNS`` when it is a
width (`columns_problem` says why it is not), else from the terminal itself.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from rich import box
from rich.cells import cell_len
from rich.console import Console
from rich.table import Table
from rich.text import Text

from .blocks import BlockVisit
from .figures import human_bytes, human_count, in_units
from .memory import memory_rows
from .report import Report
from .report_json import flops_dict

if TYPE_CHECKING:
    from .registry import Entry

__all__ = [
    "Column",
    "columns_problem",
    "console",
    "fit_columns",
    "fits",
    "print_lines",
    "print_report",
    "print_table",
    "printable",
    "published_lines",
    "summary_rows",
]

#: Shown escaped wherever text reaches the terminal: C0 and C1 control characters (ESC starts the sequences
#: that recolour, retitle or clear a terminal; CR rewrites the line), DEL, lone surrogates, and the
#: bidirectional controls that make a line read in another order than it is written. Tab and line feed are
#: escaped too in a name (`printable` with ``one_line``), kept in prose.
_UNPRINTABLE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]")
_UNPRINTABLE_NAME = re.compile("[\t\n]|" + _UNPRINTABLE.pattern)


def _escaped(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str, *, one_line: bool = True) -> str:
    """``text`` (from a file, a header, the user) as the terminal may show it: every character that would
    control the terminal instead of being shown written as an escape (``\\x1b``, ``\\u202e``). With
    ``one_line`` (a name, a label) tab and line feed are escaped too, so no text can start a line of its own.
    One pass of one regular expression: linear in the text."""
    return (_UNPRINTABLE_NAME if one_line else _UNPRINTABLE).sub(_escaped, text)


#: The widths archzoo draws to. rich takes ``COLUMNS`` as the width outright: at 0 it draws nothing at all,
#: and no terminal is 10,000 columns wide; below 20 no table has room for a single number.
COLUMNS_RANGE = (20, 10_000)


def columns_problem(environ: Mapping[str, str] | None = None) -> str | None:
    """Why ``COLUMNS`` is not a width archzoo can draw to (it is then ignored), or None when it is one or
    is not set."""
    raw = (os.environ if environ is None else environ).get("COLUMNS")
    if raw is None or raw == "":
        return None
    low, high = COLUMNS_RANGE
    if raw.isascii() and raw.isdigit() and len(raw) <= 6 and low <= int(raw) <= high:
        return None
    shown = printable(raw if len(raw) <= 40 else raw[:40] + "…")
    return (
        f"COLUMNS='{shown}' is not a terminal width (expected a whole number of columns from {low} to {high:,}); "
        "it is ignored and the terminal's own width used: unset COLUMNS or set it to the window's width"
    )


def _console() -> Console:
    """The console archzoo prints to: its width from ``COLUMNS`` when that is a width, else (said once, on
    standard error) from the terminal itself, or 80 columns when piped."""
    environ = dict(os.environ)
    problem = columns_problem(environ)
    if problem:
        del environ["COLUMNS"]
        sys.stderr.write(f"archzoo: warning: {problem}\n")
    return Console(highlight=False, _environ=environ)


# rich asks the terminal for its width at each print (COLUMNS, when valid, is read here once); piped output
# never wraps.
console = _console()


@dataclass(frozen=True)
class Column:
    """One column of a terminal table.

    ``numeric`` columns are right-justified, never wrap and never shrink. A text column shrinks down to
    ``min_width`` characters, its cells ending in an ellipsis when cut, or with ``wrap`` breaking between
    words (formulas, descriptions), never inside one. ``drop`` ranks the columns that may be left out
    when the terminal is too narrow: rank 1 goes first; None never goes.
    """

    header: str
    numeric: bool = False
    min_width: int = 10
    drop: int | None = None
    wrap: bool = False
    name: str = ""  # what the note of left-out columns calls it (default: the header)


@dataclass(frozen=True)
class Layout:
    """What `fit_columns` decided: the columns kept (indices), the width of each kept column, and the
    headers of the columns left out."""

    kept: list[int]
    widths: list[int]
    dropped: list[str]


def _natural(column: Column, cells: Iterable[str]) -> int:
    """The width a column needs to show every cell (and its header) whole on one line."""
    return max([cell_len(column.header), *(max(map(cell_len, cell.splitlines()), default=0) for cell in cells)])


def _floors(column: Column, natural: int, cells: Sequence[str]) -> tuple[int, int]:
    """The narrowest a column may be: (no word cut, as cut as it goes). A number: its natural width, both.
    Wrapped text: its longest word (within twice ``min_width``), else ``min_width``. Text that ends in an
    ellipsis: ``min_width``."""
    if column.numeric:
        return natural, natural
    hard = min(natural, column.min_width)
    if column.wrap:
        longest = max((cell_len(word) for cell in cells for word in cell.split()), default=1)
        return min(natural, max(hard, min(longest, 2 * column.min_width))), hard
    return hard, hard


def _share(room: int, naturals: dict[int, int], floors: dict[int, int]) -> dict[int, int]:
    """Widths for columns sharing ``room``: each its natural width if all fit, else the widest cut first,
    none below its floor; what is left goes to the cut columns, left to right."""
    if sum(naturals.values()) <= room:
        return dict(naturals)
    cap = max(naturals.values(), default=0)
    while cap > 0 and sum(max(floors[i], min(n, cap)) for i, n in naturals.items()) > room:
        cap -= 1
    widths = {i: max(floors[i], min(n, cap)) for i, n in naturals.items()}
    spare = room - sum(widths.values())
    for i, n in naturals.items():
        extra = max(0, min(spare, n - widths[i]))
        widths[i] += extra
        spare -= extra
    return widths


def fit_columns(columns: Sequence[Column], rows: Sequence[Sequence[str]], width: int, *, gaps: int = 3) -> Layout:
    """Fit the columns into ``width`` characters, where each column costs ``gaps`` characters more than
    its content (3 for rich's boxed table: a border and a space on each side; 2 for a borderless one).

    Columns are left out, lowest ``drop`` rank first, until the numbers at full width and the text at its
    minimum fit. The room left goes first to the text that ends in an ellipsis (so as little is cut as
    can be), then to the text that wraps, each time the widest giving way first.
    """
    naturals = [_natural(c, [row[i] for row in rows]) for i, c in enumerate(columns)]
    floors = [_floors(c, naturals[i], [row[i] for row in rows]) for i, c in enumerate(columns)]
    kept = list(range(len(columns)))
    droppable = sorted((c.drop, i) for i, c in enumerate(columns) if c.drop is not None)
    dropped: list[str] = []
    edge = 1 if gaps == 3 else -2  # a boxed table's closing border; a borderless one has no outer padding

    def room() -> int:
        return width - gaps * len(kept) - edge - sum(naturals[i] for i in kept if columns[i].numeric)

    while sum(floors[i][1] for i in kept if not columns[i].numeric) > room() and droppable:
        _, index = droppable.pop(0)
        kept.remove(index)
        dropped.append(columns[index].name or columns[index].header)
    wrapped = [i for i in kept if columns[i].wrap and not columns[i].numeric]
    cut = [i for i in kept if not columns[i].wrap and not columns[i].numeric]
    whole = sum(floors[i][1] for i in cut) + sum(floors[i][0] for i in wrapped) <= room()
    wrap_floor = {i: floors[i][0 if whole else 1] for i in wrapped}
    widths = {i: naturals[i] for i in kept if columns[i].numeric}
    widths.update(
        _share(room() - sum(wrap_floor.values()), {i: naturals[i] for i in cut}, {i: floors[i][1] for i in cut})
    )
    widths.update(_share(room() - sum(widths[i] for i in cut), {i: naturals[i] for i in wrapped}, wrap_floor))
    return Layout(kept, [widths[i] for i in kept], dropped)


def fits(columns: Sequence[Column], rows: Sequence[Sequence[str]], *, out: Console | None = None) -> bool:
    """Whether a boxed table of these columns shows them all: piped, always; on a terminal, when none
    would be left out at its width."""
    out = out or console
    return not out.is_terminal or not fit_columns(columns, rows, out.width).dropped


def plain_lines(columns: Sequence[Column], rows: Sequence[Sequence[str]], *, header: bool = True) -> list[str]:
    """The table as plain text for a pipe: columns aligned with two spaces, one row a line, nothing cut."""
    widths = [
        max([cell_len(c.header) if header else 0, *(cell_len(row[i]) for row in rows)]) for i, c in enumerate(columns)
    ]

    def line(cells: Sequence[str]) -> str:
        padded = [
            (" " * (w - cell_len(cell)) + cell) if c.numeric else cell + " " * (w - cell_len(cell))
            for c, w, cell in zip(columns, widths, cells, strict=True)
        ]
        return "  ".join(padded).rstrip()

    return ([line([c.header for c in columns])] if header else []) + [line(row) for row in rows]


def print_lines(lines: Iterable[str], *, out: Console | None = None, style: str = "") -> None:
    """Lines of prose: on a terminal, wrapped between words to its width; piped, as they are."""
    out = out or console
    for line in lines:
        text = printable(line, one_line=False)
        if out.is_terminal:
            out.print(Text(text, style=style), overflow="ellipsis")
        else:
            out.print(Text(text), soft_wrap=True, crop=False)


def print_table(
    columns: Sequence[Column | str],
    rows: Iterable[Sequence[str]],
    *,
    title: str = "",
    out: Console | None = None,
    boxed: bool = True,
    header: bool = True,
    styles: Sequence[str] = (),
) -> list[str]:
    """A table that fits the terminal (see the module's docstring), or plain text when piped. A plain
    string in ``columns`` is a text column of that header. Returns the headers of the columns left out."""
    out = out or console
    spec = [c if isinstance(c, Column) else Column(c) for c in columns]
    cells = [[printable(cell, one_line=False) for cell in row] for row in rows]
    title = printable(title)
    if not out.is_terminal:
        if title:
            out.print(Text(title), soft_wrap=True, crop=False)
        for text in plain_lines(spec, cells, header=header):
            out.print(Text(text), soft_wrap=True, crop=False)
        return []
    layout = fit_columns(spec, cells, out.width, gaps=3 if boxed else 2)
    table = Table(
        title=Text(title) if title else None,
        title_justify="left",
        show_header=header,
        box=box.HEAVY_HEAD if boxed else None,
        pad_edge=boxed,
    )
    for i, width in zip(layout.kept, layout.widths, strict=True):
        column = spec[i]
        table.add_column(
            column.header,
            justify="right" if column.numeric else "left",
            width=width,
            no_wrap=not column.wrap,
            overflow="ellipsis",
            style=styles[i] if i < len(styles) else "",
        )
    for row in cells:
        table.add_row(*(Text(row[i]) for i in layout.kept))
    out.print(table)
    named = [name for name in layout.dropped if name]  # a column without a name is only layout
    if named:
        print_lines(
            [f"left out at {out.width} columns: {', '.join(named)} (a wider window shows them)"], out=out, style="dim"
        )
    return layout.dropped


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


def _tree_rows(report: Report, units: str = "flops") -> Iterator[tuple[int, str, int, int, str]]:
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
        yield (
            depth,
            indent + name,
            visit.params.evaluate(),
            in_units(visit.flops, units).evaluate(N=report.seq_len),
            formula,
        )


def summary_rows(report: Report, units: str = "flops") -> list[tuple[str, str, str]]:
    """The report's headline figures as (label, figure, detail) rows: the figure is exact (a count, or a
    size with its unit), the detail says it in short and how it is made. A new figure is one more row.
    ``units`` is ``flops`` or ``macs`` (every FLOP figure halved, and labelled MACs)."""
    arch = report.architecture
    total = report.params
    n = report.seq_len
    rows = [
        ("architecture", arch.name, arch.title),
        ("parameters", f"{total:,}", f"{human_count(total)}  = {report.root.params.text()}"),
    ]
    active = report.active_params
    if active != total:
        rows.append(
            (
                "active parameters",
                f"{active:,}",
                f"{human_count(active)}  used by one token  = {report.active_formula.text()}",
            )
        )
    rows.append(("leading order", f"{report.approx:,}", f"{human_count(report.approx)}  = {report.root.approx.text()}"))
    rows.append(("non-embedding", f"{report.non_embedding:,}", human_count(report.non_embedding)))
    sizes = report.weight_bytes()
    rows.append(
        (
            "weights",
            human_bytes(sizes["fp32"]) + " fp32",
            "  ".join(f"{human_bytes(v)} {k}" for k, v in sizes.items() if k != "fp32"),
        )
    )
    fl = flops_dict(report, units)
    unit = "MACs" if units == "macs" else "FLOPs"
    rows.append(
        (
            f"forward {unit} (N={n:,})",
            f"{fl['forward']:,}",
            f"{human_count(fl['forward'])}, of which attention {human_count(fl['attention'])}",
        )
    )
    rows.append((f"{unit} formula", "", fl["formula"]["text"]))
    rows.append(("time complexity", "", report.root.flops.complexity()))
    overtakes = report.attention_overtakes_at
    rows.append(("attention > rest from", f"N = {overtakes:,}" if overtakes else "never", ""))
    rows.append(
        (
            f"training {unit} (N={n:,})",
            f"{fl['training']:,}",
            f"{human_count(fl['training'])} = forward + backward {human_count(fl['backward'])}; "
            f"{fl['training'] / fl['forward']:.2f}× forward  = {fl['training_formula']['text']}",
        )
    )
    for approx in fl["training_approximations"]:
        if approx["flops"] is None:
            rows.append((f"  ≈ {approx['name']}", "", f"omitted: {approx['omitted']}"))
        else:
            figure = f"{round(approx['flops']):,}"
            halved = ", halved into MACs" if units == "macs" else ""
            rows.append(
                (f"  ≈ {approx['name']}", figure, f"{approx['relative_error']:+.1%}  = {approx['formula']}{halved}")
            )
    if fl["prefill"] is None:
        rows.append(("prefill / decode", "none", fl["generation_note"]))
    else:
        # an encoder-decoder's first call runs the encoder over the source and the decoder over its start token
        seq2seq = bool(report.cross_kv_cache_elements_per_source_token)
        prefill = (
            "the source encoded, the decoder's start token" if seq2seq else "N prompt tokens, logits of the last only"
        )
        decode = (
            "one decoder token, N-1 cached, the source's keys and values cached" if seq2seq else "one token, N-1 cached"
        )
        decode += "".join(
            f"; its sliding-window layers read the last W = {window:,} keys" for window in fl.get("decode_windows", [])
        )
        rows.append(
            (
                f"prefill {unit} (N={n:,})",
                f"{fl['prefill']:,}",
                f"{human_count(fl['prefill'])}: {prefill}  = {fl['prefill_formula']['text']}",
            )
        )
        rows.append(
            (
                f"decode {unit} (position N={n:,})",
                f"{fl['decode']:,}",
                f"{human_count(fl['decode'])}: {decode}  = {fl['decode_formula']['text']}",
            )
        )
    kv = report.kv_cache_elements_per_token
    if kv:
        rows.append(
            ("KV cache per token", human_bytes(2 * kv) + " fp16", f"{kv:,} elements = {report.root.kv_cache.text()}")
        )
    cross_kv = report.cross_kv_cache_elements_per_source_token
    if cross_kv:
        rows.append(
            (
                "cross-attention KV cache per source token",
                human_bytes(2 * cross_kv) + " fp16",
                f"{cross_kv:,} elements = {report.root.cross_kv_cache.text()}",
            )
        )
    rows.extend(memory_rows(report))
    return rows


#: The summary: labels and details wrap between words; the figure keeps its width.
SUMMARY_COLUMNS = (
    Column("label", min_width=12, wrap=True),
    Column("figure", numeric=True),
    Column("detail", min_width=12, wrap=True),
)

#: The block tree: the name shrinks; columns leave in this order: share, formula, FLOPs (params stays).
TREE_COLUMNS = (
    Column("block", min_width=14),
    Column("params", numeric=True),
    Column("share", numeric=True, drop=1),
    Column("FLOPs", numeric=True, drop=3),
    Column("formula", min_width=16, wrap=True, drop=2),
)


def print_report(report: Report, *, max_depth: int = 3, out: Console | None = None, units: str = "flops") -> None:
    """The summary, then the per-block tree with formulas; FLOP figures in ``units`` (``flops`` or ``macs``)."""
    out = out or console
    print_table(
        SUMMARY_COLUMNS, summary_rows(report, units), out=out, boxed=False, header=False, styles=("bold", "", "dim")
    )
    out.print()
    total = report.params
    rows = [
        [
            name,
            f"{params:,}",
            f"{100 * params / total:.1f}%" if total and params else "",
            human_count(flops) if flops else "",
            formula,
        ]
        for depth, name, params, flops, formula in _tree_rows(report, units)
        if depth <= max_depth
    ]
    n = report.seq_len
    unit = "MACs" if units == "macs" else "FLOPs"
    columns = (
        TREE_COLUMNS
        if units == "flops"
        else tuple(replace(c, header=unit) if c.header == "FLOPs" else c for c in TREE_COLUMNS)
    )
    print_table(columns, rows, title=f"blocks (params of all copies, {unit} at N={n:,}, formula of one copy)", out=out)
    symbols = "  ".join(f"{s['name']}={s['value']:,}" for s in report.symbols() if s["value"] is not None)
    print_lines([f"symbols: {symbols}"], out=out, style="dim")
