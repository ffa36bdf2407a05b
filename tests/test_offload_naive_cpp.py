"""reference_solutions/offload_naive_cpp.tar.gz (packed from offload_naive_cpp/), the
starter kit's offload C++ template, is a port of offload_naive.py (the Python template):
judged on the shipped offload problems' public cases (local sandbox), the archive and the
one planner.cpp the kit unfolds it into (judge.starterkit.template_source) pass every case
and write the Python planner's plans, byte for byte."""

from __future__ import annotations

import pytest

from judge.package import load_problem
from judge.pipeline import judge_planner
from judge.references import templates_for
from judge.starterkit import template_source
from tests.conftest import ROOT, shipped

FOLDER = ROOT / "reference_solutions"


def test_the_port_is_the_kits_cpp_template_and_the_python_ones_twin():
    assert templates_for("offload") == {
        "python": FOLDER / "offload_naive.py",
        "cpp": FOLDER / "offload_naive_cpp.tar.gz",
    }


@pytest.mark.parametrize("slug", ["train-offload", "infer-offload"])
def test_the_port_writes_the_python_planners_plans(slug, tmp_path):
    problem = load_problem(shipped(slug))
    unfolded = tmp_path / "planner.cpp"  # what the starter kit hands out
    unfolded.write_bytes(template_source(FOLDER / "offload_naive_cpp.tar.gz"))
    py, archive, kit = (
        judge_planner(problem, path, "public", sandbox="local")
        for path in (FOLDER / "offload_naive.py", FOLDER / "offload_naive_cpp.tar.gz", unfolded)
    )
    assert py.results
    for cpp in (archive, kit):
        assert cpp.build_error == "", cpp.build_error
        assert [r.case for r in py.results] == [r.case for r in cpp.results]
        for a, b in zip(py.results, cpp.results, strict=True):
            assert (str(a.verdict), str(b.verdict)) == ("OK", "OK"), (a.case, a.message, b.message)
            assert a.plan_digest is not None and a.plan_digest == b.plan_digest, a.case
