"""judge.types.offload.occupants against a byte-by-byte model: who last held the bytes
of every take (one owner, nobody, or several in byte order), on both of its paths."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from judge.types.offload.occupants import SEVERAL, previous
from judge.types.offset.verifier import find_overlap, start_pieces

NOBODY = 10**6
takes = st.lists(
    st.tuples(st.integers(0, 40), st.integers(1, 12), st.integers(0, 30)), max_size=60
)  # (start, length, owner)


def model(rows: list[tuple[int, int, int]]) -> tuple[list[int], dict[int, list[int]]]:
    held: dict[int, int] = {}
    found, several = [], {}
    for k, (start, length, owner) in enumerate(rows):
        seen: list[int] = []
        for b in range(start, start + length):
            q = held.get(b)
            if q is not None and (not seen or seen[-1] != q):
                seen.append(q)
            held[b] = owner
        found.append(NOBODY if not seen else seen[0] if len(seen) == 1 else SEVERAL)
        if len(seen) > 1:
            several[k] = seen
    return found, several


def run(rows: list[tuple[int, int, int]]) -> tuple[list[int], dict[int, list[int]]]:
    start = np.array([a for a, _, _ in rows], np.int64)
    end = start + np.array([n for _, n, _ in rows], np.int64)
    found, several = previous(start, end, np.array([r for *_, r in rows], np.int64), NOBODY)
    return found.tolist(), several


@settings(max_examples=400, deadline=None)
@given(takes)
def test_previous_holders_match_a_byte_by_byte_model(rows):
    assert run(rows) == model(rows)


def test_wide_takes_over_many_pieces_give_the_same_answer():
    """Takes that cover many pieces each go the ByteOwners way: the same answer."""
    rng = np.random.default_rng(7)
    rows = [(b, 1, b % 5) for b in range(400)]
    starts, lengths = rng.integers(0, 100, 300).tolist(), rng.integers(100, 300, 300).tolist()
    rows += [(a, n, 5 + k) for k, (a, n) in enumerate(zip(starts, lengths, strict=True))]
    rows += [(b, 1, 900 + b) for b in range(0, 400, 3)]
    assert run(rows) == model(rows)


rects = st.lists(
    st.tuples(st.integers(0, 30), st.integers(1, 8), st.integers(0, 40), st.integers(1, 10)),
    max_size=25,
)  # (lower, duration, start, size)


def first_clash(lower, upper, start, end) -> tuple[int, int] | None:
    """All pairs: the sweep's first clash. Start events in order of (time, row); the first
    that meets a live rectangle (begun before, not yet ended) names it and, of the live
    ones it meets, the lowest in memory."""
    for i in sorted(range(len(lower)), key=lambda k: (lower[k], k)):
        met = [
            j for j in range(len(lower))
            if (lower[j], j) < (lower[i], i) and upper[j] > lower[i]
            and start[j] < end[i] and start[i] < end[j]
        ]  # fmt: skip
        if met:
            return min(met, key=lambda j: start[j]), i
    return None


@settings(max_examples=400, deadline=None)
@given(rects)
def test_the_sweeps_numpy_way_matches_all_pairs(rows):
    """judge.types.offset.verifier.start_pieces (find_overlap's numpy way) and find_overlap
    against all pairs, down to the pair named."""
    table = np.array(rows, np.int64).reshape(-1, 4)
    lower, start = table[:, 0], table[:, 2]
    upper, end = lower + table[:, 1], start + table[:, 3]
    clash = first_clash(lower, upper, start, end)
    if len(rows):
        found = start_pieces(lower, upper, start, end)
        assert found is False or found == (clash[1] if clash else None)
    assert find_overlap(lower, upper, start, end) == clash


def first_clash_numpy(lower, upper, start, end) -> tuple[int, int] | None:
    """first_clash, one row of pairs at a time (for a few thousand rectangles)."""
    rows = np.arange(len(lower))
    for i in np.lexsort((rows, lower)).tolist():
        earlier = (lower < lower[i]) | ((lower == lower[i]) & (rows < i))
        met = earlier & (upper > lower[i]) & (start < end[i]) & (start[i] < end)
        if met.any():
            j = np.flatnonzero(met)
            return int(j[np.argmin(start[j])]), i
    return None


def test_wide_rectangles_over_many_pieces_take_the_sweep_and_name_the_same_pair():
    """Rectangles that each cover many others' starts: too many pieces for numpy, so the
    sweep decides; valid and invalid layouts, the same pair as all pairs."""
    rng = np.random.default_rng(11)
    for trial in range(6):
        n = 1500
        lower = rng.integers(0, 3000, n)
        upper = lower + rng.integers(1, 4, n)
        start = rng.integers(0, 20000, n) * 8
        size = np.where(rng.random(n) < 0.3, 60000, 8)  # wide ones cover many starts
        end = start + size
        if trial % 2 == 0:  # valid: each rectangle alone in its own time slot
            lower, upper = np.arange(n) * 5, np.arange(n) * 5 + 5
        assert start_pieces(lower, upper, start, end) is False
        assert find_overlap(lower, upper, start, end) == first_clash_numpy(lower, upper, start, end)
