"""Offline placement of one observed iteration (the plan for the next one).

Items are the iteration's requests with the lifetimes seen last time, in requests
since the position planned from ([start, end), end = INF when the block outlived the
iteration). Obstacles are the blocks live when the iteration begins, at
their real offsets, each until its predicted free. The placer is greedy by size
(TFLite's "greedy by size" offset planner): largest item first, at the lowest aligned
offset clear of every placed item and obstacle whose lifetime overlaps. It also tries
longest-lived first and area first, then randomly perturbed size orders while its
time budget lasts, and keeps the plan with the lowest peak. placer.cpp (built by the
archive's build command) does this; the numpy code here is its fallback (lifetime
overlap one vectorized test per item, the gap search vectorized over the overlapping
blocks), used when the binary is missing.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import numpy as np

INF = np.iinfo(np.int64).max // 4
PLACER = Path(__file__).resolve().parent / "placer"  # built from placer.cpp


def align_up(x: int, alignment: int) -> int:
    return -(-x // alignment) * alignment


def lowest_fit(starts: np.ndarray, ends: np.ndarray, size: int, align: int) -> int:
    """The lowest aligned offset where [off, off + size) misses every [start, end)
    (blocks sorted by start; the candidates are 0 and the running maximum of the ends)."""
    if len(starts) == 0:
        return 0
    below = np.empty(len(starts), dtype=np.int64)
    below[0] = 0
    np.maximum.accumulate(ends[:-1], out=below[1:])
    cand = -(-below // align) * align
    ok = np.flatnonzero(cand + size <= starts)
    if len(ok):
        return int(cand[ok[0]])
    return align_up(int(max(below[-1], ends[-1])), align)


def place_order(
    order: list[int],
    start: np.ndarray,
    end: np.ndarray,
    size: list[int],
    align: list[int],
    obstacles: list[tuple[int, int, int]],
) -> tuple[list[int], int]:
    """Offsets (by item index) placing items in `order`; obstacles are (offset, end
    address, free time) live from time 0. Returns (offsets, peak)."""
    n, m0 = len(order), len(obstacles)
    lo = np.zeros(n + m0, dtype=np.int64)
    hi = np.zeros(n + m0, dtype=np.int64)
    a0 = np.zeros(n + m0, dtype=np.int64)
    a1 = np.zeros(n + m0, dtype=np.int64)
    for k, (o, e, t) in enumerate(obstacles):
        lo[k], hi[k], a0[k], a1[k] = -1, t, o, e
    m = m0
    offsets = [0] * len(size)
    peak = max((e for _, e, _ in obstacles), default=0)
    for i in order:
        s, e = int(start[i]), int(end[i])
        hit = np.flatnonzero((lo[:m] < e) & (hi[:m] > s))
        by_start = hit[np.argsort(a0[hit], kind="stable")]
        off = lowest_fit(a0[by_start], a1[by_start], size[i], align[i])
        offsets[i] = off
        lo[m], hi[m], a0[m], a1[m] = s, e, off, off + size[i]
        m += 1
        peak = max(peak, off + size[i])
    return offsets, peak


def native(
    start: list[int], end: list[int], size: list[int], align: list[int],
    obstacles: list[tuple[int, int, int]], budget_s: float, seed: int, late: list[bool],
) -> tuple[list[int], int, int] | None:  # fmt: skip
    """placer.cpp's answer: (offsets, peak, the most bytes live at once), or None when
    it was not built or failed (the same rules as here, a hundred times faster)."""
    if not PLACER.is_file():
        return None
    lines = [f"{len(size)} {len(obstacles)} {budget_s:.3f} {seed}"]
    lines += [f"{o} {e} {min(t, INF)}" for o, e, t in obstacles]
    lines += [f"{s} {min(e, INF)} {z} {a} {int(t)}"
              for s, e, z, a, t in zip(start, end, size, align, late, strict=True)]  # fmt: skip
    try:
        done = subprocess.run([str(PLACER)], input="\n".join(lines) + "\n", capture_output=True,
                              text=True, check=True, timeout=budget_s + 60)  # fmt: skip
        values = [int(v) for v in done.stdout.split()]
    except (OSError, subprocess.SubprocessError, ValueError):
        return None
    if len(values) != len(size) + 2:
        return None
    return values[2:], values[0], values[1]


def plan(
    start: list[int],
    end: list[int],
    size: list[int],
    align: list[int],
    obstacles: list[tuple[int, int, int]],
    budget_s: float = 0.0,
    seed: int = 0,
    late: list[bool] | None = None,
) -> tuple[list[int], int, int]:
    """(offsets by item index, peak, the plan's lower bound or 0 when not computed):
    placer.cpp when built, else the same greedy orders here (largest first, longest-
    lived first, area first), then randomly perturbed size orders while `budget_s`
    lasts; the lowest peak wins. Items marked `late` come after all others in every
    order (sizes only guessed: placed on top of the known ones)."""
    late = late or [False] * len(size)
    found = native(start, end, size, align, obstacles, budget_s, seed, late)
    if found is not None:
        return found
    st = np.array(start, dtype=np.int64)
    en = np.minimum(np.array(end, dtype=np.int64), INF)
    sz = np.array(size, dtype=np.int64)
    length = (en - st).astype(np.float64)
    lt = np.array(late, dtype=np.int8)  # the last key of lexsort sorts first
    keys = [
        np.lexsort((st, -sz, -length, lt)),  # longest-lived, then size
        np.lexsort((st, -length, -sz, lt)),  # size, then longest-lived
        np.lexsort((st, -(length * sz.astype(np.float64)), lt)),  # area
    ]
    best: tuple[int, list[int]] = (INF, [0] * len(size))
    for key in keys:
        offsets, peak = place_order(key.tolist(), st, en, size, align, obstacles)
        if peak < best[0]:
            best = (peak, offsets)
    rng = np.random.default_rng(seed)
    deadline = time.monotonic() + budget_s
    while time.monotonic() < deadline and len(size) > 1:
        noise = sz * np.exp(rng.normal(0.0, 0.3, len(size)))
        if rng.random() < 0.5:
            key = np.lexsort((st, -noise, lt))
        else:
            stretch = -length * np.exp(rng.normal(0.0, 0.3, len(size)))
            key = np.lexsort((st, -noise, stretch, lt))
        offsets, peak = place_order(key.tolist(), st, en, size, align, obstacles)
        if peak < best[0]:
            best = (peak, offsets)
    return best[1], best[0], 0
