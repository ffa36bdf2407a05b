"""The shipped `online` problems (problems/online-train, problems/online-serve): they load
with their public and hidden cases, their generators remake the public split byte for
byte from the committed gpt2-train / llama-infer traces (read in place), two seeds give
disjoint hidden cases, hints say only what an allocator knows at request time, and the
capacity (1.6x the bound, 2 MiB steps) takes best fit but not an allocator that never
reuses memory."""

from __future__ import annotations

import bisect
import filecmp
import hashlib
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from judge.package import load_cases, load_problem
from judge.types.online.case import case_events
from tests.conftest import ROOT, TEST_HIDDEN_SEED, shipped

TRACES = {"online-train": "gpt2-train", "online-serve": "llama-infer"}  # whose traces
SLUGS = sorted(TRACES)
HINTS = {
    "online-train": ("category", "op", "layer", "iteration", "microbatch"),
    "online-serve": ("category", "op", "layer", "request", "step"),
}
CATEGORIES = {
    "online-train": {
        "parameter",
        "optimizer_state",
        "gradient",
        "input",
        "activation",
        "temporary",
    },
    "online-serve": {"kv_cache", "input", "temporary"},
}
MIB2 = 2 << 20


def capacity_rule(bound: int) -> int:
    return -(-(bound * 8 // 5 + 1) // MIB2) * MIB2


@pytest.mark.parametrize("slug", SLUGS)
def test_package_loads_with_public_and_hidden_cases(slug):
    problem = load_problem(shipped(slug))
    assert problem.type == "online"
    assert problem.limits.time_limit_s == 20.0 and problem.limits.memory_limit_mb == 2048
    loaded = load_cases(problem)
    splits = [lc.spec.split for lc in loaded]
    assert splits.count("public") == 5 and splits.count("hidden") == 7
    for lc in loaded:
        assert lc.case.hint_names == HINTS[slug]
        assert 5_000 <= lc.case.events <= 200_000, (lc.spec.name, lc.case.events)
        assert lc.spec.capacity == capacity_rule(lc.lower_bound), lc.spec.name


def _copy_sources(slug: str, into: Path, package: bool = False) -> Path:
    """The generator, problems/_lib and the traces it reads; the package's public part
    (problem.toml, data/public) only with `package` (the hidden mode copies it)."""
    shutil.copytree(ROOT / "problems" / "_lib", into / "_lib")
    shutil.copytree(ROOT / "problems" / slug / "generator", into / slug / "generator")
    traces = Path(TRACES[slug]) / "generator" / "traces"
    shutil.copytree(ROOT / "problems" / traces, into / traces)
    shutil.copy(ROOT / "problems" / slug / "statement.md", into / slug / "statement.md")
    if package:
        shutil.copy(ROOT / "problems" / slug / "problem.toml", into / slug / "problem.toml")
        shutil.copytree(ROOT / "problems" / slug / "data", into / slug / "data")
    return into / slug / "generator" / "generate.py"


def _run(script: Path, *args: str) -> None:
    """The generator with `import torch` made to fail (standard library only)."""
    code = (
        "import runpy, sys\n"
        "sys.modules['torch'] = None\n"
        f"sys.argv = [{str(script)!r}, *{list(args)!r}]\n"
        f"runpy.run_path({str(script)!r}, run_name='__main__')\n"
    )
    env = {"PYTHONHASHSEED": "123", "PATH": "/usr/bin:/bin"}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize("slug", SLUGS)
def test_generator_reproduces_the_public_split_byte_for_byte(slug, tmp_path):
    script = _copy_sources(slug, tmp_path)
    _run(script)
    repo, made = ROOT / "problems" / slug, tmp_path / slug
    assert filecmp.cmp(repo / "problem.toml", made / "problem.toml", shallow=False)
    names = sorted(p.name for p in (repo / "data" / "public").iterdir())
    assert names == sorted(p.name for p in (made / "data" / "public").iterdir())
    assert len(names) == 5 and all(n.endswith(".events") for n in names)
    _, mismatch, errors = filecmp.cmpfiles(
        repo / "data" / "public", made / "data" / "public", names, shallow=False
    )
    assert not mismatch and not errors


def _digests(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.iterdir()}


@pytest.mark.parametrize("slug", SLUGS)
def test_two_seeds_give_disjoint_hidden_cases(slug, tmp_path):
    """Two seeds: no hidden case in common, none equal to a public one; the tests' seed
    again gives the bytes of tests/conftest.shipped (the same seed, the same cases)."""
    script = _copy_sources(slug, tmp_path / "src", package=True)
    made = {}
    for name, seed in (("a", "ab" * 32), ("b", "cd" * 32), ("t", TEST_HIDDEN_SEED)):
        (tmp_path / f"{name}.seed").write_text(seed + "\n")
        out = tmp_path / name
        _run(script, "--hidden-seed", str(tmp_path / f"{name}.seed"), "--out", str(out))
        made[name] = _digests(out / "data" / "hidden")
        assert len(made[name]) == 7
    public = set(_digests(ROOT / "problems" / slug / "data" / "public").values())
    assert not set(made["a"].values()) & set(made["b"].values())
    assert not (set(made["a"].values()) | set(made["b"].values())) & public
    assert made["t"] == _digests(shipped(slug) / "data" / "hidden")


def _op_names(slug: str) -> set[str]:
    sys.path.insert(0, str(ROOT / "problems" / "_lib"))
    from torchtrace import read_trace

    folders = [ROOT / "problems" / s / "generator" / "traces" for s in (TRACES[slug], slug)]
    return {n for f in folders for p in f.glob("*.json.xz") for n in read_trace(p)["op_names"]}


SMALL = re.compile(r"[0-9]{1,2}")  # layers, iterations, micro-batches, steps: under 100


@pytest.mark.parametrize("slug", SLUGS)
def test_hints_never_tell_the_free_time(slug):
    """Every hint value comes from a small vocabulary fixed when the request is made
    (a category, a recorded op name, a layer, a request's number, a counter under 100),
    so none can carry an event number (cases have 5,000 events or more); parameters
    have no iteration, Adam's state (made in the first step, by zeros_like) is
    iteration 0's, and a case's requests name no more requests than exist."""
    ops = _op_names(slug) | {"-", "zeros_like"}
    for lc in load_cases(load_problem(shipped(slug))):
        for cat, op, layer, fourth, fifth in lc.case.hints:
            assert cat in CATEGORIES[slug] and op in ops, (cat, op)
            assert layer in ("emb", "head") or SMALL.fullmatch(layer), layer
            assert fifth == "-" or SMALL.fullmatch(fifth), fifth
            if slug == "online-train":
                assert fourth == "-" or SMALL.fullmatch(fourth), fourth
                assert (cat == "parameter") == (fourth == "-"), (cat, fourth)
                if cat in ("parameter", "optimizer_state"):
                    assert fifth == "-" and (op == "zeros_like") == (cat != "parameter")
                    assert cat == "parameter" or fourth == "0", (cat, fourth)
            else:
                assert fourth == "-" or re.fullmatch(r"r[0-9]{1,3}", fourth), fourth
                assert (cat == "kv_cache") <= (fourth != "-")


def best_fit_peak(case) -> int:
    """Best fit in an unbounded arena (sorted free blocks, merged on free)."""
    starts, sizes, held, peak, top = [], [], {}, 0, 0
    for event in case_events(case):
        if event[0] == "a":
            _, bid, size, align, _ = event
            fits = [k for k in range(len(starts)) if _fits(starts[k], sizes[k], size, align)]
            if fits:
                k = min(fits, key=sizes.__getitem__)
                start, n = starts.pop(k), sizes.pop(k)
                off = -(-start // align) * align
                _give(starts, sizes, start, off - start)
                _give(starts, sizes, off + size, start + n - off - size)
            else:
                off = -(-top // align) * align
                _give(starts, sizes, top, off - top)
                top = off + size
            held[bid] = (off, size)
            peak = max(peak, off + size)
        else:
            _give(starts, sizes, *held.pop(event[1]))
    return peak


def _fits(start: int, n: int, size: int, align: int) -> bool:
    return -(-start // align) * align + size <= start + n


def _give(starts: list[int], sizes: list[int], off: int, size: int) -> None:
    """Return [off, off + size) to the free blocks, merged with its neighbours."""
    if size <= 0:
        return
    k = bisect.bisect_left(starts, off)
    if k < len(starts) and starts[k] == off + size:
        size += sizes.pop(k)
        starts.pop(k)
    if k > 0 and starts[k - 1] + sizes[k - 1] == off:
        sizes[k - 1] += size
    else:
        starts.insert(k, off)
        sizes.insert(k, size)


@pytest.mark.parametrize("slug", SLUGS)
def test_capacity_takes_best_fit_but_not_an_allocator_that_never_reuses(slug):
    for lc in load_cases(load_problem(ROOT / "problems" / slug)):
        peak = best_fit_peak(lc.case)
        assert lc.lower_bound <= peak <= lc.spec.capacity, lc.spec.name
        assert int(lc.case.size.sum()) > lc.spec.capacity, lc.spec.name


@pytest.mark.parametrize("slug", SLUGS)
def test_a_bump_allocator_fits_every_case_public_and_hidden(slug):
    """The capacity's promise (problems/_lib/online_trace.stack_top_fits: the policy of
    reference_solutions/online_naive.py), on the judge's reading of each case."""
    sys.path.insert(0, str(ROOT / "problems" / "_lib"))
    from online_trace import stack_top_fits

    for lc in load_cases(load_problem(shipped(slug))):
        assert stack_top_fits(list(case_events(lc.case)), lc.spec.capacity), lc.spec.name


def test_adam_state_is_made_in_the_first_optimizer_step():
    """online-train starts from a fresh model: the parameters come first, Adam's moments
    in iteration 0's optimizer step (after its micro-batches' last request, before the
    step's first update's temporary: torch.optim.Adam's _init_group), never freed."""
    for lc in load_cases(load_problem(shipped("online-train"))):
        at: dict[str, list[int]] = {}  # request kind -> its event positions
        freed = set()
        for n, event in enumerate(case_events(lc.case)):
            if event[0] == "f":
                freed.add(event[1])
                continue
            cat, _, _, it, mb = event[4]
            kind = cat if cat in ("parameter", "optimizer_state") else f"{it}/{mb == '-'}"
            at.setdefault(kind, []).append(n)
            if cat == "optimizer_state":
                assert event[1] not in freed
        moments, name = at["optimizer_state"], lc.spec.name
        assert max(at["parameter"]) < min(moments) and not freed & set(moments), name
        assert max(at["0/False"]) < min(moments) and max(moments) < min(at["0/True"]), name
        assert max(moments) < min(at["1/False"]), name


def test_a_serving_requests_caches_never_shrink_in_any_case():
    """A request's keys or values of a layer grow by a token a step, in the hidden cases
    too: their variation scales a request's tensors by one factor of its own (a factor
    per run of ops made caches shrink between steps thousands of times a case)."""
    for lc in load_cases(load_problem(shipped("online-serve"))):
        case, grown = lc.case, 0
        names = case.hint_names
        cat, req, layer = (names.index(n) for n in ("category", "request", "layer"))
        largest: dict[tuple[str, str], int] = {}
        for size, hints in zip(case.size.tolist(), case.hints, strict=True):
            if hints[cat] != "kv_cache" or hints[req] == "-":
                continue
            key = (hints[req], hints[layer])
            assert size >= largest.get(key, 0), (lc.spec.name, key)
            grown += size > largest.get(key, size)
            largest[key] = max(size, largest.get(key, 0))
        assert grown > 0, lc.spec.name
