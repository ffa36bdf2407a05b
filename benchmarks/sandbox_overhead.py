"""Benchmark: the docker sandbox's own overhead per case with container reuse
(one container per judging, one supervisor exec running every case) next to a fresh
`docker run` per case. A trivial planner over 50 cases; prints figures. The reuse figure
includes the reset before each case to the state right after the build (empty /tmp,
/out, shared memory and IPC, /work restored from the root-owned /built).

    python benchmarks/sandbox_overhead.py [--cases 50]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from judge.package import load_problem
from judge.pipeline import judge_planner
from judge.sandbox.docker import IMAGE

PLANNER = """import os
open(os.path.join(os.environ["MEMORACE_OUT_DIR"], "plan.csv"), "w").write("id,offset\\na,0\\n")
"""


def make_problem(root: Path, cases: int) -> Path:
    pkg = root / "bench"
    (pkg / "data" / "public").mkdir(parents=True)
    (pkg / "statement.md").write_text("# bench\n")
    toml = 'slug = "bench"\nname = "bench"\ntype = "offset"\nversion = 1\n'
    for i in range(cases):
        (pkg / "data" / "public" / f"c{i:03}.csv").write_text("id,lower,upper,size\na,0,1,8\n")
        toml += f'\n[[cases]]\nname = "c{i:03}"\nsplit = "public"\ncapacity = 8\n'
    (pkg / "problem.toml").write_text(toml)
    return pkg


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", type=int, default=50)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        problem = load_problem(make_problem(root, args.cases))
        source = root / "planner.py"
        source.write_text(PLANNER)
        starts: list[float] = []
        ends: list[float] = []
        start = time.perf_counter()
        report = judge_planner(
            problem, source, sandbox="docker",
            on_start=lambda _: starts.append(time.perf_counter()),
            on_result=lambda _: ends.append(time.perf_counter()),
        )  # fmt: skip
        reuse_total = time.perf_counter() - start
        assert all(r.verdict == "OK" for r in report.results)
        # per case: the judge's wall from the case's start to its result, less the
        # planner's own run as the supervisor timed it (issue 36's target: <= 5 ms)
        cases = zip(starts, ends, report.results, strict=True)
        extra = sorted(b - a - r.time_s for a, b, r in cases)
        session = reuse_total - (ends[-1] - starts[0])
        own = _native_run_time(source, root)
        fresh = _fresh_runs(source, root, min(args.cases, 10))
    reuse = reuse_total / args.cases
    print(f"{args.cases} cases, trivial planner (native run {own * 1000:.0f} ms)")
    print(
        f"  container reuse: {reuse * 1000:7.1f} ms per case, judge overhead "
        f"{(reuse - own) * 1000:7.1f} ms"
    )
    print(
        f"  per case, everything but the planner's own run: median "
        f"{statistics.median(extra) * 1000:.1f} ms, p90 {extra[len(extra) * 9 // 10] * 1000:.1f} ms"
        f" (target 5); once per judging (container, build, agent): {session * 1000:.0f} ms"
    )
    print(
        f"  fresh docker run: {fresh * 1000:7.1f} ms per case, overhead "
        f"{(fresh - own) * 1000:7.1f} ms"
    )
    print(f"  reuse is x{(fresh - own) / (reuse - own):.1f} cheaper in overhead")


def _native_run_time(source: Path, root: Path) -> float:
    out = root / "native-out"
    out.mkdir()
    env = {"MEMORACE_OUT_DIR": str(out), "PATH": "/usr/bin:/bin"}
    start = time.perf_counter()
    for _ in range(10):
        subprocess.run(["/usr/bin/python3", str(source)], env=env, check=True)
    return (time.perf_counter() - start) / 10


def _fresh_runs(source: Path, root: Path, n: int) -> float:
    """What the judge would pay without reuse: a locked-down `docker run` per case."""
    cmd = [
        "docker",
        "run",
        "--rm",
        "--network",
        "none",
        "--read-only",
        "--cap-drop",
        "ALL",
        "--security-opt",
        "no-new-privileges",
        "--user",
        "10001",
        "--memory",
        "2048m",
        "--pids-limit",
        "256",
        "--tmpfs",
        "/out:size=64m,mode=1777",
        "-v",
        f"{source.parent}:/submission:ro",
        IMAGE,
        "python3",
        f"/submission/{source.name}",
    ]
    os.chmod(source.parent, 0o755)  # readable by the planner user, as the judge's copy is
    start = time.perf_counter()
    for _ in range(n):
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=sys.stderr)
    return (time.perf_counter() - start) / n


if __name__ == "__main__":
    main()
