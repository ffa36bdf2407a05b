"""Stable sorts of integer keys and byte pieces, for the verifiers' sweeps (numpy)."""

from __future__ import annotations

import sys

import numpy as np


def stable_order(key: np.ndarray) -> np.ndarray:
    """np.argsort(key, kind="stable"), by 16-bit digits (numpy's radix sort) when the
    range allows: a comparison sort of int64 keys is several times slower."""
    if not len(key):
        return np.zeros(0, np.intp)
    if key.dtype.kind not in "iu":
        return np.argsort(key, kind="stable")
    low = int(key.min())
    span = int(key.max()) - low
    if span >= 2**32:
        return np.argsort(key, kind="stable")
    if low or key.dtype.itemsize != 8 or not key.flags.c_contiguous or sys.byteorder != "little":
        key = (key - low).astype(np.uint64)  # a fresh contiguous array of 64-bit words
    digits = key.view(np.uint16).reshape(-1, 4)  # 16-bit digits, lowest first (no copy)
    order = np.argsort(digits[:, 0], kind="stable")
    if span >= 2**16:
        order = order[np.argsort(digits[:, 1][order], kind="stable")]
    return order


def by_time_then_kind(times: np.ndarray, kind: np.ndarray) -> np.ndarray:
    """np.lexsort((kind, times)) for kind in {0, 1}."""
    exact = times.dtype.kind == "i" and len(times)  # 2 * times + kind must not wrap
    if exact and int(times.min()) > -(2**61) and int(times.max()) < 2**61:
        return stable_order(2 * times + kind)
    return np.lexsort((kind, times))


def byte_pieces(
    start: np.ndarray, end: np.ndarray, order: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray] | None:
    """Cut the bytes at the ends of every range [start, end) (non-empty): (range, piece)
    for each piece of each range, ranges in `order` (default: as given), each range's
    pieces in byte order; pieces are numbered in byte order. None when the pieces of
    all ranges add up to more than 4 a range (+ 1024): the caller's sweep is then
    cheaper."""
    if start.dtype.kind not in "iu" or end.dtype.kind not in "iu":
        return None
    if start.dtype != end.dtype:  # int64 and uint64 would meet as float64: not exact
        if max(int(start.max(initial=0)), int(end.max(initial=0))) >= 2**63:
            return None
        start, end = start.astype(np.int64), end.astype(np.int64)
    n = len(start)
    ends = np.concatenate([start, end])
    by_end = stable_order(ends)
    rank = np.empty(2 * n, np.int64)  # of each end among the distinct ends
    rank[by_end] = np.cumsum(np.append(True, ends[by_end][1:] != ends[by_end][:-1])) - 1
    first, count = rank[:n], rank[n:] - rank[:n]
    which = np.arange(n) if order is None else order
    first, count = first[which], count[which]
    total = int(count.sum())
    if total > 4 * n + 1024:
        return None
    before = np.repeat(np.cumsum(count) - count, count)
    return np.repeat(which, count), np.repeat(first, count) + np.arange(total) - before
