"""Keep the garbage collector's full passes short in an API process.

A full pass (generation 2) walks every tracked object and holds the GIL all the while,
so the event loop stops for its length. An API process holds ~200,000 tracked objects
after its first requests, nearly all of them made once and kept for the process's life
(modules, classes, functions, compiled templates and queries): measured at 500 clients
on PostgreSQL, full passes took 120-230 ms, and every request in flight waited for them
(14-15 ms with what `settle` froze left out).
`settle` collects once and moves what survives into the permanent generation
(gc.freeze), which later passes skip: it runs at startup and again once the first
requests have imported and compiled what they need lazily. Objects made later are still
collected as usual; frozen objects freed later by reference counting are freed as usual.
"""

from __future__ import annotations

import asyncio
import gc
import logging

log = logging.getLogger("memorace.api")
WARM_S = 20.0  # after startup: the first requests have made what they make once


def settle() -> None:
    """Collect, then freeze what survives."""
    gc.collect()
    gc.freeze()
    log.info("heap settled: %d objects frozen", gc.get_freeze_count())


def settle_now_and_after_warmup() -> asyncio.TimerHandle:
    settle()
    return asyncio.get_running_loop().call_later(WARM_S, settle)
