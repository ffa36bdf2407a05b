"""The database: SQLAlchemy 2 ORM models. The schema changes only through Alembic."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Text,
    UniqueConstraint,
    false,
    true,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship


def utcnow() -> datetime:
    return datetime.now(UTC)


def aware(stamp: datetime) -> datetime:
    """SQLite hands datetimes back naive; every stamp is stored in UTC."""
    return stamp if stamp.tzinfo else stamp.replace(tzinfo=UTC)


class Base(DeclarativeBase):
    # Named constraints, so that migrations can refer to them on every backend.
    metadata = MetaData(
        naming_convention={
            "ix": "ix_%(column_0_label)s",
            "uq": "uq_%(table_name)s_%(column_0_name)s",
            "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
            "pk": "pk_%(table_name)s",
        }
    )


Stamp = DateTime(timezone=True)


class Team(Base):
    __tablename__ = "teams"
    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(100), unique=True)
    disqualified: Mapped[bool] = mapped_column(Boolean, default=False)
    # The service's own team (api.actions.baselines): its submissions are the reference planners,
    # shown as labelled baselines, never ranked among the contestants.
    system: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    created_at: Mapped[datetime] = mapped_column(Stamp, default=utcnow)
    # SHA-256 of the code its members give to join it (api.access.signup); None: none made.
    invite_hash: Mapped[str | None] = mapped_column(String(64))


class User(Base):
    __tablename__ = "users"
    id: Mapped[int] = mapped_column(primary_key=True)
    username: Mapped[str] = mapped_column(String(100), unique=True)
    password_hash: Mapped[str] = mapped_column(String(255), default="")  # argon2; "" = no login
    team_id: Mapped[int | None] = mapped_column(ForeignKey("teams.id"), index=True)
    is_admin: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime] = mapped_column(Stamp, default=utcnow)
    # Signed up, waiting for an organizer's approval (api.access.signup): cannot log in yet.
    pending: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    locked_at: Mapped[datetime | None] = mapped_column(Stamp)  # locked by an organizer
    team: Mapped[Team | None] = relationship()

    @property
    def can_log_in(self) -> bool:
        return bool(self.password_hash) and not self.pending and self.locked_at is None


class ApiToken(Base):
    """Only the token's SHA-256 is stored: tokens are 256-bit random, so a fast hash
    is enough (a slow password hash would only slow every API call)."""

    __tablename__ = "api_tokens"
    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"), index=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    name: Mapped[str] = mapped_column(String(100), default="")
    revoked: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime] = mapped_column(Stamp, default=utcnow)
    expires_at: Mapped[datetime | None] = mapped_column(Stamp)  # None = until revoked
    last_used_at: Mapped[datetime | None] = mapped_column(Stamp)
    user: Mapped[User] = relationship()


class WebSession(Base):
    """A logged-in browser: the cookie carries only the random id, whose SHA-256 is
    stored here, so logout (or an admin) ends it on the server."""

    __tablename__ = "web_sessions"
    id: Mapped[int] = mapped_column(primary_key=True)
    session_hash: Mapped[str] = mapped_column(String(64), unique=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"), index=True)
    created_at: Mapped[datetime] = mapped_column(Stamp, default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(Stamp)
    ended_at: Mapped[datetime | None] = mapped_column(Stamp)
    user: Mapped[User] = relationship()


class LoginThrottle(Base):
    """Failed logins per key ("user:<name>" or "addr:<ip>"): backoff, then a lock."""

    __tablename__ = "login_throttle"
    key: Mapped[str] = mapped_column(String(200), primary_key=True)
    failures: Mapped[int] = mapped_column(Integer, default=0)
    last_failure_at: Mapped[datetime | None] = mapped_column(Stamp)
    locked_until: Mapped[datetime | None] = mapped_column(Stamp)


class Problem(Base):
    __tablename__ = "problems"
    id: Mapped[int] = mapped_column(primary_key=True)
    slug: Mapped[str] = mapped_column(String(64), unique=True)
    current_version_id: Mapped[int | None] = mapped_column(Integer)  # no FK: a cycle
    created_at: Mapped[datetime] = mapped_column(Stamp, default=utcnow)


class ProblemVersion(Base):
    __tablename__ = "problem_versions"
    __table_args__ = (UniqueConstraint("problem_id", "number"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    problem_id: Mapped[int] = mapped_column(ForeignKey("problems.id"), index=True)
    number: Mapped[int] = mapped_column(Integer)  # 1, 2, ... per problem
    name: Mapped[str] = mapped_column(String(200))
    type: Mapped[str] = mapped_column(String(32))
    statement: Mapped[str] = mapped_column(Text)
    package_path: Mapped[str] = mapped_column(String(500))  # "" when only the blob holds it
    # The package as a deterministic tar in the blob store (api.blobs); older rows: NULL.
    package_blob: Mapped[str | None] = mapped_column(String(64))
    time_limit_s: Mapped[float] = mapped_column(Float)
    sha256: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(Stamp, default=utcnow)
    problem: Mapped[Problem] = relationship()
    cases: Mapped[list[Case]] = relationship(order_by="Case.name")


class Case(Base):
    __tablename__ = "cases"
    __table_args__ = (UniqueConstraint("version_id", "name"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    version_id: Mapped[int] = mapped_column(ForeignKey("problem_versions.id"), index=True)
    name: Mapped[str] = mapped_column(String(100))
    split: Mapped[str] = mapped_column(String(10))
    weight: Mapped[float] = mapped_column(Float, default=1.0)
    capacity: Mapped[int] = mapped_column(BigInteger)
    lower_bound: Mapped[int] = mapped_column(BigInteger)  # computed once, at import
    items: Mapped[int] = mapped_column(Integer)  # buffers or tensors


class Submission(Base):
    __tablename__ = "submissions"
    id: Mapped[int] = mapped_column(primary_key=True)
    team_id: Mapped[int] = mapped_column(ForeignKey("teams.id"), index=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"))
    version_id: Mapped[int] = mapped_column(ForeignKey("problem_versions.id"), index=True)
    sha256: Mapped[str] = mapped_column(String(64), index=True)
    filename: Mapped[str] = mapped_column(String(200))
    language: Mapped[str] = mapped_column(String(20))
    size: Mapped[int] = mapped_column(Integer)
    # queued | running | done | error; status_detail always says why in words.
    status: Mapped[str] = mapped_column(String(16), default="queued", index=True)
    status_detail: Mapped[str] = mapped_column(Text, default="")
    disqualified: Mapped[bool] = mapped_column(Boolean, default=False)
    public_score: Mapped[float | None] = mapped_column(Float)
    hidden_score: Mapped[float | None] = mapped_column(Float)
    current_judging_id: Mapped[int | None] = mapped_column(Integer)  # the latest final one
    # Chosen by its team for the final judging (api.actions.finals; contests that judge hidden
    # cases only at the end).
    final_pick: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    # The contest it was made in (its board, window, reveal); None: a baseline's, shared
    # by every contest holding its version.
    contest_id: Mapped[int | None] = mapped_column(ForeignKey("contest.id"), index=True)
    created_at: Mapped[datetime] = mapped_column(Stamp, default=utcnow)
    team: Mapped[Team] = relationship()
    user: Mapped[User] = relationship()
    version: Mapped[ProblemVersion] = relationship()


# A judging's status: queued, then running, then final or failed; superseded when a
# rejudge or the final judging replaces it (what every reader of Judging.status compares).
JUDGING_STATUSES = ("queued", "running", "final", "failed", "superseded")
JUDGING_UNDERWAY = ("queued", "running")
JUDGING_ENDED = ("final", "failed", "superseded")


class Judging(Base):
    """One run (or rescore) of a submission; history is kept, the newest final one counts."""

    __tablename__ = "judgings"
    id: Mapped[int] = mapped_column(primary_key=True)
    submission_id: Mapped[int] = mapped_column(ForeignKey("submissions.id"), index=True)
    # judge | rejudge | rescore | final (the hidden cases at the end: api.actions.finals)
    kind: Mapped[str] = mapped_column(String(16), default="judge")
    # The cases it runs: "all", or "public" (a baseline before the reveal; a contest whose
    # hidden cases wait for the final judging: api.actions.finals). Set when a worker takes it.
    split: Mapped[str] = mapped_column(String(8), default="all", server_default="all")
    # one of JUDGING_STATUSES
    status: Mapped[str] = mapped_column(String(16), default="queued", index=True)
    reason: Mapped[str] = mapped_column(Text, default="")
    priority: Mapped[int] = mapped_column(Integer, default=0)  # 0 = first
    attempt: Mapped[int] = mapped_column(Integer, default=0)  # bumped by every (re)start
    worker: Mapped[str] = mapped_column(String(200), default="")
    sandbox: Mapped[str] = mapped_column(String(20), default="")
    build_error: Mapped[str] = mapped_column(Text, default="")
    public_score: Mapped[float | None] = mapped_column(Float)
    hidden_score: Mapped[float | None] = mapped_column(Float)
    enqueued_at: Mapped[datetime] = mapped_column(Stamp, default=utcnow)
    started_at: Mapped[datetime | None] = mapped_column(Stamp)
    heartbeat_at: Mapped[datetime | None] = mapped_column(Stamp)
    finished_at: Mapped[datetime | None] = mapped_column(Stamp)
    created_at: Mapped[datetime] = mapped_column(Stamp, default=utcnow)
    # The build, exported to the blob store once built (worker.cases): helpers on
    # other hosts restore it instead of building again. NULL: none (yet), or no build.
    build_blob: Mapped[str | None] = mapped_column(String(64))
    submission: Mapped[Submission] = relationship()
    results: Mapped[list[CaseResultRow]] = relationship(order_by="CaseResultRow.case")


class CaseRun(Base):
    """A case of a judging's attempt, claimed by one worker process (worker.cases): the
    unique key makes a claim atomic on both databases, the heartbeat tells a dead
    helper, whose case its judging's owner then takes over."""

    __tablename__ = "case_runs"
    __table_args__ = (UniqueConstraint("judging_id", "attempt", "case", name="uq_case_runs_claim"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    judging_id: Mapped[int] = mapped_column(ForeignKey("judgings.id"), index=True)
    attempt: Mapped[int] = mapped_column(Integer)
    case: Mapped[str] = mapped_column(String(100))
    worker: Mapped[str] = mapped_column(String(200))
    status: Mapped[str] = mapped_column(String(16))  # running | done
    takeovers: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    started_at: Mapped[datetime | None] = mapped_column(Stamp)
    heartbeat_at: Mapped[datetime | None] = mapped_column(Stamp)


class CaseResultRow(Base):
    __tablename__ = "case_results"
    # One row per case per judging: a redelivered or duplicated task cannot add a second.
    __table_args__ = (UniqueConstraint("judging_id", "case"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    judging_id: Mapped[int] = mapped_column(ForeignKey("judgings.id"), index=True)
    case: Mapped[str] = mapped_column(String(100))
    split: Mapped[str] = mapped_column(String(10))
    weight: Mapped[float] = mapped_column(Float)
    verdict: Mapped[str] = mapped_column(String(20), index=True)
    message: Mapped[str] = mapped_column(Text, default="")
    peak: Mapped[int | None] = mapped_column(BigInteger)
    lower_bound: Mapped[int] = mapped_column(BigInteger)
    score: Mapped[float] = mapped_column(Float, default=0.0)
    time_s: Mapped[float | None] = mapped_column(Float)
    memory_mb: Mapped[float | None] = mapped_column(Float)
    makespan_us: Mapped[float | None] = mapped_column(Float)  # timed types (offload)
    # interactive types (online): the allocator's time per request, mean and p99, µs
    request_us_mean: Mapped[float | None] = mapped_column(Float)
    request_us_p99: Mapped[float | None] = mapped_column(Float)
    plan_digest: Mapped[str | None] = mapped_column(String(64))
    log: Mapped[str] = mapped_column(Text, default="")
    created_at: Mapped[datetime] = mapped_column(Stamp, default=utcnow)


class Contest(Base):
    """A contest (api.actions.contests): its window, freeze, hidden-case settings, sign-up; its
    problems (ContestProblem) and teams (Registration). Id 1 is the first, made by the
    migration that brought several; one is the installation's current contest, the one
    a request that names none means."""

    __tablename__ = "contest"
    id: Mapped[int] = mapped_column(primary_key=True)
    slug: Mapped[str] = mapped_column(String(64), unique=True, default="main")
    is_current: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    title: Mapped[str] = mapped_column(String(200), default="MemoRace")
    start_at: Mapped[datetime | None] = mapped_column(Stamp)
    end_at: Mapped[datetime | None] = mapped_column(Stamp)
    freeze_at: Mapped[datetime | None] = mapped_column(Stamp)
    hidden_revealed: Mapped[bool] = mapped_column(Boolean, default=False)
    # What contestants see of a hidden case before reveal: "verdict" (its verdict
    # only) or "judged" (only that it was judged).
    hidden_detail: Mapped[str] = mapped_column(String(16), default="verdict")
    # Whether the reference planners show as baselines on the boards (api.actions.baselines).
    baselines: Mapped[bool] = mapped_column(Boolean, default=True, server_default=true())
    # When hidden cases run (api.actions.finals): "submission" (with every judging, their end
    # paced so that it carries no planner-controlled time) or "final" (only in the
    # final judging of each team's picks, started by an organizer at the end).
    hidden_judging: Mapped[str] = mapped_column(
        String(16), default="submission", server_default="submission"
    )
    final_picks: Mapped[int] = mapped_column(Integer, default=1, server_default="1")  # K
    # Who makes accounts (api.access.signup): "closed" (organizers), "open" (anyone), "approval"
    # (anyone; an organizer approves each); and the most members a team may have.
    signup: Mapped[str] = mapped_column(String(16), default="closed", server_default="closed")
    team_size: Mapped[int] = mapped_column(Integer, default=4, server_default="4")


class ContestProblem(Base):
    """A problem in a contest; `version_id` None: its current version (a pinned one
    stays when a newer version is imported)."""

    __tablename__ = "contest_problems"
    __table_args__ = (UniqueConstraint("contest_id", "problem_id"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    contest_id: Mapped[int] = mapped_column(ForeignKey("contest.id"), index=True)
    problem_id: Mapped[int] = mapped_column(ForeignKey("problems.id"), index=True)
    version_id: Mapped[int | None] = mapped_column(ForeignKey("problem_versions.id"))
    position: Mapped[int] = mapped_column(Integer, default=0)


class Registration(Base):
    """A team in a contest: "approved" (it sees the contest and submits), or "pending"
    (asked to join; an organizer approves)."""

    __tablename__ = "registrations"
    __table_args__ = (UniqueConstraint("contest_id", "team_id"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    contest_id: Mapped[int] = mapped_column(ForeignKey("contest.id"), index=True)
    team_id: Mapped[int] = mapped_column(ForeignKey("teams.id"), index=True)
    status: Mapped[str] = mapped_column(String(16), default="approved")
    created_at: Mapped[datetime] = mapped_column(Stamp, default=utcnow)


class Baseline(Base):
    """A reference planner judged as a baseline on a problem version (api.actions.baselines)."""

    __tablename__ = "baselines"
    __table_args__ = (UniqueConstraint("version_id", "name"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    version_id: Mapped[int] = mapped_column(ForeignKey("problem_versions.id"), index=True)
    name: Mapped[str] = mapped_column(String(20))  # naive | greedy | strong
    submission_id: Mapped[int] = mapped_column(ForeignKey("submissions.id"))
    created_at: Mapped[datetime] = mapped_column(Stamp, default=utcnow)
    submission: Mapped[Submission] = relationship()


class ImportJob(Base):
    """A problem package import, run by a worker (not the API process)."""

    __tablename__ = "import_jobs"
    id: Mapped[int] = mapped_column(primary_key=True)
    actor_id: Mapped[int | None] = mapped_column(ForeignKey("users.id"))
    filename: Mapped[str] = mapped_column(String(200), default="")
    sha256: Mapped[str] = mapped_column(String(64), default="")
    # queued | running | done | failed
    status: Mapped[str] = mapped_column(String(16), default="queued", index=True)
    detail: Mapped[str] = mapped_column(Text, default="")
    version_id: Mapped[int | None] = mapped_column(Integer)
    created_at: Mapped[datetime] = mapped_column(Stamp, default=utcnow)
    # When a worker took it (the reaper re-sends a running job whose worker died).
    started_at: Mapped[datetime | None] = mapped_column(Stamp)
    finished_at: Mapped[datetime | None] = mapped_column(Stamp)


class AuditEntry(Base):
    __tablename__ = "audit_log"
    id: Mapped[int] = mapped_column(primary_key=True)
    at: Mapped[datetime] = mapped_column(Stamp, default=utcnow)
    actor_id: Mapped[int | None] = mapped_column(ForeignKey("users.id"))
    action: Mapped[str] = mapped_column(String(50))
    target: Mapped[str] = mapped_column(String(200), default="")
    detail: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    contest_id: Mapped[int | None] = mapped_column(Integer, index=True)  # None: installation's
    actor: Mapped[User | None] = relationship()


class Message(Base):
    """A clarification (a team's question, the jury's answer to that team or to all) or
    an announcement (the jury's, to everyone): api.actions.messages. `contest_id` is the
    contest's (one today: 1)."""

    __tablename__ = "messages"
    id: Mapped[int] = mapped_column(primary_key=True)
    contest_id: Mapped[int] = mapped_column(Integer, default=1, server_default="1", index=True)
    kind: Mapped[str] = mapped_column(String(16))  # clarification | announcement
    team_id: Mapped[int | None] = mapped_column(ForeignKey("teams.id"), index=True)  # the asker's
    author_id: Mapped[int | None] = mapped_column(ForeignKey("users.id"))
    problem: Mapped[str] = mapped_column(String(64), default="")  # a slug, or "" (general)
    text: Mapped[str] = mapped_column(Text)  # the question or the announcement
    answer: Mapped[str] = mapped_column(Text, default="")
    # Who sees the answer and the question: "team" (the asker's) or "all".
    audience: Mapped[str] = mapped_column(String(8), default="team")
    answered_by: Mapped[int | None] = mapped_column(ForeignKey("users.id"))
    created_at: Mapped[datetime] = mapped_column(Stamp, default=utcnow)
    answered_at: Mapped[datetime | None] = mapped_column(Stamp)
    team: Mapped[Team | None] = relationship()


class WorkerRow(Base):
    """A Celery worker's presence (worker.presence): written at start, every heartbeat
    and at a clean stop. A killed worker's row stays; its stale `last_seen` says so."""

    __tablename__ = "workers"
    name: Mapped[str] = mapped_column(String(200), primary_key=True)  # Celery's nodename
    host: Mapped[str] = mapped_column(String(200), default="")
    pid: Mapped[int] = mapped_column(Integer, default=0)
    gpu_slot: Mapped[int | None] = mapped_column(Integer)
    sandbox: Mapped[str] = mapped_column(String(20), default="")
    version: Mapped[str] = mapped_column(String(50), default="")
    # running | stopping (finishing its task, taking no new one) | stopped
    state: Mapped[str] = mapped_column(String(16), default="running")
    current_task: Mapped[str] = mapped_column(String(100), default="")  # "" = idle
    current_judging_id: Mapped[int | None] = mapped_column(Integer)  # no FK: never blocks
    started_at: Mapped[datetime] = mapped_column(Stamp, default=utcnow)
    last_seen: Mapped[datetime] = mapped_column(Stamp, default=utcnow)
    stopped_at: Mapped[datetime | None] = mapped_column(Stamp)


class BoardState(Base):
    """One row (id 1): a counter bumped in the same transaction as any change that can
    move a leaderboard (api.db.board), so every API process knows when its cached
    boards are stale, and clients get an ETag, with one indexed read."""

    __tablename__ = "board_state"
    id: Mapped[int] = mapped_column(primary_key=True)
    version: Mapped[int] = mapped_column(BigInteger, default=0)


class Blob(Base):
    """A content-addressed file of the database blob store (api.blobs.database); its
    bytes are the `blob_chunks` rows in order. Written in one transaction with them."""

    __tablename__ = "blobs"
    sha256: Mapped[str] = mapped_column(String(64), primary_key=True)
    size: Mapped[int] = mapped_column(BigInteger)
    created_at: Mapped[datetime] = mapped_column(Stamp, default=utcnow)


class BlobChunk(Base):
    __tablename__ = "blob_chunks"
    sha256: Mapped[str] = mapped_column(String(64), primary_key=True)
    seq: Mapped[int] = mapped_column(Integer, primary_key=True)
    data: Mapped[bytes] = mapped_column(LargeBinary)


class NewsRow(Base):
    """News of a change (api.news) where no Redis carries it: on the embedded backend a
    writer adds a row in the same transaction as its change (SQLite commits one writer
    at a time, so ids rise in commit order), and each API process tails the table."""

    __tablename__ = "news"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    text: Mapped[str] = mapped_column(String(200))
    at: Mapped[datetime] = mapped_column(Stamp, default=utcnow)
