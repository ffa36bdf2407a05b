"""Shipped problem packages: valid, and reproducible from their own generators. The
repository holds the public split; the hidden split is made per installation from a
seed (tests/conftest.shipped: the tests' fixed one; tests/test_hidden_seed.py)."""

from __future__ import annotations

import filecmp
import shutil
import subprocess
import sys

import pytest

from judge.package import load_cases, load_problem
from tests.conftest import ROOT, shipped

SHIPPED = sorted(p.name for p in (ROOT / "problems").iterdir() if (p / "problem.toml").is_file())


OFFSET = [s for s in SHIPPED if load_problem(ROOT / "problems" / s).type == "offset"]
OFFLOAD = [s for s in SHIPPED if load_problem(ROOT / "problems" / s).type == "offload"]


@pytest.mark.parametrize("slug", SHIPPED)
def test_package_is_valid_with_public_and_hidden_cases(slug):
    problem = load_problem(shipped(slug))
    loaded = load_cases(problem)
    assert len(loaded) >= 12
    assert {lc.spec.split for lc in loaded} == {"public", "hidden"}
    assert "how" in problem.statement.lower() or "example" in problem.statement.lower()


@pytest.mark.parametrize("slug", SHIPPED)
def test_repository_holds_the_public_split_only(slug):
    """No hidden case, no hidden entry in problem.toml; the made package's public split
    and statement are the repository's, byte for byte."""
    repo, made = ROOT / "problems" / slug, shipped(slug)
    assert not (repo / "data" / "hidden").exists()
    assert {c.split for c in load_problem(repo).cases} == {"public"}
    toml = (made / "problem.toml").read_text()
    assert toml.startswith((repo / "problem.toml").read_text())
    assert (made / "statement.md").read_bytes() == (repo / "statement.md").read_bytes()
    names = sorted(p.name for p in (repo / "data" / "public").iterdir())
    assert names == sorted(p.name for p in (made / "data" / "public").iterdir())
    _, mismatch, errors = filecmp.cmpfiles(
        repo / "data" / "public", made / "data" / "public", names, shallow=False
    )
    assert not mismatch and not errors


@pytest.mark.parametrize("slug", OFFSET)
def test_offset_package_is_sized_as_promised(slug):
    loaded = load_cases(load_problem(shipped(slug)))
    sizes = [len(lc.case) for lc in loaded]
    # the public set starts at ~1,100 buffers; hidden cases come from a pool up to ~114,000
    assert min(sizes) <= 5_000 and max(sizes) <= 120_000
    for lc in loaded:  # capacity is 25 % above the bound, rounded up to a MiB
        assert lc.lower_bound * 1.25 < lc.spec.capacity <= lc.lower_bound * 1.25 + 2**20


def max_load(case) -> int:
    """Max over steps of the bytes of tensors live (first use to last use, inclusive)."""
    first = case.uses[case.use_start[:-1]]
    last = case.uses[case.use_start[1:] - 1]
    live = [int(case.size[(first <= s) & (s <= last)].sum()) for s in range(len(case.steps))]
    return max(live)


@pytest.mark.parametrize("slug", OFFLOAD)
def test_offload_package_needs_offloading_on_pcie_links(slug):
    """Every case's capacity is below its max load (something must leave the device);
    links are PCIe 4 or 5 x16 (problems/_lib/offload_trace.py): the public cases' are
    25 or 50 GB/s, the hidden cases' are drawn between 20 and 64 GB/s."""
    loaded = load_cases(load_problem(shipped(slug)))
    for lc in loaded:
        assert lc.spec.capacity < max_load(lc.case), lc.spec.name
    assert {lc.case.h2d for lc in loaded if lc.spec.split == "public"} <= {25_000, 50_000}
    assert all(20_000 <= lc.case.h2d <= 64_000 for lc in loaded)


@pytest.mark.parametrize("slug", SHIPPED)
def test_generator_reproduces_the_package_byte_for_byte(slug, tmp_path):
    """From the committed traces, with `import torch` made to fail: the generators use
    the standard library only (PyTorch is the trace extra, never needed here). Every
    shipped generator is copied: the online-* ones read gpt2-train's and llama-infer's
    traces in place."""
    shutil.copytree(ROOT / "problems" / "_lib", tmp_path / "_lib")
    for other in SHIPPED:
        shutil.copytree(ROOT / "problems" / other / "generator", tmp_path / other / "generator")
    script = str(tmp_path / slug / "generator" / "generate.py")
    code = (
        "import runpy, sys\n"
        "sys.modules['torch'] = None  # any import of torch now raises ImportError\n"
        f"sys.argv = [{script!r}]\n"
        f"runpy.run_path({script!r}, run_name='__main__')\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={"PYTHONHASHSEED": "123", "PATH": "/usr/bin:/bin"},
    )
    assert proc.returncode == 0, proc.stderr
    repo, made = ROOT / "problems" / slug, tmp_path / slug
    assert filecmp.cmp(repo / "problem.toml", made / "problem.toml", shallow=False)
    assert sorted(p.name for p in (made / "data").iterdir()) == ["public"]
    names = sorted(p.name for p in (repo / "data" / "public").iterdir())
    assert names == sorted(p.name for p in (made / "data" / "public").iterdir())
    _, mismatch, errors = filecmp.cmpfiles(
        repo / "data" / "public", made / "data" / "public", names, shallow=False
    )
    assert not mismatch and not errors
