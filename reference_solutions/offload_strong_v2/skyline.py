"""Best-fit skyline placement for the strong offload planner (strong.py): the rule of
reference_solutions/best_fit.cpp (Burke, Kendall & Whitwell's best fit as adapted to
memory planning by Sekiyama et al.) over the few points of step time.

Why: placed in time order (first fit) or longest window first, a plan leaves holes
under its residencies, so the memory target it fits at is well under the capacity
(one decode plan needs 72 % of it, where best fit packs the same plan at 88 %): the
denser packing lets the seeds park less. The skyline (the top of the memory used so
far, per point) starts flat at 0; repeatedly take its lowest segment (leftmost among
equals) and put there the unplaced residency with the longest window inside it (ties:
the largest), or, when none fits inside, raise the segment to its lower neighbour.
Never a hole under a residency but where a segment was given up (or to alignment)."""


def skyline_place(g, tensors, placed, capacity, kinds, n_points, reach=None):
    """Offsets per residency (None past the capacity); `reach`: {(tensor, residency):
    last point its bytes are busy}, taken as its window's end where it is later."""
    import numpy as np

    reach = reach or {}
    groups = {}  # (first slot, end slot) -> residencies, largest first
    for lo, hi, i, k in g.windows(tensors, placed, kinds, n_points):
        end = max(hi, reach.get((i, k), hi)) + 2  # slot = point + 1; end exclusive
        groups.setdefault((lo + 1, end), []).append((-tensors[i][1], i, k))
    keys = sorted(groups)
    for members in groups.values():
        members.sort(reverse=True)  # popped from the end: largest first
    w_lo = np.array([a for a, _ in keys], np.int64)
    w_end = np.array([b for _, b in keys], np.int64)
    w_len = w_end - w_lo
    w_size = np.array([-groups[w][-1][0] for w in keys], np.int64)
    top = np.zeros(n_points + 2, np.int64)
    offsets = [[0] * len(rows) for rows in placed]
    left = sum(len(m) for m in groups.values())
    while left:
        s = int(np.argmin(top))
        low = top[s]
        other = np.flatnonzero(top[s:] != low)
        e = s + int(other[0]) if other.size else len(top)
        fit = np.flatnonzero((w_lo >= s) & (w_end <= e) & (w_size > 0))
        if not fit.size:  # nobody fits inside: give the segment up
            wall = capacity + 1  # past either end of step time
            top[s:e] = min(top[s - 1] if s else wall, top[e] if e < len(top) else wall)
            continue
        w = int(fit[np.lexsort((-w_size[fit], -w_len[fit]))[0]])
        _, i, k = groups[keys[w]].pop()
        size, align = tensors[i][1], tensors[i][2]
        off = -(-int(low) // align) * align
        if off + size > capacity:
            return None
        offsets[i][k] = off
        top[w_lo[w] : w_end[w]] = off + size
        w_size[w] = -groups[keys[w]][-1][0] if groups[keys[w]] else 0
        left -= 1
    return offsets
