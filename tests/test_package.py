"""Problem packages: good ones load, bad ones give one error naming file, line and rule."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from judge.archive import find_root
from judge.errors import PackageError
from judge.importer import import_minimalloc
from judge.package import load_cases, load_problem

GOOD_TOML = """\
slug = "tiny"
name = "Tiny"
type = "offset"
version = 1

[limits]
time_limit_s = 5.0
memory_limit_mb = 512

[[cases]]
name = "one"
split = "public"
capacity = 16

[[cases]]
name = "two"
split = "hidden"
capacity = 16
weight = 2
"""
CASE = "id,lower,upper,size\na,0,2,8\nb,1,3,8\n"


def make_package(root: Path, toml: str = GOOD_TOML, cases: dict[str, str] | None = None) -> Path:
    pkg = root / "tiny"
    for sub in ("data/public", "data/hidden"):
        (pkg / sub).mkdir(parents=True, exist_ok=True)
    (pkg / "problem.toml").write_text(toml)
    (pkg / "statement.md").write_text("# Tiny\n")
    files = cases if cases is not None else {"public/one": CASE, "hidden/two": CASE}
    for name, text in files.items():
        (pkg / "data" / f"{name}.csv").write_text(text)
    return pkg


def test_good_package_loads(tmp_path):
    problem = load_problem(make_package(tmp_path))
    assert [c.name for c in problem.cases_in("hidden")] == ["two"]
    assert problem.limits.time_limit_s == 5.0 and problem.limits.cpus == 1
    loaded = load_cases(problem)
    assert [lc.lower_bound for lc in loaded] == [16, 16]


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            lambda t: t.replace('slug = "tiny"', 'slug = "other"'),
            "problem.toml:1: slug 'other' must equal the folder name 'tiny'",
        ),
        (
            lambda t: t.replace('type = "offset"', 'type = "bogus"'),
            "problem.toml:3: unknown problem type 'bogus'",
        ),
        (lambda t: t.replace("version = 1", "version = 0"), "problem.toml:4: version must be >= 1"),
        (
            lambda t: t.replace("version = 1", 'version = "1"'),
            "problem.toml:4: 'version' must be int",
        ),
        (
            lambda t: t.replace("time_limit_s = 5.0", "time_limit = 5.0"),
            "problem.toml:7: unknown key 'time_limit' in [limits]",
        ),
        (
            lambda t: t.replace("time_limit_s = 5.0", "time_limit_s = -1"),
            "problem.toml:7: time_limit_s must be in (0, 3600]",
        ),
        (
            lambda t: t.replace('split = "hidden"', 'split = "secret"'),
            "problem.toml:17: split must be 'public' or 'hidden'",
        ),
        (
            lambda t: t.replace('name = "two"', 'name = "one"'),
            "problem.toml:16: case name 'one' is used twice",
        ),
        (
            lambda t: t.replace('name = "two"', 'name = "../x"'),
            "problem.toml:16: case name '../x' may use",
        ),
        (lambda t: t.replace("weight = 2", "weight = 0"), "problem.toml:19: weight must be > 0"),
        (
            lambda t: t.replace("capacity = 16\n\n", "capacity = -1\n\n"),
            "problem.toml:13: capacity must be from 0 to 2^62",
        ),
        (lambda t: t.replace('name = "Tiny"\n', ""), "problem.toml: missing key 'name'"),
        (
            lambda t: t + "[[cases]]\nname = 'three'\ncapacity = 1\n",
            "problem.toml:20: case file data/public/three.csv is missing",
        ),
        (lambda t: t.replace("version = 1", "version = = 1"), "problem.toml:4: not valid TOML"),
        (lambda t: t.split("[[cases]]")[0], "problem.toml: needs at least one [[cases]] entry"),
    ],
)
def test_bad_problem_toml(tmp_path, edit, message):
    pkg = make_package(tmp_path, edit(GOOD_TOML))
    with pytest.raises(PackageError) as info:
        load_problem(pkg)
    assert str(info.value).startswith(str(pkg / message)), str(info.value)


@pytest.mark.parametrize(
    ("case_text", "message"),
    [
        ("id,lower,upper\na,0,1\n", "one.csv:1: header must be 'id,lower,upper,size[,alignment]'"),
        ("id,lower,upper,size\na,0,2,8\na,1,3,8\n", "one.csv:3: id 'a' repeats the id on line 2"),
        ("id,lower,upper,size\na,2,2,8\n", "one.csv:2: buffer a has an empty lifespan [2, 2)"),
        ("id,lower,upper,size\na,0,2,0\n", "one.csv:2: column 'size' is '0', outside [1,"),
        ("id,lower,upper,size,alignment\na,0,2,8,0\n", "one.csv:2: column 'alignment' is '0'"),
        ("id,lower,upper,size\na,-1,2,8\n", "one.csv:2: column 'lower' is '-1'"),
        (
            "id,lower,upper,size\na,0,2,8.5\n",
            "one.csv:2: column 'size' must be an integer, got '8.5'",
        ),
        (
            "id,lower,upper,size\na,0,2,8\nb,1,3,9\n",
            "problem.toml: case one is infeasible: its lower bound 17 exceeds its capacity 16",
        ),
    ],
)
def test_bad_case_files(tmp_path, case_text, message):
    pkg = make_package(tmp_path, cases={"public/one": case_text, "hidden/two": CASE})
    with pytest.raises(PackageError) as info:
        load_cases(load_problem(pkg))
    assert message in str(info.value), str(info.value)


def test_unlisted_case_file_is_an_error(tmp_path):
    pkg = make_package(tmp_path)
    (pkg / "data/public/stray.csv").write_text(CASE)
    with pytest.raises(PackageError, match=r"stray.csv: is not listed in problem.toml"):
        load_problem(pkg)


def test_missing_statement(tmp_path):
    pkg = make_package(tmp_path)
    (pkg / "statement.md").unlink()
    with pytest.raises(PackageError, match=r"statement.md: file is missing"):
        load_problem(pkg)


def test_cli_reports_a_bad_package_without_traceback(tmp_path):
    pkg = make_package(tmp_path, GOOD_TOML.replace("version = 1", "version = 0"))
    proc = subprocess.run(
        [sys.executable, "-m", "judge", "problem", "check", str(pkg)],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2
    assert "version must be >= 1" in proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout


# --- where an unpacked package keeps problem.toml -----------------------------------------


def test_package_root_ignores_macos_junk_like_submissions_do(tmp_path):
    """api.actions.problems._package_root and judge.submission._find_root share one rule
    (judge.archive.find_root): the single top-level folder, junk left aside."""
    from api.actions.problems import _package_root
    from api.errors import ServiceError

    make_package(tmp_path)
    (tmp_path / "__MACOSX" / "tiny").mkdir(parents=True)
    (tmp_path / "__MACOSX" / "tiny" / "._problem.toml").write_text("junk")
    (tmp_path / ".DS_Store").write_text("junk")
    assert find_root(tmp_path, "problem.toml") == tmp_path / "tiny"
    assert _package_root(tmp_path) == tmp_path / "tiny"
    (tmp_path / "other").mkdir()  # two real folders: no single root
    assert find_root(tmp_path, "problem.toml") is None
    with pytest.raises(ServiceError, match=r"problem\.toml not found"):
        _package_root(tmp_path)
    assert find_root(tmp_path / "tiny", "problem.toml") == tmp_path / "tiny"


def test_import_minimalloc_creates_a_missing_destination(tmp_path):
    source = tmp_path / "cases"
    source.mkdir()
    (source / "input.16.csv").write_text(CASE)
    problem = import_minimalloc(source, tmp_path / "new" / "sub", "mm")
    assert problem.root == tmp_path / "new" / "sub" / "mm" and len(problem.cases) == 1
    (tmp_path / "file").write_text("")
    with pytest.raises(PackageError, match="cannot create the folder"):
        import_minimalloc(source, tmp_path / "file" / "sub", "mm")


HEX = "0x" + "f" * 4000  # TOML reads it; printing it in decimal would raise


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda t: t.replace("version = 1", "version = 1" + "0" * 5000), "too many digits"),
        (lambda t: t + "x = " + "[" * 60_000, "nested too deeply"),
        (lambda t: t.replace("capacity = 16\n", f"capacity = {HEX}\n", 1), r"0 to 2\^62"),
        (lambda t: t.replace('split = "public"', f"split = {HEX}"), "digit integer>"),
        (lambda t: t.replace("memory_limit_mb = 512", "memory_limit_mb = 99999999999"), "16 to"),
    ],
)
def test_hostile_problem_toml_is_a_package_error(tmp_path, edit, message):
    """Found by tests/test_fuzz_packages.py: these escaped as ValueError / RecursionError."""
    with pytest.raises(PackageError, match=message):
        load_problem(make_package(tmp_path, edit(GOOD_TOML)))


@pytest.mark.parametrize("name", ["problem.toml", "statement.md"])
def test_a_folder_where_a_file_belongs_is_a_package_error(tmp_path, name):
    pkg = make_package(tmp_path)
    (pkg / name).unlink()
    (pkg / name).mkdir()
    with pytest.raises(PackageError, match="is a folder, not a file"):
        load_problem(pkg)


def test_import_minimalloc_refuses_file_names_that_are_no_case_names(tmp_path):
    source = tmp_path / "cases"
    source.mkdir()
    (source / "b\udcff.16.csv").write_text(CASE)  # a non-UTF-8 byte in the name
    with pytest.raises(PackageError, match="may use letters, digits"):
        import_minimalloc(source, tmp_path / "dest", "mm")
