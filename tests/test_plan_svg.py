"""The SVG picture of an `offset` plan: valid XML, escaped text, bounded size."""

from __future__ import annotations

import time
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from judge.pictures.placement import plan_svg
from judge.pictures.svg import human_bytes

NS = "{http://www.w3.org/2000/svg}"
HOSTILE = "<script>alert(1)</script>&\"'"

# Three buffers, a valid plan: peak 24, lower bound 16 (a+b at time 1), C = 64.
SMALL = {
    "lower": [0, 1, 2],
    "upper": [2, 3, 5],
    "size": [8, 8, 16],
    "offset": [0, 8, 0],
    "capacity": 64,
    "peak": 24,
    "lower_bound": 16,
}


def parse(svg: str) -> ET.Element:
    root = ET.fromstring(svg)
    assert root.tag == f"{NS}svg"
    assert root.get("viewBox") == f"0 0 {root.get('width')} {root.get('height')}"
    return root


def buffer_rects(root: ET.Element) -> list[ET.Element]:
    group = root.find(f"{NS}g[@class='buffers']")
    return [] if group is None else group.findall(f"{NS}rect")


def tooltips(root: ET.Element) -> list[str]:
    return [r.findtext(f"{NS}title") for r in buffer_rects(root)]


def texts(root: ET.Element) -> list[str]:
    return ["".join(t.itertext()) for t in root.iter(f"{NS}text")]


def mark(root: ET.Element, kind: str) -> ET.Element | None:
    return root.find(f".//{NS}line[@class='mark {kind}']")


def test_small_plan_draws_every_buffer_with_tooltips() -> None:
    root = parse(plan_svg(**SMALL, ids=["a", "b", "c"]))
    assert sorted(tooltips(root)) == [
        "a: bytes [0, 8) time [0, 2)",
        "b: bytes [8, 16) time [1, 3)",
        "c: bytes [0, 16) time [2, 5)",
    ]
    assert not any(t.startswith("showing") for t in texts(root))


def test_tooltips_fall_back_to_the_index() -> None:
    root = parse(plan_svg(**SMALL))
    assert sorted(tooltips(root))[0] == "0: bytes [0, 8) time [0, 2)"


def test_rects_sit_on_the_time_and_address_axes() -> None:
    root = parse(plan_svg(**SMALL, ids=["a", "b", "c"]))
    frame = root.find(f"{NS}rect[@class='frame']")
    fx, fy = float(frame.get("x")), float(frame.get("y"))
    fw, fh = float(frame.get("width")), float(frame.get("height"))
    c = next(r for r in buffer_rects(root) if r.findtext(f"{NS}title").startswith("c:"))
    # c: time [2, 5) of [0, 5), bytes [0, 16) of [0, 64): right edge, bottom quarter.
    assert float(c.get("x")) == pytest.approx(fx + fw * 2 / 5, abs=0.01)
    assert float(c.get("width")) == pytest.approx(fw * 3 / 5, abs=0.01)
    assert float(c.get("height")) == pytest.approx(fh / 4, abs=0.01)
    assert float(c.get("y")) + float(c.get("height")) == pytest.approx(fy + fh, abs=0.01)


def test_capacity_peak_and_lower_bound_are_marked_and_labelled() -> None:
    root = parse(plan_svg(**SMALL))
    ys = {k: float(mark(root, k).get("y1")) for k in ("capacity", "peak", "lower-bound")}
    assert ys["capacity"] < ys["peak"] < ys["lower-bound"]  # y grows downwards
    labels = texts(root)
    assert "capacity 64 B" in labels
    assert "peak 24 B" in labels
    assert "lower bound 16 B" in labels
    assert {"buffer", "capacity", "peak", "lower bound"} <= set(labels)  # legend
    assert "time" in labels and "bytes" in labels


def test_peak_line_is_omitted_when_not_given() -> None:
    root = parse(plan_svg(**{**SMALL, "peak": None}))
    assert mark(root, "peak") is None
    assert mark(root, "capacity") is not None and mark(root, "lower-bound") is not None
    assert not any(t.startswith("peak") for t in texts(root))


def test_untrusted_ids_are_escaped() -> None:
    svg = plan_svg(**SMALL, ids=[HOSTILE, "b", "c"])
    assert "<script>" not in svg
    root = parse(svg)
    assert f"{HOSTILE}: bytes [0, 8) time [0, 2)" in tooltips(root)
    assert root.find(f".//{NS}script") is None


