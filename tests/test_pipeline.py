"""The judging pipeline with the plain runner: contract, verdicts, scores, events."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from judge.package import load_problem
from judge.pipeline import judge_planner
from judge.scoring import CaseResult, problem_score
from judge.verdict import Verdict
from tests.test_package import make_package

HEADER = "import os, json, pathlib\ncase = pathlib.Path(os.environ['MEMORACE_CASE_DIR'])\n"
HEADER += "out = pathlib.Path(os.environ['MEMORACE_OUT_DIR'])\n"


def planner(tmp_path: Path, body: str, name: str = "p.py") -> Path:
    path = tmp_path / name
    path.write_text(HEADER + textwrap.dedent(body))
    return path


@pytest.fixture
def problem(tmp_path):
    return load_problem(make_package(tmp_path))


def test_a_correct_planner_scores_100(tmp_path, problem):
    source = planner(
        tmp_path,
        """
        meta = json.loads((case / "case.json").read_text())
        assert meta["type"] == "offset" and meta["capacity"] == 16
        rows = (case / "buffers.csv").read_text().splitlines()
        assert rows[0] == "id,lower,upper,size,alignment"
        (out / "plan.csv").write_text("id,offset\\na,0\\nb,8\\n")
    """,
    )
    seen: list[CaseResult] = []
    report = judge_planner(problem, source, on_result=seen.append)
    assert [r.verdict for r in report.results] == [Verdict.OK, Verdict.OK]
    assert [r.case for r in seen] == ["one", "two"]
    data = report.as_dict()
    assert data["public_score"] == 100.0 and data["hidden_score"] == 100.0
    assert all(r.plan_digest and len(r.plan_digest) == 64 for r in report.results)


@pytest.mark.parametrize(
    ("body", "verdict", "message"),
    [
        (
            "(out / 'plan.csv').write_text('id,offset\\na,0\\nb,4\\n')",
            Verdict.INVALID_PLAN,
            "buffers a and b overlap at time 1 in bytes [4, 8)",
        ),
        ("(out / 'plan.csv').write_text('garbage')", Verdict.BAD_OUTPUT, "plan.csv:1: header"),
        ("pass", Verdict.BAD_OUTPUT, "plan.csv: file not found"),
        ("raise SystemExit(3)", Verdict.RUNTIME_ERROR, "the planner exited with status 3"),
        (
            "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)",
            Verdict.RUNTIME_ERROR,
            "killed by signal 11",
        ),
        ("import time; time.sleep(60)", Verdict.TIME_LIMIT, "no plan after 1 s"),
    ],
)
def test_failures_get_their_verdicts(tmp_path, problem, body, verdict, message):
    report = judge_planner(problem, planner(tmp_path, body), split="public", time_limit_s=1)
    (result,) = report.results
    assert result.verdict == verdict
    assert message in result.message
    assert result.score == 0.0


def test_a_timed_out_planner_leaves_no_process_behind(tmp_path, problem):
    marker = tmp_path / "alive"
    body = f"""
        import subprocess, sys
        subprocess.Popen([sys.executable, "-c",
            "import time, pathlib; time.sleep(1.5); pathlib.Path({str(marker)!r}).touch()"])
        import time; time.sleep(60)
    """
    report = judge_planner(problem, planner(tmp_path, body), split="public", time_limit_s=0.5)
    assert report.results[0].verdict == Verdict.TIME_LIMIT
    import time

    time.sleep(2)
    assert not marker.exists(), "a child of the planner outlived its case"


def test_cpp_build_error_is_reported(tmp_path, problem):
    source = tmp_path / "bad.cpp"
    source.write_text("int main() { return undefined_name; }\n")
    report = judge_planner(problem, source)
    assert {r.verdict for r in report.results} == {Verdict.BUILD_ERROR}
    assert "undefined_name" in report.build_error


def test_planner_logs_are_kept_and_capped(tmp_path, problem):
    body = "print('x' * 100000); print('the end')"
    report = judge_planner(problem, planner(tmp_path, body), split="public")
    log = report.results[0].log
    assert log.endswith("the end\n") and len(log) <= 8192


def test_scores_are_weighted_means_and_order_independent():
    def r(name, split, weight, score, verdict=Verdict.OK):
        return CaseResult(name, split, weight, verdict, "", 1, 1, score)

    results = [
        r("a", "public", 1, 0.5),
        r("b", "public", 3, 1.0),
        r("c", "hidden", 2, 0.9),
        r("d", "public", 1, 1.0, Verdict.TIME_LIMIT),
    ]
    assert problem_score(results, "public") == 70.0
    assert problem_score(results, "hidden") == 90.0
    assert problem_score(results[::-1], "public") == problem_score(results, "public")
    assert problem_score([], "public") is None
