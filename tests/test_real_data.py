"""The importer and the CLI on the real benchmark cases in ../shared/data."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from judge.errors import PackageError
from judge.importer import import_minimalloc
from judge.package import load_cases
from judge.types import get_type
from tests.conftest import shared_data

MINIMALLOC_BOUNDS = {
    "A": 1048576,
    "B": 1048576,
    "C": 1039360,
    "D": 986112,
    "E": 1048576,
    "F": 1048576,
    "input": 12,
}
IDEALLOC_BOUNDS = {"resnet50": 1515472556, "G_1": 3030937746, "S_1": 1498635932}


def memorace(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "judge", *args], capture_output=True, text=True)


def test_import_minimalloc_reads_capacity_from_file_names(tmp_path):
    problem = import_minimalloc(shared_data("minimalloc"), tmp_path, "mm", hidden=frozenset("EF"))
    loaded = {lc.spec.name: lc for lc in load_cases(problem)}
    assert {k: v.lower_bound for k, v in loaded.items()} == MINIMALLOC_BOUNDS
    assert loaded["A"].spec.capacity == 1048576 and loaded["input"].spec.capacity == 12
    assert [c.name for c in problem.cases_in("hidden")] == ["E", "F"]
    assert (problem.root / "LICENSE").is_file()


def test_import_idealloc_needs_a_capacity_and_keeps_64_bit_sizes(tmp_path):
    with pytest.raises(PackageError, match="pass --capacity"):
        import_minimalloc(shared_data("idealloc"), tmp_path, "ia")
    assert not (tmp_path / "ia").exists()  # nothing half-written is left behind
    problem = import_minimalloc(shared_data("idealloc"), tmp_path, "ia", capacity=2**40)
    bounds = {lc.spec.name: lc.lower_bound for lc in load_cases(problem)}
    assert bounds == IDEALLOC_BOUNDS


def test_import_refuses_an_infeasible_capacity(tmp_path):
    with pytest.raises(PackageError, match=r"infeasible: its lower bound \d+ exceeds its capacity"):
        import_minimalloc(shared_data("idealloc"), tmp_path, "ia", capacity=2**30)


def test_cli_import_then_check(tmp_path):
    proc = memorace(
        "problem",
        "import-minimalloc",
        str(shared_data("minimalloc")),
        "--dest",
        str(tmp_path),
        "--slug",
        "mm",
    )
    assert proc.returncode == 0, proc.stderr
    proc = memorace("problem", "check", str(tmp_path / "mm"))
    assert proc.returncode == 0 and "1039360" in proc.stdout


def test_cli_verify_json(tmp_path):
    case = shared_data("minimalloc", "input.12.csv")
    plan = tmp_path / "plan.csv"
    plan.write_text("id,offset\nb1,0\nb2,0\nb3,4\nb4,0\nb5,8\n")
    proc = memorace("verify", str(case), str(plan), "--json")
    result = json.loads(proc.stdout)
    assert proc.returncode == 0, proc.stdout
    assert result == {
        "verdict": "OK",
        "message": "",
        "peak": 12,
        "makespan": None,  # an untimed type
        "lower_bound": 12,
        "score": 1.0,
        "capacity": 12,
    }


def test_cli_verify_reports_invalid_and_bad_output(tmp_path):
    case = shared_data("minimalloc", "input.12.csv")
    plan = tmp_path / "plan.csv"
    plan.write_text("id,offset\nb1,0\nb2,0\nb3,4\nb4,8\nb5,0\n")
    proc = memorace("verify", str(case), str(plan), "--capacity", "100", "--json")
    result = json.loads(proc.stdout)
    assert proc.returncode == 1
    assert result["verdict"] == "INVALID_PLAN" and "overlap at time" in result["message"]
    plan.write_text("id,offset\nb1,x\n")
    proc = memorace("verify", str(case), str(plan))
    assert proc.returncode == 1 and "BAD_OUTPUT" in proc.stdout and "Traceback" not in proc.stderr


def test_cli_verify_with_a_bad_case(tmp_path):
    case = tmp_path / "case.csv"
    case.write_text("id,lower,upper,size\nb,3,1,4\n")
    proc = memorace("verify", str(case), str(case))
    assert proc.returncode == 2 and "empty lifespan" in proc.stderr


def test_real_cases_parse_with_64_bit_bounds():
    offset = get_type("offset")
    for name, bound in IDEALLOC_BOUNDS.items():
        case = offset.parse_case(shared_data("idealloc", f"{name}.csv"), 2**62)
        assert offset.lower_bound(case) == bound
