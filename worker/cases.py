"""One judging's cases judged side by side, by several worker slots on any host.

The judging's owner (the worker that claimed it: worker.judging.run_judging) builds,
keeps the build in its host's build cache and in the blob store, then asks for helpers
(CASES_TASK messages). Every process, owner or helper, then takes the judging's cases
one by one: a claim is a `case_runs` row, whose unique (judging, attempt, case) key
makes it atomic on SQLite and PostgreSQL alike. Helpers restore the owner's build and
never build; one that cannot reach it, or finds nothing left, just ends.

The owner stays until every case is stored: it takes over a case whose helper stopped
beating (SIGKILL, a lost host), so a lost helper costs a delay, never a case, and the
reaper's view is unchanged (one judging, one live owner). A lost owner is the reaper's,
as before: the judging restarts under a new attempt and the old attempt's helpers find
themselves superseded at their next claim or store.

Cases are taken public first, then hidden, each in package order, and no hidden case
starts before every public case is done (stored): a hidden case never runs beside a
public one of the same judging, so its planner cannot slow a public case that shows
(its time, or a plan whose quality its planner made of its own clock) what the hidden
case holds; no public result's arrival can tell how long a hidden case took, and no
public case runs again (a take-over) once a hidden one has run. All this holds within
one attempt (a restarted judging runs its public cases again). Contestants may see
every public result while the judging runs. The cost: the slots wait for the last
public case before the hidden ones start (a helper waits only while hidden cases are
left over for it).
"""

from __future__ import annotations

import logging
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path

from sqlalchemy import delete, func, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from api.blobs import BlobCorrupt, BlobMissing, blob_store
from api.db.models import CaseRun, Judging, aware, utcnow
from api.db.session import session_scope
from api.settings import Settings
from judge.buildcache import BuildCache
from judge.package import CaseSpec
from worker.results import add_line, owned

log = logging.getLogger("memorace.worker")
POLL_S = 0.5  # how often an owner with nothing left to take looks at its helpers' cases
SHARE_MAX_BYTES = 256 * 2**20  # a bigger build stays on its host (collected: worker.build_blobs)
CLAIM_TRIES = 20  # SQLite: a claim that lost a race on the unique key tries the next case
WAIT = ""  # a claim's answer while the hidden cases wait for the public ones to be done


def claim_order(specs: list[CaseSpec]) -> list[CaseSpec]:
    """Public cases first, then the others, each in package order."""
    return sorted(specs, key=lambda s: s.split != "public")


