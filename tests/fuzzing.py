"""The fuzzing engine and the seeds that tests/test_fuzz_readers.py and
tests/test_fuzz_packages.py share: mutations of small valid inputs cut from the shipped
problems, deep nesting, random bytes, and a seeded sweep that draws the same mix with
`random` (hypothesis's engine costs several times what the readers do per example)."""

from __future__ import annotations

import json
import os
import random
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from judge.types.offload import case as offload_case
from judge.types.offset import case as offset_case
from tests.test_offload_v2 import worked_example

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = int(os.environ.get("MEMORACE_FUZZ_EXAMPLES", "10000"))  # fewer only while developing
# Hypothesis's engine costs several times what the readers do per example: the sweep
# draws the same families with `random` and carries the 10,000.
FUZZ = settings(
    max_examples=max(1, EXAMPLES // 5), deadline=None, suppress_health_check=list(HealthCheck),
    database=None,
)  # fmt: skip

# Tokens that broke readers before, or could: long and wide integers, nesting, line ends.
SPECIAL = [
    b"9" * 5000, b"1" * 19, b"4611686018427387904", b"4611686018427387905",
    b"9223372036854775808", b"18446744073709551616", b"-1", b"-0", b"0x" + b"f" * 4000,
    b"1e999", b"-1e999", b"NaN", b"Infinity", b"1.5", b"true", b"null", b'""', b"[]", b"{}",
    b"[" * 5000, b"{" * 5000, b'{"a":' * 3000, b"]", b"}", b",", b":", b'"', b"\\",
    b"\r", b"\r\n", b"\n", b"\n\n", b"\x00", b"\xff", b"\xef\xbb\xbf", b"\xed\xa0\x80",
    b" ", b"\t", b"=", b"[[cases]]\n", b'"""', b"'''", b"\\u0000", b"\\ud800",
]  # fmt: skip


def mutate(seed: bytes, entropy: int) -> bytes:
    """`seed` with up to 4 random edits: bytes replaced, tokens inserted, ranges cut or
    doubled. The edits come from one drawn number (a failure names it and replays it):
    drawing each edit through hypothesis cost more than the readers themselves."""
    rng = random.Random(entropy)
    data = bytearray(seed)
    for _ in range(rng.randrange(5)):
        op, at = rng.randrange(5), rng.randrange(len(data) + 1)
        end = min(len(data), at + rng.randrange(41))
        if op == 0:
            data[at:end] = rng.randbytes(rng.randrange(4))
        elif op == 1:
            data[at:at] = rng.choice(SPECIAL)
        elif op == 2:
            del data[at:end]
        elif op == 3:
            data[at:at] = data[at:end]
        else:
            data[at:at] = rng.randbytes(rng.randrange(1, 9))
    return bytes(data)


def mutated(seeds: list[bytes]) -> st.SearchStrategy[bytes]:
    return st.builds(mutate, st.sampled_from(seeds), st.integers(0, 2**64 - 1))


def _repeat(opener: bytes, times: int) -> bytes:
    return opener * times


# Named functions, not lambdas, and strategies built once: hypothesis describes a lambda
# by compiling its source, which would dominate the time of each example.
DEEP = st.builds(
    _repeat, st.sampled_from([b"[", b'{"a":', b"a = [", b"a = {b = "]), st.integers(100, 100_000)
)
RANDOM = st.binary(max_size=300)


def inputs(seeds: list[bytes]) -> st.SearchStrategy[bytes]:
    strategy = st.one_of(mutated(seeds), mutated(seeds), RANDOM, DEEP)
    SEEDS_OF[id(strategy)] = seeds
    return strategy


SEEDS_OF: dict[int, list[bytes]] = {}  # inputs(seeds) -> seeds, for the sweep's draws


def random_input(rng: random.Random, strategy: st.SearchStrategy[bytes]) -> bytes:
    """What `strategy` (made by inputs()) draws, drawn with `rng`: the same mix."""
    pick = rng.randrange(4)
    if pick < 2:
        return mutate(rng.choice(SEEDS_OF[id(strategy)]), rng.getrandbits(64))
    if pick == 2:
        return rng.randbytes(rng.randrange(301))
    return _repeat(rng.choice([b"[", b'{"a":', b"a = [", b"a = {b = "]), rng.randint(100, 100_000))


def sweep(check: Any, draw: Any) -> None:
    """`check(*draw(rng))` for EXAMPLES seeded draws; a failure names its draw."""
    for i in range(EXAMPLES):
        rng = random.Random(i)
        args = draw(rng)
        try:
            check(*args)
        except Exception as exc:
            raise AssertionError(f"sweep draw {i}: {args!r:.300}") from exc


# --- seeds from the shipped problems -----------------------------------------------------------


def shipped(kind: str) -> list[Path]:
    return sorted(ROOT.glob(f"problems/*/data/public/*.{kind}"))


def small_csv_cases() -> list[bytes]:
    out = []
    for path in shipped("csv"):
        lines = path.read_bytes().splitlines(keepends=True)
        out.append(b"".join(lines[:12]))
    return out


def stacked_plan(case: offset_case.OffsetCase) -> bytes:
    """A valid plan: buffers one above the other, each aligned."""
    rows, top = [], 0
    for bid, size, align in zip(case.ids, case.size.tolist(), case.alignment.tolist(), strict=True):
        top = -(-top // align) * align
        rows.append(f"{bid},{top}\n")
        top += size
    return ("id,offset\n" + "".join(rows)).encode()


def small_offload_cases() -> list[dict[str, Any]]:
    out = []
    for path in shipped("json"):
        raw = json.loads(path.read_bytes())
        steps = raw["steps"][:8]
        tensors = [t for t in raw["tensors"] if t["uses"][-1] < len(steps)][:8]
        kept = {t["id"] for t in tensors}
        # a recompute whose sources were cut away goes too (v2 cases name them)
        tensors = [_without_lost_sources(t, kept) for t in tensors]
        out.append({**raw, "steps": steps, "tensors": tensors})
    return out


def _without_lost_sources(t: dict[str, Any], kept: set[str]) -> dict[str, Any]:
    sources = t.get("recompute", {}).get("from", [])
    if all(j in kept for j in sources):
        return t
    return {k: v for k, v in t.items() if k != "recompute"}


def one_residency_plan(raw: dict[str, Any]) -> dict[str, Any]:
    entries, top = [], 0
    for t in raw["tensors"]:
        top = -(-top // t["alignment"]) * t["alignment"]
        entries.append({"id": t["id"], "residencies": [{"offset": top, "uses": len(t["uses"])}]})
        top += t["size"]
    return {"tensors": entries}


OFFSET_CASES = small_csv_cases()
OFFSET_PARSED = [offset_case.parse_case_bytes(c, "case.csv", 2**62) for c in OFFSET_CASES]
OFFSET_PLANS = [stacked_plan(c) for c in OFFSET_PARSED]
V2_CASE, V2_PLAN = worked_example()  # every v2 field, in the README's worked example
OFFLOAD_RAW = [*small_offload_cases(), V2_CASE]
OFFLOAD_CASES = [json.dumps(r, indent=1).encode() for r in OFFLOAD_RAW]
OFFLOAD_PARSED = [offload_case.parse_case(r, "case.json", None) for r in OFFLOAD_RAW]
OFFLOAD_PLANS = [json.dumps(one_residency_plan(r), indent=1).encode() for r in OFFLOAD_RAW[:-1]]
OFFLOAD_PLANS.append(json.dumps(V2_PLAN, indent=1).encode())
OFFSET_PLAN_INPUTS = [inputs([p]) for p in OFFSET_PLANS]
OFFLOAD_PLAN_INPUTS = [inputs([p]) for p in OFFLOAD_PLANS]
