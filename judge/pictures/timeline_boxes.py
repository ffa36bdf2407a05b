"""The boxes of the `offload` timeline's lanes (judge.pictures.timeline): steps, stalls
and work on the compute lane, copies on the engine lanes; merged when under
svg.MIN_PX, chosen under a budget, titled in the contestant's terms (which tier each
copy comes from or goes to)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from judge.pictures import svg
from judge.pictures.timeline_axes import COLOURS, GAP_PX, LANE_H, Frame
from judge.types.offload.case import OffloadCase
from judge.types.offload.layout import FINAL_OUT, Layout, residency_name
from judge.types.offload.plan import OUT_COMPRESSED, OUT_NVME, OffloadPlan
from judge.types.offload.timing import Timing

# Draw order of the lanes' boxes (stalls are also kept first under max_items) and the
# lane each kind is drawn on; the NVMe kinds only for cases with an NVMe tier.
KINDS = ("stall", "step", "work", "d2h", "h2d")
NVME_KINDS = ("d2h_nvme", "h2d_nvme", "nvme_write", "nvme_read")
LANE_OF = {"stall": 0, "step": 0, "work": 0, "d2h": 1, "h2d": 2, "d2h_nvme": 1, "h2d_nvme": 2,
           "nvme_write": 3, "nvme_read": 4}  # fmt: skip
# A copy of each kind, one and several (titles)
NOUNS = {
    "d2h": ("copy-out", "copy-outs"),
    "h2d": ("copy-in", "copy-ins"),
    "d2h_nvme": ("copy-out to the host, then NVMe", "copy-outs to the host, then NVMe"),
    "h2d_nvme": ("copy-in from NVMe (read to the host first)", "copy-ins from NVMe"),
    "nvme_write": ("NVMe write (host to NVMe)", "NVMe writes"),
    "nvme_read": ("NVMe read (NVMe to host)", "NVMe reads"),
}
# Bytes of <rect>s at most: the rest of the picture stays far below 100 KB, so the whole
# stays under 1.5 MB whatever the ids (up to 100 characters each) make of the titles.
BOX_BYTES = 1_300_000

Arr = np.ndarray
CopyKind = Callable[[str, int], str]  # (engine, residency) -> box kind


def kinds(case: OffloadCase) -> tuple[str, ...]:
    return KINDS + (NVME_KINDS if case.nvme else ())


@dataclass(frozen=True)
class Boxes:
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


def _groups(kind: str, rows: Arr, a: Arr, b: Arr, sx: float, summed: bool = False) -> Boxes:
    """Merge each interval under svg.MIN_PX into its neighbours when the gap between
    them is under svg.MIN_PX too; an isolated one stays under svg.MIN_PX and is dropped.

    Intervals are sorted and disjoint (one compute stream, FIFO engines). A box
    spans its run, or (summed: stalls) is as wide as the run's total length.
    """
    n = a.size
    if n == 0:
        none = np.zeros(0, np.int64)
        return Boxes(kind, rows, none, none, np.zeros(0), np.zeros(0), merged=0, dropped=0)
    small = (b - a) * sx < svg.MIN_PX
    new = np.ones(n, bool)
    new[1:] = (~small[1:] & ~small[:-1]) | ((a[1:] - b[:-1]) * sx >= svg.MIN_PX)
    first = np.flatnonzero(new)
    stop = np.append(first[1:], n)
    w = np.add.reduceat(b - a, first) if summed else np.maximum.reduceat(b, first) - a[first]
    count = stop - first
    visible = w * sx >= svg.MIN_PX
    return Boxes(
        kind,
        rows,
        first[visible],
        stop[visible],
        a[first][visible],
        w[visible],
        merged=int(count[visible & (count > 1)].sum()),
        dropped=int(count[~visible].sum()),
    )


def all_boxes(
    f: Frame,
    start: Arr,
    end: Arr,
    copies: list[tuple[str, int, int, int]],
    unit: int,
    work: list[tuple[str, int, int, int]],
    lanes_kinds: tuple[str, ...],
    copy_kind: CopyKind,
) -> list[Boxes]:
    """The boxes of each kind in `lanes_kinds` (kinds()), copies sorted by copy_kind."""
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
    by_kind: dict[str, list[int]] = {k: [] for k in lanes_kinds[3:]}
    for k, c in enumerate(copies):
        by_kind[copy_kind(c[0], c[1])].append(k)
    for kind, chosen in by_kind.items():
        rows = np.array(chosen, dtype=np.int64)
        a = np.array([copies[k][2] for k in chosen], dtype=np.float64) / unit
        b = np.array([copies[k][3] for k in chosen], dtype=np.float64) / unit
        by_start = np.argsort(a, kind="stable")
        out[kind] = _groups(kind, rows[by_start], a[by_start], b[by_start], f.sx)
    return [out[k] for k in lanes_kinds]


def select(boxes: list[Boxes], max_items: int) -> tuple[Arr, Arr]:
    """(lane, box) of the boxes to draw, most important first: stalls, then the widest."""
    lane = np.concatenate([np.full(b.w.size, k) for k, b in enumerate(boxes)])
    index = np.concatenate([np.arange(b.w.size) for b in boxes])
    width = np.concatenate([b.w for b in boxes])
    stall = lane == 0  # stalls are the first kind
    top = np.lexsort((-width, ~stall))[: max(max_items, 0)]
    return lane[top], index[top]


# --- drawing ------------------------------------------------------------------------------


class Titles:
    """Hover texts, built only for the boxes drawn."""

    def __init__(
        self,
        case: OffloadCase,
        plan: OffloadPlan,
        timing: Timing,
        start: Arr,
        end: Arr,
        copies: list[tuple[str, int, int, int]],
        tiers: Tiers,
    ) -> None:
        self.case, self.plan, self.timing = case, plan, timing
        self.start, self.end, self.copies = start, end, copies
        self.tiers = tiers

    def __call__(self, b: Boxes, i: int) -> str:
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
        return f"{what}: {us(a / unit)}–{us(z / unit)} µs"

    def _steps(self, lo: int, hi: int) -> str:
        a, z = float(self.start[lo]), float(self.end[hi - 1])
        if hi - lo == 1:
            return f"step {lo}: {us(a)}–{us(z)} µs ({us(z - a)} µs)"
        busy = float((self.end[lo:hi] - self.start[lo:hi]).sum())
        return f"steps {lo}–{hi - 1}: {us(a)}–{us(z)} µs, {us(busy)} µs of compute"

    def _stalls(self, steps: Arr) -> str:
        waited = np.array(self.timing.stall, dtype=np.float64) / self.timing.unit
        length = waited[steps] if waited.size else self.start[steps] * 0
        before = self.start[steps] - length
        k = int(np.argmax(length))
        s = int(steps[k])
        cause = self.timing.cause(s) or "unknown"
        if steps.size == 1:
            return (
                f"stall before step {s}: {us(length[k])} µs "
                f"({us(before[k])}–{us(self.start[s])} µs): {cause}"
            )
        return (
            f"{steps.size} stalls before steps {int(steps[0])}–{int(steps[-1])}, "
            f"{us(length.sum())} µs in all; the longest, {us(length[k])} µs before "
            f"step {s}: {cause}"
        )

    def _copies(self, kind: str, rows: list[int]) -> str:
        unit, copies = self.timing.unit, self.copies
        residencies = [copies[k][1] for k in rows]
        nbytes = sum(self.tiers.moved(kind, r) for r in residencies)
        a, z = copies[rows[0]][2] / unit, copies[rows[-1]][3] / unit
        name = residency_name(self.case, self.plan, residencies[0])
        if len(rows) == 1:
            what = NOUNS[kind][0] + self.tiers.details(kind, residencies[0])
            return f"{name}: {what}, {nbytes} bytes, {us(a)}–{us(z)} µs"
        last = residency_name(self.case, self.plan, residencies[-1])
        return (
            f"{len(rows)} {NOUNS[kind][1]} ({name} … {last}), {nbytes} bytes "
            f"({svg.human_bytes(nbytes)}), {us(a)}–{us(z)} µs"
        )


class Tiers:
    """Where each residency's copies come from and go to, and the bytes they move."""

    def __init__(self, case: OffloadCase, plan: OffloadPlan, lay: Layout) -> None:
        self.nvme = case.nvme is not None
        size = case.size[plan.tensor]
        small = case.csize[plan.tensor] if case.csize is not None else size
        self.out = lay.out.tolist()
        self.parks_on_nvme = (lay.out == OUT_NVME).tolist()
        self.from_nvme = lay.from_nvme.tolist()
        self.compressed_in = lay.compressed_in.tolist()
        self.size, self.small = size.tolist(), small.tolist()

    def kind(self, engine: str, r: int) -> str:
        """The box kind of a copy: its engine, or the NVMe path it is part of."""
        if engine == "d2h" and self.parks_on_nvme[r]:
            return "d2h_nvme"
        if engine == "h2d" and self.from_nvme[r]:
            return "h2d_nvme"
        return engine

    def moved(self, kind: str, r: int) -> int:
        if kind == "h2d" and self.compressed_in[r]:
            return self.small[r]
        if kind == "d2h" and self.out[r] == OUT_COMPRESSED:
            return self.small[r]
        return self.size[r]

    def details(self, kind: str, r: int) -> str:
        """What a copy's title adds to its noun: the tier (when the case has more than
        the host) and the form."""
        words = ""
        if self.nvme and kind in ("d2h", "h2d"):
            words += " to the host" if kind == "d2h" else " from the host"
        if (kind == "h2d" and self.compressed_in[r]) or (
            kind == "d2h" and self.out[r] == OUT_COMPRESSED
        ):
            words += " (compressed)"
        if kind == "d2h" and self.out[r] == FINAL_OUT:
            words += " (final: the tensor ends on the host)"
        return words


def draw(
    f: Frame, boxes: list[Boxes], lanes: Arr, index: Arr, titles: Titles
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


def us(value: float) -> str:
    """µs with at most 3 decimals: 44, 12.5, 0.001."""
    text = f"{float(value):.3f}".rstrip("0").rstrip(".")
    return "0" if text == "-0" else text
