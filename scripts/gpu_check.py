"""GPU check: the replay verifier on CUDA over every shipped case (see scripts/gpu-check).

For each case it makes a plan with a reference planner (run directly, no sandbox),
then prints: exact verdict, numpy and cupy replay verdicts (they must agree), the
cupy replay's throughput, and for `offload` the measured makespan and link
bandwidth of the real execution beside the simulated ones.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from judge.package import load_cases, load_problem  # noqa: E402
from judge.replay import replay  # noqa: E402

PLANNERS = {
    "offset": "greedy_size.cpp",
    "offload": "offload_greedy/offload_greedy.py",
    "online": "online_greedy.py",
}


def make_plan(lc, problem, tmp: Path) -> Path:
    case_dir, out = tmp / "case", tmp / "out"
    for d in (case_dir, out):
        d.mkdir(exist_ok=True)
        for f in d.iterdir():
            f.unlink()
    problem.ptype.write_planner_input(lc.case, case_dir, {"time_limit_s": 10})
    source = ROOT / "reference_solutions" / PLANNERS[problem.type]
    if source.suffix == ".cpp":
        binary = tmp / source.stem
        if not binary.exists():
            subprocess.run(["g++", "-O2", "-std=c++20", "-o", str(binary), str(source)], check=True)
        cmd = [str(binary)]
    else:
        cmd = [sys.executable, str(source)]
    env = {**os.environ, "MEMORACE_CASE_DIR": str(case_dir), "MEMORACE_OUT_DIR": str(out)}
    if getattr(problem.ptype, "interactive", False):
        return talk(problem.ptype, lc.case, cmd, env, out)
    subprocess.run(cmd, env=env, check=True, timeout=60, capture_output=True)
    return out / problem.ptype.plan_file


def talk(ptype, case, cmd: list[str], env: dict[str, str], out: Path) -> Path:
    """An `online` allocator's transcript, from a dialog with it (no sandbox)."""
    from judge.sandbox.dialog import converse

    proc = subprocess.Popen(cmd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    to_fd, from_fd = os.dup(proc.stdin.fileno()), os.dup(proc.stdout.fileno())
    proc.stdin.close()
    dialog = converse(to_fd, from_fd, ptype.script(case), time.monotonic() + 60)
    proc.wait(timeout=60)
    proc.stdout.close()
    os.close(from_fd)
    path = out / ptype.plan_file
    path.write_text(ptype.transcript(case, dialog.answers))
    return path


def main() -> int:
    try:
        import cupy

        device = cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()
    except Exception as exc:
        print(f"no usable cupy/CUDA device here ({exc}); nothing to check")
        return 2
    print(f"device: {device}")
    disagreements = 0
    with tempfile.TemporaryDirectory() as tmp:
        for package in sorted(p.parent for p in (ROOT / "problems").glob("*/problem.toml")):
            problem = load_problem(package)
            for lc in load_cases(problem):
                plan = problem.ptype.parse_plan(make_plan(lc, problem, Path(tmp)), lc.case)
                exact = problem.ptype.verify(lc.case, plan)
                cpu = replay(problem.type, lc.case, plan, "numpy")
                gpu = replay(problem.type, lc.case, plan, "cupy")
                agree = cpu.ok == gpu.ok == (exact.verdict == "OK")
                disagreements += not agree
                row = {
                    "problem": problem.slug, "case": lc.spec.name, "exact": str(exact.verdict),
                    "agree": agree, "cupy_events_per_s": round(gpu.events / max(gpu.seconds, 1e-9)),
                    "numpy_events_per_s": round(cpu.events / max(cpu.seconds, 1e-9)),
                }  # fmt: skip
                if problem.type == "offload" and exact.verdict == "OK":
                    from judge.replay_cuda import time_offload

                    start = time.perf_counter()
                    row |= time_offload(lc.case, plan)
                    row["timing_wall_s"] = round(time.perf_counter() - start, 2)
                print(json.dumps(row), flush=True)
    print(f"disagreements: {disagreements}")
    return 1 if disagreements else 0


if __name__ == "__main__":
    sys.exit(main())
