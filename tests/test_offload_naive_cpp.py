"""reference_solutions/offload_naive.cpp, the starter kit's offload C++ template, is a port
of offload_naive.py (the Python template): judged on the shipped offload problems' public
cases (local sandbox), both pass every case and write byte-identical plans."""

from __future__ import annotations

import pytest

from judge.package import load_problem
from judge.pipeline import judge_planner
from judge.references import templates_for
from tests.conftest import ROOT, shipped

FOLDER = ROOT / "reference_solutions"


def test_the_port_is_the_kits_cpp_template_and_the_python_ones_twin():
    assert templates_for("offload") == {
        "python": FOLDER / "offload_naive.py",
        "cpp": FOLDER / "offload_naive.cpp",
    }


@pytest.mark.parametrize("slug", ["train-offload", "infer-offload"])
def test_the_port_writes_the_python_planners_plans(slug):
    problem = load_problem(shipped(slug))
    py, cpp = (
        judge_planner(problem, FOLDER / name, "public", sandbox="local")
        for name in ("offload_naive.py", "offload_naive.cpp")
    )
    assert cpp.build_error == "", cpp.build_error
    assert py.results and [r.case for r in py.results] == [r.case for r in cpp.results]
    for a, b in zip(py.results, cpp.results, strict=True):
        assert (str(a.verdict), str(b.verdict)) == ("OK", "OK"), (a.case, a.message, b.message)
        assert a.plan_digest is not None and a.plan_digest == b.plan_digest, a.case
