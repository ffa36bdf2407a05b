"""Placement for the strong offload planner (strong.py): residencies longest window
first or in order of first point, each at the lowest aligned gap among the placed ones
whose windows overlap its own; optionally aware of copy-outs still running.

Why release-aware: a copy-in (or a step's new bytes) that lands on bytes still being
copied out waits for that copy-out, and the host-to-device queue waits with it. The
points alone say the bytes are free after the last use; by a timing estimate they are
free only when the copy-out ends (`reach`). Each residency then takes the lowest gap
that also avoids those bytes, or, when none is under the capacity, the lowest gap."""

import bisect

OUT_COPIES = ("copy", "compressed", "nvme")


def placed_by(g, case, tensors, kinds, placed, placer, busy=None):
    """Offsets by `placer`: an order ("first fit", "longest first", "skyline"), with
    ", release" when `busy` (reach below) says which bytes copy-outs still hold."""
    cap, n_points = int(case["capacity"]), 2 * len(case["steps"])
    order = placer.partition(", ")[0]
    if order == "skyline":
        from skyline import skyline_place

        return skyline_place(g, tensors, placed, cap, kinds, n_points, busy)
    if order == "first fit" and busy is None:
        return g.first_fit_place(tensors, placed, cap, kinds, n_points)
    return place(g, tensors, placed, cap, kinds, n_points, order, busy)


def place(g, tensors, placed, capacity, kinds, n_points, order="first fit", reach=None):
    """Offsets per residency (None past the capacity). `order`: "longest first" (as
    greedy-by-size does for offset: long-lived ones end up packed low, the short copy-in
    windows fill the room above, which first fit in time order fragments) or "first
    fit" (time order); `reach`: {(tensor, residency): last point its bytes are busy}."""
    import numpy as np

    res = g.windows(tensors, placed, kinds, n_points)
    if order == "longest first":
        key = lambda r: (res[r][0] - res[r][1], -tensors[res[r][2]][1], r)  # noqa: E731
    else:
        key = lambda r: (res[r][0], res[r][0] - res[r][1], -tensors[res[r][2]][1], r)  # noqa: E731
    reach = reach or {}
    lo_at, hi_at, far_at = (np.zeros(len(res), np.int64) for _ in range(3))
    start, end = np.zeros(len(res), np.int64), np.zeros(len(res), np.int64)
    offsets = [[0] * len(rows) for rows in placed]
    for n, r in enumerate(sorted(range(len(res)), key=key)):
        lo, hi, i, k = res[r]
        far = reach.get((i, k), hi)
        size, align = tensors[i][1], tensors[i][2]
        off = capacity
        if reach:
            off = gap_among(start, end, (lo_at[:n] <= far) & (far_at[:n] >= lo), size, align)
        if off + size > capacity:
            off = gap_among(start, end, (lo_at[:n] <= hi) & (hi_at[:n] >= lo), size, align)
        if off + size > capacity:
            return None
        lo_at[n], hi_at[n], far_at[n], start[n], end[n] = lo, hi, far, off, off + size
        offsets[i][k] = off
    return offsets


def gap_among(start, end, near, size, align):
    """The lowest aligned offset where `size` bytes fit below, between or above the
    placed ranges where `near` (all at once: the gap after the ranges that start first
    opens above the highest end among them)."""
    import numpy as np

    first, last = start[: len(near)][near], end[: len(near)][near]
    if not first.size:
        return 0
    by = np.argsort(first, kind="stable")
    top = np.maximum.accumulate(last[by])
    cand = -(-np.concatenate(([0], top)) // align) * align
    ok = np.flatnonzero(cand[:-1] + size <= first[by])
    return int(cand[ok[0]] if ok.size else cand[-1])


def reach(case, tensors, kinds, placed, leave, priority, ends, n_points):
    """{(tensor, residency): the last point its bytes are still busy} for the residencies
    copied out, by a timing estimate: `ends[s]` the end of step s (µs), the copy-outs
    one at a time in the judge's order (step, priority, plan order), each bytes / the
    device-to-host bandwidth long. The bytes are busy through "during step q + 1" for
    the last step q that ends before its copy-out does."""
    d2h, lat = int(case["d2h_bandwidth"]), int(case.get("d2h_latency", 0))
    outs = []
    for i, rows in enumerate(placed):
        for k, (first, count, _) in enumerate(rows):
            if leave[i][k] in OUT_COPIES:
                last = tensors[i][3][first + count - 1]
                small = leave[i][k] == "compressed" and kinds[i].compress is not None
                nbytes = kinds[i].compress[0] if small else tensors[i][1]
                outs.append((last, -priority.get((i, k), 0), i, k, lat + nbytes / d2h))
    outs.sort()
    free, out = 0.0, {}
    for last, _, i, k, took in outs:
        free = max(free, ends[last]) + took
        q = bisect.bisect_left(ends, free) - 1
        out[(i, k)] = min(n_points, max(2 * last, 2 * q + 2))
    return out


def refit(tensors, res, offsets, moved, capacity, reach=None):
    """`offsets` (a copy) with each residency `moved` (its window in `res` changed) kept
    where it is if nothing there overlaps it, else at the lowest gap its window leaves
    (with `reach`: first the lowest that also keeps off bytes still being copied out,
    and its own place if only that is clear of them); None when there is no gap."""
    import numpy as np

    reach = reach or {}
    offsets = [list(o) for o in offsets]
    where = {(i, k): n for n, (_, _, i, k) in enumerate(res)}
    lo_at = np.array([r[0] for r in res], np.int64)
    hi_at = np.array([r[1] for r in res], np.int64)
    far_at = np.array([reach.get((i, k), hi) for _, hi, i, k in res], np.int64)
    start = np.array([offsets[i][k] for _, _, i, k in res], np.int64)
    end = start + np.array([tensors[i][1] for _, _, i, _ in res], np.int64)
    for i, k in moved:
        n, (lo, hi, _, _) = where[(i, k)], res[where[(i, k)]]
        size, align, off = tensors[i][1], tensors[i][2], offsets[i][k]
        for near in ((lo_at <= far_at[n]) & (far_at >= lo), (lo_at <= hi) & (hi_at >= lo)):
            near[n] = False
            if not np.any((start[near] < off + size) & (end[near] > off)):
                break  # its place is clear
            gap = gap_among(start, end, near, size, align)
            if gap + size <= capacity:
                off = gap
                break
        else:
            return None
        offsets[i][k], start[n], end[n] = off, off, off + size
    return offsets
