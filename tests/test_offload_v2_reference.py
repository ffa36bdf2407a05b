# ruff: noqa: E501  (random-case tables read better unwrapped)
"""`offload` v2 against the slow reference (tests/offload_reference.py): exact makespans
on random valid plans that use every feature, and the static rules on mostly invalid
ones. OFFLOAD_V2_EXAMPLES sets the number of examples (the acceptance runs use 5000
and 3000); normal runs keep a few hundred."""

from __future__ import annotations

import os
from fractions import Fraction
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from judge.types.offload.bound import exact_lower_bound
from judge.types.offload.case import parse_case
from judge.types.offload.plan import parse_plan
from judge.types.offload.verifier import verify
from judge.verdict import Verdict
from tests import offload_reference as ref

EXAMPLES = int(os.environ.get("OFFLOAD_V2_EXAMPLES", "300"))


@st.composite
def v2_cases(draw: Any) -> dict[str, Any]:
    n_steps = draw(st.integers(1, 6))
    nvme = draw(st.booleans())
    tensors = []
    for i in range(draw(st.integers(1, 5))):
        uses = sorted(draw(st.sets(st.integers(0, n_steps - 1), min_size=1, max_size=4)))
        t: dict[str, Any] = {"id": f"t{i}", "size": draw(st.integers(1, 12)),
                             "alignment": draw(st.sampled_from([1, 2, 4])), "uses": uses}  # fmt: skip
        t["start"] = draw(st.sampled_from(["device", "host"] + (["nvme"] if nvme else [])))
        t["end"] = draw(st.sampled_from(["none", "host", "device"]))
        if t["start"] == "device" and draw(st.booleans()):
            t["writes"] = uses[:1]
            earlier = [f"t{j}" for j in range(i)]
            t["recompute"] = {"cost": draw(st.integers(0, 4)),
                              "from": draw(st.lists(st.sampled_from(earlier), max_size=2, unique=True))
                              if earlier else []}  # fmt: skip
        elif draw(st.booleans()):
            t["writes"] = sorted(draw(st.sets(st.sampled_from(uses))))
        if draw(st.booleans()):
            t["compress"] = {"size": draw(st.integers(1, t["size"])),
                             "encode": draw(st.integers(0, 3)), "decode": draw(st.integers(0, 3))}  # fmt: skip
        tensors.append(t)
    case: dict[str, Any] = {
        "capacity": 10**6,
        "h2d_bandwidth": draw(st.integers(1, 5)),
        "d2h_bandwidth": draw(st.integers(1, 5)),
        "steps": draw(st.lists(st.integers(0, 9), min_size=n_steps, max_size=n_steps).filter(any)),
        "tensors": tensors,
    }
    for key in ("h2d_latency", "d2h_latency"):
        if draw(st.booleans()):
            case[key] = draw(st.integers(0, 2))
    if nvme:
        case["nvme"] = {"read_bandwidth": draw(st.integers(1, 4)),
                        "write_bandwidth": draw(st.integers(1, 4)),
                        "read_latency": draw(st.integers(0, 2)),
                        "write_latency": draw(st.integers(0, 2))}  # fmt: skip
    return case


def _holds(rows: list[dict[str, Any]], x: int) -> bool:
    """Some residency in rows holds all its bytes after step x-1 and during step x."""
    return any(r["full"] <= 2 * x - 1 and r["last_point"] >= 2 * x for r in rows)