class CaseClaims:
    """The `pick` of one process judging one attempt of a judging (judge.pipeline)."""

    def __init__(
        self,
        settings: Settings,
        judging_id: int,
        attempt: int,
        worker: str,
        owner: bool,
        on_built: Callable[[int], object] | None = None,
    ):
        self.url, self.judging_id, self.attempt = settings.database_url, judging_id, attempt
        self.worker, self.owner, self.on_built = worker, owner, on_built
        self.stale = timedelta(seconds=settings.heartbeat_timeout_s)
        # A case running longer than this is taken over even while its helper beats (a
        # helper stuck in a case); set once the problem's time limit is known.
        self.deadline: timedelta | None = None

    def __call__(self, specs: list[CaseSpec]) -> Iterator[CaseSpec]:
        order = claim_order(specs)
        by_name = {s.name: s for s in order}
        public = {s.name for s in order if s.split == "public"}
        if self.on_built is not None and len(order) > 1:
            self.on_built(len(order))  # the build stands: others may help from now on
        while True:
            name = self._next([s.name for s in order], public)
            if name:
                yield by_name[name]
            elif name is None and (not self.owner or self._all_done(len(order))):
                return
            else:  # the owner waits for its helpers; anyone, for the public cases' end
                time.sleep(POLL_S)

    def _next(self, names: list[str], public: set[str]) -> str | None:
        for _ in range(CLAIM_TRIES + len(names)):  # each lost race: one more case taken
            try:
                return self._claim(names, public)
            except IntegrityError:  # another process claimed that case first: look again
                continue
        return None

    def _claim(self, names: list[str], public: set[str]) -> str | None:
        """A case newly taken (or taken over), WAIT, or None: nothing left to take."""
        with session_scope(self.url) as db:
            j = owned(db, self.judging_id, self.attempt)  # PostgreSQL: claims wait in line
            runs = {
                r.case: r
                for r in db.scalars(
                    select(CaseRun).where(
                        CaseRun.judging_id == j.id, CaseRun.attempt == self.attempt
                    )
                )
            }
            now = utcnow()
            if not self.owner and fresher_waits(db, j):
                return None  # a helper of a rejudge or baseline makes way for fresh work
            public_open = any(n not in runs or runs[n].status != "done" for n in public)
            for name in names:
                if name not in runs and name not in public and public_open:
                    break  # the hidden ones wait (the owner still takes over below)
                if name not in runs:
                    db.add(CaseRun(judging_id=j.id, attempt=self.attempt, case=name,
                                   worker=self.worker, status="running", started_at=now,
                                   heartbeat_at=now))  # fmt: skip
                    db.flush()
                    return name
            waiting = public_open and len(runs) < len(names)
            if not self.owner:
                return WAIT if waiting and self._helper_waits(runs, names, public) else None
            for name in names:
                run = runs.get(name)
                why = self._lost(run) if run and run.status == "running" else ""
                if why and self._take_over(db, run):
                    j.reason = add_line(
                        j.reason,
                        f"{now:%H:%M:%S} case {name}: worker {run.worker} {why}; "
                        f"taken over by {self.worker}",
                    )
                    return name
            return WAIT if waiting else None

    def _helper_waits(self, runs: dict[str, CaseRun], names: list[str], public: set[str]) -> bool:
        """Whether a helper waits for the public cases' end: only while hidden cases are
        left over for it (more than the processes now running public cases take when
        theirs end), and no public case is abandoned (lost a whole heartbeat timeout
        past the owner's take-over: the owner is gone too, the reaper restarts the
        judging, and a waiting helper would hold its slot from that)."""
        hidden_left = sum(1 for n in names if n not in public and n not in runs)
        running = [r for n, r in runs.items() if n in public and r.status == "running"]
        if hidden_left <= len(running):
            return False
        return not any(self._lost(r, grace=self.stale) for r in running)

    def _lost(self, run: CaseRun, grace: timedelta = timedelta(0)) -> str:
        """Why a running case is taken for lost ("" if it is not), `grace` past when."""
        now, beat = utcnow() - grace, run.heartbeat_at
        if beat is None or now - aware(beat) >= self.stale:
            return "stopped answering"
        started = run.started_at
        if self.deadline is not None and started and now - aware(started) >= self.deadline:
            return "passed the case's deadline"
        return ""

    def _take_over(self, db: Session, run: CaseRun) -> bool:
        """One conditional write: a helper that gives the case back (release) or stores
        it meanwhile leaves nothing to take."""
        taken = db.execute(
            update(CaseRun)
            .where(CaseRun.id == run.id, CaseRun.worker == run.worker,
                   CaseRun.status == "running")
            .values(worker=self.worker, heartbeat_at=utcnow(), started_at=utcnow(),
                    takeovers=CaseRun.takeovers + 1)
        )  # fmt: skip
        return taken.rowcount == 1

    def _all_done(self, total: int) -> bool:
        """Every case done: a case is marked done only once it is stored (or found stored)
        and its pacing (worker.pacing) is over, so the judging's end never comes before."""
        with session_scope(self.url) as db:
            owned(db, self.judging_id, self.attempt)
            done = db.scalar(
                select(func.count(CaseRun.id)).where(
                    CaseRun.judging_id == self.judging_id, CaseRun.attempt == self.attempt,
                    CaseRun.status == "done",
                )
            )  # fmt: skip
            return (done or 0) >= total

    def done(self, case: str) -> None:
        """`case` is stored and its pacing over (or it was stored by another process)."""
        with session_scope(self.url) as db:
            db.execute(
                update(CaseRun)
                .where(CaseRun.judging_id == self.judging_id, CaseRun.attempt == self.attempt,
                       CaseRun.case == case, CaseRun.worker == self.worker)
                .values(status="done", heartbeat_at=utcnow())
            )  # fmt: skip

    def release(self) -> None:
        """Give back the cases this process took but did not store (a helper's own
        failure): the owner takes them again at once instead of waiting for a stale beat."""
        with session_scope(self.url) as db:
            db.execute(
                delete(CaseRun).where(
                    CaseRun.judging_id == self.judging_id, CaseRun.attempt == self.attempt,
                    CaseRun.worker == self.worker, CaseRun.status == "running",
                )
            )  # fmt: skip


