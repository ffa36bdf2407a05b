"""The offload packages made from recorded PyTorch traces (train-offload v2,
infer-offload v2): they regenerate byte for byte from the committed traces without
PyTorch, and their cases carry what the offload schemes promise."""

from __future__ import annotations

import hashlib
import json
import re
import runpy
import shutil
import subprocess
import sys

import pytest

from judge.package import load_cases, load_problem
from tests.conftest import ROOT, shipped

SLUGS = ["train-offload", "infer-offload"]
LIB = ROOT / "problems" / "_lib"


@pytest.mark.parametrize("slug", SLUGS)
def test_regenerates_from_its_traces_without_torch(slug, tmp_path):
    shutil.copytree(LIB, tmp_path / "_lib")
    shutil.copytree(ROOT / "problems" / slug / "generator", tmp_path / slug / "generator")
    script = tmp_path / slug / "generator" / "generate.py"
    code = (
        "import runpy, sys\n"
        "sys.modules['torch'] = None  # any import of torch now raises ImportError\n"
        f"sys.argv = [{str(script)!r}]\n"
        f"runpy.run_path({str(script)!r}, run_name='__main__')\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    shipped, made = ROOT / "problems" / slug, tmp_path / slug
    assert (made / "problem.toml").read_text() == (shipped / "problem.toml").read_text()
    names = sorted(p.relative_to(shipped) for p in shipped.glob("data/*/*.json"))
    assert names == sorted(p.relative_to(made) for p in made.glob("data/*/*.json"))
    for name in names:
        assert (made / name).read_bytes() == (shipped / name).read_bytes(), name


# sha256 over version 1's problem.toml and data/*/*.json (path, then bytes, sorted), as
# shipped before version 2 replaced it
INFER_V1 = "aefb03c4c38df9b527a94aa047ab1f71d0c67192fd9244e2f092c4045158d62b"


def test_infer_offload_v1_regenerates_as_shipped(tmp_path):
    shutil.copytree(LIB, tmp_path / "_lib")
    shutil.copytree(ROOT / "problems/infer-offload/generator", tmp_path / "g/generator")
    out = tmp_path / "infer-offload"
    script = tmp_path / "g/generator/v1/generate.py"
    run = subprocess.run([sys.executable, str(script), "--out", str(out)], capture_output=True)
    assert run.returncode == 0, run.stderr
    digest = hashlib.sha256()
    for path in sorted([out / "problem.toml", *out.glob("data/*/*.json")]):
        digest.update(str(path.relative_to(out)).encode())
        digest.update(path.read_bytes())
    assert digest.hexdigest() == INFER_V1


def bodies(slug: str) -> list[dict]:
    problem = load_problem(shipped(slug))  # public and the tests' hidden cases
    return [json.loads(spec.path.read_text()) for spec in problem.cases]


def test_train_offload_is_zero_offload_like():
    for case in bodies("train-offload"):
        by = {}
        for t in case["tensors"]:
            by.setdefault(t["id"].split(".")[0], []).append(t)
        assert all(t["start"] == "host" and t["end"] == "host" for t in by["parameter"])
        assert {t.get("start") for t in by["optimizer_state"]} == {
            "nvme" if "nvme" in case else "host"
        }
        assert all(t["end"] == "host" and "compress" in t for t in by["gradient"])
        assert any("recompute" in t for t in by["activation"])
        assert all(t["compress"]["size"] * 4 == t["size"] - t["size"] % 4 for t in by["activation"])
    assert sum("nvme" in case for case in bodies("train-offload")) >= 3


def test_infer_offload_is_flexgen_like():
    for spec in load_problem(shipped("infer-offload")).cases:
        case = json.loads(spec.path.read_text())
        weights = [t for t in case["tensors"] if t["id"].startswith("parameter.")]
        kv = [t for t in case["tensors"] if t["id"].startswith("kv_cache.")]
        assert sum(t["size"] for t in weights) > spec.capacity  # the weights do not fit
        assert all(t["start"] == ("nvme" if "nvme" in case else "host") for t in weights)
        assert kv and all("compress" in t for t in kv) and any(t.get("end") == "host" for t in kv)
        # the load balances compute with streaming the weights once per engine step (3)
        stream = 3 * sum(t["size"] for t in weights) / case["h2d_bandwidth"]
        assert 0.75 * stream <= sum(case["steps"]) <= 2 * stream, spec.name


def test_the_case_writer_needs_no_torch():
    source = (LIB / "offload_trace.py").read_text()
    assert not re.search(r"^\s*(import|from) torch\b", source, re.MULTILINE)
    runpy.run_path(str(LIB / "offload_trace.py"))  # standard library only


def test_cases_are_small_enough_to_verify_quickly():
    for slug in SLUGS:
        for lc in load_cases(load_problem(shipped(slug))):
            assert len(lc.case.uses) <= 20_000, lc.spec.name


def test_traces_record_reads_and_in_place_writes():
    """Adam writes every parameter in place; a forward reads it: both are in the trace."""
    sys.path.insert(0, str(LIB))
    from torchtrace import read_trace

    path = sorted((ROOT / "problems/train-offload/generator/traces").glob("*.json.xz"))[0]
    doc = read_trace(path)
    t, param = doc["tensors"], doc["categories"].index("parameter")
    params = [i for i, c in enumerate(t["category"]) if c == param]
    assert params and all(t["reads"][i] and t["writes"][i] for i in params)
    assert doc["provenance"]["command"].startswith("memorace trace train")
