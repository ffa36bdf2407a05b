"""How many live streams the open-files limit lets this process hold.

Every stream is a socket. Many systems start processes with a soft limit of 1024
files: past it the accept loop stalls (asyncio pauses accepting on EMFILE), so every
request waits, not only new streams. The API raises its soft limit toward the hard one
(which an unprivileged process may do) and caps its streams below what is left, so
that a stream past the cap is a 429, never a stall.
"""

from __future__ import annotations

import logging
import resource

log = logging.getLogger("memorace.fdlimit")
# Files kept for everything but streams: database and broker connections, ordinary
# requests, problem files, logs.
FD_RESERVE = 256


def plan(wanted: int, soft: int, hard: int) -> tuple[int, int]:
    """(the soft limit to set, the streams it allows) for `wanted` streams."""
    unbounded = resource.RLIM_INFINITY
    need = wanted + FD_RESERVE
    if soft == unbounded or soft >= need:
        return soft, wanted
    new = need if hard == unbounded else max(soft, min(need, hard))
    return new, max(0, min(wanted, new - FD_RESERVE))


def stream_capacity(wanted: int) -> int:
    """Raise this process's soft limit as far as `wanted` streams need (at most to the
    hard limit); the streams the limit then allows."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    new, cap = plan(wanted, soft, hard)
    if new != soft:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (new, hard))
        except (ValueError, OSError) as exc:
            log.warning("cannot raise the open-files limit from %s to %s: %s", soft, new, exc)
            new, cap = plan(wanted, soft, soft)
    if cap < wanted:
        log.warning(
            "open-files limit %s: at most %s live event streams in this process (not %s); "
            "raise `ulimit -n` (the hard limit) to serve more",
            new, cap, wanted,
        )  # fmt: skip
    return cap
