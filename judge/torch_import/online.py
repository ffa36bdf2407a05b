"""`memorace problem import-torch --type online`: what PyTorch recorded, as an `online`
package (judge/types/online/README.md): the allocator's requests one at a time, in the
order the `offset` import uses, with hints (judge.torch_import.recorded).

The same lifetimes as the `offset` import (judge.torch_import.lifetimes), so both
imports of a trace have the same lower bound:

- blocks that exist when the recording starts (freed in it with no alloc before, or a
  snapshot's blocks held throughout) are requested first, before any recorded event;
- an alloc at an address still held frees the older allocation just before it;
- what is never freed lives to the end.

Every allocation gets its own id (`a<n>` recorded, `pre<n>` from before the recording,
`held<n>` held throughout), so a reused address is a new id.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np

from judge.csvtable import INT_LIMIT
from judge.errors import CaseError, PackageError
from judge.importer import build_package, check_files, check_hidden, check_options, write_package
from judge.package import Problem
from judge.torch_import.lifetimes import ALLOC
from judge.torch_import.memtrace import trace_recordings
from judge.torch_import.package import KINDS, _case_name, capacity_for, load_torch_file
from judge.torch_import.recorded import (
    UNKNOWN,
    Recording,
    chrome_recordings,
    snapshot_recordings,
)
from judge.types.offset.case import OffsetCase
from judge.types.offset.verifier import lower_bound
from judge.types.online.case import (
    MAX_CASE_BYTES,
    MAX_EVENTS,
    Event,
    format_events,
)

_PRE = "frees of blocks allocated before recording (requested first)"
_HELD = "blocks held throughout (no event; requested first, never freed)"


def read_recordings(path: Path) -> tuple[str, dict[str, Recording]]:
    kind, doc, size = load_torch_file(path)
    if kind == "snapshot":
        return kind, snapshot_recordings(doc, path, size)
    return kind, (trace_recordings if kind == "trace" else chrome_recordings)(doc, path)


def online_events(
    rec: Recording, alignment: int, path: Path | str = ""
) -> tuple[list[Event], Counter[str]]:
    """The case's events (format_events' form) and what was guessed, counted with the
    offset import's words where the rule is the same."""
    guessed: Counter[str] = Counter()
    first: list[Event] = []  # blocks from before the recording: requested up front
    body: list[Event] = []
    open_: dict[int, str] = {}  # addr: id of the live allocation there
    touched: set[int] = set()
    n = 0  # ids made
    for event, hints in zip(rec.events, rec.hints, strict=True):
        touched.add(event.addr)
        if event.kind == ALLOC:
            if event.addr in open_:
                guessed["allocs at an address still held (older one ended there)"] += 1
                body.append(("f", open_.pop(event.addr)))
            open_[event.addr] = bid = f"a{n}"
            n += 1
            body.append(("a", bid, _size(event.size, path), alignment, hints))
        elif event.addr in open_:
            body.append(("f", open_.pop(event.addr)))
        elif event.size > 0:
            guessed[_PRE] += 1
            bid = f"pre{n}"
            n += 1
            first.append(("a", bid, _size(event.size, path), alignment, hints))
            body.append(("f", bid))
        else:
            guessed["frees of unknown size with no alloc (dropped)"] += 1
    if open_:
        guessed["allocs never freed (live to the end)"] += len(open_)
    for addr, (size, hints) in sorted(rec.held.items()):
        if addr not in touched and size > 0:
            guessed[_HELD] += 1
            first.append(("a", f"held{n}", _size(size, path), alignment, hints))
            n += 1
    events = first + body
    if len(events) > MAX_EVENTS:
        raise CaseError(
            f"{len(events):,} events; an online case holds at most {MAX_EVENTS:,}", path
        )
    return events, guessed


def _size(size: int, path: Path | str) -> int:
    if size > INT_LIMIT:
        raise CaseError(f"an allocation of {size} bytes; at most 2^62", path)
    return size


def events_bound(events: list[Event]) -> int:
    """The offset bound of the case's trace (what the online type computes from the
    parsed case): the allocation requested at event k lives until its free's event."""
    row: dict[str, int] = {}
    lower: list[int] = []
    upper: list[int] = []
    size: list[int] = []
    for k, event in enumerate(events):
        if event[0] == "a":
            row[event[1]] = len(lower)
            lower.append(k)
            upper.append(len(events))
            size.append(event[2])
        else:
            upper[row[event[1]]] = k
    ids = [""] * len(lower)  # not read by lower_bound
    cols = (np.array(c, dtype=np.int64) for c in (lower, upper, size, [1] * len(lower)))
    return lower_bound(OffsetCase(ids, *cols, capacity=2**62))


