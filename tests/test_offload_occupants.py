"""judge.types.offload.occupants against a byte-by-byte model: who last held the bytes
of every take (one owner, nobody, or several in byte order), on both of its paths."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from judge.types.offload.occupants import SEVERAL, previous
from judge.types.offset.verifier import _disjoint, find_overlap

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


@settings(max_examples=400, deadline=None)
@given(rects)
def test_the_sweeps_numpy_proof_of_disjointness_matches_all_pairs(rows):
    """judge.types.offset.verifier._disjoint (find_overlap's shortcut) against all pairs."""
    table = np.array(rows, np.int64).reshape(-1, 4)
    lower, start = table[:, 0], table[:, 2]
    upper, end = lower + table[:, 1], start + table[:, 3]
    clash = any(
        max(lower[i], lower[j]) < min(upper[i], upper[j])
        and max(start[i], start[j]) < min(end[i], end[j])
        for i in range(len(rows)) for j in range(i)
    )  # fmt: skip
    assert _disjoint(lower, upper, start, end) == (not clash)
    assert (find_overlap(lower, upper, start, end) is None) == (not clash)
