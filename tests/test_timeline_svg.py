"""The `offload` timeline picture: the worked example read back from the SVG, escaping,
bounds, the largest shipped case with a real planner's plan, and the submission page
that shows it (the real app, judged in-process like tests/test_pages.py)."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from fastapi.testclient import TestClient

from api import queue
from api.actions import admin
from api.app import create_app
from api.bootstrap import bootstrap
from api.db.session import session_scope
from api.settings import get_settings
from judge.package import load_cases, load_problem
from judge.pictures.timeline import timeline_svg
from judge.types.offload import OFFLOAD
from judge.types.offload.case import OffloadCase, parse_case
from judge.types.offload.plan import parse_plan
from judge.types.offload.verifier import simulate, verify
from judge.verdict import Verdict
from tests.test_offload_verifier import CASE, GOOD
from tests.test_pages import PASSWORD, Service, post, submitted_id

ROOT = Path(__file__).resolve().parents[1]
NS = "{http://www.w3.org/2000/svg}"
HOSTILE = "<b>&'\"x"


def example(ids: list[str] | None = None):
    """The README-style worked example: a leaves after step 0 and comes back 4 µs late."""
    case = parse_case(CASE, "case", 16)
    plan = parse_plan(GOOD, "plan.json", case)
    if ids:  # ids from a case file are restricted; the picture must not rely on it
        case = dataclasses.replace(case, ids=ids)
    return case, plan, simulate(case, plan)


def boxes(root: ET.Element, kind: str) -> list[ET.Element]:
    group = root.find(f"{NS}g[@class='{kind}']")
    assert group is not None, kind
    return group.findall(f"{NS}rect")


def title(element: ET.Element) -> str:
    return element.find(f"{NS}title").text


def x_range(rect: ET.Element) -> tuple[float, float]:
    x = float(rect.get("x"))
    return x, x + float(rect.get("width"))


def test_worked_example_shows_the_stall_and_both_copies():
    case, plan, timing = example()
    assert timing.makespan_us == 44.0
    root = ET.fromstring(timeline_svg(case, plan, timing))
    assert root.get("viewBox") == "0 0 960 440"

    steps = boxes(root, "step")
    assert [title(r) for r in steps] == [
        "step 0: 0–10 µs (10 µs)",
        "step 1: 10–20 µs (10 µs)",
        "step 2: 20–30 µs (10 µs)",
        "step 3: 34–44 µs (10 µs)",
    ]
    (stall,) = boxes(root, "stall")
    assert title(stall) == (
        "stall before step 3: 4 µs (30–34 µs): waiting for the copy-in of residency 2 of a"
    )
    assert stall.get("fill") is None  # the group's red fill
    assert root.find(f"{NS}g[@class='stall']").get("fill") == "#d62728"
    # The stall fills exactly the gap between steps 2 and 3 on the compute lane.
    left, px_per_us = 72.0, 764 / 44
    x0, x1 = x_range(stall)
    assert x0 == pytest.approx(left + 30 * px_per_us, abs=0.01)
    assert x1 == pytest.approx(left + 34 * px_per_us, abs=0.02)
    assert x_range(steps[2])[1] <= x0 + 0.01
    assert float(steps[3].get("x")) == pytest.approx(x1, abs=0.01)

    (out,) = boxes(root, "d2h")
    (back,) = boxes(root, "h2d")
    assert title(out) == "residency 1 of a: copy-out, 8 bytes, 10–12 µs"
    assert title(back) == "residency 2 of a: copy-in, 8 bytes, 30–34 µs"
    assert x_range(back)[0] == pytest.approx(x0, abs=0.01)  # the copy-in is what step 3 waits for
    assert float(out.get("y")) < float(back.get("y"))  # D2H lane above H2D lane

    text = " ".join(t.text or "" for t in root.iter(f"{NS}text"))
    assert (
        "makespan 44 µs · bound 40 µs (the compute) · stalled 4 µs (1 stall) · "
        "score = bound / makespan = 0.9091"
    ) in text
    assert "truncated" not in text and "merged" not in text


def test_memory_panel_has_capacity_line_and_bytes_in_use():
    case, plan, timing = example()
    root = ET.fromstring(timeline_svg(case, plan, timing))
    capacity = root.find(f"{NS}line[@class='mark capacity']")
    assert title(capacity) == "capacity: 16 bytes"
    assert capacity.get("stroke-dasharray") == "6 3"
    frame = root.find(f"{NS}rect[@class='frame']")
    base = float(frame.get("y")) + float(frame.get("height"))
    cap_y = float(capacity.get("y1"))
    # Read the step line back as bytes: a in step 0, b in 1, c (16 B) in 2, a's
    # copy-in after step 2 (through the stall) and a in step 3.
    path = root.find(f"{NS}path[@class='in-use']")
    points = [
        tuple(map(float, p.split(","))) for p in re.findall(r"[-\d.]+,[-\d.]+", path.get("d"))
    ]
    levels = [round((base - y) / (base - cap_y) * 16) for _, y in points[1:-1]]
    merged = [v for k, v in enumerate(levels) if not k or v != levels[k - 1]]
    assert merged == [8, 16, 8]
    top = [x for x, y in points if y == pytest.approx(cap_y)]
    assert min(top) == pytest.approx(72 + 20 * 764 / 44, abs=0.01)
    assert max(top) == pytest.approx(72 + 30 * 764 / 44, abs=0.01)
    assert title(root.find(f"{NS}line[@class='mark most-in-use']")) == "most in use: 16 bytes"


def test_hostile_tensor_id_is_escaped():
    case, plan, timing = example(ids=[HOSTILE, "b", "c"])
    svg = timeline_svg(case, plan, timing)
    assert "<b>" not in svg and "&'" not in svg
    root = ET.fromstring(svg)  # well-formed despite the id
    titles = [title(r) for kind in ("stall", "d2h", "h2d") for r in boxes(root, kind)]
    assert titles[0].endswith(f"waiting for the copy-in of residency 2 of {HOSTILE}")
    assert titles[1].startswith(f"residency 1 of {HOSTILE}: copy-out")
    assert titles[2].startswith(f"residency 2 of {HOSTILE}: copy-in")


def test_max_items_truncates_but_keeps_the_stall():
    case, plan, timing = example()
    root = ET.fromstring(timeline_svg(case, plan, timing, max_items=2))
    assert len(boxes(root, "stall")) == 1
    drawn = sum(len(boxes(root, k)) for k in ("stall", "step", "d2h", "h2d"))
    assert drawn == 2
    text = " ".join(t.text or "" for t in root.iter(f"{NS}text"))
    assert "truncated: showing 2 of 7 boxes" in text


def test_tiny_steps_are_merged_and_isolated_ones_counted():
    """300 steps of 1 µs and one of 10^6 µs: the short ones are far under 0.3 px."""
    raw = {
        "capacity": 64, "h2d_bandwidth": 1, "d2h_bandwidth": 1,
        "steps": [1] * 300 + [10**6],
        "tensors": [{"id": f"t{s}", "size": 1, "alignment": 1, "uses": [s]} for s in range(301)],
    }  # fmt: skip
    case = parse_case(raw, "case", 64)
    one = [{"offset": 0, "uses": 1}]
    plan = parse_plan(
        {"tensors": [{"id": f"t{s}", "residencies": one} for s in range(301)]}, "p", case
    )
    assert verify(case, plan).verdict == Verdict.OK
    root = ET.fromstring(timeline_svg(case, plan, simulate(case, plan)))
    steps = boxes(root, "step")
    assert [title(r) for r in steps] == [
        "steps 0–300: 0–1000300 µs, 1000300 µs of compute"  # the short ones merged in
    ]
    text = " ".join(t.text or "" for t in root.iter(f"{NS}text"))
    assert "301 steps, stalls or copies drawn as merged boxes" in text


def test_long_ids_and_many_boxes_stay_under_the_size_limit():
    """2000 tensors with 100-character ids, each copied out and back between its two
    uses, so every other step stalls: 10000 boxes, each wide enough at 20000 px."""
    n = 2000
    ids = [f"t{'x' * 95}{i:04d}" for i in range(n)]
    raw = {
        "capacity": 1, "h2d_bandwidth": 1, "d2h_bandwidth": 1, "steps": [1] * (2 * n),
        "tensors": [
            {"id": tid, "size": 1, "alignment": 1, "uses": [2 * i, 2 * i + 1]}
            for i, tid in enumerate(ids)
        ],
    }  # fmt: skip
    case = parse_case(raw, "case", 1)
    split = [{"offset": 0, "uses": 1}, {"offset": 0, "uses": 1, "prefetch_after": 0}]
    plan = parse_plan(
        {
            "tensors": [
                {"id": tid, "residencies": [split[0], {**split[1], "prefetch_after": 2 * i}]}
                for i, tid in enumerate(ids)
            ]
        },
        "plan.json",
        case,
    )
    assert verify(case, plan).verdict == Verdict.OK
    timing = simulate(case, plan)
    assert timing.makespan_us == 4 * n  # step, copy-out, copy-in (the stall), step
    svg = timeline_svg(case, plan, timing, width=20000, max_items=10**6)
    assert len(svg.encode()) < 1.5 * 2**20
    root = ET.fromstring(svg)
    drawn = sum(len(boxes(root, k)) for k in ("stall", "step", "d2h", "h2d"))
    assert len(boxes(root, "stall")) == n  # stalls come first
    text = " ".join(t.text or "" for t in root.iter(f"{NS}text"))
    assert f"truncated: showing {drawn} of {5 * n} boxes" in text  # 2n steps


def test_a_case_without_steps_still_renders():
    # The case reader refuses such a case (no compute time); the picture still copes.
    empty = np.empty(0, dtype=np.int64)
    case = OffloadCase(0, 1, 1, empty, [], empty, empty, np.zeros(1, dtype=np.int64), empty)
    plan = parse_plan({"tensors": []}, "plan.json", case)
    root = ET.fromstring(timeline_svg(case, plan, simulate(case, plan)))
    text = " ".join(t.text or "" for t in root.iter(f"{NS}text"))
    assert "no steps" in text and "makespan 0 µs" in text and "makespan = 1.0000" in text
    assert not any(boxes(root, k) for k in ("stall", "step", "d2h", "h2d"))


def test_bad_sizes_are_refused():
    case, plan, timing = example()
    with pytest.raises(ValueError, match="no room"):
        timeline_svg(case, plan, timing, width=100)
    other = parse_case({**CASE, "steps": [10, 10, 10, 10, 10]}, "case", 16)
    with pytest.raises(ValueError, match="does not belong"):
        timeline_svg(other, plan, timing)


def greedy_plan(problem, lc, tmp: Path):
    """The greedy reference planner, run directly (as scripts/gpu_check.py does)."""
    case_dir, out = tmp / "case", tmp / "out"
    case_dir.mkdir()
    out.mkdir()
    problem.ptype.write_planner_input(lc.case, case_dir, {"time_limit_s": 10})
    env = {**os.environ, "MEMORACE_CASE_DIR": str(case_dir), "MEMORACE_OUT_DIR": str(out)}
    planner = ROOT / "reference_solutions" / "offload_greedy" / "offload_greedy.py"
    cmd = [sys.executable, str(planner)]
    subprocess.run(cmd, env=env, check=True, timeout=120, capture_output=True)
    return problem.ptype.parse_plan(out / problem.ptype.plan_file, lc.case)


def test_largest_shipped_case_renders_small_and_fast(tmp_path):
    from tests.conftest import shipped

    problem = load_problem(shipped("train-offload"))  # with the tests' hidden cases
    loaded = load_cases(problem)
    lc = max(loaded, key=lambda c: len(c.case.uses))
    assert len(lc.case.uses) >= 2_000
    plan = greedy_plan(problem, lc, tmp_path)
    assert verify(lc.case, plan).verdict == Verdict.OK
    timing = simulate(lc.case, plan)
    seconds = []
    for _ in range(3):
        start = time.perf_counter()
        svg = timeline_svg(lc.case, plan, timing)
        seconds.append(time.perf_counter() - start)
    size = len(svg.encode())
    print(
        f"\n{lc.spec.name}: {len(lc.case.steps)} steps, {len(plan)} residencies, "
        f"{len(timing.copies)} copies -> {size} bytes in {min(seconds):.3f} s"
    )
    assert size < 1.5 * 2**20  # the time is printed above, a figure
    root = ET.fromstring(svg)
    drawn = sum(len(boxes(root, k)) for k in ("stall", "step", "d2h", "h2d"))
    assert 0 < drawn <= 4000 and sum(1 for _ in root.iter()) < 4200
    assert boxes(root, "stall") and boxes(root, "d2h") and boxes(root, "h2d")
    text = " ".join(t.text or "" for t in root.iter(f"{NS}text"))
    score = min(1.0, OFFLOAD.lower_bound(lc.case) / timing.makespan_us)
    assert f"score = bound / makespan = {score:.4f}" in text
    assert "merged boxes" in text  # thousands of steps on 764 px


# --- the submission page ------------------------------------------------------------------

TOML = """\
slug = "tl"
name = "Timeline"
type = "offload"
version = 1

