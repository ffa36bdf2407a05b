"""The timing channel of hidden cases, measured as an attacker would use it.

A contestant's planner sleeps `symbol x STEP` seconds on the hidden cases (split over
them); the contestant follows the submission's live events and times the judging's end
against its last public result, then decodes the symbol. Over many submissions with
random symbols the benchmark prints the mutual information between the symbol sent and
the symbol decoded, in bits per submission (and the Miller-Madow bias correction, since
a few dozen trials overstate it), for each mode:

  unpaced  hidden cases at submission time, hidden_detail "judged", no pacing (before)
  paced    the same with worker.pacing (the default)
  final    hidden cases only in the final judging (api.actions.finals)
  verdicts-verdict, verdicts-judged   the verdict channel: the planner chooses each
           hidden case's verdict, the contestant reads the verdicts shown

    .venv/bin/python benchmarks/hidden_channel.py [--backend embedded|postgres]
        [--modes unpaced,paced,final] [--trials 24] [--levels 8]
"""

from __future__ import annotations

import argparse
import json
import math
import random
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.service import Service, postgres_database, redis_server, start_service

SLUG = "channel"
HIDDEN = 2
STEP_S = 0.25  # seconds per symbol step, over all hidden cases
TIME_LIMIT_S = 2.0
CASE = "id,lower,upper,size\na,0,2,8\nb,1,3,8\nc,2,4,8\n"


def write_package(root: Path) -> Path:
    package = root / SLUG
    for split in ("public", "hidden"):
        (package / "data" / split).mkdir(parents=True, exist_ok=True)
    lines = [f'slug = "{SLUG}"', 'name = "Channel"', 'type = "offset"', "version = 1", "",
             "[limits]", f"time_limit_s = {TIME_LIMIT_S}", "memory_limit_mb = 512", ""]  # fmt: skip
    names = [("public", "pub")] + [("hidden", f"sec-{i}") for i in range(HIDDEN)]
    for split, name in names:
        (package / "data" / split / f"{name}.csv").write_text(CASE)
        lines += ["[[cases]]", f'name = "{name}"', f'split = "{split}"', "capacity = 1024", ""]
    (package / "problem.toml").write_text("\n".join(lines))
    (package / "statement.md").write_text("# Channel\n")
    return package


def planner(symbol: int, nonce: int) -> str:
    """Sleeps symbol x STEP_S in all over the hidden cases (a share on each)."""
    share = symbol * STEP_S / HIDDEN
    return f"""\
# nonce {nonce}
import json, os, time
folder = os.environ["MEMORACE_CASE_DIR"]
if json.load(open(os.path.join(folder, "case.json")))["name"].startswith("sec-"):
    time.sleep({share})
with open(os.path.join(os.environ["MEMORACE_OUT_DIR"], "plan.csv"), "w") as out:
    out.write("id,offset\\na,0\\nb,8\\nc,16\\n")
"""


VERDICT_PLANS = ("id,offset\na,0\nb,8\nc,16\n", "id,offset\na,0\nb,0\nc,0\n", "garbage")
VERDICTS = ("OK", "INVALID_PLAN", "BAD_OUTPUT", "RUNTIME_ERROR")  # what each digit gives


def verdict_planner(symbol: int, nonce: int) -> str:
    """Hidden case i gets the verdict of base-4 digit i of `symbol`."""
    return f"""\
# nonce {nonce}
import json, os, sys
name = json.load(open(os.path.join(os.environ["MEMORACE_CASE_DIR"], "case.json")))["name"]
digit = {symbol} // 4 ** int(name[4:]) % 4 if name.startswith("sec-") else 0
if digit == 3:
    sys.exit(3)
with open(os.path.join(os.environ["MEMORACE_OUT_DIR"], "plan.csv"), "w") as out:
    out.write({VERDICT_PLANS!r}[digit])
"""


def read_verdicts(service: Service, token: str, sub_id: int) -> int:
    """The symbol the contestant reads from the hidden verdicts shown (0 when withheld)."""
    body = service.wait_done(token, sub_id)
    symbol = 0
    for r in body["results"]:
        if r["split"] == "hidden" and r["verdict"] in VERDICTS:
            symbol += VERDICTS.index(r["verdict"]) * 4 ** int(r["case"][4:])
    return symbol


