"""SVG timeline of a valid `offload` plan, for the submission web page.

Top: one time axis (µs) with three lanes: compute (one box per step, the stalls
between steps in red, each titled with its cause), the device-to-host and the
host-to-device copy engines (one box per transfer). Below, on the same time
axis: the device bytes in use (the residencies whose static window covers the
moment, README.md "Static validity") against the capacity.

Like judge/pictures/placement.py: a pure function, presentation attributes only (the page
embeds the string inline), every text XML-escaped, a bounded number of
elements. Boxes narrower than svg.MIN_PX are merged with touching neighbours of
their lane, or left out when still too narrow; the caption says what was.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from judge.pictures import svg
from judge.pictures.timeline_axes import (
    AXIS_H,
    BOTTOM,
    COLOURS,
    GAP_PX,
    LANE_GAP,
    LANE_H,
    LEFT,
    MARKS,
    MIN_MEMORY_H,
    PANEL_GAP,
    RIGHT,
    TOP,
    Frame,
    lanes,
    legend,
    memory_axes,
)  # fmt: skip
from judge.types.offload.case import OffloadCase
from judge.types.offload.plan import OffloadPlan
from judge.types.offload.verifier import Timing, lay_out, residency_name

# Draw order of the lanes' boxes (stalls are also kept first under max_items) and the
# lane each kind is drawn on.
KINDS = ("stall", "step", "work", "d2h", "h2d")
LANE_OF = {"stall": 0, "step": 0, "work": 0, "d2h": 1, "h2d": 2}
# Bytes of <rect>s at most: the rest of the picture stays far below 100 KB, so the whole
# stays under 1.5 MB whatever the ids (up to 100 characters each) make of the titles.
BOX_BYTES = 1_300_000

Arr = np.ndarray


@dataclass(frozen=True)
class _Boxes:
    """One lane's intervals, sorted, grouped into boxes: box i covers intervals
    first[i]:stop[i] and is drawn from a[i] to a[i] + w[i] µs."""

    kind: str
    rows: Arr  # per sorted interval: its step (step, stall) or its row of timing.copies
    first: Arr
    stop: Arr
    a: Arr
    w: Arr
    merged: int  # intervals drawn inside a box of several
    dropped: int  # intervals in boxes still under svg.MIN_PX


def timeline_svg(
    case: OffloadCase,
    plan: OffloadPlan,
    timing: Timing,
    width: int = 960,
    height: int = 440,
    max_items: int = 4000,
) -> str:
    """Render the timing of a valid plan: steps, stalls and copies, then bytes in use.

    Draws at most `max_items` boxes (stalls first, then the widest).
    """
    min_height = TOP + 3 * (LANE_H + LANE_GAP) + AXIS_H + PANEL_GAP + MIN_MEMORY_H + BOTTOM
    if width <= LEFT + RIGHT or height < min_height:
        raise ValueError(f"{width}x{height} px leaves no room for the timeline")
    n_steps = len(case.steps)
    if len(timing.step_start) != n_steps or len(timing.step_end) != n_steps:
        raise ValueError("the timing does not belong to this case")
    unit = timing.unit
    start = np.array(timing.step_start, dtype=np.float64) / unit
    end = np.array(timing.step_end, dtype=np.float64) / unit
    copies = timing.copies
    copy_end = max((c[3] for c in copies), default=0) / unit
    during, after = _in_use(case, plan, n_steps)
    most = int(during.max()) if n_steps else 0

    lane_top = TOP + 8
    mem_top = lane_top + 3 * (LANE_H + LANE_GAP) - LANE_GAP + AXIS_H + PANEL_GAP
    f = Frame(
        left=LEFT,
        pw=width - LEFT - RIGHT,
        t1=max(float(end[-1]) if n_steps else 0.0, copy_end) or 1.0,
        lane_top=lane_top,
        mem_top=mem_top,
        mem_h=height - BOTTOM - mem_top,
        ymax=max(case.capacity, most, 1),
    )
    parts = [svg.open_svg(width, height, "offload plan timeline"), *legend(f), *lanes(f)]
    parts += memory_axes(f)
    if n_steps == 0:
        parts.append(svg.text(f.left + f.pw / 2, f.axis_y - 20, "no steps", anchor="middle"))
    boxes = _all_boxes(f, start, end, copies, unit, timing.work)
    titles = _Titles(case, plan, timing, start, end, copies)
    groups, drawn = _draw(f, boxes, *_select(boxes, max_items), titles)
    parts += groups
    if n_steps:
        parts.append(_occupancy(f, start, end, during, after))
    parts += svg.mark_lines(
        {"most in use": most, "capacity": case.capacity}, MARKS, f.y, f.left, f.pw
    )
    parts += _caption(case, timing, boxes, drawn, height)
    parts.append("</svg>")
    return "\n".join(parts)


# --- data ---------------------------------------------------------------------------------


def _in_use(case: OffloadCase, plan: OffloadPlan, n_steps: int) -> tuple[Arr, Arr]:
    """Bytes of the residencies whose window covers "during step s" and "after step s"."""
    if not n_steps:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    lay = lay_out(case, plan)
    size = case.size[plan.tensor]
    # A valid plan's residencies at one point are disjoint below the capacity: no overflow.
    diff = np.zeros(2 * n_steps + 1, dtype=np.int64)
    np.add.at(diff, np.maximum(lay.lower, 0), size)  # from before step 0: as during it
    np.add.at(diff, lay.upper, -size)
    load = np.cumsum(diff[:-1])
    return load[0::2], load[1::2]


def _groups(kind: str, rows: Arr, a: Arr, b: Arr, sx: float, summed: bool = False) -> _Boxes:
    """Merge each interval under svg.MIN_PX into its neighbours when the gap between
    them is under svg.MIN_PX too; an isolated one stays under svg.MIN_PX and is dropped.

    Intervals are sorted and disjoint (one compute stream, FIFO engines). A box
    spans its run, or (summed: stalls) is as wide as the run's total length.
    """
    n = a.size
    if n == 0:
        none = np.zeros(0, np.int64)
        return _Boxes(kind, rows, none, none, np.zeros(0), np.zeros(0), merged=0, dropped=0)
    small = (b - a) * sx < svg.MIN_PX
    new = np.ones(n, bool)
    new[1:] = (~small[1:] & ~small[:-1]) | ((a[1:] - b[:-1]) * sx >= svg.MIN_PX)
    first = np.flatnonzero(new)
    stop = np.append(first[1:], n)
    w = np.add.reduceat(b - a, first) if summed else np.maximum.reduceat(b, first) - a[first]
    count = stop - first
    visible = w * sx >= svg.MIN_PX
    return _Boxes(
        kind,
        rows,
        first[visible],
        stop[visible],
        a[first][visible],
        w[visible],
        merged=int(count[visible & (count > 1)].sum()),
        dropped=int(count[~visible].sum()),
    )


def _all_boxes(
    f: Frame,
    start: Arr,
    end: Arr,
    copies: list[tuple[str, int, int, int]],
    unit: int,
    work: list[tuple[str, int, int, int]] = (),  # type: ignore[assignment]
) -> list[_Boxes]:
    # the compute stream: steps and the decodes, encodes and recomputes between them
    w_start = np.array([w[2] for w in work], dtype=np.float64) / unit
    w_end = np.array([w[3] for w in work], dtype=np.float64) / unit
    order = np.argsort(np.concatenate([start, w_start]), kind="stable")
    a, z = np.concatenate([start, w_start])[order], np.concatenate([end, w_end])[order]
    prev_end = np.concatenate([[0.0], z[:-1]])
    gap = np.flatnonzero(a > prev_end)
    before = np.minimum(np.searchsorted(start, a[gap], side="left"), max(start.size - 1, 0))
    out = {
        "stall": _groups("stall", before, prev_end[gap], a[gap], f.sx, summed=True),
        "step": _groups("step", np.arange(start.size), start, end, f.sx),
        "work": _groups("work", np.argsort(w_start, kind="stable"), np.sort(w_start),
                        w_end[np.argsort(w_start, kind="stable")], f.sx),
    }  # fmt: skip
    for engine in ("d2h", "h2d"):
        rows = np.array([k for k, c in enumerate(copies) if c[0] == engine], dtype=np.int64)
        a = np.array([copies[k][2] for k in rows.tolist()], dtype=np.float64) / unit
        b = np.array([copies[k][3] for k in rows.tolist()], dtype=np.float64) / unit
        order = np.argsort(a, kind="stable")
        out[engine] = _groups(engine, rows[order], a[order], b[order], f.sx)
    return [out[k] for k in KINDS]


def _select(boxes: list[_Boxes], max_items: int) -> tuple[Arr, Arr]:
    """(lane, box) of the boxes to draw, most important first: stalls, then the widest."""
    lane = np.concatenate([np.full(b.w.size, k) for k, b in enumerate(boxes)])
    index = np.concatenate([np.arange(b.w.size) for b in boxes])
    width = np.concatenate([b.w for b in boxes])
    stall = lane == KINDS.index("stall")
    top = np.lexsort((-width, ~stall))[: max(max_items, 0)]
    return lane[top], index[top]


# --- drawing ------------------------------------------------------------------------------


class _Titles:
    """Hover texts, built only for the boxes drawn."""

    def __init__(
        self,
        case: OffloadCase,
        plan: OffloadPlan,
        timing: Timing,
        start: Arr,
        end: Arr,
        copies: list[tuple[str, int, int, int]],
    ) -> None:
        self.case, self.plan, self.timing = case, plan, timing
        self.start, self.end, self.copies = start, end, copies

    def __call__(self, b: _Boxes, i: int) -> str:
        lo, hi = int(b.first[i]), int(b.stop[i])
        if b.kind == "step":
            return self._steps(lo, hi)
        if b.kind == "stall":
            return self._stalls(np.unique(b.rows[lo:hi]))
        if b.kind == "work":
            return self._work(b.rows[lo:hi].tolist())
        return self._copies(b.kind, b.rows[lo:hi].tolist())

    def _work(self, rows: list[int]) -> str:
        unit, work = self.timing.unit, self.timing.work
        kind, r, a, _ = work[rows[0]]
        z = work[rows[-1]][3]
        what = f"{kind} of {residency_name(self.case, self.plan, r)}"
        if len(rows) > 1:
            what = f"{len(rows)} decodes, encodes or recomputes (first: {what})"
        return f"{what}: {_us(a / unit)}–{_us(z / unit)} µs"

    def _steps(self, lo: int, hi: int) -> str:
        a, z = float(self.start[lo]), float(self.end[hi - 1])
        if hi - lo == 1:
            return f"step {lo}: {_us(a)}–{_us(z)} µs ({_us(z - a)} µs)"
        busy = float((self.end[lo:hi] - self.start[lo:hi]).sum())
        return f"steps {lo}–{hi - 1}: {_us(a)}–{_us(z)} µs, {_us(busy)} µs of compute"

    def _stalls(self, steps: Arr) -> str:
        waited = np.array(self.timing.stall, dtype=np.float64) / self.timing.unit
        length = waited[steps] if waited.size else self.start[steps] * 0
        before = self.start[steps] - length
        k = int(np.argmax(length))
        s = int(steps[k])
        cause = self.timing.cause(s) or "unknown"
        if steps.size == 1:
            return (
                f"stall before step {s}: {_us(length[k])} µs "
                f"({_us(before[k])}–{_us(self.start[s])} µs): {cause}"
            )
        return (
            f"{steps.size} stalls before steps {int(steps[0])}–{int(steps[-1])}, "
            f"{_us(length.sum())} µs in all; the longest, {_us(length[k])} µs before "
            f"step {s}: {cause}"
        )

    def _copies(self, engine: str, rows: list[int]) -> str:
        unit = self.timing.unit
        what = "copy-out" if engine == "d2h" else "copy-in"
        sizes = self.case.size[self.plan.tensor]
        residencies = [self.copies[k][1] for k in rows]
        nbytes = int(sizes[residencies].sum())
        a, z = self.copies[rows[0]][2] / unit, self.copies[rows[-1]][3] / unit
        name = residency_name(self.case, self.plan, residencies[0])
        if len(rows) == 1:
            return f"{name}: {what}, {nbytes} bytes, {_us(a)}–{_us(z)} µs"
        last = residency_name(self.case, self.plan, residencies[-1])
        return (
            f"{len(rows)} {what}s ({name} … {last}), {nbytes} bytes "
            f"({svg.human_bytes(nbytes)}), {_us(a)}–{_us(z)} µs"
        )


def _draw(
    f: Frame, boxes: list[_Boxes], lanes: Arr, index: Arr, titles: _Titles
) -> tuple[list[str], int]:
    """One <g> per lane kind with the chosen boxes in time order, and how many were
    drawn: in priority order until BOX_BYTES (long ids make long titles)."""
    rects: list[list[tuple[int, str]]] = [[] for _ in boxes]
    used = 0
    for k, i in zip(lanes.tolist(), index.tolist(), strict=True):
        b = boxes[k]
        x, w = f.x(float(b.a[i])), float(b.w[i]) * f.sx
        if b.kind != "stall" and w > 12 * GAP_PX:  # a hairline between touching boxes
            w -= GAP_PX
        y = f.lane_y(LANE_OF[b.kind])
        rect = (
            f'<rect x="{x:.2f}" y="{y}" width="{w:.2f}" height="{LANE_H}">'
            f"<title>{svg.esc(titles(b, i))}</title></rect>"
        )
        used += len(rect.encode())
        if used > BOX_BYTES:
            break
        rects[k].append((i, rect))
    out = []
    for b, chosen in zip(boxes, rects, strict=True):
        body = [r for _, r in sorted(chosen)]
        out.append("\n".join([f'<g class="{b.kind}" fill="{COLOURS[b.kind]}">', *body, "</g>"]))
    return out, sum(len(r) for r in rects)


def _occupancy(f: Frame, start: Arr, end: Arr, during: Arr, after: Arr) -> str:
    """A step line: `during` over each step, `after` over the stall that follows it;
    segments sharing a pixel column are drawn at their maximum."""
    xs = np.empty(2 * start.size)
    xs[0::2], xs[1::2] = start, end
    load = np.empty(2 * start.size, dtype=np.int64)
    load[0::2], load[1::2] = during, after
    xs, load = xs[:-1], load[:-1]  # nothing is in use after the last step
    stop = float(end[-1])
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
    tip = "device bytes in use: during each step, and after it while the next one stalls"
    return (
        f'<path class="in-use" d="{"".join(d)}" fill="{COLOURS["in use"]}" fill-opacity="0.55" '
        f'stroke="{COLOURS["in use line"]}" stroke-width="0.8"><title>{svg.esc(tip)}</title></path>'
    )


def _caption(
    case: OffloadCase, timing: Timing, boxes: list[_Boxes], drawn: int, height: int
) -> list[str]:
    unit = timing.unit
    makespan = timing.makespan / unit
    compute = int(case.steps.sum())
    stalls = timing.stall  # exact integers in 1/unit µs
    stalled = sum(stalls) / unit
    score = compute / makespan if makespan else 1.0
    summary = (
        f"makespan {_us(makespan)} µs · compute {compute} µs · stalled {_us(stalled)} µs "
        f"({_count(sum(1 for s in stalls if s), 'stall')}) · score {score:.4f}"
    )
    out = [svg.text(LEFT, height - 22, summary, fill="#333")]
    notes = []
    merged = sum(b.merged for b in boxes)
    dropped = sum(b.dropped for b in boxes)
    candidates = sum(b.first.size for b in boxes)
    if merged:
        notes.append(
            f"{merged} steps, stalls or copies drawn as merged boxes (pieces under {svg.MIN_PX} px)"
        )
    if dropped:
        notes.append(f"{dropped} under {svg.MIN_PX} px left out")
    if drawn < candidates:
        notes.append(f"truncated: showing {drawn} of {candidates} boxes (stalls, then widest)")
    if notes:
        out.append(svg.text(LEFT, height - 6, "; ".join(notes), fill="#555", size=10))
    return out


def _count(n: int, what: str) -> str:
    return f"{n} {what}" + ("" if n == 1 else "s")


def _us(value: float) -> str:
    """µs with at most 3 decimals: 44, 12.5, 0.001."""
    text = f"{float(value):.3f}".rstrip("0").rstrip(".")
    return "0" if text == "-0" else text
