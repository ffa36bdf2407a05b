"""The replay verifier (numpy) agrees with the exact one on `offload` v2 plans: random
valid and invalid ones, and valid ones broken on purpose in the ways v2 adds (dirty
drop, recompute without its sources, decode before the copy-in, NVMe path, host
capacity), at least 20 invalid plans of each."""

from __future__ import annotations

import copy
import random
from collections import Counter
from typing import Any

from hypothesis import HealthCheck, given, settings

from judge.errors import CaseError
from judge.replay import replay
from judge.types.offload.case import parse_case
from judge.types.offload.plan import parse_plan
from judge.types.offload.verifier import verify
from judge.verdict import Verdict
from tests import offload_reference as ref
from tests.test_offload_v2 import EXAMPLE_CASE, EXAMPLE_PLAN
from tests.test_offload_v2_reference import EXAMPLES, any_pairs, valid_pairs


def agree(case_raw: dict[str, Any], plan_raw: dict[str, Any]) -> bool:
    case = parse_case(case_raw, "case", None)
    plan = parse_plan(plan_raw, "plan", case)
    exact = verify(case, plan)
    replayed = replay("offload", case, plan)
    assert replayed.ok == (exact.verdict == Verdict.OK), (exact.message, replayed.message)
    return replayed.ok


def test_replay_agrees_on_the_worked_example():
    assert agree(EXAMPLE_CASE, EXAMPLE_PLAN)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(valid_pairs())
def test_replay_agrees_on_random_valid_v2_plans(pair):
    assert agree(*pair)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(any_pairs())
def test_replay_agrees_on_random_v2_plans(pair):
    agree(*pair)


def mutations(case: dict[str, Any], plan: dict[str, Any]):
    """(kind, case, plan) broken copies of a valid pair, one change each."""
    rows = ref.residencies(case, plan)
    n_steps = len(case["steps"])
    for i, w in enumerate(rows):
        t, k, res = w["t"], w["k"], w["res"]

        def changed(t: int = t, k: int = k, **fields: Any) -> dict[str, Any]:
            broken = copy.deepcopy(plan)
            broken["tensors"][t]["residencies"][k].update(fields)
            return broken

        nxt = rows[i + 1] if not w["final"] else None
        if nxt and w["out"] != "drop" and nxt["how"] != "recompute":
            yield "dirty drop", case, changed(out="drop")
        if w["how"] == "recompute":
            prev_last = rows[i - 1]["last"]
            for x in range(prev_last + 1, w["first"] + 1):
                if x != res["recompute_before"]:
                    yield "recompute without its sources", case, changed(recompute_before=x)
            for j, other in enumerate(case["tensors"]):  # recomputed from one not held then
                if j != t and other["id"] not in w["tensor"]["recompute"]["from"]:
                    more = copy.deepcopy(case)
                    more["tensors"][t]["recompute"]["from"].append(other["id"])
                    yield "recompute without its sources", more, plan
        if w["how"] == "copy" and w["small"]:
            yield "decode before the copy-in", case, changed(decode_before=w["p"])
            if w["first"] + 1 < n_steps:
                yield "decode before the copy-in", case, changed(decode_before=w["first"] + 1)
        if w["how"] == "copy" and (w["nvme"] or "nvme" not in case) and k > 0:
            yield "NVMe path", case, changed(prefetch_after=rows[i - 1]["last"] - 1)
        if nxt and "nvme" not in case:
            yield "NVMe path", case, changed(out="nvme")
    if "host_capacity" in case:
        tighter = dict(case, host_capacity=case["host_capacity"] - 1)
        yield "host capacity", tighter, plan


def test_mutation_corpus_agrees_and_covers_every_new_kind():
    rng = random.Random(11)
    invalid: Counter[str] = Counter()
    strategy = valid_pairs()
    examples: list[tuple[dict[str, Any], dict[str, Any]]] = []

    @settings(max_examples=900, deadline=None, database=None, derandomize=True,
              suppress_health_check=list(HealthCheck))  # fmt: skip
    @given(strategy)
    def collect(pair):
        examples.append(pair)

    collect()
    for case, plan in examples:
        for kind, broken_case, broken in mutations(case, plan):
            try:
                parse_case(broken_case, "case", None)
            except CaseError:
                continue  # a tighter host capacity the case itself refuses
            if (rng.random() < 0.5 or invalid[kind] < 20) and not agree(broken_case, broken):
                invalid[kind] += 1
    wanted = ["dirty drop", "recompute without its sources", "decode before the copy-in",
              "NVMe path", "host capacity"]  # fmt: skip
    assert all(invalid[k] >= 20 for k in wanted), invalid
    print(dict(invalid))
