"""The build cache (judge.buildcache), in both sandboxes: the same bytes, command and sandbox
build once; anything else, a damaged entry or a failed build builds again.

A build here writes a random stamp beside what it compiles and the planner prints it: the
same stamp twice means the second session did not build (no compiler ran), a new one
means it did. Docker tests skip without an engine and the runner image, except in CI.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from judge.buildcache import (
    MANIFEST,
    PAYLOAD,
    BuildCache,
    build_key,
    cache_from_env,
    cached_build,
    read_manifest,
    tree_digest,
)
from judge.package import Limits, load_problem
from judge.pipeline import judge_planner
from judge.sandbox import get_sandbox
from judge.verdict import Verdict
from tests.conftest import ROOT
from tests.test_package import make_package
from tests.test_sandbox import SANDBOXES

LIMITS = Limits()
MAIN = "int main() { return 0; }\n"
# g++ really runs; the stamp tells one build from another.
BUILD = ["sh", "-c", "g++ -O0 -o p main.cpp && od -An -N8 -tx8 /dev/urandom > stamp"]
RUN = ["sh", "-c", "./p && cat stamp"]


def submission(tmp_path: Path, source: str = MAIN, name: str = "s") -> Path:
    """A submission folder, as prepare_submission leaves it (its parent is scratch)."""
    root = tmp_path / f"{name}-{time.monotonic_ns()}" / "submission"
    root.mkdir(parents=True)
    root.parent.chmod(0o755)
    root.chmod(0o755)
    (root / "main.cpp").write_text(source)
    (root / "main.cpp").chmod(0o644)
    return root


def judged_stamp(sandbox: str, root: Path, cache: BuildCache, build=BUILD, run=RUN):
    """(stamp the planner printed, whether the build came from the cache)."""
    with get_sandbox(sandbox).session(root, build, run, LIMITS) as session:
        built, cached = cached_build(session, root, build, LIMITS, 60.0, cache)
        assert built is not None and built.exit_code == 0, built
        ran = session.run_case(10.0)
    assert ran.exit_code == 0, ran.log
    return ran.log.strip(), cached


def entries(cache: BuildCache) -> list[Path]:
    return sorted(p for p in cache.folder.glob("owner-*/??/*"))


@pytest.fixture
def cache(tmp_path):
    return BuildCache(tmp_path / "cache", 64 * 2**20, grace_s=0)


@pytest.mark.parametrize("sandbox", SANDBOXES)
def test_same_bytes_and_command_build_once(tmp_path, cache, sandbox):
    first, hit1 = judged_stamp(sandbox, submission(tmp_path), cache)
    second, hit2 = judged_stamp(sandbox, submission(tmp_path), cache)
    assert (hit1, hit2) == (False, True)
    assert first == second  # the kept tree: g++ did not run again
    assert len(entries(cache)) == 1


@pytest.mark.parametrize("sandbox", SANDBOXES)
def test_other_bytes_or_command_miss(tmp_path, cache, sandbox):
    stamp, _ = judged_stamp(sandbox, submission(tmp_path), cache)
    other_bytes, hit = judged_stamp(sandbox, submission(tmp_path, MAIN + "// x\n"), cache)
    assert not hit and other_bytes != stamp
    other_build = [*BUILD[:2], BUILD[2].replace("-O0", "-O1")]
    other_command, hit = judged_stamp(sandbox, submission(tmp_path), cache, build=other_build)
    assert not hit and other_command != stamp
    assert len(entries(cache)) == 3
    again, hit = judged_stamp(sandbox, submission(tmp_path), cache)
    assert hit and again == stamp


# The manifest is the cache's own (the same in both sandboxes); the payload each sandbox's.
DAMAGES = [
    *(("local", d) for d in ("payload", "manifest", "no_manifest", "foreign_key")),
    *(pytest.param("docker", "payload", marks=p.marks) for p in SANDBOXES if p.id == "docker"),
]


@pytest.mark.parametrize(("sandbox", "damage"), DAMAGES)
def test_a_damaged_entry_is_rebuilt(tmp_path, cache, sandbox, damage):
    stamp, _ = judged_stamp(sandbox, submission(tmp_path), cache)
    (entry,) = entries(cache)
    if damage == "payload":  # one byte of the kept tree changed
        victim = max((p for p in (entry / PAYLOAD).rglob("*") if p.is_file()), key=_size)
        data = bytearray(victim.read_bytes())
        data[len(data) // 2] ^= 0xFF
        victim.write_bytes(bytes(data))
    elif damage == "manifest":
        (entry / MANIFEST).write_bytes((entry / MANIFEST).read_bytes()[:-7])
    elif damage == "no_manifest":  # a partial entry
        (entry / MANIFEST).unlink()
    else:  # another build's entry under this key
        manifest = json.loads((entry / MANIFEST).read_text())
        (entry / MANIFEST).write_text(json.dumps({**manifest, "key": "0" * 64}))
    rebuilt, hit = judged_stamp(sandbox, submission(tmp_path), cache)
    assert not hit and rebuilt != stamp
    again, hit = judged_stamp(sandbox, submission(tmp_path), cache)
    assert hit and again == rebuilt  # the rebuilt tree was kept in its place


@pytest.mark.parametrize("sandbox", SANDBOXES)
def test_failed_builds_are_not_kept(tmp_path, cache, sandbox):
    build = ["sh", "-c", "echo nope; exit 1"]
    for _ in range(2):
        root = submission(tmp_path)
        with get_sandbox(sandbox).session(root, build, RUN, LIMITS) as session:
            built, cached = cached_build(session, root, build, LIMITS, 60.0, cache)
        assert built is not None and built.exit_code == 1 and not cached
        assert "nope" in built.log
    assert entries(cache) == []


def test_a_restored_build_belongs_to_the_new_session(tmp_path, cache):
    """The local sandbox leases a new uid per session: what the build made is that uid's
    after a hit too (a planner may rewrite its own build's files, as after a build)."""
    run = ["sh", "-c", "echo more >> stamp && cat stamp"]
    first, _ = judged_stamp("local", submission(tmp_path), cache, run=run)
    second, hit = judged_stamp("local", submission(tmp_path), cache, run=run)
    assert hit and second == first


def test_pipeline_reuses_a_reference_build(tmp_path):
    """greedy_size.cpp judged twice with the run's shared cache (conftest): the second
    build is the cache's and the results are equal. The first judging compiles it unless
    an earlier test did, and later tests reuse it (the misses are tested above)."""
    shared = cache_from_env()
    assert shared is not None and shared.usable
    problem = load_problem(make_package(tmp_path / "pkg"))
    planner = ROOT / "reference_solutions" / "greedy_size.cpp"
    first = judge_planner(problem, planner)
    start = time.monotonic()
    second = judge_planner(problem, planner)
    assert second.build_cached
    print(f"judged from the cache in {time.monotonic() - start:.2f} s")
    assert [(r.verdict, r.peak, r.plan_digest) for r in second.results] == [
        (r.verdict, r.peak, r.plan_digest) for r in first.results
    ]
    assert {r.verdict for r in first.results} == {Verdict.OK}


def test_the_cache_folder_must_be_the_judges_own(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o777)
    shared.chmod(0o777)  # anyone could put an entry there
    assert not BuildCache(shared, 2**20).usable
    made = BuildCache(tmp_path / "new" / "builds", 2**20)
    assert made.usable and stat.S_IMODE(made.folder.stat().st_mode) == 0o700
    assert not BuildCache(tmp_path / "off", 0).usable


def test_least_recently_used_entries_go_past_the_bound(tmp_path):
    cache = BuildCache(tmp_path / "c", 2500, grace_s=0)

    def export(text: str):
        def fill(dest: Path) -> dict:
            dest.mkdir()
            (dest / "f").write_text(text * 1000)
            return {}

        return fill

    for key in ("a1", "b2", "c3"):
        assert cache.put(key * 32, export(key[0]))
        time.sleep(0.01)
        assert cache.get("a1" * 32) is not None  # a1 stays the most recently used
    assert cache.get("b2" * 32) is None  # the least recently used went
    assert {p.name[:2] for p in entries(cache)} == {"a1", "c3"}


def test_keys_and_digests_tell_builds_apart(tmp_path):
    root = submission(tmp_path)
    digest, _ = tree_digest(root)
    (root / "main.cpp").chmod(0o755)
    assert tree_digest(root)[0] != digest  # modes count
    (root / "main.cpp").chmod(0o644)
    (root / "link").symlink_to("main.cpp")
    assert tree_digest(root)[0] != digest
    (root / "link").unlink()
    assert tree_digest(root)[0] == digest
    key = build_key(digest, BUILD, "local:x", {"memory_limit_mb": 1}, "local")
    assert key != build_key(digest, BUILD, "docker:y", {"memory_limit_mb": 1}, "local")
    assert key != build_key(digest, BUILD, "local:x", {"memory_limit_mb": 2}, "local")
    assert key != build_key(digest, [*BUILD, "x"], "local:x", {"memory_limit_mb": 1}, "local")
    assert key != build_key(digest, BUILD, "local:x", {"memory_limit_mb": 1}, "team-17")


@pytest.mark.parametrize("sandbox", SANDBOXES)
def test_entries_are_per_owner(tmp_path, sandbox):
    """Same bytes, two teams: two builds (no team learns that another built those bytes,
    nor gets its build); the same team again: its own build, reused."""
    folder = tmp_path / "shared"
    team_a = BuildCache(folder, 64 * 2**20, grace_s=0, owner="team-1")
    team_b = BuildCache(folder, 64 * 2**20, grace_s=0, owner="team-2")
    stamp_a, hit_a = judged_stamp(sandbox, submission(tmp_path), team_a)
    stamp_b, hit_b = judged_stamp(sandbox, submission(tmp_path), team_b)
    assert (hit_a, hit_b) == (False, False) and stamp_a != stamp_b
    again, hit = judged_stamp(sandbox, submission(tmp_path), team_a)
    assert hit and again == stamp_a
    assert [p.parent.parent.name for p in entries(team_a)] == ["owner-team-1", "owner-team-2"]
    with pytest.raises(ValueError, match="owner"):
        BuildCache(folder, 2**20, owner="../x")


def _size(path: Path) -> int:
    return path.stat().st_size


# ---- the manifest is read from disk: any bytes there are a miss, never an error -------------


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300) | JSON_VALUES.map(lambda v: json.dumps(v).encode()))
def test_any_manifest_bytes_are_read_safely(data):
    found = read_manifest(data)
    assert found is None or (isinstance(found["key"], str) and found["bytes"] >= 0)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow,
          HealthCheck.function_scoped_fixture])  # fmt: skip