def _plan_tensor(draw: Any, case: dict[str, Any], t: dict[str, Any],
                 windows: dict[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:  # fmt: skip
    """Random residencies for one tensor that keep every rule but placement."""
    uses, n_steps = t["uses"], len(case["steps"])
    cuts = sorted(draw(st.sets(st.integers(1, len(uses) - 1)))) if len(uses) > 1 else []
    groups, prev = [], 0
    for cut in [*cuts, len(uses)]:
        groups.append(uses[prev:cut])
        prev = cut
    sources = t.get("recompute", {}).get("from", [])
    recompute_at: list[int | None] = [None]  # the first residency is never recomputed
    for k in range(1, len(groups)):
        xs = [x for x in range(groups[k - 1][-1] + 1, groups[k][0] + 1)
              if all(_holds(windows[j], x) for j in sources)]  # fmt: skip
        chosen = "recompute" in t and xs and draw(st.booleans())
        recompute_at.append(draw(st.sampled_from(xs)) if chosen else None)
    writes = set(t.get("writes", uses))
    current, form = t["start"] != "device", "full"
    out_rows: list[dict[str, Any]] = []
    mine: list[dict[str, Any]] = []
    for k, g in enumerate(groups):
        res: dict[str, Any] = {"offset": 0, "uses": len(g)}
        prev_last = groups[k - 1][-1] if k else -1
        final = k == len(groups) - 1
        if k == 0 and t["start"] == "device":
            full = 2 * g[0]
        elif recompute_at[k] is not None:
            res.update({"in": "recompute", "recompute_before": recompute_at[k]})
            full = 2 * recompute_at[k]  # type: ignore[operator]
        else:
            p = draw(st.integers(max(prev_last, -1), g[0] - 1))
            res["prefetch_after"] = p
            full = 2 * p + 1
            if form == "small":
                x = draw(st.integers(p + 1, g[0]))
                if x != g[0] or draw(st.booleans()):
                    res["decode_before"] = x
                full = 2 * x
        if (k == 0 and t["start"] == "device") or any(u in writes for u in g):
            current = False
        if draw(st.integers(0, 3)) == 0:
            res["priority"] = draw(st.integers(0, 3))
        last_point = 2 * n_steps - 1 if final and t["end"] == "device" else 2 * g[-1]
        mine.append({"full": full, "last_point": last_point})
        if not final:
            options = ["copy"] + (["compressed"] if "compress" in t else [])
            options += ["nvme"] if "nvme" in case else []
            if current or recompute_at[k + 1] is not None:
                options += ["drop", "drop"]
            out = draw(st.sampled_from(options))
            if out != "copy" or draw(st.booleans()):
                res["out"] = out
            if out != "drop":
                current, form = True, "small" if out == "compressed" else "full"
        out_rows.append(res)
    windows[t["id"]] = mine
    return out_rows


def place(draw: Any, case: dict[str, Any], plan: dict[str, Any]) -> None:
    """Random aligned offsets whose pieces never clash (so bytes are reused a lot)."""
    rows = ref.residencies(case, plan)
    placed: list[tuple[int, int, int, int]] = []
    tight = draw(st.booleans())  # first fit: a capacity the bound's capacity term meets
    for w in sorted(rows, key=lambda w: w["begin"]):
        align = w["tensor"]["alignment"]
        free = []
        for off in range(0, 256, align):
            w["res"]["offset"] = off
            mine = ref.pieces(w)
            if all(not (a[0] <= b[1] and b[0] <= a[1] and a[2] < b[3] and b[2] < a[3])
                   for a in mine for b in placed):  # fmt: skip
                free.append(off)
            if len(free) == 6:
                break
        w["res"]["offset"] = free[0] if tight else draw(st.sampled_from(free))
        placed += ref.pieces(w)
    case["capacity"] = max(max(w["res"]["offset"] + w["size"] for w in rows), need(case))


def need(case: dict[str, Any]) -> int:
    """The largest bytes any step must hold (its tensors and those kept to the end)."""
    best = 0
    for s in range(len(case["steps"])):
        used = sum(t["size"] for t in case["tensors"] if s in t["uses"])
        kept = sum(t["size"] for t in case["tensors"]
                   if t.get("end") == "device" and t["uses"][-1] < s)  # fmt: skip
        best = max(best, used + kept)
    return best


@st.composite
def valid_pairs(draw: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    case = draw(v2_cases())
    windows: dict[str, list[dict[str, Any]]] = {}
    plan = {"tensors": [{"id": t["id"], "residencies": _plan_tensor(draw, case, t, windows)}
                        for t in case["tensors"]]}  # fmt: skip
    place(draw, case, plan)
    if draw(st.booleans()):  # the tightest host capacity the plan allows
        copies = ref.host_copies(case, ref.residencies(case, plan))
        case["host_capacity"] = max(
            sum(b for lo, hi, b in copies if lo <= p <= hi)
            for p in range(-1, 2 * len(case["steps"]))
        )
    return case, plan


def features(case: dict[str, Any], plan: dict[str, Any]) -> set[str]:
    seen = set()
    for t, entry in zip(case["tensors"], plan["tensors"], strict=True):
        seen |= {f"start {t['start']}", f"end {t['end']}"}
        for res in entry["residencies"]:
            seen |= {f"out {res['out']}" for _ in [0] if "out" in res}
            seen |= {"recompute" for _ in [0] if res.get("in") == "recompute"}
            seen |= {"decode_before" for _ in [0] if "decode_before" in res}
            seen |= {"priority" for _ in [0] if res.get("priority")}
    return seen | ({"host_capacity"} if "host_capacity" in case else set())


SEEN: set[str] = set()


@settings(max_examples=EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])  # fmt: skip
@given(valid_pairs())
def test_v2_makespan_equals_the_slow_reference(pair):
    case_raw, plan_raw = pair
    assert ref.problem(case_raw, plan_raw) is None
    case = parse_case(case_raw, "case", None)
    result = verify(case, parse_plan(plan_raw, "plan", case))
    assert result.verdict == Verdict.OK, result.message
    expected = ref.makespan(case_raw, plan_raw)
    assert Fraction(result.makespan) == Fraction(float(expected))  # the same rational, as a float
    # The bound is a bound: capacities here are the plan's own peak (or the least any
    # step needs), so the capacity term is often the largest.
    assert exact_lower_bound(case) <= Fraction(expected)
    SEEN.update(features(case_raw, plan_raw))


def test_the_random_plans_used_every_feature():
    """Runs after the property test in file order: every kind of choice was drawn."""
    if not SEEN:
        return  # run alone
    wanted = {"start host", "start nvme", "end host", "end device", "out drop", "out nvme",
              "out compressed", "recompute", "decode_before", "priority", "host_capacity"}  # fmt: skip
    assert wanted <= SEEN, wanted - SEEN


# --- static rules: mostly invalid plans against all pairs -----------------------------------------


@st.composite
def any_pairs(draw: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    case = draw(v2_cases())
    windows: dict[str, list[dict[str, Any]]] = {}
    plan = {"tensors": [{"id": t["id"], "residencies": _plan_tensor(draw, case, t, windows)}
                        for t in case["tensors"]]}  # fmt: skip
    for t, entry in zip(case["tensors"], plan["tensors"], strict=True):
        for k, res in enumerate(entry["residencies"]):
            res["offset"] = draw(st.integers(0, 24 // t["alignment"])) * t["alignment"]
            if draw(st.integers(0, 19)) == 0:
                res["offset"] = draw(st.integers(0, 24))
            spoil = draw(st.integers(0, 9))
            if spoil == 3 and k == len(entry["residencies"]) - 1:
                spoil = 4
            if spoil == 0 and "prefetch_after" in res:
                res["prefetch_after"] = draw(st.integers(-1, 6))
            elif spoil == 1 and "recompute_before" in res:
                res["recompute_before"] = draw(st.integers(0, 6))
            elif spoil == 2 and "prefetch_after" in res:
                res["decode_before"] = draw(st.integers(0, 6))
            elif spoil == 3:
                res["out"] = draw(st.sampled_from(["copy", "compressed", "nvme", "drop"]))
    case["capacity"] = max(draw(st.integers(8, 40)), need(case))
    if draw(st.booleans()):
        host = [t["size"] for t in case["tensors"] if "host" in (t["start"], t["end"])]
        case["host_capacity"] = max(draw(st.integers(0, 40)), sum(host))
    return case, plan


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(any_pairs())
def test_v2_static_rules_agree_with_all_pairs(pair):
    case_raw, plan_raw = pair
    case = parse_case(case_raw, "case", None)
    result = verify(case, parse_plan(plan_raw, "plan", case))
    expected = ref.problem(case_raw, plan_raw)
    assert (result.verdict == Verdict.OK) == (expected is None), (result.message, expected)
