"""SVG picture of an `offset` plan, for the submission web page.

A pure function with no web framework behind it. The page embeds the string
inline, so all styling is done with presentation attributes (an inline <style>
would leak into the host page) and every piece of text is XML-escaped, since
buffer ids come from untrusted case files.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

import numpy as np

# Tableau 10: distinguishable and calm; neighbours rarely share a colour.
PALETTE = (
    "#4e79a7",
    "#f28e2b",
    "#e15759",
    "#76b7b2",
    "#59a14f",
    "#edc948",
    "#b07aa1",
    "#ff9da7",
    "#9c755f",
    "#bab0ac",
)
MIN_PX = 0.3  # buffers below this in both dimensions are invisible: skip them
MIN_DRAW_PX = 0.5  # drawn buffers get at least this extent so they show up
# Margins around the plot area: left holds the byte ticks, right the labels of
# the marked lines, top the legend, bottom the time ticks and the caption.
LEFT, RIGHT, TOP, BOTTOM = 72, 124, 26, 50
LABEL_GAP_PX = 12  # minimum vertical distance between marked-line labels
UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB")
# (legend / class name, colour, dash pattern) of the marked horizontal lines.
MARKS = {
    "capacity": ("#d62728", "6 3"),
    "peak": ("#222222", ""),
    "lower bound": ("#2ca02c", "2 3"),
}

Arr = np.ndarray  # 1-D int64 unless noted
IntSeq = Sequence[int] | Arr


@dataclass(frozen=True)
class _Frame:
    """Plot area in pixels and the data ranges it maps; ints stay exact until here."""

    left: float
    top: float
    pw: float
    ph: float
    t0: int
    t1: int
    ymax: int

    @property
    def sx(self) -> float:
        return self.pw / (self.t1 - self.t0)

    @property
    def sy(self) -> float:
        return self.ph / self.ymax

    def x(self, t: int | np.ndarray) -> float | np.ndarray:
        # Subtract in integers first so large times keep their precision.
        return self.left + (t - self.t0) * self.sx

    def y(self, b: int | np.ndarray) -> float | np.ndarray:
        return self.top + self.ph - b * self.sy


def plan_svg(
    lower: IntSeq,
    upper: IntSeq,
    size: IntSeq,
    offset: IntSeq,
    capacity: int,
    peak: int | None,
    lower_bound: int,
    ids: Sequence[str] | None = None,
    width: int = 960,
    height: int = 420,
    max_rects: int = 5000,
) -> str:
    """Render buffer i as the rectangle time [lower, upper) × bytes [offset, offset+size).

    Draws at most `max_rects` buffers, the largest by area (size × lifetime),
    and marks capacity, peak (when given) and the lower bound.
    """
    lo, up, sz, off = (np.asarray(a, dtype=np.int64).ravel() for a in (lower, upper, size, offset))
    n = lo.size
    if not (up.size == sz.size == off.size == n):
        raise ValueError("lower, upper, size and offset must have equal lengths")
    if ids is not None and len(ids) != n:
        raise ValueError(f"ids has {len(ids)} entries for {n} buffers")
    if width <= LEFT + RIGHT or height <= TOP + BOTTOM:
        raise ValueError(f"{width}x{height} px leaves no room for the plot")

    f = _frame(lo, up, sz, off, capacity, peak, lower_bound, width, height)
    parts = [_open(width, height), *_axes(f)]
    if n == 0:
        parts.append(_text(f.left + f.pw / 2, f.top + f.ph / 2, "no buffers", anchor="middle"))
    else:
        chosen, tiny = _select(f, lo, up, sz, max_rects)
        parts.append(_rects(f, chosen, lo, up, sz, off, ids))
        if chosen.size < n:
            parts.append(_caption(chosen.size, n, tiny, height))
    marks = {"capacity": capacity, "peak": peak, "lower bound": lower_bound}
    parts += _marks(f, {k: v for k, v in marks.items() if v is not None})
    parts += _legend(f, peak is not None)
    parts.append("</svg>")
    return "\n".join(parts)


def _frame(
    lo: Arr,
    up: Arr,
    sz: Arr,
    off: Arr,
    capacity: int,
    peak: int | None,
    lower_bound: int,
    width: int,
    height: int,
) -> _Frame:
    t0 = int(lo.min()) if lo.size else 0
    t1 = int(up.max()) if up.size else 1
    top = max(capacity, peak or 0, lower_bound, int((off + sz).max()) if off.size else 0)
    # Degenerate ranges would divide by zero; give them one unit of room.
    return _Frame(
        left=LEFT,
        top=TOP,
        pw=width - LEFT - RIGHT,
        ph=height - TOP - BOTTOM,
        t0=t0,
        t1=max(t1, t0 + 1),
        ymax=max(int(top), 1),
    )


def _select(f: _Frame, lo: Arr, up: Arr, sz: Arr, max_rects: int) -> tuple[Arr, int]:
    """Indices to draw, largest area first, and how many were too small to see."""
    span = up - lo
    visible = np.flatnonzero((span * f.sx >= MIN_PX) | (sz * f.sy >= MIN_PX))
    tiny = lo.size - visible.size
    # Float area: size × lifetime can overflow int64, and only the order matters.
    area = sz[visible].astype(np.float64) * span[visible].astype(np.float64)
    if visible.size > max_rects:
        keep = (
            np.argpartition(-area, max_rects - 1)[:max_rects]
            if max_rects > 0
            else np.empty(0, np.intp)
        )
        visible, area = visible[keep], area[keep]
    # Largest first, ties by index: deterministic, and smaller buffers (which
    # may overlap in a bad plan) are painted on top of the big ones.
    order = np.lexsort((visible, -area))
    return visible[order], tiny


def _rects(
    f: _Frame, idx: Arr, lo: Arr, up: Arr, sz: Arr, off: Arr, ids: Sequence[str] | None
) -> str:
    t, u, s, o = lo[idx], up[idx], sz[idx], off[idx]
    xs = f.x(t)
    ws = np.maximum((u - t) * f.sx, MIN_DRAW_PX)
    hs = np.maximum(s * f.sy, MIN_DRAW_PX)
    ys = f.y(o) - hs
    # Golden-ratio hash of the index: stable across renders, and indices a
    # few apart (often neighbours in time) never share a colour.
    colours = (np.modf(idx * 0.6180339887498949)[0] * len(PALETTE)).astype(np.int64) % len(PALETTE)
    out = ['<g class="buffers" stroke="#1f1f1f" stroke-width="0.4" stroke-opacity="0.7">']
    for i, x, y, w, h, c, a, b, tl, tu in zip(
        idx.tolist(),
        xs.tolist(),
        ys.tolist(),
        ws.tolist(),
        hs.tolist(),
        colours.tolist(),
        o.tolist(),
        (o + s).tolist(),
        t.tolist(),
        u.tolist(),
        strict=True,
    ):
        name = ids[i] if ids is not None else i
        tip = _esc(f"{name}: bytes [{a}, {b}) time [{tl}, {tu})")
        out.append(
            f'<rect x="{x:.2f}" y="{y:.2f}" width="{w:.2f}" height="{h:.2f}" '
            f'fill="{PALETTE[c]}"><title>{tip}</title></rect>'
        )
    out.append("</g>")
    return "\n".join(out)


def _marks(f: _Frame, values: dict[str, int]) -> list[str]:
    """Horizontal lines for capacity / peak / lower bound, labelled on the right."""
    ys = [f.y(v) for v in values.values()]
    label_ys = _spread(ys, LABEL_GAP_PX)
    out = []
    for (name, value), y, ly in zip(values.items(), ys, label_ys, strict=True):
        colour, dash = MARKS[name]
        dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
        out.append(
            f'<line class="mark {name.replace(" ", "-")}" x1="{f.left:.2f}" y1="{y:.2f}" '
            f'x2="{f.left + f.pw:.2f}" y2="{y:.2f}" stroke="{colour}" stroke-width="1.5"'
            f"{dash_attr}><title>{_esc(f'{name}: {value} bytes')}</title></line>"
        )
        label = f"{name} {human_bytes(value)}"
        out.append(_text(f.left + f.pw + 6, ly, label, fill=colour, baseline="middle"))
    return out


def _spread(ys: list[float], gap: float) -> list[float]:
    """Push labels apart (downwards) so coinciding lines stay readable."""
    out = list(ys)
    prev = -math.inf
    for i in sorted(range(len(ys)), key=ys.__getitem__):
        out[i] = max(ys[i], prev + gap)
        prev = out[i]
    return out


def _axes(f: _Frame) -> list[str]:
    bottom = f.top + f.ph
    out = [
        f'<rect class="frame" x="{f.left}" y="{f.top}" width="{f.pw}" height="{f.ph}" '
        'fill="#fafafa" stroke="#999"/>'
    ]
    for value, label in _byte_ticks(f.ymax):
        y = f.y(value)
        out.append(_tick(f.left - 4, y, f.left, y))
        out.append(_text(f.left - 6, y, label, anchor="end", baseline="middle"))
    for t in _time_ticks(f.t0, f.t1):
        x = f.x(t)
        out.append(_tick(x, bottom, x, bottom + 4))
        out.append(_text(x, bottom + 15, str(t), anchor="middle"))
    out.append(_text(f.left + f.pw / 2, bottom + 30, "time", anchor="middle"))
    mid = f.top + f.ph / 2
    out.append(
        f'<text x="14" y="{mid:.2f}" text-anchor="middle" '
        f'transform="rotate(-90 14 {mid:.2f})">bytes</text>'
    )
    return out


def _legend(f: _Frame, with_peak: bool) -> list[str]:
    """One compact row above the plot: swatch or line sample, then its name."""
    y = f.top / 2
    x = f.left
    out = [
        f'<rect x="{x}" y="{y - 5:.2f}" width="14" height="10" fill="{PALETTE[0]}" '
        'stroke="#1f1f1f" stroke-width="0.4"/>',
        _text(x + 18, y, "buffer", baseline="middle"),
    ]
    x += 18 + _text_width("buffer") + 14
    for name, (colour, dash) in MARKS.items():
        if name == "peak" and not with_peak:
            continue
        dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
        out.append(
            f'<line x1="{x}" y1="{y:.2f}" x2="{x + 18}" y2="{y:.2f}" stroke="{colour}" '
            f'stroke-width="1.5"{dash_attr}/>'
        )
        out.append(_text(x + 22, y, name, baseline="middle"))
        x += 22 + _text_width(name) + 14
    return out


def _caption(shown: int, total: int, tiny: int, height: int) -> str:
    text = f"showing {shown} of {total} buffers (largest first)"
    if tiny:
        text += f"; {tiny} below {MIN_PX} px omitted"
    return _text(LEFT, height - 4, text, fill="#555", size=10)


def _byte_ticks(ymax: int) -> list[tuple[int | float, str]]:
    """Ticks at round numbers of the largest binary unit not above ymax."""
    k = min(max(int(math.log2(ymax)) // 10, 0), len(UNITS) - 1)
    unit = 1024**k
    step = _nice_step(ymax / unit)
    if k == 0:
        step = max(step, 1)  # no fractional bytes
    count = int(ymax / unit / step + 1e-9)
    return [(i * step * unit, f"{round(i * step, 6):g} {UNITS[k]}") for i in range(count + 1)]


def _time_ticks(t0: int, t1: int) -> range:
    step = max(1, round(_nice_step(t1 - t0)))
    return range(-(-t0 // step) * step, t1 + 1, step)


def _nice_step(span: float, target: int = 5) -> float:
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


def _open(width: int, height: int) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="memory plan" '
        'font-family="sans-serif" font-size="11">'
    )


def _tick(x1: float, y1: float, x2: float, y2: float) -> str:
    return f'<line x1="{x1:.2f}" y1="{y1:.2f}" x2="{x2:.2f}" y2="{y2:.2f}" stroke="#999"/>'


def _text(
    x: float,
    y: float,
    text: str,
    *,
    anchor: str = "start",
    baseline: str = "auto",
    fill: str = "#333",
    size: int | None = None,
) -> str:
    size_attr = f' font-size="{size}"' if size else ""
    return (
        f'<text x="{x:.2f}" y="{y:.2f}" text-anchor="{anchor}" dominant-baseline="{baseline}" '
        f'fill="{fill}"{size_attr}>{_esc(text)}</text>'
    )


def _text_width(text: str) -> float:
    """Rough width at 11 px sans-serif; only used to space the legend."""
    return 6.2 * len(text)


def _esc(text: str) -> str:
    return escape(str(text), quote=True)
