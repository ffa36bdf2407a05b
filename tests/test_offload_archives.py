"""The greedy, v1 strong and naive C++ offload planners as archives of modules
(reference_solutions/offload_greedy/, reference_solutions/offload_strong_v1/,
reference_solutions/offload_naive_cpp/): each archive holds its folder's current sources
and packs the same way every time; the greedy one is the `greedy` offload baseline and
runs its entry module, the C++ ones build main.cpp as the judge builds a single .cpp file
(one translation unit) and unfold into one .cpp file as the starter kit unfolds a C++
archive; every module says what it holds. The kit's C++ template is offload_naive_cpp
(v1 handles no shipped case), handed out as one planner.cpp. Whether they plan well is
tests/test_offload_planners.py's business (the naive port's plans:
tests/test_offload_naive_cpp.py)."""

from __future__ import annotations

import re

import pytest

from judge.archive import pack_tar_gz, packed_current, tar_members
from judge.references import baselines_for, templates_for
from judge.starterkit import template_source
from judge.submission import CXX_FLAGS, prepare_submission
from tests.conftest import ROOT, load_script

FOLDER = ROOT / "reference_solutions"
GREEDY_MODULES = ("tensor_kinds", "parking", "ways_out", "placement", "plan_file")
V1_MODULES = ("common", "json", "case", "residencies", "placement", "skyline", "simulate",
              "choose", "evaluate", "repair", "search")  # fmt: skip
NAIVE_MODULES = ("json", "case", "residencies", "placement")
CPP_MODULES = {"offload_strong_v1": V1_MODULES, "offload_naive_cpp": NAIVE_MODULES}
MEMBERS = {
    "offload_greedy": {f"{m}.py" for m in (*GREEDY_MODULES, "offload_greedy")},
    "offload_strong_v1": {f"{m}.hpp" for m in V1_MODULES} | {"main.cpp"},
    "offload_naive_cpp": {f"{m}.hpp" for m in NAIVE_MODULES} | {"main.cpp"},
}
MAX_LINES = 300  # "split into modules when they grow past a few hundred lines"


@pytest.mark.parametrize("name", sorted(MEMBERS))
def test_the_archive_holds_its_folder_and_packs_the_same_every_time(name, tmp_path):
    """By members and contents, never by gzip's bytes (another zlib, other bytes)."""
    pack = load_script(FOLDER / name / "pack.py")
    members = pack.members()
    assert packed_current(pack.OUT, members), f"run python reference_solutions/{name}/pack.py"
    assert set(members) == MEMBERS[name] | {"memorace.toml"}
    fresh = tmp_path / "fresh.tar.gz"
    fresh.write_bytes(pack_tar_gz(members))
    assert tar_members(fresh) == members and pack_tar_gz(members) == fresh.read_bytes()


def test_greedy_is_the_offload_greedy_baseline_and_runs_its_entry(tmp_path):
    archive = FOLDER / "offload_greedy.tar.gz"
    assert baselines_for("offload")["greedy"] == archive
    sub = prepare_submission(archive, tmp_path / "unpacked")
    assert sub.build is None and sub.run == ["python3", "offload_greedy.py"]


@pytest.mark.parametrize("name", sorted(CPP_MODULES))
def test_cpp_builds_main_cpp_as_the_judge_builds_a_single_file(name, tmp_path):
    sub = prepare_submission(FOLDER / f"{name}.tar.gz", tmp_path / "unpacked")
    assert sub.build == ["g++", *CXX_FLAGS, "-o", "planner", "main.cpp"]
    assert sub.run == ["./planner"]


def test_the_kits_planner_cpp_is_the_naive_archive_unfolded():
    """The v2-capable port of the Python template (tests/test_offload_naive_cpp.py)."""
    source = templates_for("offload")["cpp"]
    assert source == FOLDER / "offload_naive_cpp.tar.gz"
    assert template_source(source).startswith(b"// main.cpp: the naive offload planner")


@pytest.mark.parametrize("name", sorted(CPP_MODULES))
def test_cpp_unfolds_into_one_cpp_file(name):
    """Every module once, in main.cpp's order, no include of a module left."""
    unit = template_source(FOLDER / f"{name}.tar.gz").decode()
    assert not re.search(r'^#include "', unit, flags=re.MULTILINE)
    assert "#pragma once" not in unit and unit.count("int main()") == 1
    heads = [unit.index(f"// {m}.hpp: ") for m in CPP_MODULES[name]]
    assert heads == sorted(heads)


def test_every_module_says_what_it_holds_and_why_and_stays_short():
    """Each opens with a comment (C++: `// NAME: `) or docstring that says what it does
    and why it is a part of its own; none passes MAX_LINES lines."""
    for name, modules in CPP_MODULES.items():
        main = (FOLDER / name / "main.cpp").read_text()
        included = re.findall(r'^#include "(\w+)\.hpp"', main, flags=re.MULTILINE)
        assert tuple(included) == modules, name
    for name, members in MEMBERS.items():
        for member in sorted(members):
            text = (FOLDER / name / member).read_text()
            if member.endswith(".py"):
                head = text.removeprefix("#!/usr/bin/env python3\n")
                assert head.startswith('"""'), member
                head = head.split('"""')[1]
            else:
                assert text.startswith(f"// {member}: "), member
                head = text.split("\n#")[0]  # the comment before the first directive
            assert "Why" in head, member
            assert len(text.splitlines()) <= MAX_LINES, (member, len(text.splitlines()))
