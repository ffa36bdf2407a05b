"""The blob store (api.blobs): both backends (local folder; database on SQLite and on
PostgreSQL) store, find and hand back the same bytes, detect damage, and each host's
cache stays under its bound."""

from __future__ import annotations

import hashlib
import io
import os
import tarfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import update

from api.actions.problems import import_package, package_of
from api.blobs import CHUNK_BYTES, BlobCorrupt, BlobMissing, BlobStore, blob_store
from api.blobs.cache import BlobCache
from api.blobs.database import DatabaseBlobs
from api.blobs.local import LocalBlobs
from api.blobs.packages import _unpack, put_package
from api.db.models import BlobChunk, ProblemVersion
from api.db.session import migrate, session_scope
from api.settings import Settings
from tests.service import postgres_database, small_package

BACKENDS = ["local", "sqlite", "postgresql"]
DATABASES = ["sqlite", "postgresql"]


def _store(kind: str, folder: Path, url: str = "") -> BlobStore:
    cache = BlobCache(folder / "cache", 64 * 2**20)
    if kind == "local":
        return LocalBlobs(folder / "blobs", cache)
    return DatabaseBlobs(url, cache)


@pytest.fixture(params=BACKENDS)
def store(request, tmp_path) -> Iterator[BlobStore]:
    yield from _make(request.param, tmp_path)


@pytest.fixture(params=DATABASES)
def db_store(request, tmp_path) -> Iterator[DatabaseBlobs]:
    yield from _make(request.param, tmp_path)  # type: ignore[misc]


def _make(kind: str, tmp: Path) -> Iterator[BlobStore]:
    if kind == "postgresql":
        with postgres_database() as url:
            migrate(url)
            yield _store(kind, tmp, url)
        return
    url = f"sqlite:///{tmp}/db.sqlite"
    if kind == "sqlite":
        migrate(url)
    yield _store(kind, tmp, url)


def test_bytes_and_files_come_back_by_their_sha256(store, tmp_path):
    small = b"id,offset\n1,0\n"
    big = os.urandom(2 * CHUNK_BYTES + 17)  # three chunks, the last one short
    path = tmp_path / "big.bin"
    path.write_bytes(big)
    assert store.put_bytes(small) == hashlib.sha256(small).hexdigest()
    sha = store.put_file(path)
    assert sha == hashlib.sha256(big).hexdigest()
    assert store.put_file(path) == sha == store.put_bytes(big)  # again: a no-op
    assert store.has(sha) and store.local_path(sha).read_bytes() == big
    assert store.local_path(hashlib.sha256(small).hexdigest()).read_bytes() == small


def test_an_empty_blob(store):
    sha = store.put_bytes(b"")
    assert store.local_path(sha).read_bytes() == b""


@pytest.mark.parametrize("name", ["0" * 64, "../" * 5 + "etc/passwd", "", "A" * 64, "0" * 63])
def test_a_missing_or_malformed_name_is_missing(store, name):
    assert not store.has(name)
    with pytest.raises(BlobMissing):
        store.local_path(name)


def test_a_damaged_chunk_is_detected_and_never_cached(db_store):
    data = os.urandom(CHUNK_BYTES + 100)
    sha = db_store.put_bytes(data)
    with session_scope(db_store.url) as db:
        db.execute(
            update(BlobChunk)
            .where(BlobChunk.sha256 == sha, BlobChunk.seq == 1)
            .values(data=b"x" * 100)
        )
    with pytest.raises(BlobCorrupt):
        db_store.local_path(sha)
    assert db_store.cache.get(sha) is None and db_store.cache.used_bytes() == 0


def test_a_second_host_reads_through_its_own_cache(db_store, tmp_path):
    sha = db_store.put_bytes(b"plan bytes")
    other = DatabaseBlobs(db_store.url, BlobCache(tmp_path / "other-cache", 2**20))
    path = other.local_path(sha)
    assert path.is_relative_to(tmp_path / "other-cache") and path.read_bytes() == b"plan bytes"


def test_writers_of_the_same_blob_at_once_all_succeed(db_store):
    data = os.urandom(3 * CHUNK_BYTES)
    shas: list[str] = []
    errors: list[BaseException] = []

    def put() -> None:
        try:
            shas.append(db_store.put_bytes(data))
        except BaseException as exc:  # collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=put) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and len(set(shas)) == 1
    assert db_store.local_path(shas[0]).read_bytes() == data


def test_the_cache_evicts_the_least_recently_used_first(tmp_path):
    cache = BlobCache(tmp_path / "cache", max_bytes=1000, grace_s=0)
    for i, key in enumerate(("a" * 64, "b" * 64, "c" * 64)):
        cache.add(key, lambda p: p.write_bytes(b"x" * 400))
        os.utime(cache.path(key), (1000 + i, 1000 + i))  # a: oldest
    assert cache.get("a" * 64) is None  # the third pushed the oldest out
    cache.get("b" * 64)  # used: now the newest
    cache.add("d" * 64, lambda p: p.write_bytes(b"x" * 400))
    assert cache.get("c" * 64) is None and cache.get("b" * 64) is not None
    assert cache.used_bytes() <= 1000


