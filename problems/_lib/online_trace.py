"""Recorded PyTorch steps as `online` cases: a stream of allocation requests and frees
(judge/types/online/README.md), for the online-* generators (standard library only).

A step's events follow its recorded op order: at op t, first the requests of the
storages op t made (those that existed before the step first of all), then the frees
of the storages whose life ends with op t (upper = t + 1), each group in the trace's
order. Several steps chain into one case (training iterations): what persists across
them (parameters, optimizer state) is requested once and never freed; state made
lazily inside a step (Adam's, in the first iteration) is requested where it is made.
"""

from __future__ import annotations

import bisect
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from hidden import Draw, Reject, hidden_args, materialize

ALIGNMENT = 512  # the CUDA caching allocator's granularity
MIB = 1 << 20
CAPACITY_ROUND = 2 * MIB
MIN_EVENTS, MAX_EVENTS = 5_000, 200_000  # what a case of these packages holds
LIMITS = {"time_limit_s": 20.0, "memory_limit_mb": 2048, "cpus": 1, "gpus": 0}

Event = tuple  # ("a", id, size, alignment, values) or ("f", id), as the judge's format_events


@dataclass(frozen=True)
class StepPart:
    """One recorded step placed in a case. `ids[i]` names storage i (None: left out of
    the case); `hints[i]` its hint values. `live` are storages already requested by an
    earlier step (not requested again), `keep` those never freed (they live on). `at`
    moves the request of a storage that existed before the step to just before op
    `at[i]`'s requests (state a framework makes lazily inside the step), in the
    trace's order."""

    doc: dict
    ids: Sequence[str | None]
    hints: Sequence[tuple[str, ...]]
    live: frozenset[int] = frozenset()
    keep: frozenset[int] = frozenset()
    at: Mapping[int, int] = field(default_factory=dict)


def step_events(part: StepPart) -> list[Event]:
    """The step's requests and frees in recorded op order (module docstring)."""
    t = part.doc["tensors"]
    n_ops = len(part.doc["ops"]["name"])
    allocs: list[list[int]] = [[] for _ in range(n_ops)]
    frees: list[list[int]] = [[] for _ in range(n_ops)]
    pre: list[int] = []
    late: list[list[int]] = [[] for _ in range(n_ops)]  # part.at's, by op
    for i, (lower, upper, op) in enumerate(zip(t["lower"], t["upper"], t["op"], strict=True)):
        if part.ids[i] is None:
            continue
        if i in part.at:
            assert op < 0 and i not in part.live and upper == n_ops, f"storage {i} moved"
            late[part.at[i]].append(i)
        elif i not in part.live:
            (pre if op < 0 and lower == 0 else allocs[lower]).append(i)
        if i not in part.keep:
            frees[upper - 1].append(i)
    size = t["size"]
    events: list[Event] = []
    for op in range(n_ops):
        for i in late[op] if op > 0 else pre + late[0]:
            events.append(("a", part.ids[i], size[i], ALIGNMENT, part.hints[i]))
        for i in allocs[op]:
            events.append(("a", part.ids[i], size[i], ALIGNMENT, part.hints[i]))
        events.extend(("f", part.ids[i]) for i in frees[op])
    return events


def format_events(hint_names: Sequence[str], events: Sequence[Event], comments=()) -> str:
    """A case file's text (the judge's judge.types.online.case.format_events, whose
    module needs numpy, plus leading comment lines)."""
    out = [f"# {c}" for c in comments]
    out.append("hints" + "".join(f" {n}" for n in hint_names))
    for e in events:
        if e[0] == "a":
            out.append(f"a {e[1]} {e[2]} {e[3]}" + "".join(f" {v}" for v in e[4]))
        else:
            out.append(f"f {e[1]}")
    return "\n".join(out) + "\n"


def lower_bound(events: Sequence[Event]) -> int:
    """The most bytes live at once."""
    size: dict[str, int] = {}
    live = best = 0
    for e in events:
        if e[0] == "a":
            size[e[1]] = e[2]
            live += e[2]
            best = max(best, live)
        else:
            live -= size[e[1]]
    return best


