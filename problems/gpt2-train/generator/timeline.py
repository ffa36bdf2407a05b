"""Timeline recorder shared by the generators of this package.

A case is a list of buffers with half-open lifespans [lower, upper) measured in
op indices of one step's schedule. The recorder hands out op indices in
program order: a buffer allocated during op t has lower = t, and a buffer whose
last reader is op t gets upper = t + 1 (it is still live while t runs, so an
op's inputs and outputs never share memory).
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass, field

MIB = 1 << 20


@dataclass
class Buffer:
    id: str
    lower: int
    size: int
    alignment: int
    upper: int = -1  # -1 until freed


@dataclass
class Timeline:
    now: int = -1
    buffers: list[Buffer] = field(default_factory=list)
    _ids: set[str] = field(default_factory=set)

    def op(self) -> int:
        """Start the next op of the schedule and return its index."""
        self.now += 1
        return self.now

    def alloc(self, name: str, size: int, alignment: int = 512) -> Buffer:
        """A buffer produced by the current op."""
        assert size > 0, name
        assert name not in self._ids and "," not in name, name
        self._ids.add(name)
        buf = Buffer(name, max(self.now, 0), int(size), alignment)
        self.buffers.append(buf)
        return buf

    def free(self, *bufs: Buffer) -> None:
        """The current op is the last reader of these buffers."""
        for b in bufs:
            assert b.upper < 0, f"{b.id} freed twice"
            b.upper = self.now + 1

    def temp(self, name: str, size: int, alignment: int = 512) -> Buffer:
        """Scratch memory that lives only while the current op runs."""
        b = self.alloc(name, size, alignment)
        self.free(b)
        return b

    def close(self, *persistent: Buffer) -> None:
        """End the step: state that lives across steps dies with the last op."""
        self.free(*persistent)
        dangling = [b.id for b in self.buffers if b.upper < 0]
        assert not dangling, f"never freed: {dangling[:5]}"
        assert all(b.lower < b.upper for b in self.buffers)


def lower_bound(bufs: list[Buffer]) -> int:
    """Largest total size of the buffers live at one time."""
    delta: dict[int, int] = {}
    for b in bufs:
        delta[b.lower] = delta.get(b.lower, 0) + b.size
        delta[b.upper] = delta.get(b.upper, 0) - b.size
    live = best = 0
    for t in sorted(delta):
        live += delta[t]
        best = max(best, live)
    return best


def naive_peak(bufs: list[Buffer]) -> int:
    """Peak of the naive reference planner (reference_solutions/naive.py).

    Buffers in (lower, row) order; each goes at the first aligned offset above
    every already placed buffer still live when it starts. It never reuses a
    hole, so it needs the most memory of the reference planners; capacity is
    set from it so that every reference planner produces a feasible plan.
    """
    order = sorted(range(len(bufs)), key=lambda i: (bufs[i].lower, i))
    by_upper: list[tuple[int, int]] = []  # (upper, end) of placed buffers
    tops: list[int] = []  # max-heap of ends (negated), lazily pruned
    dead: dict[int, int] = {}
    peak = 0
    for i in order:
        b = bufs[i]
        while by_upper and by_upper[0][0] <= b.lower:
            _, end = heapq.heappop(by_upper)
            dead[end] = dead.get(end, 0) + 1
        while tops and dead.get(-tops[0], 0):
            dead[-tops[0]] -= 1
            heapq.heappop(tops)
        top = -tops[0] if tops else 0
        offset = -(-top // b.alignment) * b.alignment
        end = offset + b.size
        peak = max(peak, end)
        heapq.heappush(by_upper, (b.upper, end))
        heapq.heappush(tops, -end)
    return peak


def capacity_for(bufs: list[Buffer]) -> int:
    """Device memory limit of a case.

    The contest scores lower_bound / peak, so capacity only has to be a limit
    every reference planner meets: the naive planner's peak, rounded up to a
    whole MiB.
    """
    return -(-naive_peak(bufs) // MIB) * MIB


def write_csv(path, bufs: list[Buffer]) -> None:
    rows = ["id,lower,upper,size,alignment\n"]
    rows += [f"{b.id},{b.lower},{b.upper},{b.size},{b.alignment}\n" for b in bufs]
    with open(path, "w", newline="\n") as f:
        f.write("".join(rows))
