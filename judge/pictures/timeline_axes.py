"""The fixed parts of the `offload` timeline (judge.pictures.timeline): geometry,
lanes, axes and legend."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from judge.pictures import svg

LEFT, RIGHT, TOP, BOTTOM = 72, 124, 26, 52
LEGEND_ROW = 16  # a second legend row, for the v2 parts (NVMe, host bytes)
LANE_H, LANE_GAP = 18, 6  # lane height and the space between lanes
AXIS_H = 30  # the time ticks and their labels under the lanes
PANEL_GAP = 10  # between the time axis of the lanes and the memory panel
MIN_MEMORY_H = 60
HOST_H = 70  # the host-bytes panel (cases with a host capacity)
GAP_PX = 0.5  # boxes wider than 12 x this end this much early, so neighbours stay apart
COLOURS = {
    "step": "#4e79a7",
    "stall": "#d62728",
    "d2h": "#f28e2b",
    "h2d": "#59a14f",
    "work": "#9467bd",
    "in use": "#76b7b2",
    "in use line": "#3b7d78",
    "d2h_nvme": "#9c755f",  # D2H / H2D copies whose bytes go to or come from NVMe
    "h2d_nvme": "#9c755f",
    "nvme_write": "#b07aa1",
    "nvme_read": "#e377c2",
    "host": "#edc948",
    "host line": "#a8891a",
}
# (colour, dash pattern) of the marked horizontal lines of the memory panel.
MARKS = {
    "capacity": ("#d62728", "6 3"),
    "most in use": ("#222222", ""),
    "host capacity": ("#d62728", "6 3"),
    "most on host": ("#222222", ""),
}
LANES = (("compute", "step"), ("D2H", "d2h"), ("H2D", "h2d"))
NVME_LANES = (("NVMe W", "nvme_write"), ("NVMe R", "nvme_read"))
LEGEND = (
    ("step", "compute step"),
    ("stall", "stall"),
    ("work", "decode / encode / recompute"),
    ("d2h", "copy-out (D2H)"),
    ("h2d", "copy-in (H2D)"),
    ("in use", "device bytes in use"),
)
NVME_LEGEND = (
    ("d2h_nvme", "copy to / from NVMe (via host)"),
    ("nvme_write", "NVMe write"),
    ("nvme_read", "NVMe read"),
)
HOST_LEGEND = (("host", "host bytes held (pinned)"),)

Arr = np.ndarray


@dataclass(frozen=True)
class Frame:
    """Pixel geometry; times are float µs from here on."""

    left: float
    pw: float
    t1: float  # µs at the right edge (time 0 at the left)
    lane_top: float
    mem_top: float
    mem_h: float
    ymax: int
    n_lanes: int = len(LANES)

    @property
    def sx(self) -> float:
        return self.pw / self.t1

    def x(self, t: float | Arr) -> float | Arr:
        return self.left + t * self.sx

    def lane_y(self, k: int) -> float:
        return self.lane_top + k * (LANE_H + LANE_GAP)

    @property
    def axis_y(self) -> float:
        return self.lane_y(self.n_lanes) - LANE_GAP

    def y(self, b: int | Arr) -> float | Arr:
        return self.mem_top + self.mem_h - b * (self.mem_h / self.ymax)


def lanes(f: Frame) -> list[str]:
    out = []
    for k, (label, _) in enumerate((LANES + NVME_LANES)[: f.n_lanes]):
        y = f.lane_y(k)
        out.append(
            f'<rect class="lane" x="{f.left}" y="{y}" width="{f.pw}" height="{LANE_H}" '
            'fill="#fafafa" stroke="#999"/>'
        )
        out.append(svg.text(f.left - 6, y + LANE_H / 2, label, anchor="end", baseline="middle"))
    out += time_axis(f, f.axis_y)
    return out


def memory_axes(f: Frame, label: str = "device bytes", kind: str = "frame") -> list[str]:
    """The frame, byte axis and time axis of a bytes panel (device, or host: `kind`)."""
    bottom = f.mem_top + f.mem_h
    out = [
        f'<rect class="{kind}" x="{f.left}" y="{f.mem_top:.2f}" width="{f.pw}" '
        f'height="{f.mem_h:.2f}" fill="#fafafa" stroke="#999"/>'
    ]
    out += svg.byte_axis(f.left, f.ymax, f.y)
    out += time_axis(f, bottom)
    mid = f.mem_top + f.mem_h / 2
    out.append(
        f'<text x="12" y="{mid:.2f}" text-anchor="middle" '
        f'transform="rotate(-90 12 {mid:.2f})">{svg.esc(label)}</text>'
    )
    return out


def time_axis(f: Frame, y: float) -> list[str]:
    step = svg.nice_step(f.t1)
    digits = max(0, -math.floor(math.log10(step)))
    out = []
    for k in range(int(f.t1 / step + 1e-9) + 1):
        x = f.x(k * step)
        out.append(svg.tick(x, y, x, y + 4))
        out.append(svg.text(x, y + 15, f"{k * step:.{digits}f}", anchor="middle"))
    out.append(svg.text(f.left + f.pw + 6, y + 15, "µs", fill="#555"))
    return out


def legend(f: Frame, nvme: bool = False, host: bool = False) -> list[str]:
    """The colour keys; those of the NVMe lanes and the host panel on a second row."""
    y = TOP / 2
    out, x = _keys(LEGEND, f.left, y)
    second = (NVME_LEGEND if nvme else ()) + (HOST_LEGEND if host else ())
    if second:
        out += _keys(second, f.left, y + LEGEND_ROW)[0]
    colour, dash = MARKS["capacity"]
    out.append(
        f'<line x1="{x:.2f}" y1="{y:.2f}" x2="{x + 18:.2f}" y2="{y:.2f}" stroke="{colour}" '
        f'stroke-width="1.5" stroke-dasharray="{dash}"/>'
    )
    out.append(svg.text(x + 22, y, "capacity", baseline="middle"))
    return out


def _keys(keys: tuple[tuple[str, str], ...], x: float, y: float) -> tuple[list[str], float]:
    out = []
    for key, label in keys:
        out.append(
            f'<rect x="{x:.2f}" y="{y - 5:.2f}" width="14" height="10" fill="{COLOURS[key]}"/>'
        )
        out.append(svg.text(x + 18, y, label, baseline="middle"))
        x += 18 + svg.text_width(label) + 12
    return out, x


def step_line(f: Frame, xs: Arr, load: Arr, stop: float, kind: str, tip: str) -> str:
    """A step line of bytes over time: load[i] from xs[i] to xs[i + 1] (the last to
    `stop`); pieces sharing a pixel column are drawn at their maximum."""
    wide = np.append(xs[1:], stop) > xs
    xs, load = xs[wide], load[wide]
    base = f.y(0)
    if xs.size == 0:
        return ""
    column = np.floor(xs * f.sx).astype(np.int64)
    first = np.flatnonzero(np.append(True, column[1:] != column[:-1]))
    gx = f.x(xs[first]).tolist()
    gy = f.y(np.maximum.reduceat(load, first)).tolist()
    edges = [*gx[1:], float(f.x(stop))]
    d = [f"M{gx[0]:.2f},{base:.2f}"]
    for x0, x1, y in zip(gx, edges, gy, strict=True):
        d.append(f"L{x0:.2f},{y:.2f}L{x1:.2f},{y:.2f}")
    d.append(f"L{edges[-1]:.2f},{base:.2f}Z")
    fill, line = ("in use", "in use line") if kind == "in-use" else ("host", "host line")
    return (
        f'<path class="{kind}" d="{"".join(d)}" fill="{COLOURS[fill]}" fill-opacity="0.55" '
        f'stroke="{COLOURS[line]}" stroke-width="0.8"><title>{svg.esc(tip)}</title></path>'
    )
