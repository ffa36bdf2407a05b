"""The generator of MiniMalloc-like hard `offset` cases (scripts/offset_cases.py)."""

from __future__ import annotations

import math
import statistics
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from judge.types import get_type
from judge.verdict import Verdict
from scripts.offset_cases import (
    FAMILY,
    HARDER,
    MAX_BUFFERS,
    MIN_BUFFERS,
    REPLAY,
    HardCase,
    family_stats,
    generate,
    in_family,
    write_cases,
)
from tests.conftest import shared_data

OFFSET = get_type("offset")


def _verify_planted(case: HardCase):
    """The case through the judge's reader, and the verdict on its planted offsets."""
    with tempfile.TemporaryDirectory() as tmp:
        path, plan = Path(tmp, "case.csv"), Path(tmp, "plan.csv")
        path.write_text(case.csv())
        rows = (f"{i},{o}\n" for i, o in enumerate(case.offsets))
        plan.write_text("id,offset\n" + "".join(rows))
        parsed = OFFSET.parse_case(path, case.capacity)  # the judge's reader accepts it
        return parsed, OFFSET.verify(parsed, OFFSET.parse_plan(plan, parsed))


@settings(max_examples=40, deadline=None)
@given(st.integers(min_value=0, max_value=2**32), st.sampled_from([FAMILY, REPLAY, HARDER]))
def test_every_case_is_valid_and_its_planted_plan_fits_at_the_lower_bound(seed, family):
    case = generate(seed, family=family)
    parsed, verification = _verify_planted(case)
    assert MIN_BUFFERS <= len(parsed) <= MAX_BUFFERS
    assert OFFSET.lower_bound(parsed) == case.capacity
    assert verification.verdict == Verdict.OK and verification.peak == case.capacity
    assert in_family(family_stats(case.rows, case.capacity), family)


def test_the_family_bounds_hold_on_minimalloc_a_to_f():
    """FAMILY's bounds were measured on A-F: each of them meets them."""
    for path in sorted(shared_data("minimalloc").glob("[A-F].*.csv")):
        rows = [tuple(map(int, line.split(",")[1:4])) for line in path.read_text().split()[1:]]
        assert in_family(family_stats(rows, 1 << 20), FAMILY), path.name


@settings(max_examples=20, deadline=None)
@given(st.integers(min_value=0, max_value=2**32), st.sampled_from([FAMILY, REPLAY, HARDER]))
def test_the_removed_pieces_complete_a_perfect_packing(seed, family):
    """Buffers plus `removed`, at their offsets, overlap nowhere and cover the
    capacity x horizon rectangle exactly: what the filler guesses aim at."""
    case = generate(seed, family=family)
    packing = case.with_removed()
    assert len(packing.rows) == len(case.rows) + len(case.removed)
    _, verification = _verify_planted(packing)
    assert verification.verdict == Verdict.OK and verification.peak == case.capacity
    rows = packing.rows
    horizon = max(up for _, up, _ in rows) - min(lo for lo, _, _ in rows)
    assert sum((up - lo) * size for lo, up, size in rows) == case.capacity * horizon


def test_removed_pieces_are_written_beside_the_cases(tmp_path):
    write_cases(tmp_path / "cases", 1, seed=5, removed=tmp_path)
    (path,) = tmp_path.glob("*.removed.csv")
    lines = path.read_text().split()
    assert path.name == "hard-005.removed.csv" and lines[0] == "id,lower,upper,size,offset"
    assert [tuple(map(int, line.split(",")[1:])) for line in lines[1:]] == generate(5).removed


def test_the_same_seed_gives_the_same_case():
    assert generate(7) == generate(7)
    assert generate(7).rows != generate(8).rows


def test_written_cases_carry_the_capacity_in_their_names(tmp_path):
    paths = write_cases(tmp_path, 2, seed=5)
    assert [p.name for p in paths] == ["hard-005.1048576.csv", "hard-006.1048576.csv"]
    assert paths[0].read_text() == generate(5).csv()


def test_sliced_cases_have_the_area_cap_and_shape_of_a_to_e():
    """The measures that single out A-E (the module docstring): every area under
    1.4 % of the square, and size strongly anti-correlated with lifespan."""
    for seed in range(20):
        rows = generate(seed).rows
        sizes = [math.log(size) for _, _, size in rows]
        spans = [math.log(up - lo) for lo, up, _ in rows]
        assert max((up - lo) * size for lo, up, size in rows) <= 0.0135 * (1 << 40)
        assert statistics.correlation(sizes, spans) < -0.4
