"""The restore reader (api.backup.restore) against damaged and hostile archives: cut
short, bytes changed, members named to escape the data directory, links, devices,
duplicates, a manifest that lies. Each ends in RestoreError (a clear message, never a
traceback) or, where the damage touched nothing the restore reads, in the exact
backup; nothing is ever written outside the target's data directory."""

from __future__ import annotations

import io
import json
import os
import shutil
import tarfile
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from api.backup.create import create
from api.backup.restore import RestoreError, restore
from api.settings import Settings
from tests.test_backup_restore import fill, rows

# A restore that succeeds migrates a database (a second or so): fewer examples than
# the readers' fuzzing, more where MEMORACE_FUZZ_EXAMPLES asks for them.
EXAMPLES = max(20, int(os.environ.get("MEMORACE_FUZZ_EXAMPLES", "10000")) // 100)
FUZZ = settings(max_examples=EXAMPLES, deadline=None, database=None,
                suppress_health_check=list(HealthCheck))  # fmt: skip
ESCAPES = ["../x", "/tmp/x", "files/../x", "files/blobs/../../x", "files/../../../x",
           "files/blobs/ab/../../../../x", "files//etc/x", "files/secrets/./x", "./manifest.json",
           "files/cache/x", "files/db.sqlite", "tables/../x.jsonl", "files/blobs\\..\\x",
           "files/blobs/x\x00y", "files/secret_key/x"]  # fmt: skip


@pytest.fixture(scope="module")
def archive(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any], Settings]:
    """A valid backup of a small SQLite service, its rows, and the source."""
    tmp = tmp_path_factory.mktemp("fuzz")
    source = Settings(data_dir=tmp / "a", database_url=f"sqlite:///{tmp}/a/db.sqlite")
    fill(source)
    create(source, tmp / "good.tar")
    return tmp / "good.tar", rows(source), source


def attempt(data: bytes, want: dict[str, Any], source: Settings) -> None:
    """Restore `data` onto a fresh host; the property every archive must keep."""
    with tempfile.TemporaryDirectory(prefix="memorace-fuzz-") as tmp:
        root = Path(tmp)
        (root / "in.tar").write_bytes(data)
        data_dir = root / "host" / "data"
        target = Settings(data_dir=data_dir, database_url=f"sqlite:///{data_dir}/db.sqlite")
        try:
            manifest = restore(target, root / "in.tar")
        except RestoreError as exc:
            assert str(exc)
            manifest = None
        outside = {p for p in root.rglob("*") if not p.is_relative_to(data_dir)}
        assert outside <= {root / "in.tar", root / "host", data_dir}, sorted(outside)
        if manifest is not None:  # whatever it accepted is the backup, exactly
            assert rows(target) == want
            for rel in manifest["files"]:
                assert (data_dir / rel).read_bytes() == (source.data_dir / rel).read_bytes()


@FUZZ
@given(
    cut=st.one_of(st.none(), st.integers(min_value=0)),
    flips=st.lists(st.tuples(st.integers(min_value=0), st.integers(1, 255)), max_size=4),
)
def test_cut_or_changed_bytes(
    archive: tuple, cut: int | None, flips: list[tuple[int, int]]
) -> None:
    path, want, source = archive
    data = bytearray(path.read_bytes())
    for at, xor in flips:
        data[at % len(data)] ^= xor
    if cut is not None:
        data = data[: cut % len(data)]
    attempt(bytes(data), want, source)


def rebuilt(path: Path, extra: list[tarfile.TarInfo], change: dict[str, Any]) -> bytes:
    """The good archive with hostile members added and its manifest changed."""
    out = io.BytesIO()
    with tarfile.open(path) as old, tarfile.open(fileobj=out, mode="w") as new:
        for info in old.getmembers():
            body = old.extractfile(info).read()
            if info.name == "manifest.json":
                manifest = json.loads(body)
                for key, value in change.items():
                    section, _, name = key.partition(":")
                    if name:
                        manifest[section][name] = value
                    else:
                        manifest[section] = value
                body = json.dumps(manifest).encode()
                for member in extra:  # before the manifest: it stays last
                    new.addfile(member, io.BytesIO(b"x" * member.size) if member.isreg() else None)
            info.size = len(body)
            new.addfile(info, io.BytesIO(body))
    return out.getvalue()


def hostile_member(name: str, kind: str) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    types = {"file": tarfile.REGTYPE, "symlink": tarfile.SYMTYPE, "link": tarfile.LNKTYPE,
             "dir": tarfile.DIRTYPE, "fifo": tarfile.FIFOTYPE, "char": tarfile.CHRTYPE}  # fmt: skip
    info.type = types[kind]
    info.linkname = "/etc/passwd" if kind in ("symlink", "link") else ""
    info.size = 1 if kind == "file" else 0
    return info


names = st.one_of(st.sampled_from(ESCAPES), st.sampled_from(["files/blobs/ab/cd", "manifest.json",
                                                             "tables/teams.jsonl"]))  # fmt: skip
kinds = st.sampled_from(["file", "symlink", "link", "dir", "fifo", "char"])
lies = st.sampled_from([
    {}, {"tables:teams": 6}, {"tables:teams": 8}, {"tables:nope": 0}, {"tables:teams": -1},
    {"files:../x": {"size": 1, "sha256": "0" * 64}}, {"files:blobs/zz": {"size": 1}},
    {"revision": "9999"}, {"revision": 14}, {"format": "other"}, {"files": []}, {"tables": None},
    {"table_files": {}}, {"files:secrets/hidden-seed": {"size": 5, "sha256": "0" * 64}},
])  # fmt: skip


@FUZZ
@given(extra=st.lists(st.tuples(names, kinds), max_size=3), lie=lies)
def test_hostile_members_and_lying_manifests(
    archive: tuple, extra: list[tuple[str, str]], lie: dict[str, Any]
) -> None:
    path, want, source = archive
    members = [hostile_member(name, kind) for name, kind in extra]
    attempt(rebuilt(path, members, lie), want, source)


def test_the_good_archive_restores_and_a_second_restore_is_refused(archive: tuple) -> None:
    path, want, _ = archive
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = Path(tmp) / "data"
        target = Settings(data_dir=data_dir, database_url=f"sqlite:///{data_dir}/db.sqlite")
        restore(target, path)
        assert rows(target) == want
        with pytest.raises(RestoreError, match="already holds data"):
            restore(target, path)
        shutil.rmtree(data_dir)
