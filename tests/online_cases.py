"""What the `online` tests share: small allocators over the protocol, random traces and
packages made from them."""

from __future__ import annotations

import random
from pathlib import Path

from judge.types.online.case import format_events

# First fit over a sorted list of live ranges: valid on every trace that fits.
FIRST_FIT_PY = """\
import sys
live = {}  # id -> (offset, size)
out = sys.stdout
for line in sys.stdin:
    w = line.split()
    if w[0] == "a":
        size, align = int(w[2]), int(w[3])
        spans = sorted(live.values())
        at = 0
        for off, sz in spans:
            at = -(-at // align) * align
            if at + size <= off:
                break
            at = max(at, off + sz)
        at = -(-at // align) * align
        live[w[1]] = (at, size)
        out.write(f"{at}\\n")
        out.flush()
    elif w[0] == "f":
        live.pop(w[1])
    elif w[0] == "end":
        break
"""

LEFTOVER_MARK = "memorace-leftover"  # in the command line of a process left on purpose

# The start of a hostile allocator (KIND_NAME: its kind): case "b-clean", judged after
# the hostile "a-hostile", answers garbage (failing itself) when a process of the earlier
# case, or a setting it could leave on the docker supervisor, is still there.
CLEAN_CHECK = """\
import json, os, resource, signal, sys, time
KIND = "KIND_NAME"
name = json.load(open(os.environ["MEMORACE_CASE_DIR"] + "/case.json"))["name"]
if name == "b-clean":
    if os.nice(0) != 0 or resource.getrlimit(resource.RLIMIT_NOFILE)[0] == 4242:
        print("tainted", flush=True)
    for pid in os.listdir("/proc"):
        try:
            if b"MARK" in open(f"/proc/{pid}/cmdline", "rb").read():
                print("leftover", flush=True)
        except OSError:
            pass
    KIND = "clean"
""".replace("MARK", LEFTOVER_MARK)


def hostile_allocator(hooks: str, per_request: str, tail: str = "") -> str:
    """CLEAN_CHECK, `hooks` (what the kinds do; MARK names a leftover), then first fit
    running `per_request` on each event line before it answers, then `tail`."""
    first_fit = FIRST_FIT_PY.replace("w = line.split()\n", "w = line.split()\n" + per_request, 1)
    first_fit = first_fit.replace("live.pop(w[1])", "live.pop(w[1], None)")
    return CLEAN_CHECK + hooks.replace("MARK", LEFTOVER_MARK) + first_fit + tail


# A bump pointer that never reuses: trivial and fast (the speed benchmark's allocator).
BUMP_CPP = r"""
#include <cstdio>
#include <cstring>
#include <cstdlib>
int main() {
    static char line[1 << 16];
    unsigned long long top = 0;
    while (fgets(line, sizeof line, stdin)) {
        if (line[0] == 'a') {
            char *p = strchr(line + 2, ' ');
            unsigned long long size = strtoull(p + 1, &p, 10);
            unsigned long long align = strtoull(p + 1, &p, 10);
            top = (top + align - 1) / align * align;
            printf("%llu\n", top);
            fflush(stdout);
            top += size;
        } else if (line[0] == 'e') {
            break;
        }
    }
    return 0;
}
"""


def random_trace(
    rng: random.Random, requests: int, hints: tuple[str, ...] = ("kind",)
) -> list[tuple]:
    """Random requests and frees (each allocation freed later or never)."""
    events: list[tuple] = []
    live: list[str] = []
    for n in range(requests):
        while live and rng.random() < 0.5:
            events.append(("f", live.pop(rng.randrange(len(live)))))
        bid = f"b{n}"
        size = rng.choice([1, 7, 64, 100, 512, 4096, rng.randint(1, 10_000)])
        align = rng.choice([1, 1, 8, 64, 512])
        events.append(("a", bid, size, align, tuple(rng.choice("xyz") for _ in hints)))
        live.append(bid)
    return events


def make_package(
    root: Path,
    cases: dict[str, str],
    capacity: int = 2**40,
    time_limit_s: float = 10.0,
    slug: str = "online-test",
) -> Path:
    """A package of type online whose public cases are `cases` (name -> events text)."""
    pkg = root / slug
    (pkg / "data" / "public").mkdir(parents=True, exist_ok=True)
    lines = [
        f'slug = "{slug}"',
        'name = "online test"',
        'type = "online"',
        "version = 1",
        "",
        "[limits]",
        f"time_limit_s = {time_limit_s}",
        "memory_limit_mb = 1024",
        "cpus = 1",
        "gpus = 0",
    ]
    for name, text in cases.items():
        (pkg / "data" / "public" / f"{name}.events").write_text(text)
        lines += ["", "[[cases]]", f'name = "{name}"', 'split = "public"', f"capacity = {capacity}"]
    (pkg / "problem.toml").write_text("\n".join(lines) + "\n")
    (pkg / "statement.md").write_text("# online test\n")
    return pkg


def trace_text(events: list[tuple], hints: tuple[str, ...] = ("kind",)) -> str:
    return format_events(hints, events)