def test_truncates_to_the_largest_buffers_with_a_caption() -> None:
    n = 50
    lower = np.zeros(n, np.int64)
    upper = np.full(n, 10, np.int64)
    size = np.arange(1, n + 1, dtype=np.int64) * 1024  # area grows with the index
    offset = np.concatenate([[0], np.cumsum(size)[:-1]])
    peak = int(size.sum())
    root = parse(plan_svg(lower, upper, size, offset, peak, peak, peak, max_rects=10))
    rects = buffer_rects(root)
    assert len(rects) == 10
    drawn = [int(r.findtext(f"{NS}title").split(":")[0]) for r in rects]
    assert drawn == list(range(n - 1, n - 11, -1))  # largest first
    assert "showing 10 of 50 buffers (largest first)" in texts(root)


def test_subpixel_buffers_are_skipped_and_counted() -> None:
    # One huge buffer makes 1-byte, 1-tick buffers far below 0.3 px both ways.
    n = 20
    lower = [0, *range(n)]
    upper = [100_000, *range(1, n + 1)]
    size = [1 << 30, *[1] * n]
    offset = [0, *[(1 << 30) + i for i in range(n)]]
    root = parse(plan_svg(lower, upper, size, offset, 2 << 30, None, 1 << 30))
    assert len(buffer_rects(root)) == 1
    caption = next(t for t in texts(root) if t.startswith("showing"))
    assert caption.startswith("showing 1 of 21 buffers (largest first)")
    assert "20 below" in caption


def test_offsets_beyond_32_bits_stay_exact() -> None:
    tib = 1 << 40
    svg = plan_svg(
        [0, 5],
        [10, 10],
        [tib, tib + 7],
        [0, 3 * tib],
        capacity=8 * tib,
        peak=4 * tib + 7,
        lower_bound=2 * tib + 7,
        ids=["x", "y"],
    )
    root = parse(svg)
    assert f"y: bytes [{3 * tib}, {4 * tib + 7}) time [5, 10)" in tooltips(root)
    height = float(root.get("height"))
    for r in buffer_rects(root):
        assert 0 <= float(r.get("y")) <= float(r.get("y")) + float(r.get("height")) <= height
    labels = texts(root)
    assert "capacity 8 TiB" in labels
    assert any(label.endswith("TiB") for label in labels if label[0].isdigit())


def test_empty_plan_renders_a_note() -> None:
    root = parse(plan_svg([], [], [], [], capacity=1024, peak=None, lower_bound=0))
    assert buffer_rects(root) == []
    assert "no buffers" in texts(root)
    assert mark(root, "capacity") is not None


def test_unequal_lengths_are_rejected() -> None:
    with pytest.raises(ValueError, match="equal lengths"):
        plan_svg([0, 1], [1], [8, 8], [0, 8], 64, None, 8)
    with pytest.raises(ValueError, match="ids"):
        plan_svg([0], [1], [8], [0], 64, None, 8, ids=["a", "b"])


@pytest.mark.parametrize(
    ("n", "text"),
    [(0, "0 B"), (1023, "1023 B"), (1536, "1.5 KiB"), (3 << 20, "3 MiB"), (5 << 40, "5 TiB")],
)
def test_human_bytes(n: int, text: str) -> None:
    assert human_bytes(n) == text


def test_100k_random_buffers_render() -> None:
    rng = np.random.default_rng(0)
    n = 100_000
    lower = rng.integers(0, 50_000, n)
    upper = lower + rng.integers(1, 2_000, n)
    size = rng.integers(1, 1 << 20, n) * 64
    offset = rng.integers(0, 1 << 34, n) * 64
    peak = int((offset + size).max())
    ids = [f"buf{i}" for i in range(n)]
    start = time.perf_counter()
    svg = plan_svg(lower, upper, size, offset, peak, peak, peak // 2, ids=ids)
    elapsed = time.perf_counter() - start
    print(f"\nplan_svg: {n} buffers in {elapsed * 1000:.1f} ms, {len(svg) / 1e6:.2f} MB")
    root = parse(svg)
    assert len(buffer_rects(root)) == 5000
    assert any(t.startswith(f"showing 5000 of {n} buffers") for t in texts(root))


def test_ends_past_int64_stay_exact() -> None:
    # An over-capacity plan near 2^62: each value fits int64, offset + size does not.
    big = 1 << 62
    off = big + big // 2
    svg = plan_svg([0], [2], [big], [off], capacity=big, peak=off + big, lower_bound=big, ids=["a"])
    root = parse(svg)
    assert f"a: bytes [{off}, {off + big}) time [0, 2)" in tooltips(root)
    for r in buffer_rects(root):
        assert float(r.get("y")) >= 0
