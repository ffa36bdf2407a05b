"""Service settings, from environment variables (`MEMORACE_*`) with embedded defaults.

The API and the workers read the same settings: the database, the broker and
the data directory must agree between them.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from api.service_urls import with_password

ROOT = Path(__file__).resolve().parents[1]
METRICS_TOKEN_MIN = 32


def _env(name: str, default: str) -> str:
    """A setting, or its default where unset or empty (compose passes `MEMORACE_X=` on)."""
    return os.environ.get(f"MEMORACE_{name}") or default


def _int(name: str, default: int) -> int:
    return int(_env(name, str(default)))


def _float(name: str, default: float) -> float:
    return float(_env(name, str(default)))


@dataclass(frozen=True)
class Settings:
    data_dir: Path = field(default_factory=lambda: Path(_env("DATA_DIR", str(ROOT / "var"))))
    database_url: str = ""
    broker_url: str = ""
    sandbox: str = field(default_factory=lambda: _env("SANDBOX", ""))  # "" = best available
    # "1": a worker judges with the local sandbox even where bubblewrap cannot isolate
    # (planners keep no network but read world-readable files): development only, shown
    # as "local UNISOLATED" on /healthz, the admin page and each judging's log.
    allow_unisolated: bool = field(default_factory=lambda: _env("ALLOW_UNISOLATED", "") == "1")
    secret_key: str = field(default_factory=lambda: _env("SECRET_KEY", ""))
    upload_limit_bytes: int = field(
        default_factory=lambda: int(_env("UPLOAD_LIMIT_BYTES", str(16 * 2**20)))
    )
    # A problem package upload, and the import job that unpacks and checks it (a worker
    # runs it in a child process with these limits, never the API).
    package_limit_bytes: int = field(
        default_factory=lambda: int(_env("PACKAGE_LIMIT_BYTES", str(256 * 2**20)))
    )
    import_time_limit_s: float = field(
        default_factory=lambda: float(_env("IMPORT_TIME_LIMIT_S", "600"))
    )
    import_memory_mb: int = field(default_factory=lambda: int(_env("IMPORT_MEMORY_MB", "4096")))
    # At most this many submissions per team per window (seconds).
    rate_limit: int = field(default_factory=lambda: int(_env("RATE_LIMIT", "20")))
    rate_window_s: int = field(default_factory=lambda: int(_env("RATE_WINDOW_S", "300")))
    # The reaper re-queues a queued judging after this long without a worker taking it
    # (a lost broker message) and a running one whose heartbeat is this old (a dead worker).
    requeue_after_s: float = field(default_factory=lambda: float(_env("REQUEUE_AFTER_S", "120")))
    heartbeat_timeout_s: float = field(
        default_factory=lambda: float(_env("HEARTBEAT_TIMEOUT_S", "60"))
    )
    # Every worker, idle or busy, writes its presence this often (worker.presence);
    # /healthz counts it dead once its last beat is heartbeat_timeout_s old.
    worker_heartbeat_s: float = field(default_factory=lambda: _float("WORKER_HEARTBEAT_S", 5.0))
    reap_interval_s: float = field(default_factory=lambda: float(_env("REAP_INTERVAL_S", "30")))
    gpu_slots: int = field(default_factory=lambda: int(_env("GPU_SLOTS", "0")))
    # Session cookies only over HTTPS (set it when the service is behind TLS).
    secure_cookies: bool = field(default_factory=lambda: _env("SECURE_COOKIES", "") == "1")
    # The replay verifier, per problem: "all", or slugs separated by commas; "" = off.
    replay: str = field(default_factory=lambda: _env("REPLAY", ""))
    # "auto": cupy on a worker with a CUDA device, else numpy.
    replay_backend: str = field(default_factory=lambda: _env("REPLAY_BACKEND", "auto"))
    # Password logins (api.access.login): per account and per client address, this many
    # failures are free, then each waits twice as long as the one before (from
    # BACKOFF_S), and LOCK_AFTER failures lock the key for LOCK_S (temporary, never
    # longer: an attacker cannot lock a victim out for good). Failures older than
    # WINDOW_S are forgotten. An address gets more room: a contest hall shares one.
    login_free_failures: int = field(default_factory=lambda: _int("LOGIN_FREE_FAILURES", 3))
    login_lock_after: int = field(default_factory=lambda: _int("LOGIN_LOCK_AFTER", 10))
    login_addr_free_failures: int = field(
        default_factory=lambda: _int("LOGIN_ADDR_FREE_FAILURES", 30)
    )
    login_addr_lock_after: int = field(default_factory=lambda: _int("LOGIN_ADDR_LOCK_AFTER", 100))
    login_backoff_s: float = field(default_factory=lambda: _float("LOGIN_BACKOFF_S", 1.0))
    login_lock_s: float = field(default_factory=lambda: _float("LOGIN_LOCK_S", 900.0))
    login_window_s: float = field(default_factory=lambda: _float("LOGIN_WINDOW_S", 3600.0))
    # Accounts one address may make by sign-up in a login window (api.access.signup).
    signups_per_address: int = field(default_factory=lambda: _int("SIGNUPS_PER_ADDRESS", 5))
    # At most this many password hashes at once per API process (argon2 takes 19 MiB
    # each); a login that waits longer than HASH_WAIT_S for a slot gets 503.
    login_hashes: int = field(default_factory=lambda: _int("LOGIN_HASHES", 2))
    login_hash_wait_s: float = field(default_factory=lambda: _float("LOGIN_HASH_WAIT_S", 5.0))
    # A web login lasts this long (server side; logout ends it at once).
    session_ttl_s: float = field(default_factory=lambda: _float("SESSION_TTL_S", 7 * 86400.0))
    # Live event streams (api.live.events) open at once, per account and per API process;
    # one more is refused with 429. A stream costs memory only (api.live.broadcast feeds them
    # all); the caps bound that memory and the file descriptors (raise `ulimit -n`).
    event_streams_per_user: int = field(default_factory=lambda: _int("EVENT_STREAMS_PER_USER", 200))
    event_streams_per_process: int = field(
        default_factory=lambda: _int("EVENT_STREAMS_PER_PROCESS", 5000)
    )
    # How often a worker looks into the embedded broker's folder for a message (kombu's own
    # default); tests shorten it so that each judging does not wait up to a second.
    queue_poll_s: float = field(default_factory=lambda: _float("QUEUE_POLL_S", 1.0))
    # The broadcaster's one poll of the watched submissions (embedded broker, or Redis down).
    event_poll_s: float = field(default_factory=lambda: _float("EVENT_POLL_S", 0.25))
    # Where uploads, plans and problem packages live (api.blobs): "local" (a folder of
    # the data dir: one host) or "database" (shared by every host); "" = database on
    # PostgreSQL, else local. Each host caches what it reads from the database in
    # data_dir/cache, at most BLOB_CACHE_MB (least recently used goes first).
    blob_store: str = field(default_factory=lambda: _env("BLOB_STORE", ""))
    blob_cache_mb: int = field(default_factory=lambda: _int("BLOB_CACHE_MB", 2048))
    # Built submissions (judge.buildcache), reused when the same files meet the same build
    # command, limits and sandbox again (a rejudge compiles nothing twice): in
    # BUILD_CACHE_DIR ("" = data_dir/cache/builds), at most BUILD_CACHE_MB (0: off).
    build_cache_dir: str = field(default_factory=lambda: _env("BUILD_CACHE_DIR", ""))
    build_cache_mb: int = field(default_factory=lambda: _int("BUILD_CACHE_MB", 1024))
    # A judging's cases run side by side (worker.cases): once built, its worker asks this
    # many more worker slots to help (each a queue message; idle slots take them, busy
    # ones find the work done). -1: one per case beyond the first; 0: one slot per judging.
    case_helpers: int = field(default_factory=lambda: _int("CASE_HELPERS", -1))
    # Judge the reference planners as baselines when a problem version is imported
    # (api.actions.baselines); "0": never (the organizer's contest switch only hides them).
    baselines: bool = field(default_factory=lambda: _env("BASELINES", "1") != "0")
    # Pace hidden cases to their time budget (worker.pacing); "0" only where nobody
    # could read the timing (a test's service, a private rehearsal), never in a contest.
    pace_hidden: bool = field(default_factory=lambda: _env("PACE_HIDDEN", "1") != "0")
    # A live stream's keep-alive comes this long after the last frame it sent (proxies
    # close idle connections; tests make it short).
    sse_keepalive_s: float = field(default_factory=lambda: float(_env("SSE_KEEPALIVE_S", "15")))
    # Freeze what an API process made at startup and by its first requests out of the
    # garbage collector's full passes (api.gc_freeze); "0": never (tests' in-process apps).
    heap_freeze: bool = field(default_factory=lambda: _env("HEAP_FREEZE", "1") != "0")
    # A secret that reads /metrics and nothing else (Prometheus' credentials file), so the
    # scraper needs no organizer's token; "" = only organizers' tokens read /metrics.
    # Shorter than METRICS_TOKEN_MIN characters: refused at start (a guessable secret).
    metrics_token: str = field(default_factory=lambda: _env("METRICS_TOKEN", ""))
    # Where contestants pip-install the judge from (the starter kit's README says it).
    repository_url: str = field(default_factory=lambda: _env("REPOSITORY_URL", ""))

    def __post_init__(self) -> None:
        if self.metrics_token and len(self.metrics_token.strip()) < METRICS_TOKEN_MIN:
            raise ValueError(
                f"MEMORACE_METRICS_TOKEN must be at least {METRICS_TOKEN_MIN} characters "
                "(e.g. openssl rand -hex 32)"
            )
        data = self.data_dir
        if not self.database_url:
            object.__setattr__(
                self, "database_url", _env("DATABASE_URL", f"sqlite:///{data}/db.sqlite")
            )
        if not self.broker_url:
            object.__setattr__(self, "broker_url", _env("BROKER_URL", "filesystem://"))
        # The compose stack's passwords, put into URLs that name none (api.service_urls).
        for name, kind, env in (("database_url", "postgresql", "POSTGRES_PASSWORD"),
                                ("broker_url", "redis", "REDIS_PASSWORD")):  # fmt: skip
            url = with_password(getattr(self, name), _env(env, ""), kind)
            object.__setattr__(self, name, url)
        if not self.blob_store:
            shared = self.database_url.startswith("postgresql")
            object.__setattr__(self, "blob_store", "database" if shared else "local")
        if self.blob_store not in ("local", "database"):
            raise ValueError(f"MEMORACE_BLOB_STORE is local or database, not {self.blob_store!r}")
        if self.blob_store == "database" and self.database_url.startswith("sqlite"):
            # One writer at a time: a blob written beside a request's open write would
            # wait for it. SQLite serves one host anyway.
            raise ValueError("MEMORACE_BLOB_STORE=database needs PostgreSQL; use local")

    def replay_for(self, slug: str) -> str | None:
        """The replay backend for problem `slug`, or None when its plans are not replayed."""
        chosen = {x.strip() for x in self.replay.split(",") if x.strip()}
        return self.replay_backend if "all" in chosen or slug in chosen else None

    @property
    def artifacts(self) -> Path:
        return self.data_dir / "artifacts"

    @property
    def plans(self) -> Path:
        return self.data_dir / "plans"

    @property
    def packages(self) -> Path:
        return self.data_dir / "problems"

    @property
    def blobs(self) -> Path:
        return self.data_dir / "blobs"

    @property
    def cache(self) -> Path:
        return self.data_dir / "cache"

    @property
    def build_cache(self) -> Path:
        return Path(self.build_cache_dir) if self.build_cache_dir else self.cache / "builds"

    @property
    def queue_dir(self) -> Path:
        return self.data_dir / "queue"

    @property
    def imports(self) -> Path:
        return self.data_dir / "imports"

    def ensure_dirs(self) -> None:
        """The data directory and its folders, owner-only (0700): it holds the database,
        the uploaded sources and the hidden cases, so nothing below it is anyone else's
        to read, whatever a file's own mode (scripts/serve also runs under umask 077)."""
        self.data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.data_dir.chmod(0o700)  # also an older, world-readable one
        folders = (self.artifacts, self.plans, self.packages, self.queue_dir, self.imports)
        for path in (*folders, self.blobs, self.cache):
            path.mkdir(mode=0o700, parents=True, exist_ok=True)
        ensure_scratch()


def ensure_scratch() -> Path | None:
    """The scratch folder TMPDIR names (the worker's, in docker-compose.yml), made when
    missing: else Python's `tempfile` silently falls back to /tmp, and a docker sandbox
    then bind-mounts host paths the engine cannot see. Traversable but not listable by
    others (0711), like the per-process folders inside it (worker.scratch): a local
    sandbox's planner user must reach its own folder below. An existing folder keeps its
    mode (TMPDIR may be /tmp). Returns the folder made, if any."""
    name = os.environ.get("TMPDIR", "")
    if not name or Path(name).is_dir():
        return None
    folder = Path(name)
    folder.mkdir(mode=0o711, parents=True, exist_ok=True)
    folder.chmod(0o711)
    if tempfile.tempdir is not None and tempfile.tempdir != name:
        tempfile.tempdir = None  # a choice made while TMPDIR was missing: choose again
    return folder


@cache
def get_settings() -> Settings:
    return Settings()