def capacity_for(bound: int) -> int:
    """60 % above the bound, rounded up to 2 MiB: a bump allocator that reuses memory
    only when it must still fits but scores badly (stack_top_fits: checked on every
    case, hidden ones drawn again where it does not); best fit and PyTorch's caching
    policy fit."""
    return -(-(bound * 8 // 5 + 1) // CAPACITY_ROUND) * CAPACITY_ROUND


def check_events(events: Sequence[Event], where: str) -> None:
    """The case rules the generators can break: unique ids, frees of live ids only,
    the event count of these packages."""
    live: set[str] = set()
    seen: set[str] = set()
    for e in events:
        if e[0] == "a":
            assert e[1] not in seen, f"{where}: {e[1]} requested twice"
            seen.add(e[1])
            live.add(e[1])
        else:
            assert e[1] in live, f"{where}: {e[1]} freed while not live"
            live.remove(e[1])
    if not MIN_EVENTS <= len(events) <= MAX_EVENTS:
        raise ValueError(f"{where}: {len(events)} events, outside [{MIN_EVENTS}, {MAX_EVENTS}]")


def stack_top_fits(events: Sequence[Event], capacity: int) -> bool:
    """Whether a bump allocator that reuses memory only when it must fits in `capacity`:
    each request at the top of the live allocations, or, when that would pass the
    capacity, in the lowest hole between them that fits (first fit), as
    reference_solutions/online_naive.py does."""
    starts: list[int] = []  # live allocations by offset (disjoint)
    ends: list[int] = []
    held: dict[str, int] = {}
    for e in events:
        if e[0] == "f":
            k = bisect.bisect_left(starts, held.pop(e[1]))
            del starts[k], ends[k]
            continue
        size, align = e[2], e[3]
        off = -(-(ends[-1] if ends else 0) // align) * align
        if off + size > capacity:
            prev = 0
            for start, end in zip(starts, ends, strict=True):
                cand = -(-prev // align) * align
                if cand + size <= start:
                    off = cand
                    break
                prev = end
            else:
                return False
        k = bisect.bisect_left(starts, off)
        starts.insert(k, off)
        ends.insert(k, off + size)
        held[e[1]] = off
    return True


@dataclass(frozen=True)
class Made:
    """A case as written: its text, lower bound, event count and whether the bump
    allocator fits its capacity (stack_top_fits)."""

    text: str
    bound: int
    events: int
    bump_fits: bool


def make_case(hint_names, events: list[Event], comments: Sequence[str], where: str) -> Made:
    check_events(events, where)
    bound = lower_bound(events)
    fits = stack_top_fits(events, capacity_for(bound))
    return Made(format_events(hint_names, events, comments), bound, len(events), fits)


def _toml_head(slug: str, title: str, version: int) -> str:
    head = f'slug = "{slug}"\nname = "{title}"\ntype = "online"\nversion = {version}\n'
    return head + "\n[limits]\n" + "".join(f"{k} = {v}\n" for k, v in LIMITS.items())


def _toml_case(name: str, split: str, capacity: int, weight: float) -> str:
    return (
        f'\n[[cases]]\nname = "{name}"\nsplit = "{split}"\n'
        f"capacity = {capacity}\nweight = {weight:.1f}\n"
    )


def online_main(
    here: Path,
    title: str,
    public: Sequence,
    build: Callable[[object], Made],
    pool: Sequence,
    weights: Sequence[float],
    vary: Callable[[object, Draw], Made],
    argv: list[str],
    version: int = 1,
) -> None:
    """An `online` generator's command line. No arguments: rewrite the repository's
    package (problem.toml, data/public/*.events) from `public` (objects with `name`
    and `weight`, made by `build`). `--hidden-seed FILE --out DIR`: the package plus a
    hidden split of len(weights) cases, each `vary(base, draw)` of a base of `pool`."""
    package = here.parent
    if (args := hidden_args(argv)) is not None:

        def make(base: object, draw: Draw) -> tuple[str, str, int]:
            made = vary(base, draw)
            if not made.bump_fits:  # the capacity's promise: draw again
                raise Reject("a bump allocator does not fit")
            return ".events", made.text, capacity_for(made.bound)

        materialize(package, args.out, args.seed, pool, weights, make)
        return
    if len(argv) > 1:
        sys.exit(f"usage: {argv[0]} [--hidden-seed FILE --out DIR]")
    folder = package / "data" / "public"
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("*.events"):  # stale cases of an older list must not survive
        old.unlink()
    toml = [_toml_head(package.name, title, version)]
    for case in public:
        made = build(case)
        assert made.bump_fits, f"{case.name}: a bump allocator does not fit its capacity"
        (folder / f"{case.name}.events").write_text(made.text, newline="\n")
        cap = capacity_for(made.bound)
        toml.append(_toml_case(case.name, "public", cap, case.weight))
        print(f"{case.name}: {made.events} events, lower bound {made.bound}, capacity {cap}")
    (package / "problem.toml").write_text("".join(toml), newline="\n")
