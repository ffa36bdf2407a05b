"""SVG picture of an `offset` plan, for the submission web page.

A pure function with no web framework behind it. The page embeds the string
inline, so all styling is done with presentation attributes (an inline <style>
would leak into the host page) and every piece of text is XML-escaped, since
buffer ids come from untrusted case files.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from judge.pictures import svg

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
MIN_DRAW_PX = 0.5  # drawn buffers get at least this extent so they show up
# Margins around the plot area: left holds the byte ticks, right the labels of
# the marked lines, top the legend, bottom the time ticks and the caption.
LEFT, RIGHT, TOP, BOTTOM = 72, 124, 26, 50
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
    parts = [svg.open_svg(width, height, "memory plan"), *_axes(f)]
    if n == 0:
        parts.append(svg.text(f.left + f.pw / 2, f.top + f.ph / 2, "no buffers", anchor="middle"))
    else:
        chosen, tiny = _select(f, lo, up, sz, max_rects)
        parts.append(_rects(f, chosen, lo, up, sz, off, ids))
        if chosen.size < n:
            parts.append(_caption(chosen.size, n, tiny, height))
    marks = {"capacity": capacity, "peak": peak, "lower bound": lower_bound}
    shown = {k: v for k, v in marks.items() if v is not None}
    parts += svg.mark_lines(shown, MARKS, f.y, f.left, f.pw)
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
    top = max(capacity, peak or 0, lower_bound, _max_end(off, sz))
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


def _max_end(off: Arr, sz: Arr) -> int:
    """max(offset + size), exact: near 2^62 the int64 sum would wrap."""
    if not off.size:
        return 0
    if int(off.max()) + int(sz.max()) <= np.iinfo(np.int64).max:
        return int((off + sz).max())
    return max(map(int.__add__, off.tolist(), sz.tolist()))


def _select(f: _Frame, lo: Arr, up: Arr, sz: Arr, max_rects: int) -> tuple[Arr, int]:
    """Indices to draw, largest area first, and how many were too small to see."""
    span = up - lo
    visible = np.flatnonzero((span * f.sx >= svg.MIN_PX) | (sz * f.sy >= svg.MIN_PX))
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
        list(map(int.__add__, o.tolist(), s.tolist())),  # exact past int64
        t.tolist(),
        u.tolist(),
        strict=True,
    ):
        name = ids[i] if ids is not None else i
        tip = svg.esc(f"{name}: bytes [{a}, {b}) time [{tl}, {tu})")
        out.append(
            f'<rect x="{x:.2f}" y="{y:.2f}" width="{w:.2f}" height="{h:.2f}" '
            f'fill="{PALETTE[c]}"><title>{tip}</title></rect>'
        )
    out.append("</g>")
    return "\n".join(out)


def _axes(f: _Frame) -> list[str]:
    bottom = f.top + f.ph
    out = [
        f'<rect class="frame" x="{f.left}" y="{f.top}" width="{f.pw}" height="{f.ph}" '
        'fill="#fafafa" stroke="#999"/>'
    ]
    out += svg.byte_axis(f.left, f.ymax, f.y)
    for t in _time_ticks(f.t0, f.t1):
        x = f.x(t)
        out.append(svg.tick(x, bottom, x, bottom + 4))
        out.append(svg.text(x, bottom + 15, str(t), anchor="middle"))
    out.append(svg.text(f.left + f.pw / 2, bottom + 30, "time", anchor="middle"))
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
        svg.text(x + 18, y, "buffer", baseline="middle"),
    ]
    x += 18 + svg.text_width("buffer") + 14
    for name, (colour, dash) in MARKS.items():
        if name == "peak" and not with_peak:
            continue
        dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
        out.append(
            f'<line x1="{x}" y1="{y:.2f}" x2="{x + 18}" y2="{y:.2f}" stroke="{colour}" '
            f'stroke-width="1.5"{dash_attr}/>'
        )
        out.append(svg.text(x + 22, y, name, baseline="middle"))
        x += 22 + svg.text_width(name) + 14
    return out


def _caption(shown: int, total: int, tiny: int, height: int) -> str:
    text = f"showing {shown} of {total} buffers (largest first)"
    if tiny:
        text += f"; {tiny} below {svg.MIN_PX} px omitted"
    return svg.text(LEFT, height - 4, text, fill="#555", size=10)


def _time_ticks(t0: int, t1: int) -> range:
    step = max(1, round(svg.nice_step(t1 - t0)))
    return range(-(-t0 // step) * step, t1 + 1, step)
