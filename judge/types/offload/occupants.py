"""Who held the bytes each take of a plan takes, before it: the same answer as taking
them in order with ByteOwners (judge.types.offload.byte_owners), found at once with
numpy. The order of takes is fixed before the timing starts, so the timing only looks
the answer up (its hot path has no byte bookkeeping left)."""

from __future__ import annotations

import numpy as np

from judge.types.offload.byte_owners import ByteOwners
from judge.types.offset.sort_keys import byte_pieces, stable_order

SEVERAL = -1  # previous(...)[k] when take k found more than one earlier occupant


def previous(
    start: np.ndarray, end: np.ndarray, owner: np.ndarray, none: int
) -> tuple[np.ndarray, dict[int, list[int]]]:
    """Takes k = 0, 1, ... of bytes [start[k], end[k]) (non-empty) by owner[k]: for each,
    the owner that last held its bytes (`none` if no byte was held before; SEVERAL if
    more than one did: they are in the dict, in byte order, no owner twice in a row).

    Cut at every take's ends, the bytes fall into pieces; the previous holder of a
    piece is the last earlier take of it. Each take covers few pieces in real plans;
    when the pieces covered add up to more than a few per take, ByteOwners answers
    (O(log n) per take) instead."""
    k = len(start)
    pairs = byte_pieces(start, end)
    if pairs is None:
        return _by_owners(start, end, owner, none)
    take, piece = pairs  # in take, then byte order
    total = len(take)
    order = stable_order(piece)  # by piece, then take
    by_piece, by_take = piece[order], take[order]
    again = np.flatnonzero(by_piece[1:] == by_piece[:-1]) + 1
    who = np.full(total, -1, np.int64)  # the previous holder of each pair's piece
    who[order[again]] = owner[by_take[again - 1]]
    held = who >= 0
    t, w = take[held], who[held]
    new = np.ones(len(t), bool)  # a run of one owner starts (within one take)
    new[1:] = (t[1:] != t[:-1]) | (w[1:] != w[:-1])
    t, w = t[new], w[new]
    runs = np.bincount(t, minlength=k)
    found = np.full(k, none, np.int64)
    one = runs[t] == 1
    found[t[one]] = w[one]
    found[runs > 1] = SEVERAL
    several: dict[int, list[int]] = {}
    for i, q in zip(t[~one].tolist(), w[~one].tolist(), strict=True):
        several.setdefault(i, []).append(q)
    return found, several


def _by_owners(
    start: np.ndarray, end: np.ndarray, owner: np.ndarray, none: int
) -> tuple[np.ndarray, dict[int, list[int]]]:
    owners = ByteOwners()
    found: list[int] = []
    several: dict[int, list[int]] = {}
    for i, (a, z, r) in enumerate(zip(start.tolist(), end.tolist(), owner.tolist(), strict=True)):
        got = owners.take(a, z, r)
        held = [q for j, q in enumerate(got) if not j or q != got[j - 1]]
        found.append(none if not held else held[0] if len(held) == 1 else SEVERAL)
        if len(held) > 1:
            several[i] = held
    return np.array(found, np.int64), several
