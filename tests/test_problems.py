"""Shipped problem packages: valid, and reproducible from their own generators."""

from __future__ import annotations

import filecmp
import shutil
import subprocess
import sys

import pytest

from judge.package import load_cases, load_problem
from tests.conftest import ROOT

SHIPPED = sorted(p.name for p in (ROOT / "problems").iterdir() if (p / "problem.toml").is_file())


@pytest.mark.parametrize("slug", SHIPPED)
def test_package_is_valid_and_sized_as_promised(slug):
    problem = load_problem(ROOT / "problems" / slug)
    loaded = load_cases(problem)
    sizes = [len(lc.case) for lc in loaded]
    assert len(loaded) >= 12
    assert {lc.spec.split for lc in loaded} == {"public", "hidden"}
    assert min(sizes) <= 5_000 and max(sizes) >= 100_000  # the set as a whole starts at ~1,500
    for lc in loaded:  # capacity is 25 % above the bound, rounded up to a MiB
        assert lc.lower_bound * 1.25 < lc.spec.capacity <= lc.lower_bound * 1.25 + 2**20
    assert "how" in problem.statement.lower()


@pytest.mark.parametrize("slug", SHIPPED)
def test_generator_reproduces_the_package_byte_for_byte(slug, tmp_path):
    shutil.copytree(ROOT / "problems" / "_lib", tmp_path / "_lib")
    shutil.copytree(ROOT / "problems" / slug / "generator", tmp_path / slug / "generator")
    proc = subprocess.run(
        [sys.executable, str(tmp_path / slug / "generator" / "generate.py")],
        capture_output=True,
        text=True,
        env={"PYTHONHASHSEED": "123", "PATH": "/usr/bin:/bin"},
    )
    assert proc.returncode == 0, proc.stderr
    shipped, made = ROOT / "problems" / slug, tmp_path / slug
    assert filecmp.cmp(shipped / "problem.toml", made / "problem.toml", shallow=False)
    for split in ("public", "hidden"):
        names = sorted(p.name for p in (shipped / "data" / split).iterdir())
        assert names == sorted(p.name for p in (made / "data" / split).iterdir())
        _, mismatch, errors = filecmp.cmpfiles(
            shipped / "data" / split, made / "data" / split, names, shallow=False
        )
        assert not mismatch and not errors
