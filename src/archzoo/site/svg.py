"""SVG plots written as text: FLOPs against sequence length on log axes, a parameter bar chart, and the
zoo's scatter plots (parameters against year, published against exact, parameters against FLOPs).

Plain functions of numbers, with no plotting library: the output is deterministic (coordinates are
rounded) and styled by class names, so the site's stylesheet colours it for the light and dark themes.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape as _escape

from ..report import human_count

__all__ = ["Axis", "Point", "bar_chart", "flops_plot", "linear_ticks", "log_ticks", "scatter_plot"]

#: Series colours of the scatter plots, as classes the stylesheet colours (``az-c0`` ...): more groups
#: than this reuse them, with the legend naming each.
PALETTE_SIZE = 10

#: Shown as U+FFFD: control characters but tab and line breaks, DEL, lone surrogates.
_UNSHOWABLE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x84\x86-\x9f\ud800-\udfff]")
_BREAKS = re.compile("[\r\x85\u2028\u2029]")


def escape(text: str) -> str:
    """Plain text (a block name from a plugin) as SVG text or a quoted attribute value inside HTML; line
    breaks are spaces there."""
    return _escape(_UNSHOWABLE.sub("\ufffd", _BREAKS.sub(" ", str(text))), quote=True)


def _f(x: float) -> str:
    """A coordinate, rounded so that two builds write the same bytes."""
    text = f"{x:.1f}"
    return text[:-2] if text.endswith(".0") else text


def log_ticks(low: float, high: float) -> list[float]:
    """Powers of ten covering ``[low, high]``."""
    first = math.floor(math.log10(max(low, 1e-12)))
    last = math.ceil(math.log10(max(high, 1e-12)))
    return [10.0**k for k in range(first, last + 1)]


def _tick_label(value: float, unit: str = "") -> str:
    if value < 1000:
        return f"{value:.0f}{unit}"
    return human_count(value).replace(".00", "").replace(".0", "") + unit


def flops_plot(
    ns: Sequence[int],
    totals: Sequence[int],
    attention: Sequence[int],
    *,
    seq_len: int | None = None,
    overtakes_at: int | None = None,
    title: str = "Forward FLOPs against sequence length",
    width: int = 680,
    height: int = 380,
) -> str:
    """FLOPs per forward pass against N, both axes logarithmic: attention, the rest, and the total."""
    rest = [t - a for t, a in zip(totals, attention, strict=True)]
    left, right, top, bottom = 64, 170, 16, 44
    plot_w, plot_h = width - left - right, height - top - bottom
    positive = [v for series in (totals, attention, rest) for v in series if v > 0]
    if not ns or not positive:
        return ""
    x_ticks = log_ticks(min(ns), max(ns))
    y_ticks = log_ticks(min(positive), max(positive))
    x0, x1 = math.log10(x_ticks[0]), math.log10(x_ticks[-1])
    y0, y1 = math.log10(y_ticks[0]), math.log10(y_ticks[-1])
    x1 = x1 if x1 > x0 else x0 + 1
    y1 = y1 if y1 > y0 else y0 + 1

    def px(n: float) -> float:
        return left + (math.log10(n) - x0) / (x1 - x0) * plot_w

    def py(v: float) -> float:
        return top + plot_h - (math.log10(v) - y0) / (y1 - y0) * plot_h

    out = [
        f'<svg class="az-plot az-flops" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" '
        f'role="img" aria-label="{escape(title)}">',
        f"<title>{escape(title)}</title>",
    ]
    for t in x_ticks:
        x = _f(px(t))
        out.append(f'<line class="az-grid" x1="{x}" y1="{top}" x2="{x}" y2="{top + plot_h}"/>')
        out.append(
            f'<text class="az-tick" x="{x}" y="{top + plot_h + 16}" text-anchor="middle">{_tick_label(t)}</text>'
        )
    for t in y_ticks:
        tick_y = _f(py(t))
        out.append(f'<line class="az-grid" x1="{left}" y1="{tick_y}" x2="{left + plot_w}" y2="{tick_y}"/>')
        out.append(
            f'<text class="az-tick" x="{left - 6}" y="{tick_y}" text-anchor="end" dominant-baseline="middle">'
            f"{_tick_label(t)}</text>"
        )
    out.append(f'<rect class="az-frame" x="{left}" y="{top}" width="{plot_w}" height="{plot_h}"/>')
    out.append(
        f'<text class="az-label" x="{left + plot_w / 2:.0f}" y="{height - 6}" text-anchor="middle">'
        "sequence length N (log scale)</text>"
    )
    out.append(
        f'<text class="az-label" transform="translate(14 {top + plot_h / 2:.0f}) rotate(-90)" '
        'text-anchor="middle">FLOPs per forward pass</text>'
    )
    series = [
        ("total", "az-total", totals),
        ("attention products", "az-attention", attention),
        ("everything else", "az-rest", rest),
    ]
    for name, css, values in series:
        points = " ".join(f"{_f(px(n))},{_f(py(v))}" for n, v in zip(ns, values, strict=True) if v > 0)
        if points:
            out.append(f'<polyline class="az-line {css}" points="{points}"><title>{name}</title></polyline>')
    for i, (name, css, _values) in enumerate(series):
        y = top + 10 + 20 * i
        lx = left + plot_w + 12
        out.append(f'<line class="az-line {css}" x1="{lx}" y1="{y}" x2="{lx + 22}" y2="{y}"/>')
        out.append(f'<text class="az-legend" x="{lx + 28}" y="{y}" dominant-baseline="middle">{name}</text>')
    markers: list[tuple[int, list[str], str]] = []
    if seq_len and min(ns) <= seq_len <= max(ns):
        markers.append((seq_len, ["model's N", f"= {seq_len:,}"], "az-mark-context"))
    if overtakes_at and min(ns) <= overtakes_at <= max(ns):
        markers.append((overtakes_at, ["attention > rest", f"from N = {overtakes_at:,}"], "az-mark-cross"))
    y = top + 84
    for n, label, css in markers:
        x = _f(px(n))
        out.append(f'<line class="az-mark {css}" x1="{x}" y1="{top}" x2="{x}" y2="{top + plot_h}"/>')
        lx = left + plot_w + 12
        out.append(f'<line class="az-mark {css}" x1="{lx + 11}" y1="{y - 8}" x2="{lx + 11}" y2="{y + 24}"/>')
        for k, text in enumerate(label):
            out.append(
                f'<text class="az-legend {css}" x="{lx + 28}" y="{y + 16 * k}" dominant-baseline="middle">'
                f"{escape(text)}</text>"
            )
        y += 46
    out.append("</svg>")
    return "".join(out)


def bar_chart(
    groups: Sequence[tuple[str, int]], *, total: int, title: str = "Parameters by block", width: int = 680
) -> str:
    """Horizontal bars, one per group, labelled with the count and its share of ``total``."""
    if not groups or total <= 0:
        return ""
    label_w, value_w, bar_h, gap, top = 190, 150, 18, 8, 6
    plot_w = width - label_w - value_w
    height = top * 2 + len(groups) * (bar_h + gap)
    largest = max(v for _, v in groups) or 1
    out = [
        f'<svg class="az-plot az-bars" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" '
        f'role="img" aria-label="{escape(title)}">',
        f"<title>{escape(title)}</title>",
    ]
    for i, (name, value) in enumerate(groups):
        y = top + i * (bar_h + gap)
        w = max(1.0, value / largest * plot_w)
        out.append(
            f'<text class="az-tick" x="{label_w - 8}" y="{_f(y + bar_h / 2)}" text-anchor="end" '
            f'dominant-baseline="middle">{escape(name)}</text>'
        )
        out.append(
            f'<rect class="az-bar" x="{label_w}" y="{y}" width="{_f(w)}" height="{bar_h}">'
            f"<title>{escape(name)}: {value:,}</title></rect>"
        )
        out.append(
            f'<text class="az-tick" x="{_f(label_w + w + 6)}" y="{_f(y + bar_h / 2)}" '
            f'dominant-baseline="middle">{human_count(value)} ({value / total:.1%})</text>'
        )
    out.append("</svg>")
    return "".join(out)


# ---- scatter plots of the zoo ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Point:
    """One model on a scatter plot: where it goes, its group (a colour and a legend entry), the text of
    its tooltip and the page it links to."""

    x: float
    y: float
    group: str
    label: str
    href: str = ""


@dataclass(frozen=True)
class Axis:
    """An axis: its label, logarithmic or linear, and how a tick reads (``"count"``, ``"percent"``,
    ``"year"``)."""

    label: str
    log: bool = False
    ticks: str = "count"


def linear_ticks(low: float, high: float, most: int = 8) -> list[float]:
    """Round ticks covering ``[low, high]``, at a step of 1, 2 or 5 times a power of ten, at most ``most``."""
    if high <= low:
        high = low + 1
    raw = (high - low) / max(1, most - 1)
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    ticks = [round(math.floor(low / step + 1e-9) * step, 12)]
    while ticks[-1] < high - 1e-9 * step:
        ticks.append(round(ticks[-1] + step, 12))
    return ticks


def _axis_tick(value: float, kind: str) -> str:
    if kind == "percent":
        return f"{value:+.1%}".replace(".0%", "%") if value else "0%"
    if kind == "year":
        return f"{value:.0f}"
    if value >= 1e15:  # beyond T: a power of ten, 10 with its exponent raised
        return f'10<tspan class="az-exp" dy="-7">{round(math.log10(value))}</tspan>'
    return _tick_label(value)


def _spread(points: Sequence[Point], axis: Axis) -> dict[int, float]:
    """Points of a linear axis that share a value (models of one year) spread side by side, within
    ±0.4 of a unit, in their given order, so that fewer hide one another (a dense year still overlaps)."""
    if axis.log:
        return {}
    same: dict[float, list[int]] = {}
    for i, p in enumerate(points):
        same.setdefault(p.x, []).append(i)
    offsets: dict[int, float] = {}
    for indices in same.values():
        if len(indices) > 1:
            for k, i in enumerate(indices):
                offsets[i] = -0.4 + 0.8 * k / (len(indices) - 1)
    return offsets


def scatter_plot(
    points: Sequence[Point],
    *,
    x: Axis,
    y: Axis,
    title: str,
    groups: Sequence[str] = (),
    zero_line: bool = False,
    width: int = 600,
    height: int = 400,
    css: str = "",
) -> str:
    """Points on two axes, each a link to its page when it has one, coloured by group with a legend.

    Logarithmic axes span whole powers of ten; a linear axis spans round ticks (`linear_ticks`), and on a
    linear x axis points that share a value are spread side by side (`_spread`). ``groups`` orders the
    legend (default: by first appearance); ``zero_line`` draws y = 0 (a difference plot's "no
    difference"). Points with a non-positive value on a logarithmic axis are left out.
    """
    shown = [p for p in points if (p.x > 0 or not x.log) and (p.y > 0 or not y.log)]
    if not shown:
        return ""
    order = list(dict.fromkeys([*groups, *(p.group for p in shown)]))
    order = [g for g in order if any(p.group == g for p in shown)]
    colour = {g: f"az-c{i % PALETTE_SIZE}" for i, g in enumerate(order)}
    columns = 2 if width < 700 else 3
    left, right, top, bottom = 72, 16, 16, 50 + 20 * ((len(order) + columns - 1) // columns)
    plot_w, plot_h = width - left - right, height - top - bottom
    if plot_h < 120:
        height += 120 - plot_h
        plot_h = 120

    def span(axis: Axis, values: list[float]) -> tuple[list[float], float, float, bool]:
        if axis.log:
            ticks = log_ticks(min(values), max(values))
            low, high = math.log10(ticks[0]), math.log10(ticks[-1])
        else:
            margin = 0.5 if axis.ticks == "year" else 0.0
            ticks = linear_ticks(min(values) - margin, max(values) + margin, 14 if axis.ticks == "year" else 8)
            low, high = ticks[0], ticks[-1]
        return ticks, low, high if high > low else low + 1, axis.log

    offsets = _spread(shown, x)
    x_ticks, x0, x1, x_log = span(x, [p.x for p in shown])
    y_values = [p.y for p in shown] + ([0.0] if zero_line and not y.log else [])
    y_ticks, y0, y1, y_log = span(y, y_values)

    def px(v: float) -> float:
        return left + ((math.log10(v) if x_log else v) - x0) / (x1 - x0) * plot_w

    def py(v: float) -> float:
        return top + plot_h - ((math.log10(v) if y_log else v) - y0) / (y1 - y0) * plot_h

    out = [
        f'<svg class="az-plot az-scatter{(" " + css) if css else ""}" xmlns="http://www.w3.org/2000/svg" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="{escape(title)}">',
        f"<title>{escape(title)}</title>",
    ]
    for t in x_ticks:
        tx = _f(px(t))
        out.append(f'<line class="az-grid" x1="{tx}" y1="{top}" x2="{tx}" y2="{top + plot_h}"/>')
        out.append(
            f'<text class="az-tick" x="{tx}" y="{top + plot_h + 16}" text-anchor="middle">{_axis_tick(t, x.ticks)}</text>'
        )
    for t in y_ticks:
        ty = _f(py(t))
        css_line = "az-zero" if zero_line and t == 0 else "az-grid"
        out.append(f'<line class="{css_line}" x1="{left}" y1="{ty}" x2="{left + plot_w}" y2="{ty}"/>')
        out.append(
            f'<text class="az-tick" x="{left - 6}" y="{ty}" text-anchor="end" dominant-baseline="middle">'
            f"{_axis_tick(t, y.ticks)}</text>"
        )
    out.append(f'<rect class="az-frame" x="{left}" y="{top}" width="{plot_w}" height="{plot_h}"/>')
    out.append(
        f'<text class="az-label" x="{left + plot_w / 2:.0f}" y="{top + plot_h + 38}" text-anchor="middle">'
        f"{escape(x.label)}</text>"
    )
    out.append(
        f'<text class="az-label" transform="translate(14 {top + plot_h / 2:.0f}) rotate(-90)" '
        f'text-anchor="middle">{escape(y.label)}</text>'
    )
    for i, p in enumerate(shown):
        cx = _f(px(p.x) + offsets.get(i, 0.0) * (plot_w / (x1 - x0)))
        dot = (
            f'<circle class="az-point {colour[p.group]}" cx="{cx}" cy="{_f(py(p.y))}" r="5">'
            f"<title>{escape(p.label)}</title></circle>"
        )
        out.append(f'<a href="{escape(p.href)}">{dot}</a>' if p.href else dot)
    column_w = (width - 24) / columns
    for i, g in enumerate(order):
        lx = 12 + (i % columns) * column_w
        ly = top + plot_h + 60 + 20 * (i // columns)
        out.append(f'<circle class="az-point {colour[g]}" cx="{_f(lx + 5)}" cy="{ly}" r="5"/>')
        out.append(f'<text class="az-legend" x="{_f(lx + 15)}" y="{ly}" dominant-baseline="middle">{escape(g)}</text>')
    out.append("</svg>")
    return "".join(out)