def test_the_cache_spares_entries_in_use_and_counts_folders(tmp_path):
    cache = BlobCache(tmp_path / "cache", max_bytes=100)  # grace: a minute

    def tree(folder: Path) -> None:
        (folder / "pkg").mkdir()
        (folder / "pkg" / "case.csv").write_bytes(b"y" * 300)

    path = cache.add("e" * 64 + ".d", tree, tree=True)
    assert (path / "pkg" / "case.csv").read_bytes() == b"y" * 300  # over the bound, in use
    assert cache.used_bytes() == 300
    cache.grace_s = 0
    cache.evict()
    assert cache.used_bytes() == 0 and not path.exists()


def test_a_failed_fill_leaves_nothing(tmp_path):
    cache = BlobCache(tmp_path / "cache", max_bytes=1000)

    def fail(path: Path) -> None:
        path.write_bytes(b"half")
        raise BlobCorrupt("damaged")

    with pytest.raises(BlobCorrupt):
        cache.add("f" * 64, fail)
    assert cache.get("f" * 64) is None
    assert not any((tmp_path / "cache" / ".tmp").iterdir())


def test_a_package_blob_is_deterministic(tmp_path):
    store = _store("local", tmp_path)
    root = tmp_path / "tiny"
    (root / "data" / "public").mkdir(parents=True)
    (root / "problem.toml").write_text("slug = 'tiny'\n")
    (root / "data" / "public" / "a.csv").write_text("id,lower,upper,size\n")
    first = put_package(store, root)
    os.utime(root / "problem.toml", (1, 1))  # times and owners are not part of it
    assert put_package(store, root) == first


BYTES = st.binary(max_size=4096)
NAMES = st.text(max_size=80)


@pytest.mark.parametrize("kind", ["local", "sqlite"])
def test_fuzz_any_bytes_round_trip_and_any_name_is_safe(kind, tmp_path):
    store = next(_make(kind, tmp_path))

    @settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
    @given(data=BYTES, name=NAMES)
    def check(data: bytes, name: str) -> None:
        sha = store.put_bytes(data)
        assert store.local_path(sha).read_bytes() == data
        try:
            found = store.local_path(name)
        except BlobMissing:
            return
        assert hashlib.sha256(found.read_bytes()).hexdigest() == name

    check()


def test_a_version_from_before_the_blob_store_loads_and_a_reimport_stores_it(tmp_path):
    settings = Settings(data_dir=tmp_path / "data")
    settings.data_dir.mkdir()
    migrate(settings.database_url)
    pkg = small_package(tmp_path)
    with session_scope(settings.database_url) as db:
        version = import_package(db, settings, pkg, None)
        blob, version_id = version.package_blob, version.id
        assert blob and version.package_path == ""
        assert (
            package_of(settings, version).root
            == blob_store(settings).cache.path(f"{blob}.d") / pkg.name
        )
        version.package_blob, version.package_path = None, str(pkg)  # as older rows are
    with session_scope(settings.database_url) as db:
        version = db.get(ProblemVersion, version_id)
        assert package_of(settings, version).root == pkg
        again = import_package(db, settings, pkg, None)
        assert again.id == version_id and again.package_blob == blob


def test_the_store_follows_the_database_unless_told(tmp_path):
    pg = "postgresql+psycopg://postgres@127.0.0.1/x"
    assert Settings(data_dir=tmp_path).blob_store == "local"  # SQLite: one host
    assert Settings(data_dir=tmp_path, database_url=pg).blob_store == "database"
    assert Settings(data_dir=tmp_path, database_url=pg, blob_store="local").blob_store == "local"
    for wrong in ({"blob_store": "s3"}, {"blob_store": "database"}):  # the latter on SQLite
        with pytest.raises(ValueError, match="MEMORACE_BLOB_STORE"):
            Settings(data_dir=tmp_path, **wrong)


@pytest.mark.parametrize("name", ["../escape", "/abs/file", "pkg/../../up", "pkg/link"])
def test_a_package_archive_member_outside_its_folder_is_refused(tmp_path, name):
    """_unpack checks members itself (the service image's Python 3.11.2 has no
    tarfile `filter=`): paths out of the folder and links are refused, nothing lands."""
    archive, dest = tmp_path / "p.tar.gz", tmp_path / "dest"
    dest.mkdir()
    with tarfile.open(archive, "w:gz") as tar:
        info = tarfile.TarInfo(name)
        if name.endswith("link"):
            info.type, info.linkname = tarfile.SYMTYPE, "/etc/passwd"
            tar.addfile(info)
        else:
            info.size = 2
            tar.addfile(info, io.BytesIO(b"hi"))
    with pytest.raises(ValueError, match="refused"):
        _unpack(archive, dest)
    assert not any(dest.iterdir()) and not (tmp_path / "escape").exists()
