"""Problem packages as blobs: a deterministic tar.gz of the package folder, unpacked
once per host into the blob cache (where judgings and pages read it)."""

from __future__ import annotations

import gzip
import tarfile
import tempfile
from pathlib import Path

from api.blobs import BlobStore, blob_store, check_name
from api.settings import Settings


def put_package(store: BlobStore, root: Path) -> str:
    """Store the package folder; the same files always give the same blob."""
    with tempfile.TemporaryDirectory(prefix="memorace-pack-") as tmp:
        archive = Path(tmp) / "package.tar.gz"
        _pack(root, archive)
        return store.put_file(archive)


def package_root(settings: Settings, blob: str | None, path: str) -> Path:
    """The folder of a problem version's package on this host: its blob unpacked in the
    cache, or (a version imported before the blob store) its `package_path`."""
    if not blob:
        return Path(path)
    check_name(blob)
    store = blob_store(settings)
    key = f"{blob}.d"
    tree = store.cache.get(key) or store.cache.add(
        key, lambda tmp: _unpack(store.local_path(blob), tmp), tree=True
    )
    return next(p for p in tree.iterdir() if p.is_dir())


def _pack(root: Path, archive: Path) -> None:
    # Sorted names, no times, no owners, fixed owner-only modes (hidden cases): identical
    # files, identical bytes.
    # The top folder keeps the package's name (its slug), as load_problem expects.
    with (
        archive.open("wb") as raw,
        gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as gz,
        tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar,
    ):
        for path in [root, *sorted(root.rglob("*"))]:
            if path.is_symlink() or not (path.is_file() or path.is_dir()):
                continue
            info = tar.gettarinfo(str(path), arcname=str(Path(root.name) / path.relative_to(root)))
            info.mtime, info.uid, info.gid, info.uname, info.gname = 0, 0, 0, "", ""
            info.mode = 0o700 if path.is_dir() else 0o600
            if path.is_file():
                with path.open("rb") as fh:
                    tar.addfile(info, fh)
            else:
                tar.addfile(info)


def _unpack(archive: Path, dest: Path) -> None:
    # Our own archive, checked against its sha256; plain files and folders inside
    # `dest` only all the same. Debian bookworm's Python 3.11.2 (the service image)
    # predates tarfile's `filter=`, so the members are checked here.
    with tarfile.open(archive, "r:gz") as tar:
        members = tar.getmembers()
        for member in members:
            parts = Path(member.name).parts
            if (
                not (member.isfile() or member.isdir())
                or member.name.startswith("/")
                or (".." in parts)
            ):
                raise ValueError(f"package archive member refused: {member.name!r}")
            member.mode = 0o700 if member.isdir() else 0o600
        if hasattr(tarfile, "data_filter"):  # Python >= 3.11.4: its own check as well
            tar.extractall(dest, members=members, filter="data")
        else:
            tar.extractall(dest, members=members)