def observed_gap(service: Service, token: str, sub_id: int) -> float:
    """Seconds from the last public case event to the final status, as the contestant
    sees them on the live stream."""
    last_public, end, _ = stream_times(service, token, sub_id)
    return end - last_public


def stream_times(service: Service, token: str, sub_id: int) -> tuple[float, float, list[float]]:
    """When the contestant's stream brought the last public case, the final status and
    each keep-alive (monotonic seconds)."""
    url = f"{service.url}/api/v1/submissions/{sub_id}/events"
    last_public = end = None
    keepalives = []
    headers = {"Authorization": f"Bearer {token}"}
    with httpx.stream("GET", url, headers=headers, timeout=300) as reply:
        name = ""
        for line in reply.iter_lines():
            now = time.monotonic()
            if line.startswith(": keep-alive"):
                keepalives.append(now)
            elif line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data: "):
                data = json.loads(line[6:])
                if name == "case" and data.get("split") == "public":
                    last_public = now
                if name == "status" and data["status"] in ("done", "error") and end is None:
                    end = now
                if name == "end":
                    break
    assert last_public is not None and end is not None, "no public case or no end seen"
    return last_public, end, keepalives


def mutual_information(pairs: list[tuple[int, int]]) -> tuple[float, float]:
    """(plug-in estimate, Miller-Madow corrected) of I(sent; decoded) in bits."""
    n = len(pairs)
    joint, sent, got = Counter(pairs), Counter(a for a, _ in pairs), Counter(b for _, b in pairs)

    def entropy(counts: Counter) -> float:
        return -sum(c / n * math.log2(c / n) for c in counts.values())

    plug_in = entropy(sent) + entropy(got) - entropy(joint)
    # Each entropy's plug-in estimate is low by (K - 1) / 2n nats (Miller-Madow).
    correction = (len(sent) + len(got) - len(joint) - 1) / (2 * n * math.log(2))
    return plug_in, max(0.0, plug_in + correction)


def above_chance(pairs: list[tuple[int, int]], shuffles: int = 500) -> float:
    """The plug-in estimate less its mean over shuffled pairings (what the same symbols
    and readings give with no channel at all): few trials overstate the plug-in."""
    rng = random.Random(3)
    sent, got = [a for a, _ in pairs], [b for _, b in pairs]
    null = 0.0
    for _ in range(shuffles):
        rng.shuffle(got)
        null += mutual_information(list(zip(sent, got, strict=True)))[0] / shuffles
    return max(0.0, mutual_information(pairs)[0] - null)


def linear_capacity(gaps: list[tuple[int, float]]) -> tuple[float, float, float]:
    """(slope in seconds seen per second slept, residual spread in s, bits): the capacity
    of the channel as a linear one with Gaussian noise, 0.5 log2(1 + signal / noise),
    which does not depend on the attacker's choice of steps or decoder."""
    slept = [s * STEP_S for s, _ in gaps]
    seen = [g for _, g in gaps]
    fit = statistics.linear_regression(slept, seen)
    residual = [g - (fit.slope * x + fit.intercept) for x, g in zip(slept, seen, strict=True)]
    noise = statistics.pvariance(residual) or 1e-12
    signal = fit.slope**2 * statistics.pvariance(slept)
    return fit.slope, math.sqrt(noise), 0.5 * math.log2(1 + signal / noise)


def decode(gaps: list[tuple[int, float]], levels: int) -> list[tuple[int, int]]:
    """The attacker's decoder: the offset is learnt from the smallest gap seen (symbol 0
    sent on purpose first), then each gap is read as the nearest step."""
    offset = min(g for _, g in gaps)
    return [(s, min(levels - 1, max(0, round((g - offset) / STEP_S)))) for s, g in gaps]


