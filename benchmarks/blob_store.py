"""Benchmark: the blob store (api.blobs) on its backends: storing a 16 MiB upload
(the upload limit), a cold read of it into a host's cache (a worker that has never
seen it), a warm read, and 200 plan-sized blobs of 20 KiB stored one by one (a
judging's plans). Prints figures; asserts nothing about time.

    python benchmarks/blob_store.py [--postgres-admin postgresql://postgres@HOST/postgres]

PostgreSQL: a scratch database made for the run and dropped after ("" skips it).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from api.blobs import BlobStore
from api.blobs.cache import BlobCache
from api.blobs.database import DatabaseBlobs
from api.blobs.local import LocalBlobs
from api.db.session import get_engine, migrate

PG_ADMIN = "postgresql://postgres@127.0.0.1:5432/postgres"


@contextmanager
def scratch_database(admin: str) -> Iterator[str]:
    import psycopg

    name = f"memorace_bench_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield admin.replace("postgresql://", "postgresql+psycopg://").rsplit("/", 1)[0] + "/" + name
    finally:
        get_engine.cache_clear()  # its pooled connections would block the drop
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def timed(what: str, run: Callable[[], object], size: int) -> None:
    start = time.perf_counter()
    run()
    took = time.perf_counter() - start
    print(f"  {what:<34} {took * 1000:8.1f} ms  {size / took / 2**20:8.1f} MiB/s")


def measure(name: str, make: Callable[[Path], BlobStore]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        store = make(Path(tmp))
        upload = Path(tmp) / "upload.bin"
        upload.write_bytes(os.urandom(16 * 2**20))
        print(name)
        sha: list[str] = []
        timed("put 16 MiB upload", lambda: sha.append(store.put_file(upload)), 16 * 2**20)
        timed("put it again (no-op)", lambda: store.put_file(upload), 16 * 2**20)
        if isinstance(store, DatabaseBlobs):
            other = make(Path(tmp) / "other-host")  # an empty cache: a fresh worker
            timed("cold read on another host", lambda: other.local_path(sha[0]), 16 * 2**20)
            timed("warm read", lambda: other.local_path(sha[0]), 16 * 2**20)
        plans = [os.urandom(20 * 2**10) for _ in range(200)]
        timed("put 200 plans of 20 KiB", lambda: [store.put_bytes(p) for p in plans], 4000 * 2**10)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--postgres-admin", default=PG_ADMIN)
    args = parser.parse_args()

    def local(tmp: Path) -> BlobStore:
        return LocalBlobs(tmp / "blobs", BlobCache(tmp / "cache", 2**30))

    def database(url: str) -> Callable[[Path], BlobStore]:
        return lambda tmp: DatabaseBlobs(url, BlobCache(tmp / "cache", 2**30))

    measure("local folder", local)
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{tmp}/db.sqlite"
        migrate(url)
        measure("database: SQLite", database(url))
    if args.postgres_admin:
        with scratch_database(args.postgres_admin) as url:
            migrate(url)
            measure("database: PostgreSQL", database(url))


if __name__ == "__main__":
    main()
