"""Benchmark: the exact `offset` verifier on a valid 1,000,000-buffer plan, and its
speed-up over an all-pairs check at 20,000 buffers. Prints figures; asserts nothing
about time (the machine is shared and noisy).

    python benchmarks/verify_speed.py [--buffers 1000000] [--pairs 20000]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

from judge.types.offset.case import read_case
from judge.types.offset.plan import read_plan
from judge.types.offset.verifier import lower_bound, verify
from judge.verdict import Verdict


def valid_instance(n: int, seed: int = 7) -> tuple[np.ndarray, ...]:
    """A valid plan by construction: buffers sit in address lanes, and within one
    lane their lifespans follow each other, so no two live buffers share bytes.
    Lanes get ~n/500 buffers, so about 500 buffers are live at any time."""
    rng = np.random.default_rng(seed)
    lanes = 500
    lane = rng.integers(0, lanes, n)
    lane_width = 1 << 20
    size = rng.integers(1, lane_width // 256, n) * 256
    duration = rng.integers(1, 200, n)
    gap = rng.integers(0, 3, n)
    order = np.argsort(lane, kind="stable")
    step = (duration + gap)[order]
    ends = np.cumsum(step)
    first = np.r_[0, np.flatnonzero(np.diff(lane[order])) + 1]
    lane_start = np.repeat(ends[first] - step[first], np.diff(np.r_[first, n]))
    upper = np.empty(n, np.int64)
    upper[order] = ends - lane_start - gap[order]
    lower = upper - duration
    offset = lane.astype(np.int64) * lane_width
    return lower, upper, size.astype(np.int64), offset


def write_csvs(folder: Path, lower, upper, size, offset) -> tuple[Path, Path]:
    ids = [f"b{i}" for i in range(len(lower))]
    case, plan = folder / "case.csv", folder / "plan.csv"
    rows = zip(ids, lower.tolist(), upper.tolist(), size.tolist(), strict=True)
    case.write_text(
        "id,lower,upper,size,alignment\n"
        + "".join(f"{b},{lo},{up},{s},256\n" for b, lo, up, s in rows)
    )
    plan.write_text(
        "id,offset\n" + "".join(f"{b},{o}\n" for b, o in zip(ids, offset.tolist(), strict=True))
    )
    return case, plan


def all_pairs_ok(lower, upper, size, offset) -> bool:
    """The obvious check, vectorized per row: every pair, O(n^2)."""
    end = offset + size
    for i in range(len(lower)):
        j = slice(i + 1, None)
        clash = (lower[j] < upper[i]) & (lower[i] < upper[j])
        clash &= (offset[j] < end[i]) & (offset[i] < end[j])
        if clash.any():
            return False
    return True


def timed(fn, *args):
    start = time.perf_counter()
    value = fn(*args)
    return value, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--buffers", type=int, default=1_000_000)
    parser.add_argument("--pairs", type=int, default=20_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        arrays = valid_instance(args.buffers)
        case_path, plan_path = write_csvs(Path(tmp), *arrays)
        case, t_case = timed(read_case, case_path, 2**62)
        plan, t_plan = timed(read_plan, plan_path, case)
        result, t_verify = timed(verify, case, plan)
        bound, t_bound = timed(lower_bound, case)
    assert result.verdict == Verdict.OK, result.message
    print(f"{args.buffers:,} buffers, valid plan, peak {result.peak}, lower bound {bound}")
    print(f"  parse case   {t_case:6.2f} s")
    print(f"  parse plan   {t_plan:6.2f} s")
    print(f"  verify       {t_verify:6.2f} s   <- the exact verifier (target <= 2 s)")
    print(f"  lower bound  {t_bound:6.2f} s")
    print(f"  plan read + verify {t_plan + t_verify:6.2f} s")

    small = valid_instance(args.pairs, seed=3)
    case = read_case(write_csvs(Path(tempfile.mkdtemp()), *small)[0], 2**62)
    from judge.types.offset.plan import OffsetPlan

    fast, t_fast = timed(verify, case, OffsetPlan(small[3]))
    slow, t_slow = timed(all_pairs_ok, *small)
    assert fast.verdict == Verdict.OK and slow
    print(
        f"{args.pairs:,} buffers: sweep {t_fast:.3f} s, all-pairs {t_slow:.2f} s, "
        f"speed-up x{t_slow / t_fast:.0f}"
    )


if __name__ == "__main__":
    main()