def import_torch_online(
    files: list[Path],
    dest_root: Path,
    slug: str,
    capacity: int | None = None,
    alignment: int = 512,
    hidden: frozenset[str] = frozenset(),
) -> tuple[Problem, list[str]]:
    """Write `dest_root/slug`, an `online` package, one case per file and device; also
    the notes on what was guessed."""
    check_options(slug, dest_root, capacity)
    read = [(f, *read_recordings(f)) for f in check_files(files, dest_root)]
    notes: list[str] = []

    def fill(staging: Path) -> None:
        cases, lines = [], []
        for path, kind, per_device in read:
            for device, rec in per_device.items():
                events, guessed = online_events(rec, alignment, path)
                if not events:
                    continue
                name = _case_name(path, device, len(per_device))
                spec, line = _write_case(staging, name, rec, events, capacity, hidden)
                cases.append(spec)
                hints = " ".join(f"`{h}`" for h in rec.hint_names)
                lines.append(
                    f"- `{name}`: {line}, hints {hints}, from `{path.name}`, {KINDS[kind]}"
                )
                notes.extend(f"{name}: {n} {what}" for what, n in sorted(guessed.items()))
        if not cases:
            raise PackageError("the files hold no allocations", files[0])
        check_hidden(hidden, [str(c["name"]) for c in cases])
        statement = STATEMENT.format(title=slug, cases="\n".join(lines))
        write_package(staging, slug, "recorded by PyTorch", "online", cases, statement)

    return build_package(dest_root, slug, fill), notes


def _write_case(
    staging: Path,
    name: str,
    rec: Recording,
    events: list[Event],
    capacity: int | None,
    hidden: frozenset[str],
) -> tuple[dict[str, object], str]:
    split = "hidden" if name in hidden else "public"
    dest = staging / "data" / split / f"{name}.events"
    dest.parent.mkdir(parents=True, exist_ok=True)
    if dest.exists():
        raise PackageError(f"two files make the case name {name}; rename one", dest)
    data = _case_bytes(rec.hint_names, events, name)
    dest.write_bytes(data)  # build_package reads it back with the online type's reader
    bound = events_bound(events)
    cap = capacity if capacity is not None else capacity_for(bound)
    spec = {"name": name, "split": split, "capacity": cap, "weight": 1.0}
    requests = sum(1 for e in events if e[0] == "a")
    return spec, f"{requests} requests in {len(events)} events, lower bound {bound} bytes"


def _case_bytes(names: tuple[str, ...], events: list[Event], name: str) -> bytes:
    """format_events' text, made a chunk at a time so that a case past the size limit
    (long hints shared by millions of requests) is refused before it is all in memory."""
    header = format_events(names, [])
    parts, total = [header.encode()], len(header)
    for i in range(0, len(events), _CHUNK):
        parts.append(format_events(names, events[i : i + _CHUNK])[len(header) :].encode())
        total += len(parts[-1])
        if total > MAX_CASE_BYTES:
            raise CaseError(f"case {name} would take over {MAX_CASE_BYTES:,} bytes, the limit")
    return b"".join(parts)


_CHUNK = 65536


STATEMENT = f"""# {{title}}

Answer each allocation request of a recorded PyTorch run with an offset, one at a
time, before the next is shown (the `online` type: its README gives the protocol).

## Cases
Recorded by PyTorch; imported with `memorace problem import-torch --type online`:

{{cases}}

## What the requests are
Each case is one device's allocator events, in recorded order. Blocks that existed
when the recording started (freed in it, or held throughout by a snapshot) are
requested first; an allocation at an address still held frees the older one just
before it; what is never freed lives to the end. Ids are new for every allocation.

## Hints
A snapshot gives `function` (the innermost Python frame, `file.py:name`), `op` (the
innermost ATen operator of the stack) and `stream`; a profiler trace gives `op` (the
innermost op spanning the allocation) and `category` (that op's category). `{UNKNOWN}`
when the recording does not say. No hint tells when an allocation will be freed.

## Score
The lower bound (the most bytes live at once) divided by the highest byte any answer
used.
"""
