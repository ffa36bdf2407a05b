"""The `offload` timeline's v2 parts, on the README's worked example (NVMe, host
capacity, compression, recompute): the NVMe lanes, the tier of each copy, the host
bytes held against the host capacity, and the caption's score = bound / makespan.
A v1 case keeps its picture (tests/test_timeline_svg.py)."""

from __future__ import annotations

import copy
import dataclasses
import re
import xml.etree.ElementTree as ET

import pytest

from judge.pictures.timeline import host_held, timeline_svg
from judge.types.offload.case import parse_case
from judge.types.offload.layout import lay_out
from judge.types.offload.plan import parse_plan
from judge.types.offload.verifier import simulate
from tests.test_offload_v2 import EXAMPLE_CASE, EXAMPLE_PLAN
from tests.test_timeline_svg import HOSTILE, NS, boxes, example, title


def picture(case_raw=EXAMPLE_CASE, plan_raw=EXAMPLE_PLAN) -> ET.Element:
    case = parse_case(case_raw, "case", None)
    plan = parse_plan(plan_raw, "plan", case)
    svg = timeline_svg(case, plan, simulate(case, plan))
    assert "<script" not in svg.lower() and " on" not in svg.split(">", 1)[0]
    return ET.fromstring(svg)


def texts(root: ET.Element) -> str:
    return " ".join(t.text or "" for t in root.iter(f"{NS}text"))


def test_nvme_lanes_sit_below_the_copy_engines():
    root = picture()
    assert root.get("viewBox") == "0 0 960 614"  # a legend row, two lanes, the host panel
    labels = [t.text for t in root.iter(f"{NS}text") if t.get("text-anchor") == "end"]
    assert labels[:5] == ["compute", "D2H", "H2D", "NVMe W", "NVMe R"]
    lane_y = {k: float(boxes(root, k)[0].get("y")) for k in ("d2h", "h2d", "nvme_write")}
    assert lane_y["d2h"] < lane_y["h2d"] < lane_y["nvme_write"]
    (write,) = boxes(root, "nvme_write")
    assert title(write) == "residency 1 of m: NVMe write (host to NVMe), 8 bytes, 24–29 µs"
    reads = [title(r) for r in boxes(root, "nvme_read")]
    assert reads == [
        "residency 1 of g: NVMe read (NVMe to host), 8 bytes, 9–14 µs",
        "residency 2 of m: NVMe read (NVMe to host), 8 bytes, 29–34 µs",
    ]
    assert float(boxes(root, "nvme_read")[0].get("y")) > lane_y["nvme_write"]
    legend = texts(root)
    assert "NVMe write" in legend and "copy to / from NVMe (via host)" in legend


def test_each_copy_says_which_tier_it_comes_from_or_goes_to():
    root = picture()
    assert [title(r) for r in boxes(root, "d2h")] == [
        "residency 1 of k: copy-out to the host (compressed), 4 bytes, 10–12 µs",
        "residency 1 of g: copy-out to the host (final: the tensor ends on the host), 8 bytes, "
        "26–29 µs",
    ]
    assert [title(r) for r in boxes(root, "h2d")] == [
        "residency 1 of w: copy-in from the host, 16 bytes, 0–5 µs",
        "residency 2 of k: copy-in from the host (compressed), 4 bytes, 12–14 µs",
        "residency 2 of w: copy-in from the host, 16 bytes, 21–26 µs",
    ]
    (to_nvme,) = boxes(root, "d2h_nvme")
    assert title(to_nvme) == "residency 1 of m: copy-out to the host, then NVMe, 8 bytes, 21–24 µs"
    assert [title(r) for r in boxes(root, "h2d_nvme")] == [
        "residency 1 of g: copy-in from NVMe (read to the host first), 8 bytes, 14–17 µs",
        "residency 2 of m: copy-in from NVMe (read to the host first), 8 bytes, 34–37 µs",
    ]
    # the NVMe-bound copies share the D2H / H2D lanes, in their own colour
    assert boxes(root, "d2h_nvme")[0].get("y") == boxes(root, "d2h")[0].get("y")
    fills = {g.get("class"): g.get("fill") for g in root.iter(f"{NS}g")}
    assert fills["d2h_nvme"] != fills["d2h"] and fills["h2d_nvme"] != fills["h2d"]


