"""SVG drawing shared by the plan pictures: escaped text, ticks, the byte axis, marked
horizontal lines and their labels, and number formatting.

Every piece of text goes through `esc`: ids come from untrusted case files, and the
pages embed the pictures inline.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from html import escape

MIN_PX = 0.3  # anything below this in both dimensions is invisible: merged or left out
LABEL_GAP_PX = 12  # minimum vertical distance between marked-line labels
UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB")

YOf = Callable[[int | float], float]  # bytes -> pixel row of a panel


def open_svg(width: int, height: int, label: str) -> str:
    """The <svg> start tag; `label` names the picture for screen readers."""
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="{esc(label)}" '
        'font-family="sans-serif" font-size="11">'
    )


def esc(text: object) -> str:
    return escape(str(text), quote=True)


def text(
    x: float,
    y: float,
    content: str,
    *,
    anchor: str = "start",
    baseline: str = "auto",
    fill: str = "#333",
    size: int | None = None,
) -> str:
    size_attr = f' font-size="{size}"' if size else ""
    return (
        f'<text x="{x:.2f}" y="{y:.2f}" text-anchor="{anchor}" dominant-baseline="{baseline}" '
        f'fill="{fill}"{size_attr}>{esc(content)}</text>'
    )


def text_width(content: str) -> float:
    """Rough width at 11 px sans-serif; only used to space legends."""
    return 6.2 * len(content)


def tick(x1: float, y1: float, x2: float, y2: float) -> str:
    return f'<line x1="{x1:.2f}" y1="{y1:.2f}" x2="{x2:.2f}" y2="{y2:.2f}" stroke="#999"/>'


def byte_axis(left: float, ymax: int, y: YOf) -> list[str]:
    """Ticks and their labels left of a panel that shows bytes 0..ymax."""
    out = []
    for value, label in byte_ticks(ymax):
        row = y(value)
        out.append(tick(left - 4, row, left, row))
        out.append(text(left - 6, row, label, anchor="end", baseline="middle"))
    return out


def mark_lines(
    values: Mapping[str, int],
    styles: Mapping[str, tuple[str, str]],
    y: YOf,
    left: float,
    width: float,
) -> list[str]:
    """A horizontal line per named value (capacity, peak ...), styled (colour, dash) by
    name and labelled on the right; labels are pushed apart when lines coincide."""
    rows = [float(y(v)) for v in values.values()]
    out = []
    for (name, value), row, label_row in zip(
        values.items(), rows, spread(rows, LABEL_GAP_PX), strict=True
    ):
        colour, dash = styles[name]
        dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
        out.append(
            f'<line class="mark {name.replace(" ", "-")}" x1="{left:.2f}" y1="{row:.2f}" '
            f'x2="{left + width:.2f}" y2="{row:.2f}" stroke="{colour}" stroke-width="1.5"'
            f"{dash_attr}><title>{esc(f'{name}: {value} bytes')}</title></line>"
        )
        label = f"{name} {human_bytes(value)}"
        out.append(text(left + width + 6, label_row, label, fill=colour, baseline="middle"))
    return out


def spread(ys: list[float], gap: float) -> list[float]:
    """Push labels apart (downwards) so coinciding lines stay readable."""
    out = list(ys)
    prev = -math.inf
    for i in sorted(range(len(ys)), key=ys.__getitem__):
        out[i] = max(ys[i], prev + gap)
        prev = out[i]
    return out


def byte_ticks(ymax: int) -> list[tuple[int | float, str]]:
    """Ticks at round numbers of the largest binary unit not above ymax."""
    k = min(max(int(math.log2(ymax)) // 10, 0), len(UNITS) - 1)
    unit = 1024**k
    step = nice_step(ymax / unit)
    if k == 0:
        step = max(step, 1)  # no fractional bytes
    count = int(ymax / unit / step + 1e-9)
    return [(i * step * unit, f"{round(i * step, 6):g} {UNITS[k]}") for i in range(count + 1)]


def nice_step(span: float, target: int = 5) -> float:
    """A 1/2/5 × 10^k step giving about `target` intervals over span."""
    raw = span / target
    mag = 10 ** math.floor(math.log10(raw))
    return next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw * (1 - 1e-12))


def human_bytes(n: int) -> str:
    """1536 -> '1.5 KiB'; exact below 1 KiB."""
    if abs(n) < 1024:
        return f"{n} B"
    k = min(int(math.log2(abs(n))) // 10, len(UNITS) - 1)
    v = n / 1024**k
    digits = 0 if abs(v) >= 100 else 1 if abs(v) >= 10 else 2
    return f"{v:.{digits}f}".rstrip("0").rstrip(".") + f" {UNITS[k]}"
