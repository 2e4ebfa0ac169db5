"""Pictures of the zoo as inline SVG: every model's parameters against its year, the published figures
against the exact counts, and an architecture's models' parameters against their FLOPs; each point links
to its model's page.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..report import human_count
from .paths import architecture_path, model_path, page_href
from .svg import Axis, Point, scatter_plot
from .views import ArchitectureView, ModelView, fmt_gap

__all__ = ["WITHIN_ROUNDING", "architecture_plot", "published_plot", "year_plot"]


def _model_link(page_path: str, model_id: str, directory_urls: bool) -> str:
    return page_href(page_path, model_path(model_id), directory_urls)


def year_plot(models: Sequence[ModelView], page_path: str = "index.md", directory_urls: bool = True) -> str:
    """Every model's exact parameters against its year, log scale, coloured by architecture; each point
    links to the model's page."""
    points = [
        Point(
            x=m.year,
            y=m.params,
            group=m.architecture_title,
            label=f"{m.id} ({m.year}): {m.params:,} parameters",
            href=_model_link(page_path, m.id, directory_urls),
        )
        for m in sorted(models, key=lambda m: (m.year, m.params, m.id))
    ]
    return scatter_plot(
        points,
        x=Axis("year", ticks="year"),
        y=Axis("parameters (exact, log scale)", log=True),
        title="Parameters against year, every model of the zoo",
        groups=sorted({m.architecture_title for m in models}),
        css="az-years",
    )


#: The legend entry of a published figure within the rounding of the count (no reason needed).
WITHIN_ROUNDING = "within rounding"


def published_plot(models: Sequence[ModelView], page_path: str = "index.md", directory_urls: bool = True) -> str:
    """How far each paper's figure is from the exact count: (exact − published) / published against the
    exact count (log scale), coloured by the entry's reason; models with no published figure are left out."""
    points = [
        Point(
            x=m.params,
            y=m.gap,
            group=m.reason or WITHIN_ROUNDING,
            label=f"{m.id}: {m.params:,} exact, {m.published} published, {fmt_gap(m.gap)}"
            + (f" ({m.reason})" if m.reason else ""),
            href=_model_link(page_path, m.id, directory_urls),
        )
        for m in sorted(models, key=lambda m: (m.params, m.id))
        if m.gap is not None
    ]
    return scatter_plot(
        points,
        x=Axis("parameters (exact, log scale)", log=True),
        y=Axis("(exact − published) / published", ticks="percent"),
        title="Published figures against the exact counts",
        groups=[WITHIN_ROUNDING],
        zero_line=True,
        css="az-published",
    )


def architecture_plot(view: ArchitectureView, directory_urls: bool = True) -> str:
    """An architecture's models: exact parameters against forward FLOPs at each model's own N, log–log."""
    page_path = architecture_path(view.name)
    points = [
        Point(
            x=m.params,
            y=m.flops,
            group=f"N = {m.seq_len:,}",
            label=f"{m.id}: {m.params:,} parameters, {human_count(m.flops)} FLOPs at N = {m.seq_len:,}",
            href=_model_link(page_path, m.id, directory_urls),
        )
        for m in sorted(view.models, key=lambda m: (m.params, m.id))
    ]
    return scatter_plot(
        points,
        x=Axis("parameters (exact, log scale)", log=True),
        y=Axis("forward FLOPs at N (log scale)", log=True),
        title=f"Parameters and forward FLOPs of the {view.title} models",
        groups=[f"N = {n:,}" for n in sorted({m.seq_len for m in view.models})],
        css="az-architecture",
    )
