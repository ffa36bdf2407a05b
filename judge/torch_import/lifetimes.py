"""Allocator events (alloc and free by address, in event order) to `offset` buffers.

Time is the event's position in its device's stream of events, starting at 1; time 0
is "before the recording started". Rules for what the recording cut off:

- a free with no alloc before it (the block was made before recording started) lives
  from time 0;
- an alloc with no free (still held when the recording stopped: parameters, optimizer
  state, caches) lives to the end, one step past the last event;
- an alloc at an address still held (the free was lost, e.g. a ring buffer that
  dropped it) ends the older buffer there.

Each of these is counted, so that the importer can say how much was guessed.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

ALLOC, FREE = "alloc", "free"


@dataclass(frozen=True)
class Event:
    kind: str  # ALLOC or FREE
    addr: int
    size: int  # bytes; > 0 for ALLOC, the block's size (or 0 if unknown) for FREE


@dataclass
class Buffers:
    """Rows of an `offset` case: buffer i lives in [lower[i], upper[i])."""

    ids: list[str] = field(default_factory=list)
    lower: list[int] = field(default_factory=list)
    upper: list[int] = field(default_factory=list)
    size: list[int] = field(default_factory=list)
    guessed: Counter[str] = field(default_factory=Counter)

    def add(self, bid: str, lower: int, upper: int, size: int) -> None:
        self.ids.append(bid)
        self.lower.append(lower)
        self.upper.append(upper)
        self.size.append(size)

    def __len__(self) -> int:
        return len(self.ids)

    def csv(self, alignment: int) -> str:
        rows = zip(self.ids, self.lower, self.upper, self.size, strict=True)
        body = "".join(f"{b},{lo},{up},{s},{alignment}\n" for b, lo, up, s in rows)
        return "id,lower,upper,size,alignment\n" + body


def buffers_from_events(events: list[Event], held_at_end: dict[int, int] | None = None) -> Buffers:
    """Buffers of one device. `held_at_end` (address: size) names blocks known to be
    allocated when the recording stopped (a snapshot's segments): those with no event
    live over the whole recording."""
    out = Buffers()
    open_: dict[int, tuple[int, int]] = {}  # addr: (lower, size)
    touched: set[int] = set()
    for t, ev in enumerate(events, start=1):
        touched.add(ev.addr)
        if ev.kind == ALLOC:
            if ev.addr in open_:
                out.guessed["allocs at an address still held (older one ended there)"] += 1
                _close(out, open_.pop(ev.addr), t)
            open_[ev.addr] = (t, ev.size)
        elif ev.addr in open_:
            _close(out, open_.pop(ev.addr), t)
        elif ev.size > 0:
            out.guessed["frees of blocks allocated before recording (live from time 0)"] += 1
            out.add(f"pre{len(out)}", 0, t, ev.size)
        else:
            out.guessed["frees of unknown size with no alloc (dropped)"] += 1
    end = len(events) + 1
    for held in open_.values():
        out.guessed["allocs never freed (live to the end)"] += 1
        _close(out, held, end)
    for addr, size in sorted((held_at_end or {}).items()):
        if addr not in touched and size > 0:
            out.guessed["blocks held throughout (no event; live over the whole recording)"] += 1
            out.add(f"held{len(out)}", 0, end, size)
    return out


def _close(out: Buffers, held: tuple[int, int], t: int) -> None:
    lower, size = held
    out.add(f"b{len(out)}", lower, t, size)
