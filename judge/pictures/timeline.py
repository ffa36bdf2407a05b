"""SVG timeline of a valid `offload` plan, for the submission web page.

Top: one time axis (µs) with lanes: compute (one box per step, the stalls between
steps in red, each titled with its cause; decodes, encodes and recomputes), the
device-to-host and the host-to-device copy engines (one box per transfer; copies
whose bytes go on to NVMe or come from it in their own colour) and, for a case with
an NVMe tier, its write and read engines. Below, on the same time axis: the device
bytes in use (the residencies whose static window covers the moment, README.md
"Static validity") against the capacity and, for a case with a host capacity, the
host bytes held (pinned copies, README.md "Host capacity") against it. The caption
gives the score: the link-aware lower bound over the makespan.

Like judge/pictures/placement.py: a pure function, presentation attributes only (the page
embeds the string inline), every text XML-escaped, a bounded number of
elements. Boxes narrower than svg.MIN_PX are merged with touching neighbours of
their lane, or left out when still too narrow; the caption says what was.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from judge.pictures import svg
from judge.pictures.timeline_axes import (
    AXIS_H,
    BOTTOM,
    HOST_H,
    LANE_GAP,
    LANE_H,
    LANES,
    LEFT,
    LEGEND_ROW,
    MARKS,
    MIN_MEMORY_H,
    NVME_LANES,
    PANEL_GAP,
    RIGHT,
    TOP,
    Frame,
    lanes,
    legend,
    memory_axes,
    step_line,
)  # fmt: skip
from judge.pictures.timeline_boxes import Boxes, Tiers, Titles, all_boxes, draw, kinds, select, us
from judge.types.offload.case import OffloadCase
from judge.types.offload.layout import Layout
from judge.types.offload.plan import OffloadPlan
from judge.types.offload.verifier import Timing, lay_out, lower_bound

Arr = np.ndarray
HOST_BLOCK = AXIS_H + PANEL_GAP + HOST_H  # what the host panel adds below the device one


def timeline_svg(
    case: OffloadCase,
    plan: OffloadPlan,
    timing: Timing,
    width: int = 960,
    height: int | None = None,
    max_items: int = 4000,
) -> str:
    """Render the timing of a valid plan: steps, stalls and copies, then bytes in use.

    Draws at most `max_items` boxes (stalls first, then the widest). The height is
    440 px for a case without the v2 tiers, more with NVMe lanes and a host panel.
    """
    f, host_f = _frames(case, timing, width, height)
    n_steps = len(case.steps)
    unit = timing.unit
    start = np.array(timing.step_start, dtype=np.float64) / unit
    end = np.array(timing.step_end, dtype=np.float64) / unit
    copies = timing.copies
    lay = lay_out(case, plan)
    during, after = _in_use(case, plan, lay, n_steps)
    most = int(during.max()) if n_steps else 0
    f = dataclasses.replace(f, ymax=max(case.capacity, most, 1))
    nvme, host = case.nvme is not None, host_f is not None
    full_height = int(f.mem_top + f.mem_h + (HOST_BLOCK if host else 0) + BOTTOM)
    parts = [svg.open_svg(width, full_height, "offload plan timeline")]
    parts += [*legend(f, nvme, host), *lanes(f), *memory_axes(f)]
    if n_steps == 0:
        parts.append(svg.text(f.left + f.pw / 2, f.axis_y - 20, "no steps", anchor="middle"))
    tiers = Tiers(case, plan, lay)
    boxes = all_boxes(f, start, end, copies, unit, timing.work, kinds(case), tiers.kind)
    titles = Titles(case, plan, timing, start, end, copies, tiers)
    groups, drawn = draw(f, boxes, *select(boxes, max_items), titles)
    parts += groups
    if n_steps:
        parts.append(_occupancy(f, start, end, during, after))
    parts += svg.mark_lines(
        {"most in use": most, "capacity": case.capacity}, MARKS, f.y, f.left, f.pw
    )
    if host_f is not None and n_steps:
        parts += _host_panel(case, host_f, lay, start, end)
    parts += _caption(case, timing, boxes, drawn, full_height)
    parts.append("</svg>")
    return "\n".join(parts)


def _frames(
    case: OffloadCase, timing: Timing, width: int, height: int | None
) -> tuple[Frame, Frame | None]:
    """The geometry: the lanes and device panel, and the host panel when there is one."""
    nvme, host = case.nvme is not None, case.host_capacity is not None
    top = TOP + (LEGEND_ROW if nvme or host else 0)
    n_lanes = len(LANES) + (len(NVME_LANES) if nvme else 0)
    below = HOST_BLOCK if host else 0
    if height is None:
        height = 440 + (top - TOP) + (n_lanes - len(LANES)) * (LANE_H + LANE_GAP) + below
    min_height = top + n_lanes * (LANE_H + LANE_GAP) + AXIS_H + PANEL_GAP + MIN_MEMORY_H
    if width <= LEFT + RIGHT or height < min_height + below + BOTTOM:
        raise ValueError(f"{width}x{height} px leaves no room for the timeline")
    n_steps = len(case.steps)
    if len(timing.step_start) != n_steps or len(timing.step_end) != n_steps:
        raise ValueError("the timing does not belong to this case")
    lane_top = top + 8
    mem_top = lane_top + n_lanes * (LANE_H + LANE_GAP) - LANE_GAP + AXIS_H + PANEL_GAP
    f = Frame(
        left=LEFT,
        pw=width - LEFT - RIGHT,
        t1=(timing.end / timing.unit) or 1.0,
        lane_top=lane_top,
        mem_top=mem_top,
        mem_h=height - BOTTOM - below - mem_top,
        ymax=1,
        n_lanes=n_lanes,
    )
    if not host:
        return f, None
    host_top = f.mem_top + f.mem_h + AXIS_H + PANEL_GAP
    return f, dataclasses.replace(f, mem_top=host_top, mem_h=HOST_H, ymax=1)


# --- data ---------------------------------------------------------------------------------


def _in_use(case: OffloadCase, plan: OffloadPlan, lay: Layout, n_steps: int) -> tuple[Arr, Arr]:
    """Bytes of the residencies whose window covers "during step s" and "after step s"."""
    if not n_steps:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    size = case.size[plan.tensor]
    # A valid plan's residencies at one point are disjoint below the capacity: no overflow.
    diff = np.zeros(2 * n_steps + 1, dtype=np.int64)
    np.add.at(diff, np.maximum(lay.lower, 0), size)  # from before step 0: as during it
    np.add.at(diff, lay.upper, -size)
    load = np.cumsum(diff[:-1])
    return load[0::2], load[1::2]


def host_held(lay: Layout, n_steps: int) -> Arr:
    """Host bytes held at each point -1 ("before step 0"), 0 ("during step 0"), 1 ("after
    step 0") ... 2T - 1: the host copies whose window covers it (README.md, "Host
    capacity"). A valid plan's sums stay under the host capacity: no overflow."""
    w = lay.host_windows
    diff = np.zeros(2 * n_steps + 2, dtype=np.int64)
    np.add.at(diff, w[:, 0] + 1, w[:, 2])
    np.add.at(diff, w[:, 1] + 2, -w[:, 2])
    return np.cumsum(diff[:-1])


# --- drawing ------------------------------------------------------------------------------


def _occupancy(f: Frame, start: Arr, end: Arr, during: Arr, after: Arr) -> str:
    """A step line: `during` over each step, `after` over the stall that follows it."""
    xs = np.empty(2 * start.size)
    xs[0::2], xs[1::2] = start, end
    load = np.empty(2 * start.size, dtype=np.int64)
    load[0::2], load[1::2] = during, after
    tip = "device bytes in use: during each step, and after it while the next one stalls"
    # nothing is in use after the last step
    return step_line(f, xs[:-1], load[:-1], float(end[-1]), "in-use", tip)


def _host_panel(case: OffloadCase, f: Frame, lay: Layout, start: Arr, end: Arr) -> list[str]:
    """Host bytes held against the host capacity: before step 0, during each step, and
    after it until the next one starts (after the last step: to the end)."""
    held = host_held(lay, len(case.steps))
    most, cap = int(held.max()), int(case.host_capacity or 0)
    f = dataclasses.replace(f, ymax=max(cap, most, 1))
    xs = np.concatenate([[0.0], np.stack([start, end], axis=1).ravel()])
    tip = "host bytes held (pinned): the host copies whose window covers the moment"
    out = memory_axes(f, "host bytes", "frame host")
    out.append(step_line(f, xs, held, f.t1, "host-held", tip))
    out += svg.mark_lines({"most on host": most, "host capacity": cap}, MARKS, f.y, f.left, f.pw)
    return out


def _caption(
    case: OffloadCase, timing: Timing, boxes: list[Boxes], drawn: int, height: int
) -> list[str]:
    unit = timing.unit
    makespan = timing.makespan / unit
    compute = int(case.steps.sum())
    bound = lower_bound(case)  # the score's: the link-aware bound, whole µs
    stalls = timing.stall  # exact integers in 1/unit µs
    stalled = sum(stalls) / unit
    score = min(1.0, bound / makespan) if makespan else 1.0
    why = "the compute" if bound == compute else f"a link; compute {compute} µs"
    summary = (
        f"makespan {us(makespan)} µs · bound {bound} µs ({why}) · stalled {us(stalled)} µs "
        f"({_count(sum(1 for s in stalls if s), 'stall')}) · score = bound / makespan = "
        f"{score:.4f}"
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