@given(
    st.fixed_dictionaries(
        {},
        optional={
            "format": st.integers(0, 2),
            "key": st.text(max_size=70),
            "digest": st.text(max_size=70),
            "bytes": st.integers(-5, 10**20),
            "meta": st.dictionaries(st.text(max_size=5), st.integers() | st.text(max_size=5)),
        },
    ),
    st.booleans(),
)
def test_a_mutated_entry_is_a_miss_or_intact(tmp_path, fields, use_key):
    """Whatever a manifest says, get() returns only an entry whose tree matches it."""
    cache = BuildCache(tmp_path / f"c{time.monotonic_ns()}", 2**20, grace_s=0)
    key = "ab" * 32

    def fill(dest: Path) -> dict:
        dest.mkdir()
        (dest / "f").write_text("built")
        return {"uid": 1}

    assert cache.put(key, fill)
    manifest = json.loads((cache.path(key) / MANIFEST).read_text())
    written = {**manifest, **fields, **({"key": key} if use_key else {})}
    (cache.path(key) / MANIFEST).write_text(json.dumps(written))
    entry = cache.get(key)
    if entry is not None:
        assert read_manifest(json.dumps(written).encode()) is not None
        assert written["digest"] == manifest["digest"] and written["key"] == key
        assert (entry.payload / "f").read_text() == "built"
    else:
        assert not cache.path(key).exists()  # a damaged entry goes
    shutil.rmtree(cache.folder)


def test_an_entry_is_never_seen_half_written(tmp_path, cache):
    """Entries appear by one rename of a complete folder: an export that fails leaves
    nothing, not even a temporary."""

    def broken(dest: Path) -> dict:
        dest.mkdir()
        (dest / "half").write_text("x")
        raise OSError("disk full")

    assert not cache.put("cd" * 32, broken)
    assert cache.get("cd" * 32) is None and entries(cache) == []
    assert not any((cache.folder / ".tmp").iterdir())
    assert os.listdir(cache.folder) == [".tmp"]