def test_host_bytes_held_reach_the_host_capacity():
    """README: w (16 bytes) all along, k compressed (4) after step 0 to after step 1,
    g's final copy (8) from after step 2: 24 bytes at most, the host capacity."""
    case = parse_case(EXAMPLE_CASE, "case", None)
    lay = lay_out(case, parse_plan(EXAMPLE_PLAN, "plan", case))
    # points -1 ("before step 0"), 0 ("during step 0"), 1 ("after step 0") ... 7
    assert host_held(lay, 4).tolist() == [16, 16, 20, 20, 20, 16, 24, 24, 24]
    root = picture()
    frame = root.find(f"{NS}rect[@class='frame host']")
    base = float(frame.get("y")) + float(frame.get("height"))
    cap = root.find(f"{NS}line[@class='mark host-capacity']")
    assert title(cap) == "host capacity: 24 bytes"
    assert title(root.find(f"{NS}line[@class='mark most-on-host']")) == "most on host: 24 bytes"
    cap_y = float(cap.get("y1"))
    path = root.find(f"{NS}path[@class='host-held']")
    points = [
        tuple(map(float, p.split(","))) for p in re.findall(r"[-\d.]+,[-\d.]+", path.get("d"))
    ]
    levels = [round((base - y) / (base - cap_y) * 24) for _, y in points[1:-1]]
    assert [v for k, v in enumerate(levels) if not k or v != levels[k - 1]] == [16, 20, 16, 24]
    px_per_us = 764 / 41
    at_cap = [x for x, y in points if y == pytest.approx(cap_y)]
    assert min(at_cap) == pytest.approx(72 + 26 * px_per_us, abs=0.01)  # after step 2 ends
    assert max(at_cap) == pytest.approx(72 + 41 * px_per_us, abs=0.01)
    assert float(frame.get("y")) > float(root.find(f"{NS}rect[@class='frame']").get("y"))


def test_the_caption_gives_the_link_aware_score():
    text = texts(picture())
    assert (
        "makespan 41 µs · bound 20 µs (a link; compute 16 µs) · stalled 21 µs (3 stalls) · "
        "score = bound / makespan = 0.4878"
    ) in text


def test_host_capacity_without_nvme_adds_only_the_host_panel():
    case_raw = copy.deepcopy(EXAMPLE_CASE)
    plan_raw = copy.deepcopy(EXAMPLE_PLAN)
    del case_raw["nvme"]
    case_raw["tensors"] = [t for t in case_raw["tensors"] if t["id"] not in ("g", "m")]
    plan_raw["tensors"] = [t for t in plan_raw["tensors"] if t["id"] not in ("g", "m")]
    root = picture(case_raw, plan_raw)
    assert root.get("viewBox") == "0 0 960 566"  # a legend row and the host panel
    assert root.find(f"{NS}g[@class='nvme_read']") is None
    assert root.find(f"{NS}rect[@class='frame host']") is not None
    assert "copy-in from the host" not in texts(root)  # without NVMe, every copy is the host's
    assert title(boxes(root, "h2d")[0]) == "residency 1 of w: copy-in, 16 bytes, 0–5 µs"


def test_a_v1_case_has_no_v2_parts():
    case, plan, timing = example()
    root = ET.fromstring(timeline_svg(case, plan, timing))
    assert root.get("viewBox") == "0 0 960 440"
    assert all(root.find(f"{NS}g[@class='{k}']") is None for k in ("nvme_read", "d2h_nvme"))
    assert root.find(f"{NS}rect[@class='frame host']") is None
    assert "NVMe" not in texts(root) and "host bytes" not in texts(root)


def test_hostile_ids_in_v2_titles_are_escaped():
    case = parse_case(EXAMPLE_CASE, "case", None)
    plan = parse_plan(EXAMPLE_PLAN, "plan", case)
    # ids from a case file are restricted; the picture must not rely on it
    case = dataclasses.replace(case, ids=[HOSTILE if i == "m" else i for i in case.ids])
    svg = timeline_svg(case, plan, simulate(case, plan))
    assert "<b>" not in svg and "&'" not in svg
    root = ET.fromstring(svg)
    (write,) = boxes(root, "nvme_write")
    assert title(write).startswith(f"residency 1 of {HOSTILE}: NVMe write")


def test_too_small_a_height_for_the_v2_parts_is_refused():
    case = parse_case(EXAMPLE_CASE, "case", None)
    plan = parse_plan(EXAMPLE_PLAN, "plan", case)
    with pytest.raises(ValueError, match="no room"):
        timeline_svg(case, plan, simulate(case, plan), height=400)