class Heartbeat:
    """Every few seconds: this process's running cases are alive, and (its owner) the
    judging is, so that the reaper can tell a dead owner and the owner a dead helper."""

    def __init__(
        self, url: str, judging_id: int, attempt: int, worker: str, every_s: float, owner: bool
    ):
        self.url, self.judging_id, self.attempt = url, judging_id, attempt
        self.worker, self.every_s, self.owner = worker, every_s, owner
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True)

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self.stopped.set()

    def _loop(self) -> None:
        while not self.stopped.wait(self.every_s):
            try:
                self.beat()
            except Exception as exc:  # a database hiccup must not kill the judging
                log.warning("heartbeat of judging %s failed: %s", self.judging_id, exc)

    def beat(self) -> None:
        now = utcnow()
        with session_scope(self.url) as db:
            if self.owner:
                db.execute(
                    update(Judging)
                    .where(Judging.id == self.judging_id, Judging.attempt == self.attempt)
                    .values(heartbeat_at=now)
                )
            db.execute(
                update(CaseRun)
                .where(CaseRun.judging_id == self.judging_id, CaseRun.attempt == self.attempt,
                       CaseRun.worker == self.worker, CaseRun.status == "running")
                .values(heartbeat_at=now)
            )  # fmt: skip


class BlobShare:
    """The build's way to helpers on other hosts (judge.buildcache.BuildShare): the
    owner packs its build cache entry into the blob store once and notes it on the
    judging; a helper whose host lacks the entry fetches and unpacks it."""

    def __init__(self, settings: Settings, judging_id: int, reuse_only: bool, helpers: int = 0):
        self.settings, self.judging_id, self.reuse_only = settings, judging_id, reuse_only
        self.helpers = helpers  # the helpers its owner will ask for: none, nothing to share

    def publish(self, key: str, cache: BuildCache) -> None:
        if self.settings.blob_store != "database" or self.helpers == 0:
            return  # one host (a local store): its helpers share its build cache already
        with tempfile.TemporaryDirectory(prefix="memorace-build-") as tmp:
            packed = Path(tmp) / "build.tar"
            if not cache.pack(key, packed) or packed.stat().st_size > SHARE_MAX_BYTES:
                return  # helpers elsewhere then find no build and leave the cases here
            try:
                sha = blob_store(self.settings).put_file(packed)
            except Exception as exc:  # helpers on this host still have the build cache
                log.warning("build of judging %s not kept in the blob store: %s",
                            self.judging_id, exc)  # fmt: skip
                return
        with session_scope(self.settings.database_url) as db:
            db.execute(
                update(Judging).where(Judging.id == self.judging_id).values(build_blob=f"{sha}")
            )

    def fetch(self, key: str, cache: BuildCache) -> bool:
        with session_scope(self.settings.database_url) as db:
            sha = db.scalar(select(Judging.build_blob).where(Judging.id == self.judging_id))
        if not sha:
            return False
        try:
            packed = blob_store(self.settings).local_path(sha)
        except (BlobMissing, BlobCorrupt) as exc:
            log.warning("build of judging %s unreadable in the blob store: %s",
                        self.judging_id, exc)  # fmt: skip
            return False
        return cache.unpack(key, packed)


def fresher_waits(db: Session, j: Judging) -> bool:
    """Whether a judging of a higher priority (a lower number) waits in the queue."""
    fresher = select(Judging.id).where(Judging.status == "queued", Judging.priority < j.priority)
    return db.scalar(fresher.limit(1)) is not None


def has_unclaimed(settings: Settings, judging_id: int, attempt: int, cases: int) -> bool:
    """Whether a helper may find work: the attempt runs and not all its cases are taken
    (a cheap look before a helper opens a sandbox session for nothing)."""
    with session_scope(settings.database_url) as db:
        j = db.get(Judging, judging_id)
        if j is None or j.status != "running" or j.attempt != attempt:
            return False
        taken = db.scalar(
            select(func.count(CaseRun.id)).where(
                CaseRun.judging_id == judging_id, CaseRun.attempt == attempt
            )
        )
        return (taken or 0) < cases


def helpers_wanted(settings: Settings, cases: int) -> int:
    """How many helpers an owner asks for: MEMORACE_CASE_HELPERS, at most one per case
    beyond its own first."""
    most = max(cases - 1, 0)
    return most if settings.case_helpers < 0 else min(settings.case_helpers, most)
