"""Where `python -m api.backup create` writes: the archive holds every secret, so it is
owner-only from its first byte, and a symbolic link at (or beside) the path the
operator names never sends it over the file the link points to."""

from __future__ import annotations

import importlib
import os
import shutil
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from api.backup.create import BackupError, create
from api.db.session import migrate
from api.settings import Settings

# The module, not the function api.backup exports under the same name.
backup_create = importlib.import_module("api.backup.create")


@pytest.fixture
def service(tmp_path: Path) -> Settings:
    data = tmp_path / "data"
    data.mkdir()
    settings = Settings(data_dir=data, database_url=f"sqlite:///{data}/db.sqlite")
    migrate(settings.database_url)
    (data / "secret_key").write_bytes(b"the key")
    return settings


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    path = tmp_path / "victim"
    path.write_text("precious\n")
    return path


@pytest.mark.parametrize("name", ["backup.tar.gz", "backup.tar"])
def test_a_link_at_the_output_path_is_refused(
    service: Settings, victim: Path, tmp_path: Path, name: str
) -> None:
    out = tmp_path / "shared" / name
    out.parent.mkdir()
    out.symlink_to(victim)
    with pytest.raises(BackupError, match="symbolic link"):
        create(service, out)
    assert victim.read_text() == "precious\n"
    assert out.is_symlink()


def test_a_link_planted_at_the_partial_name_is_not_followed(
    service: Settings, victim: Path, tmp_path: Path
) -> None:
    out = tmp_path / "backup.tar"
    (tmp_path / ".backup.tar.partial").symlink_to(victim)
    create(service, out)
    assert victim.read_text() == "precious\n"
    assert stat.S_IMODE(out.stat().st_mode) == 0o600


def test_the_archive_is_never_readable_by_others(
    service: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "out" / "backup.tar.gz"
    out.parent.mkdir()
    out.write_bytes(b"an older backup")
    out.chmod(0o644)
    seen: list[Path] = []
    kept = backup_create.kept_files

    def watching(data_dir: Path) -> Iterator[tuple[str, Path]]:
        # Mid-write: every file others could open under the output folder.
        for path in out.parent.rglob("*"):
            if path.is_file() and not _hidden_from_others(path, out.parent):
                seen.append(path)
        yield from kept(data_dir)

    monkeypatch.setattr(backup_create, "kept_files", watching)
    create(service, out)
    assert seen == [out]  # the older backup only, until replaced
    assert stat.S_IMODE(out.stat().st_mode) == 0o600


def _hidden_from_others(path: Path, top: Path) -> bool:
    if not stat.S_IMODE(path.stat().st_mode) & 0o077:
        return True
    return any(not d.stat().st_mode & 0o077 for d in path.parents if d.is_relative_to(top))


def test_a_folder_removed_while_listed_is_left_out(
    service: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An import's upload folder, removed when its job ends: here just as the backup
    # lists it (between seeing it in imports/ and reading it).
    upload = service.data_dir / "imports" / "job-1"
    upload.mkdir(parents=True)
    (upload / "trace.json").write_bytes(b"{}")
    (service.data_dir / "imports" / "job-2").mkdir()
    (service.data_dir / "imports" / "job-2" / "kept.json").write_bytes(b"[]")
    scandir = os.scandir

    def ending_job(path: Any = ".") -> Any:
        if isinstance(path, str | os.PathLike) and Path(path) == upload:
            shutil.rmtree(upload)
        return scandir(path)

    monkeypatch.setattr(os, "scandir", ending_job)
    manifest = create(service, tmp_path / "backup.tar")
    assert "imports/job-2/kept.json" in manifest["files"]
    assert not any(rel.startswith("imports/job-1") for rel in manifest["files"])


@pytest.mark.parametrize("folder", ["artifacts", "imports/job-1"])
def test_a_backup_into_a_kept_folder_is_refused(service: Settings, folder: str) -> None:
    # It would hold its own staging (a copy of the database) and each earlier backup.
    (service.data_dir / folder).mkdir(parents=True)
    with pytest.raises(BackupError, match="in a folder the backup keeps"):
        create(service, service.data_dir / folder / "backup.tar")
    assert list((service.data_dir / folder).iterdir()) == []
