"""A build shared between hosts (judge.buildcache.BuildShare; the worker's is
worker.cases.BlobShare, through the blob store): a helper on another host restores the
owner's build and never compiles; with nothing kept, or a damaged or hostile pack, it
gives up (BuildUnavailable) instead of building. In both sandboxes."""

from __future__ import annotations

import io
import tarfile
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from judge.buildcache import BuildCache, BuildUnavailable, cached_build
from judge.sandbox import get_sandbox
from tests.test_build_cache import BUILD, LIMITS, RUN, submission
from tests.test_sandbox import SANDBOXES


class MemoryShare:
    """Packs kept in a dict: the blob store's part, without a database."""

    def __init__(self, packs: dict[str, bytes], reuse_only: bool):
        self.packs, self.reuse_only = packs, reuse_only

    def publish(self, key: str, cache: BuildCache) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "build.tar"
            assert cache.pack(key, path)
            self.packs[key] = path.read_bytes()

    def fetch(self, key: str, cache: BuildCache) -> bool:
        if key not in self.packs:
            return False
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "build.tar"
            path.write_bytes(self.packs[key])
            return cache.unpack(key, path)


def judged(sandbox: str, root: Path, cache: BuildCache, share: MemoryShare) -> tuple[str, bool]:
    with get_sandbox(sandbox).session(root, BUILD, RUN, LIMITS) as session:
        built, cached = cached_build(session, root, BUILD, LIMITS, 60.0, cache, share)
        assert built is not None and built.exit_code == 0, built
        ran = session.run_case(10.0)
    assert ran.exit_code == 0, ran.log
    return ran.log.strip(), cached


def host_cache(tmp_path: Path, host: str) -> BuildCache:
    return BuildCache(tmp_path / host / "cache", 64 * 2**20, grace_s=0, owner="team-1")


@pytest.mark.parametrize("sandbox", SANDBOXES)
def test_a_helper_on_another_host_restores_the_owners_build(tmp_path, sandbox):
    packs: dict[str, bytes] = {}
    owner = judged(
        sandbox, submission(tmp_path), host_cache(tmp_path, "a"), MemoryShare(packs, False)
    )
    assert not owner[1] and len(packs) == 1  # built, then published
    helper = judged(
        sandbox, submission(tmp_path), host_cache(tmp_path, "b"), MemoryShare(packs, True)
    )
    assert helper == (owner[0], True)  # the same stamp: host b compiled nothing


@pytest.mark.parametrize("sandbox", SANDBOXES)
def test_a_helper_never_builds(tmp_path, sandbox):
    packs: dict[str, bytes] = {}
    judged(sandbox, submission(tmp_path), host_cache(tmp_path, "a"), MemoryShare(packs, False))
    (key,) = packs
    damaged = {key: packs[key][: len(packs[key]) // 2]}  # a pack cut short
    for given_packs in ({}, damaged):
        root = submission(tmp_path)
        with get_sandbox(sandbox).session(root, BUILD, RUN, LIMITS) as session:
            with pytest.raises(BuildUnavailable):
                cached_build(
                    session, root, BUILD, LIMITS, 60.0, host_cache(tmp_path, "b"),
                    MemoryShare(given_packs, True),
                )  # fmt: skip
            assert session.run_case(10.0).exit_code != 0  # no ./p: nothing was built


def hostile_pack(members: list[tuple[str, bytes, str]]) -> bytes:
    """A tar of (name, data, link target) members: a link when the target is set."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        for name, data, target in members:
            info = tarfile.TarInfo(name)
            if target:
                info.type, info.linkname = tarfile.SYMTYPE, target
                tar.addfile(info)
            else:
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


def test_a_hostile_pack_writes_nothing_outside_the_cache(tmp_path):
    cache = host_cache(tmp_path, "b")
    key = "ab" * 32
    pack = hostile_pack([
        ("../../escaped", b"x", ""),
        ("/abs-escaped", b"x", ""),
        ("link", b"", str(tmp_path)),
        ("link/through-link", b"x", ""),
        ("manifest.json", b"{}", ""),
    ])  # fmt: skip
    path = tmp_path / "pack.tar"
    path.write_bytes(pack)
    assert cache.unpack(key, path) is False
    assert not (tmp_path / "escaped").exists() and not Path("/abs-escaped").exists()
    assert not (tmp_path / "through-link").exists()
    assert cache.get(key) is None


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.binary(max_size=4096))
def test_any_pack_bytes_are_read_safely(tmp_path, data):
    """Whatever the blob holds: unpacked whole and intact, or refused; never an error."""
    cache = host_cache(tmp_path, "fuzz")
    path = tmp_path / "pack.tar"
    path.write_bytes(data)
    assert cache.unpack("cd" * 32, path) is False