def run_verdicts(service: Service, token: str, detail: str, trials: int) -> None:
    """The verdict channel: each hidden case's verdict chosen by the planner."""
    settings = {"hidden_detail": detail, "hidden_judging": "submission"}
    assert service.api("PUT", "/api/v1/admin/contest", json=settings).status_code == 200
    levels, rng = 4**HIDDEN, random.Random(11)
    folder = Path(tempfile.mkdtemp(prefix="channel-"))
    pairs = []
    for i in range(trials):
        symbol = rng.randrange(levels)
        path = folder / f"v{detail}{i}.py"
        path.write_text(verdict_planner(symbol, i))
        sub = service.submit(token, SLUG, path)
        pairs.append((symbol, read_verdicts(service, token, sub["id"])))
    plug_in, corrected = mutual_information(pairs)
    correct = sum(a == b for a, b in pairs)
    print(f"verdicts ({detail}) {trials} submissions, {levels} symbols "
          f"({math.log2(levels):.0f} bits sent): decoded right {correct}/{trials}, "
          f"I = {plug_in:.2f} bits plug-in, {corrected:.2f} corrected, "
          f"{above_chance(pairs):.2f} above chance",
          flush=True)  # fmt: skip


def run_mode(service: Service, token: str, mode: str, trials: int, levels: int) -> None:
    if mode.startswith("verdicts-"):  # verdicts-verdict, verdicts-judged
        run_verdicts(service, token, mode.split("-", 1)[1], trials)
        return
    settings = {"hidden_detail": "judged",
                "hidden_judging": "final" if mode == "final" else "submission"}  # fmt: skip
    assert service.api("PUT", "/api/v1/admin/contest", json=settings).status_code == 200
    rng = random.Random(7)
    symbols = [0, levels - 1] + [rng.randrange(levels) for _ in range(trials - 2)]
    gaps = []
    folder = Path(tempfile.mkdtemp(prefix="channel-"))
    for i, symbol in enumerate(symbols):
        path = folder / f"p{mode}{i}.py"
        path.write_text(planner(symbol, i))
        sub = service.submit(token, SLUG, path)
        gaps.append((symbol, observed_gap(service, token, sub["id"])))
    pairs = decode(gaps, levels)
    plug_in, corrected = mutual_information(pairs)
    slope, noise, bits = linear_capacity(gaps)
    spread = [g for _, g in gaps]
    correct = sum(a == b for a, b in pairs)
    print(f"{mode:8} {trials} submissions, {levels} symbols ({math.log2(levels):.0f} bits sent): "
          f"gap {min(spread):.2f}-{max(spread):.2f} s, decoded right {correct}/{trials}, "
          f"I = {plug_in:.2f} bits plug-in, {corrected:.2f} corrected, "
          f"{above_chance(pairs):.2f} above chance; slope {slope:.3f} s/s, "
          f"noise {noise:.3f} s, linear capacity {bits:.2f} bits per submission",
          flush=True)  # fmt: skip


@contextmanager
def backend(kind: str) -> Iterator[tuple[str | None, str | None]]:
    if kind == "embedded":
        yield None, None
        return
    with postgres_database() as db_url, redis_server() as redis:
        yield db_url, redis.url


@contextmanager
def channel_service(tmp: Path, kind: str, env: dict[str, str] | None = None) -> Iterator[Service]:
    """The service on `kind` with the channel problem and one worker; stopped after."""
    with backend(kind) as (db_url, broker_url):
        service = start_service(tmp, [write_package(tmp)], db_url, broker_url, "local",
                                extra_env=env, workers=("w1",))  # fmt: skip
        try:
            yield service
        finally:
            service.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", default="embedded", choices=("embedded", "postgres"))
    parser.add_argument("--modes", default="unpaced,paced,final")
    parser.add_argument("--trials", type=int, default=24)
    parser.add_argument("--levels", type=int, default=8)
    args = parser.parse_args()
    for mode in args.modes.split(","):
        env = {"MEMORACE_PACE_HIDDEN": "1" if mode == "paced" else "0",
               "MEMORACE_RATE_LIMIT": "100000"}  # fmt: skip
        with (
            tempfile.TemporaryDirectory() as tmp,
            channel_service(Path(tmp), args.backend, env) as service,
        ):
            token = service.add_team(f"team-{mode}", f"eve-{mode}")
            run_mode(service, token, mode, args.trials, args.levels)


if __name__ == "__main__":
    threading.excepthook = lambda a: print(a.exc_value, file=sys.stderr)
    main()
