"""Longest-window-first placement for the strong offload planner (strong.py)."""


def longest_first_place(g, tensors, placed, capacity, kinds, n_points):
    """Offsets per residency (None past the capacity): residencies by decreasing window
    length, each at the lowest aligned gap among the placed ones whose windows overlap
    its own (as greedy-by-size does for offset: long-lived ones end up packed low, the
    short copy-in windows fill the room above, which first fit in time order fragments)."""
    import numpy as np

    res = g.windows(tensors, placed, kinds, n_points)
    order = sorted(
        range(len(res)), key=lambda r: (res[r][0] - res[r][1], -tensors[res[r][2]][1], r)
    )
    lo_at, hi_at = np.zeros(len(res), np.int64), np.zeros(len(res), np.int64)
    start, end = np.zeros(len(res), np.int64), np.zeros(len(res), np.int64)
    offsets = [[0] * len(rows) for rows in placed]
    for n, r in enumerate(order):
        lo, hi, i, k = res[r]
        size, align = tensors[i][1], tensors[i][2]
        near = np.flatnonzero((lo_at[:n] <= hi) & (hi_at[:n] >= lo))
        off = lowest_gap(sorted(zip(start[near].tolist(), end[near].tolist(), strict=True)),
                         size, align)  # fmt: skip
        if off + size > capacity:
            return None
        lo_at[n], hi_at[n], start[n], end[n] = lo, hi, off, off + size
        offsets[i][k] = off
    return offsets


def lowest_gap(taken, size, align):
    """The lowest aligned offset where `size` bytes fit below, between or above the
    ranges `taken` (sorted (start, end) pairs)."""
    off = 0
    for a, b in taken:
        if off + size <= a:
            break
        off = max(off, -(-b // align) * align)
    return off