[limits]
time_limit_s = 10.0
memory_limit_mb = 512

[[cases]]
name = "one"
split = "public"
capacity = 128

[[cases]]
name = "two"
split = "hidden"
capacity = 128
"""
# The worked example with bytes and bandwidths x 8 (the same timing): load_cases compares
# the lower bound (40 µs of compute) with the capacity, so 16 bytes would be refused.
PAGE_CASE = {
    **CASE,
    "capacity": 128, "h2d_bandwidth": 16, "d2h_bandwidth": 32,
    "tensors": [{**t, "size": 8 * t["size"]} for t in CASE["tensors"]],
}  # fmt: skip
# Public case: the worked example's plan. Hidden case: c placed past the capacity.
PLANNER = f"""\
import json, os
case = json.load(open(os.path.join(os.environ["MEMORACE_CASE_DIR"], "case.json")))
plan = {GOOD!r}
for t in plan["tensors"]:
    for r in t["residencies"]:
        r["offset"] *= 8
if case["name"] == "two":
    plan["tensors"][2]["residencies"][0]["offset"] = 64
with open(os.path.join(os.environ["MEMORACE_OUT_DIR"], "plan.json"), "w") as out:
    json.dump(plan, out)
""".encode()


@pytest.fixture
def service(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Service]:
    monkeypatch.setenv("MEMORACE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("MEMORACE_SANDBOX", "local")
    for name in ("DATABASE_URL", "BROKER_URL", "SECRET_KEY"):
        monkeypatch.delenv(f"MEMORACE_{name}", raising=False)
    get_settings.cache_clear()
    settings = get_settings()
    package = tmp_path / "pkg" / "tl"
    for split, name in (("public", "one"), ("hidden", "two")):
        (package / "data" / split).mkdir(parents=True)
        (package / "data" / split / f"{name}.json").write_text(json.dumps(PAGE_CASE))
    (package / "problem.toml").write_text(TOML)
    (package / "statement.md").write_text("# Timeline\n")
    app = create_app(settings)
    bootstrap(settings, "root", [package])
    with session_scope(settings.database_url) as db:
        for team in ("red", "blue"):
            admin.create_team(db, team, None)
        admin.create_user(db, "alice", PASSWORD, "red", False, None)
        admin.create_user(db, "bob", PASSWORD, "blue", False, None)
        admin.create_user(db, "boss", PASSWORD, None, True, None)
    svc = Service(settings, TestClient(app))
    monkeypatch.setattr(queue, "enqueue_judging", lambda j, p=0: svc.judgings.append(j))
    monkeypatch.setattr(queue, "enqueue_rescore", lambda v, a: svc.rescores.append(v))
    yield svc
    get_settings.cache_clear()


def test_submission_page_shows_the_timeline_of_a_public_case(service: Service) -> None:
    alice = service.client_for("alice")
    files = {"file": ("planner.py", PLANNER, "text/x-python")}
    sub_id = submitted_id(post(alice, "/submit", "/submit", {"problem": "tl"}, files=files))
    service.judge_all()
    page = alice.get(f"/submissions/{sub_id}").text
    assert f'href="/submissions/{sub_id}?case=one#case">plan</a>' in page
    assert "?case=two" not in page

    shown = alice.get(f"/submissions/{sub_id}?case=one")
    assert shown.status_code == 200
    root = ET.fromstring(re.search(r"<svg.*?</svg>", shown.text, re.S).group(0))
    (stall,) = boxes(root, "stall")
    assert "waiting for the copy-in of residency 2 of a" in title(stall)
    assert len(boxes(root, "d2h")) == len(boxes(root, "h2d")) == 1
    assert "lower bound 40 µs of compute" in shown.text

    # Hidden cases: not for contestants; organizers see why there is no timeline.
    assert alice.get(f"/submissions/{sub_id}?case=two").status_code == 404
    assert service.client_for("bob").get(f"/submissions/{sub_id}?case=one").status_code == 404
    boss = service.client_for("boss").get(f"/submissions/{sub_id}?case=two")
    assert boss.status_code == 200 and "<svg" not in boss.text
    assert "only a valid plan has a timeline to draw" in boss.text
    assert "past the capacity" in boss.text


def test_every_problem_type_draws_its_own_picture():
    """The pages ask the type for its picture; an invalid offload plan says why not."""
    from judge.errors import NoPicture
    from judge.types import get_type, known_types
    from judge.types.offload.case import parse_case
    from judge.types.offload.plan import parse_plan
    from tests.test_offload_verifier import CASE, GOOD, with_residency

    assert all(callable(getattr(get_type(name), "picture", None)) for name in known_types())
    offload = get_type("offload")
    case = parse_case(CASE, "case", 16)
    assert offload.picture(case, parse_plan(GOOD, "plan", case), 40).startswith("<svg")
    broken = parse_plan(with_residency(0, 1, offset=16), "plan", case)
    with pytest.raises(NoPicture, match="only a valid plan"):
        offload.picture(case, broken, 40)
