"""The replay of an `offload` plan on real memory (judge.replay), v1 and v2 alike.

Cells hold signatures: one per (tensor, version, form). A use checks that its
residency's cells hold the tensor's current version in full; a use that writes makes
a new version; copies out take the cells' signature to host or NVMe memory and copies
in write back the one the tensor's latest copy holds (a compressed copy lands in the
last cells of its range and is decoded in place before its step). A recompute checks
that its sources are held in full. Host bytes are counted per point, from the copy-out
to the first use of the last residency copied in from it. Nothing here comes from
the exact verifier: each checks the other.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from judge.replay import POISON, Arena, Corruption, ReplayResult, _place_checks

_IN_NAMES = {0: "produced", 1: "copy", 2: "recompute"}


@dataclass
class _Res:
    tensor: int
    k: int
    offset: int
    uses: list[int]
    prefetch: int | None
    how: str  # produced | copy | recompute
    at: int | None  # decode_before / recompute_before as given
    out: int  # -1: not given; 0 copy, 1 compressed, 2 nvme, 3 drop
    final: bool = False


def _rows(case: Any, plan: Any) -> list[_Res]:
    rows: list[_Res] = []
    cursor: dict[int, int] = {}
    starts = case.start_tier().tolist()
    for r in range(len(plan)):
        t, k, count = int(plan.tensor[r]), int(plan.index[r]), int(plan.count[r])
        uses = case.uses_of(t).tolist()
        at = cursor.get(t, 0)
        if count < 1 or at + count > len(uses):
            raise Corruption(f"residency {k + 1} of {case.ids[t]} covers uses it does not have")
        cursor[t] = at + count
        mode = int(plan.mode[r]) if plan.mode is not None else (0 if k == 0 else 1)
        how = _IN_NAMES[mode] if not (k == 0 and starts[t] == 0) else "produced"
        pre = int(plan.prefetch[r])
        given_at = int(plan.at[r]) if plan.at is not None else -2
        out = int(plan.out[r]) if plan.out is not None else -1
        rows.append(_Res(t, k, int(plan.offset[r]), uses[at : at + count],
                         None if how != "copy" else pre, how,
                         None if given_at == -2 else given_at, out))  # fmt: skip
    for t in range(len(case)):
        if cursor.get(t, 0) != len(case.uses_of(t)):
            step = case.uses_of(t).tolist()[cursor.get(t, 0)]
            raise Corruption(f"{case.ids[t]} is used in step {step} but no residency holds it")
    for r, row in enumerate(rows):
        row.final = r + 1 == len(rows) or rows[r + 1].tensor != row.tensor
    return rows


class _Run:
    def __init__(self, case: Any, rows: list[_Res], arena: Arena) -> None:
        self.case, self.rows, self.arena = case, rows, arena
        n = len(case)
        self.sigs: dict[tuple[int, int, bool], int] = {}
        self.names: list[str] = ["released (poisoned) memory"]
        self.version = [0] * n
        self.live: list[int | None] = [None] * n  # the residency holding each tensor
        self.full_at: list[int] = [0] * n  # the point its live residency became full
        start = case.start_tier().tolist()
        # each tensor's latest off-device copy: (tier, version, compressed, host copy id)
        self.latest: list[tuple[str, int, bool, int] | None] = [None] * n
        self.host: list[list[int]] = []  # [made point, last point, bytes]
        for t in range(n):
            if start[t] == 1:
                self.latest[t] = ("host", 0, False, self._host(-1, int(case.size[t])))
            elif start[t] == 2:
                self.latest[t] = ("nvme", 0, False, -1)
        owner = np.repeat(np.arange(n), np.diff(case.use_start)).tolist()
        marks = zip(owner, case.uses.tolist(), case.writes_mask().tolist(), strict=True)
        self.writes = set(marks)  # (tensor, step, True) for every use that writes
        self.events = 0
        self.copied: dict[int, int] = {}  # the version each copy-in brought
        self.decodes: dict[int, list[int]] = {}  # step -> compressed copy-ins decoded before it

    def name(self, r: int) -> str:
        row = self.rows[r]
        return f"residency {row.k + 1} of {self.case.ids[row.tensor]}"

    def sig(self, t: int, version: int, small: bool) -> int:
        key = (t, version, small)
        if key not in self.sigs:
            self.sigs[key] = len(self.names)
            form = " (compressed)" if small else ""
            self.names.append(f"the data of {self.case.ids[t]}, version {version}{form}")
        return self.sigs[key]

    def _host(self, point: int, nbytes: int) -> int:
        self.host.append([point, point, nbytes])
        return len(self.host) - 1

    def span(self, r: int, part: str = "all") -> tuple[int, int]:
        """Cells of r: all, its compressed tail, or the head before the tail (the arena
        holds each residency's tail as placement len(rows) + r)."""
        a, b = self.arena.span(r)
        cut = self.arena.span(len(self.rows) + r)[0]
        return {"all": (a, b), "tail": (cut, b), "head": (a, cut)}[part]

    def expect(self, r: int, value: int, why: str, part: str = "all") -> None:
        a, b = self.span(r, part)
        wrong = self.arena.memory[a:b] != value
        if bool(wrong.any()):
            found = int(self.arena.memory[a + int(self.arena.xp.argmax(wrong))])
            raise Corruption(f"{self.name(r)} {why}: its memory holds {self.names[found]}")

    def fill(self, r: int, value: int, part: str = "all") -> None:
        a, b = self.span(r, part)
        self.arena.memory[a:b] = value

    def place(self, r: int, point: int) -> None:
        row, case = self.rows[r], self.case
        t = row.tensor
        _place_checks(case.capacity, row.offset, int(case.size[t]), int(case.alignment[t]),
                      self.name(r))  # fmt: skip
        if self.live[t] is not None:
            raise Corruption(
                f"{self.name(r)} comes in while {self.name(self.live[t])} still holds it"
            )
        self.live[t], self.full_at[t] = r, point

    # --- the plan, point by point -------------------------------------------------------------

    def before_step(self, s: int, r: int) -> None:
        """A decode or recompute that runs before step s (README: plan order)."""
        row, case = self.rows[r], self.case
        t = row.tensor
        if row.how == "recompute":
            if case.recompute_cost is None or case.recompute_cost[t] < 0:
                raise Corruption(
                    f"{self.name(r)} is recomputed, but {case.ids[t]} is not recomputable"
                )
            for j in case.sources[t]:
                q = self.live[j]
                if q is None or self.full_at[j] >= 2 * s:
                    raise Corruption(
                        f"{self.name(r)} is recomputed before step {s} without "
                        f"{case.ids[j]} on the device"
                    )
                self.expect(
                    q, self.sig(j, self.version[j], False), f"is read to recompute {case.ids[t]}"
                )
            self.place(r, 2 * s)
            self.fill(r, self.sig(t, 1, False))  # the value it was produced with
            return
        small = self.sig(t, self.copied[r], True)
        self.expect(r, small, f"is decoded before step {s}", "tail")
        self.full_at[t] = 2 * s
        self.fill(r, self.sig(t, self.copied[r], False))

    def during(self, s: int, produced: list[int], used: list[int]) -> None:
        for r in produced:
            t = self.rows[r].tensor
            self.place(r, 2 * s)
            self.version[t] = 1
            self.fill(r, self.sig(t, 1, False))
        for r in used:
            t = self.rows[r].tensor
            self.expect(
                r,
                self.sig(t, self.version[t], False),
                f"does not hold its data when step {s} uses it",
            )
            produced_now = self.rows[r].how == "produced" and self.rows[r].uses[0] == s
            if (t, s, True) in self.writes and not produced_now:  # production is version 1
                self.version[t] += 1
                self.fill(r, self.sig(t, self.version[t], False))

    def leave(self, s: int, r: int) -> None:
        """After its last use: copied out (as `out` says, or as the tensor's end needs)."""
        row, case = self.rows[r], self.case
        t, point = row.tensor, 2 * s + 1
        version, size = self.version[t], int(case.size[t])
        if row.final:
            if row.out != -1:
                raise Corruption(f"{self.name(r)} is the last of its tensor but names out")
            end = int(case.end_tier()[t])
            if end == 0:  # stays on the device
                return
            have = self.latest[t]
            if end == 1:
                if have and have[:3] == ("host", version, False):
                    self.host[have[3]][1] = 2 * len(case.steps) - 1
                else:
                    self.host.append([point, 2 * len(case.steps) - 1, size])
            self.drop(r)
            return
        out = 0 if row.out == -1 else row.out
        if out == 1:
            if case.csize is None or case.csize[t] == 0:
                raise Corruption(
                    f"{self.name(r)} is parked compressed, but {case.ids[t]} is not compressible"
                )
            self.latest[t] = ("host", version, True, self._host(point, int(case.csize[t])))
        elif out == 2:
            if case.nvme is None:
                raise Corruption(f"{self.name(r)} is parked on nvme, but the case has no nvme tier")
            self.latest[t] = ("nvme", version, False, -1)
        elif out == 0:
            self.latest[t] = ("host", version, False, self._host(point, size))
        self.drop(r)

    def drop(self, r: int) -> None:
        self.fill(r, POISON)
        self.live[self.rows[r].tensor] = None

    def copy_in(self, s: int, r: int) -> None:
        row, case = self.rows[r], self.case
        t = row.tensor
        have = self.latest[t]
        if have is None:
            raise Corruption(
                f"{self.name(r)} is copied in after step {s}, but no copy of {case.ids[t]} "
                "is off the device"
            )
        _, version, small, host = have
        if host >= 0:
            self.host[host][1] = max(self.host[host][1], 2 * row.uses[0] - 1)
        self.place(r, 2 * s + 1)
        self.copied[r] = version
        if small:
            self.full_at[t] = 2**62  # full only once decoded
            self.fill(r, self.sig(t, version, True), "tail")
        else:
            if row.at is not None:
                raise Corruption(
                    f"{self.name(r)} names decode_before, but what it copies in is not compressed"
                )
            self.fill(r, self.sig(t, version, False))

    def schedule_decode(self, s: int, r: int) -> None:
        """A compressed copy-in (after step s) is decoded before step x (default: its
        first use), which must come after the copy-in."""
        row = self.rows[r]
        if self.full_at[row.tensor] != 2**62:
            return
        x = row.uses[0] if row.at is None else row.at
        if x <= s:
            raise Corruption(f"{self.name(r)} is decoded before step {x}, before its copy-in")
        self.decodes.setdefault(x, []).append(r)

    def host_overflow(self) -> str:
        cap = self.case.host_capacity
        if cap is None or not self.host:
            return ""
        n_points = 2 * len(self.case.steps) + 1  # -1 .. 2T-1
        delta = np.zeros(n_points + 1, dtype=object)
        for made, last, nbytes in self.host:
            delta[made + 1] += nbytes
            delta[last + 2] -= nbytes
        held = np.cumsum(delta[:-1])
        worst = int(np.argmax(held))
        if held[worst] <= cap:
            return ""
        return f"host memory holds {int(held[worst])} bytes at point {worst - 1}, more than {cap}"


def replay_offload(case: Any, plan: Any, xp: Any = np, backend: str = "numpy") -> ReplayResult:
    begin = time.perf_counter()
    result = ReplayResult(True, "", backend)
    try:
        rows = _rows(case, plan)
        starts = np.array([row.offset for row in rows], dtype=np.int64)
        tensors = np.array([row.tensor for row in rows], dtype=np.int64)
        sizes = case.size[tensors] if rows else starts
        small = case.csize[tensors] if case.csize is not None and rows else sizes
        small = np.where(small > 0, small, sizes)
        ends = starts + sizes
        arena = Arena(xp, case.capacity, np.concatenate([starts, ends - small]),
                      np.concatenate([ends, ends]))  # fmt: skip
        result.cells, result.cell_bytes = arena.cells, arena.cell_bytes
        result.events = _run(case, rows, arena)
    except Corruption as exc:
        result.ok, result.message = False, f"replay: {exc}"
    result.seconds = time.perf_counter() - begin
    return result


def _run(case: Any, rows: list[_Res], arena: Arena) -> int:
    n_steps = len(case.steps)
    run = _Run(case, rows, arena)
    run.copied = {}
    pre, produce, use, leave, fetch = ([[] for _ in range(n_steps + 1)] for _ in range(5))
    for r, row in enumerate(rows):
        if row.how == "produced":
            produce[row.uses[0]].append(r)
        elif row.how == "recompute":
            if row.at is None or not 0 <= row.at < n_steps:
                raise Corruption(f"{run.name(r)} is recomputed outside the case's steps")
            pre[row.at].append(r)
        else:
            if row.prefetch is None or not -1 <= row.prefetch < n_steps:
                raise Corruption(f"{run.name(r)} has no copy-in step inside the case")
            fetch[row.prefetch + 1].append(r)
        for s in row.uses:
            use[s].append(r)
        leave[row.uses[-1]].append(r)
    for r in fetch[0]:
        run.copy_in(-1, r)
        run.schedule_decode(-1, r)
    for s in range(n_steps):
        # decodes of copies that came in compressed are found as they come in
        for r in sorted(pre[s] + run.decodes.pop(s, [])):
            run.before_step(s, r)
        run.during(s, produce[s], use[s])
        for r in leave[s]:
            run.leave(s, r)
        for r in fetch[s + 1]:
            run.copy_in(s, r)
            run.schedule_decode(s, r)
        run.events += (
            len(pre[s]) + len(produce[s]) + len(use[s]) + len(leave[s]) + len(fetch[s + 1])
        )
    for t, r in enumerate(run.live):
        if r is not None and rows[r].final and int(case.end_tier()[t]) == 0:
            run.expect(r, run.sig(t, run.version[t], False), "does not hold its data at the end")
    overflow = run.host_overflow()
    if overflow:
        raise Corruption(overflow)
    return run.events
