"""The score-history chart: each team's best score over the contest as a step line,
the reference planners as dashed horizontal lines, drawn as one SVG with presentation
attributes only (no script, no style attribute: the pages' CSP holds), so it reads
without JavaScript.

Framework-free: the service (api.reads.history) hands over plain series.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from judge.pictures.svg import esc, open_svg, spread, text, tick

WIDTH, HEIGHT = 860, 320
LEFT, RIGHT, TOP, BOTTOM = 48, 190, 16, 34
PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf",
           "#7f7f7f")  # fmt: skip
REFERENCE = "#555"
Scale = Callable[[Any], float]  # a time or a score -> pixels


@dataclass(frozen=True)
class Series:
    """A team's best score after each improvement, in time order."""

    label: str
    points: tuple[tuple[datetime, float], ...]
    own: bool = False  # the viewer's team: drawn thicker


@dataclass(frozen=True)
class Reference:
    label: str
    score: float


def history_svg(
    title: str,
    series: list[Series],
    references: list[Reference],
    start: datetime | None,
    end: datetime,
) -> str:
    """Scores 0..100 over [start, end]; `start` None: the first point's time."""
    stamps = [t for s in series for t, _ in s.points]
    first = start or (min(stamps) if stamps else end - timedelta(hours=1))
    if end <= first:
        end = first + timedelta(minutes=1)
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def x(t: datetime) -> float:
        clamped = min(max(t, first), end)
        return LEFT + plot_w * (clamped - first).total_seconds() / (end - first).total_seconds()

    def y(score: float) -> float:
        return TOP + plot_h * (1 - min(max(score, 0.0), 100.0) / 100)

    parts = [open_svg(WIDTH, HEIGHT, title), f"<title>{esc(title)}</title>"]
    parts += _axes(first, end, x, y, plot_w)
    labels: list[tuple[float, str, str]] = []  # (row, text, colour) of the right legend
    parts.append('<g class="references">')
    for ref in references:
        row = y(ref.score)
        parts.append(
            f'<line class="reference" x1="{LEFT}" y1="{row:.2f}" x2="{LEFT + plot_w}" '
            f'y2="{row:.2f}" stroke="{REFERENCE}" stroke-dasharray="5 4">'
            f"<title>{esc(f'{ref.label}: {ref.score:.2f}')}</title></line>"
        )
        labels.append((row, f"{ref.label} {ref.score:.2f}", REFERENCE))
    parts.append('</g><g class="teams">')
    for i, s in enumerate(series):
        if not s.points:
            continue
        colour = PALETTE[i % len(PALETTE)]
        parts.append(_step_line(s, colour, x, y, end))
        labels.append((y(s.points[-1][1]), f"{s.label} {s.points[-1][1]:.2f}", colour))
    parts.append("</g>")
    rows = spread([r for r, _, _ in labels], 13)
    for row, (_, label, colour) in zip(rows, labels, strict=True):
        parts.append(text(LEFT + plot_w + 8, row, label[:28], fill=colour, baseline="middle"))
    if not series:
        parts.append(text(LEFT + plot_w / 2, TOP + plot_h / 2, "no judged submission yet",
                          anchor="middle"))  # fmt: skip
    parts.append("</svg>")
    return "".join(parts)


def _step_line(s: Series, colour: str, x: Scale, y: Scale, end: datetime) -> str:
    """Flat until the next improvement, then up; carried to the end of the window."""
    coords: list[str] = []
    for i, (t, score) in enumerate(s.points):
        if i:
            coords.append(f"{x(t):.2f},{y(s.points[i - 1][1]):.2f}")
        coords.append(f"{x(t):.2f},{y(score):.2f}")
    coords.append(f"{x(end):.2f},{y(s.points[-1][1]):.2f}")
    width = 3 if s.own else 1.6
    dots = "".join(
        f'<circle cx="{x(t):.2f}" cy="{y(v):.2f}" r="2.5" fill="{colour}">'
        f"<title>{esc(f'{s.label}: {v:.2f} at {t:%Y-%m-%d %H:%M} UTC')}</title></circle>"
        for t, v in s.points
    )
    own = " own" if s.own else ""
    return (
        f'<g class="team{own}" data-team="{esc(s.label)}"><polyline points="{" ".join(coords)}" '
        f'fill="none" stroke="{colour}" stroke-width="{width}"/>{dots}</g>'
    )


def _axes(first: datetime, end: datetime, x: Scale, y: Scale, plot_w: float) -> list[str]:
    out = [f'<rect x="{LEFT}" y="{TOP}" width="{plot_w}" height="{y(0) - TOP:.2f}" '
           'fill="#fafafa" stroke="#ccc"/>']  # fmt: skip
    for score in range(0, 101, 20):
        row = y(score)
        out.append(tick(LEFT - 4, row, LEFT, row))
        out.append(text(LEFT - 6, row, str(score), anchor="end", baseline="middle"))
    span = end - first
    fmt = (
        "%H:%M:%S"
        if span <= timedelta(hours=1)
        else "%H:%M"
        if span <= timedelta(days=1)
        else "%m-%d %H:%M"
    )
    for i in range(5):
        t = first + span * i / 4
        col = x(t)
        out.append(tick(col, y(0), col, y(0) + 4))
        out.append(text(col, y(0) + 16, t.strftime(fmt), anchor="middle"))
    out.append(text(LEFT, y(0) + 30, "time (UTC)", fill="#777", size=10))
    return out
