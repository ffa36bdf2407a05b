"""Uploads: good ones become files plus commands; broken or hostile ones give one clear error."""

from __future__ import annotations

import gzip
import io
import os
import stat
import tarfile
import time
import zipfile
from pathlib import Path

import pytest

from judge import archive as unpacking
from judge.submission import CXX_FLAGS, SubmissionError, prepare_submission

MIB = 1024 * 1024
MANIFEST = 'build = "g++ -O2 -o planner main.cpp"\nrun = "./planner --fast"\n'


def make_zip(path: Path, files: dict[str, str | bytes]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return path


def tar_member(name: str, data: bytes = b"", **fields: object) -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    for key, value in fields.items():
        setattr(info, key, value)
    return info, data


def make_tgz(path: Path, members: list[tuple[tarfile.TarInfo, bytes]]) -> Path:
    with tarfile.open(path, "w:gz") as archive:
        for info, data in members:
            archive.addfile(info, io.BytesIO(data) if info.isreg() else None)
    return path


def files_of(tar_files: dict[str, str]) -> list[tuple[tarfile.TarInfo, bytes]]:
    return [tar_member(name, text.encode()) for name, text in tar_files.items()]


def refused(source: Path, dest: Path, *words: str) -> SubmissionError:
    """prepare_submission fails naming the upload and saying `words`; nothing is left behind."""
    with pytest.raises(SubmissionError) as caught:
        prepare_submission(source, dest)
    message = str(caught.value)
    assert message.startswith(f"{source.name}: "), message
    for word in words:
        assert word in message, message
    assert not dest.exists()
    return caught.value


# --- single files ------------------------------------------------------------------------


def test_python_file_is_copied_as_planner_py(write, tmp_path):
    source = write("my_planner.py", "print('hi')\n")
    sub = prepare_submission(source, tmp_path / "out")
    assert sub.root == tmp_path / "out"
    assert sub.language == "python"
    assert sub.build is None
    assert sub.run == ["python3", "planner.py"]
    assert (sub.root / "planner.py").read_text() == "print('hi')\n"
    assert stat.S_IMODE((sub.root / "planner.py").stat().st_mode) == 0o644


@pytest.mark.parametrize("name", ["solve.cpp", "solve.cc"])
def test_cpp_file_gets_pinned_build(write, tmp_path, name):
    source = write(name, "int main() {}\n")
    sub = prepare_submission(source, tmp_path / "out")
    assert CXX_FLAGS == ("-O2", "-std=c++20")
    assert sub.language == "cpp"
    assert sub.build == ["g++", "-O2", "-std=c++20", "-o", "planner", "planner.cpp"]
    assert sub.run == ["./planner"]
    assert (sub.root / "planner.cpp").read_text() == "int main() {}\n"


def test_unknown_extension_lists_accepted_ones(write, tmp_path):
    error = refused(write("planner.rs", "fn main() {}"), tmp_path / "out", ".py", ".cpp", ".zip")
    assert ".tar.gz" in error.message and ".tgz" in error.message


def test_input_over_16_mib_is_refused_by_size(tmp_path):
    source = tmp_path / "big.zip"
    with source.open("wb") as f:
        f.truncate(17 * MIB)  # sparse: fast, and never opened as a zip
    refused(source, tmp_path / "out", "17.0 MiB", "16 MiB")


def test_dest_may_already_exist_empty_and_is_emptied_again_on_error(write, tmp_path):
    (tmp_path / "out").mkdir()
    sub = prepare_submission(write("p.py", "pass\n"), tmp_path / "out")
    assert (sub.root / "planner.py").exists()
    (tmp_path / "out2").mkdir()
    with pytest.raises(SubmissionError):
        prepare_submission(make_zip(tmp_path / "s.zip", {"a.txt": "a"}), tmp_path / "out2")
    assert list((tmp_path / "out2").iterdir()) == []


def test_dest_with_files_is_a_caller_bug(write, tmp_path):
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "keep").write_text("mine")
    with pytest.raises(ValueError, match="must be empty"):
        prepare_submission(write("p.py", "pass\n"), tmp_path / "out")
    assert (tmp_path / "out" / "keep").read_text() == "mine"


# --- good archives -----------------------------------------------------------------------


def test_good_zip(tmp_path):
    source = make_zip(
        tmp_path / "sub.zip",
        {"memorace.toml": MANIFEST, "main.cpp": "int main() {}\n", "src/util.h": "#pragma once\n"},
    )
    script = zipfile.ZipInfo("run.sh")
    script.external_attr = (stat.S_IFREG | 0o4777) << 16  # setuid, world-writable
    with zipfile.ZipFile(source, "a") as archive:
        archive.writestr(script, "#!/bin/sh\n")
    sub = prepare_submission(source, tmp_path / "out")
    assert sub.root == tmp_path / "out"
    assert sub.language == "archive"
    assert sub.build == ["g++", "-O2", "-o", "planner", "main.cpp"]
    assert sub.run == ["./planner", "--fast"]
    assert (sub.root / "src" / "util.h").read_text() == "#pragma once\n"
    assert stat.S_IMODE((sub.root / "run.sh").stat().st_mode) == 0o755
    assert stat.S_IMODE((sub.root / "main.cpp").stat().st_mode) == 0o644
    for path in sub.root.rglob("*"):
        assert stat.S_IMODE(path.stat().st_mode) in (0o644, 0o755)


def test_good_tgz_keeps_only_the_executable_bit(tmp_path):
    members = [
        tar_member("memorace.toml", b'run = "./run.sh"\n', mode=0o600, uid=0, uname="root"),
        tar_member("run.sh", b"#!/bin/sh\n", mode=0o4777),  # setuid, world-writable
        tar_member("lib", type=tarfile.DIRTYPE, mode=0o777),
        tar_member("lib/a.py", b"x = 1\n"),
        tar_member("lib/" + "long_name_" * 20 + ".py", b"y = 2\n"),  # a pax path header
    ]
    sub = prepare_submission(make_tgz(tmp_path / "sub.tgz", members), tmp_path / "out")
    assert sub.build is None
    assert sub.run == ["./run.sh"]
    assert stat.S_IMODE((sub.root / "run.sh").stat().st_mode) == 0o755
    assert stat.S_IMODE((sub.root / "memorace.toml").stat().st_mode) == 0o644
    assert stat.S_IMODE((sub.root / "lib").stat().st_mode) == 0o755
    assert (sub.root / "run.sh").stat().st_uid == os.getuid()
    assert (sub.root / "lib" / ("long_name_" * 20 + ".py")).read_text() == "y = 2\n"


def test_tar_made_with_dot_prefix(tmp_path):
    # `tar czf sub.tar.gz -C dir .` writes "./" and "./name" members.
    members = [tar_member(".", type=tarfile.DIRTYPE), *files_of({"./memorace.toml": MANIFEST})]
    sub = prepare_submission(make_tgz(tmp_path / "sub.tar.gz", members), tmp_path / "out")
    assert sub.root == tmp_path / "out"


@pytest.mark.parametrize("kind", ["zip", "tgz"])
def test_single_top_level_folder_becomes_root(tmp_path, kind):
    files = {"team/memorace.toml": MANIFEST, "team/main.cpp": "int main() {}\n"}
    if kind == "zip":
        files["__MACOSX/team/._main.cpp"] = "junk"  # what macOS adds; ignored
        source = make_zip(tmp_path / "sub.zip", files)
    else:
        source = make_tgz(tmp_path / "sub.tgz", files_of(files))
    sub = prepare_submission(source, tmp_path / "out")
    assert sub.root == tmp_path / "out" / "team"
    assert (sub.root / "main.cpp").exists()


def test_nested_archive_is_just_a_file(tmp_path):
    inner = make_zip(tmp_path / "inner.zip", {"a.txt": "a"}).read_bytes()
    source = make_zip(tmp_path / "sub.zip", {"memorace.toml": MANIFEST, "inner.zip": inner})
    sub = prepare_submission(source, tmp_path / "out")
    assert (sub.root / "inner.zip").read_bytes() == inner
    assert not (sub.root / "a.txt").exists()


# --- memorace.toml -----------------------------------------------------------------------


def test_missing_manifest(tmp_path):
    source = make_zip(tmp_path / "sub.zip", {"main.py": "pass\n"})
    refused(source, tmp_path / "out", "memorace.toml not found")


def test_manifest_in_one_of_two_folders_is_not_found(tmp_path):
    source = make_zip(tmp_path / "sub.zip", {"a/memorace.toml": MANIFEST, "b/x": "x"})
    refused(source, tmp_path / "out", "memorace.toml not found")


def test_bad_toml(tmp_path):
    source = make_zip(tmp_path / "sub.zip", {"memorace.toml": "run = ./planner\n"})
    refused(source, tmp_path / "out", "memorace.toml is not valid TOML", "line 1")


def test_unknown_key_is_named(tmp_path):
    source = make_zip(tmp_path / "sub.zip", {"memorace.toml": 'run = "x"\nlanguage = "c"\n'})
    refused(source, tmp_path / "out", "unknown key 'language'")


def test_missing_run(tmp_path):
    source = make_zip(tmp_path / "sub.zip", {"memorace.toml": 'build = "make"\n'})
    refused(source, tmp_path / "out", "missing required key run")


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("run = 3\n", "run must be a string"),
        ('run = ""\n', "run is empty"),
        ('run = "./p \'oops"\n', "cannot split run"),
        ('run = "x"\n[build]\ncmd = "make"\n', "build must be a string"),
    ],
)
def test_bad_commands(tmp_path, text, words):
    source = make_zip(tmp_path / "sub.zip", {"memorace.toml": text})
    refused(source, tmp_path / "out", words)


# --- hostile archives --------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["zip", "tgz"])
@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("../evil", "outside the archive"),
        ("a/../../evil", "outside"),
        ("..\\evil", "outside"),
        ("/etc/x", "absolute"),
    ],
)
def test_paths_leaving_dest_are_refused(tmp_path, kind, name, words):
    files = {"memorace.toml": MANIFEST, name: "owned"}
    if kind == "zip":
        source = make_zip(tmp_path / "sub.zip", files)
    else:
        source = make_tgz(tmp_path / "sub.tgz", files_of(files))
    refused(source, tmp_path / "out", words, name)
    assert not (tmp_path / "evil").exists()


def test_zip_symlink_is_refused(tmp_path):
    link = zipfile.ZipInfo("escape")
    link.create_system = 3
    link.external_attr = (stat.S_IFLNK | 0o777) << 16
    source = tmp_path / "sub.zip"
    with zipfile.ZipFile(source, "w") as archive:
        archive.writestr("memorace.toml", MANIFEST)
        archive.writestr(link, "/etc/passwd")
    refused(source, tmp_path / "out", "links are not allowed: escape")


@pytest.mark.parametrize(
    ("member", "words"),
    [
        (tar_member("escape", type=tarfile.SYMTYPE, linkname="../../etc"), "links are not allowed"),
        (tar_member("escape", type=tarfile.LNKTYPE, linkname="/etc/passwd"), "links are not"),
        (tar_member("escape", type=tarfile.FIFOTYPE), "fifos are not allowed"),
        (tar_member("escape", type=tarfile.CHRTYPE, devmajor=1, devminor=3), "device files"),
        (tar_member("escape", type=tarfile.BLKTYPE, devmajor=8), "device files"),
    ],
)
def test_tar_special_members_are_refused(tmp_path, member, words):
    source = make_tgz(tmp_path / "sub.tgz", [*files_of({"memorace.toml": MANIFEST}), member])
    refused(source, tmp_path / "out", words, "escape")


def test_zip_fifo_is_refused(tmp_path):
    fifo = zipfile.ZipInfo("pipe")
    fifo.create_system = 3
    fifo.external_attr = (stat.S_IFIFO | 0o644) << 16
    source = tmp_path / "sub.zip"
    with zipfile.ZipFile(source, "w") as archive:
        archive.writestr(fifo, "")
    refused(source, tmp_path / "out", "fifos are not allowed: pipe")


@pytest.mark.parametrize("kind", ["zip", "tgz"])
def test_too_many_members(tmp_path, kind):
    files = {f"f{i}.txt": "" for i in range(1001)}
    if kind == "zip":
        source = make_zip(tmp_path / "sub.zip", files)
    else:
        source = make_tgz(tmp_path / "sub.tgz", files_of(files))
    refused(source, tmp_path / "out", "more than 1000 files")


def test_1000_members_are_fine(tmp_path):
    files = {f"f{i}.txt": "" for i in range(999)}
    source = make_zip(tmp_path / "sub.zip", {"memorace.toml": MANIFEST, **files})
    assert prepare_submission(source, tmp_path / "out").run == ["./planner", "--fast"]


def test_zip_bomb_is_refused_quickly(tmp_path):
    source = tmp_path / "bomb.zip"
    zeros = bytes(MIB)
    with zipfile.ZipFile(source, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
        archive.writestr("memorace.toml", MANIFEST)
        with archive.open("zeros.bin", "w", force_zip64=True) as member:
            for _ in range(200):
                member.write(zeros)
    assert source.stat().st_size < 2 * MIB
    start = time.monotonic()
    refused(source, tmp_path / "out", "archive unpacks to more than 64 MiB")
    print(f"refused after {time.monotonic() - start:.2f} s")  # from the headers


def test_zip_many_members_adding_up_past_the_limit(tmp_path):
    source = tmp_path / "bomb.zip"
    with zipfile.ZipFile(source, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
        for i in range(5):
            archive.writestr(f"part{i}.bin", bytes(14 * MIB))
    refused(source, tmp_path / "out", "more than 64 MiB")


def test_size_is_enforced_while_writing(tmp_path, monkeypatch):
    # Headers that under-declare are the reason for this check; feed more data than allowed.
    monkeypatch.setattr(unpacking, "MAX_TOTAL_BYTES", 2 * MIB)
    budget = unpacking._Budget("sub.zip")
    with pytest.raises(SubmissionError, match="more than 2 MiB"):
        unpacking._write_file(
            "sub.zip", tmp_path, ("a.bin",), False, io.BytesIO(bytes(5 * MIB)), budget
        )
    assert (tmp_path / "a.bin").stat().st_size <= 2 * MIB


def test_tar_bomb_is_refused_from_its_header(tmp_path):
    source = tmp_path / "bomb.tgz"
    header = tar_member("zeros.bin", size=200 * MIB)[0].tobuf()
    with gzip.open(source, "wb", compresslevel=1) as out:
        out.write(header)
        for _ in range(2):  # far less data than declared: only the header may be read
            out.write(bytes(MIB))
    refused(source, tmp_path / "out", "more than 64 MiB")


def test_tar_pax_header_bomb_is_refused_quickly(tmp_path):
    # tarfile would read a pax header whole into memory; the stream cap stops it.
    source = tmp_path / "pax.tgz"
    header = tar_member("././@PaxHeader", type=tarfile.XHDTYPE, size=200 * MIB)[0]
    with gzip.open(source, "wb", compresslevel=1) as out:
        out.write(header.tobuf(tarfile.USTAR_FORMAT))
        for _ in range(200):
            out.write(bytes(MIB))
    start = time.monotonic()
    refused(source, tmp_path / "out", "more than 64 MiB")
    print(f"refused after {time.monotonic() - start:.2f} s")


# --- damaged archives --------------------------------------------------------------------


def test_truncated_tgz(tmp_path):
    members = files_of({"memorace.toml": MANIFEST, "data.bin": os.urandom(64 * 1024).hex()})
    whole = make_tgz(tmp_path / "whole.tgz", members).read_bytes()
    source = tmp_path / "cut.tar.gz"
    source.write_bytes(whole[: len(whole) // 2])
    refused(source, tmp_path / "out", "not a valid .tar.gz archive")


def test_plain_text_renamed_tgz(write, tmp_path):
    refused(write("sub.tgz", "hello"), tmp_path / "out", "not a valid .tar.gz archive")


def test_non_archive_renamed_zip(write, tmp_path):
    refused(write("sub.zip", "print('not a zip')\n"), tmp_path / "out", "not a valid zip archive")


def test_corrupt_zip_data(tmp_path):
    source = make_zip(tmp_path / "sub.zip", {"memorace.toml": MANIFEST, "a.txt": "a" * 5000})
    data = bytearray(source.read_bytes())
    start = data.index(b"a.txt") + len("a.txt")  # the local header's name, then the data
    data[start + 10 : start + 20] = b"\xff" * 10
    source.write_bytes(bytes(data))
    refused(source, tmp_path / "out", "not a valid zip archive")


def test_zip_name_with_nul_is_refused(tmp_path):
    source = make_zip(tmp_path / "sub.zip", {"memorace.toml": MANIFEST, "aXb": "x"})
    source.write_bytes(source.read_bytes().replace(b"aXb", b"a\0b"))
    refused(source, tmp_path / "out", "NUL")


def test_zip_name_not_utf8_is_refused(tmp_path):
    source = make_zip(tmp_path / "sub.zip", {"memorace.toml": MANIFEST, "caf\u00e9": "x"})
    data = source.read_bytes().replace("caf\u00e9".encode(), b"caf\xe9\xe9")
    source.write_bytes(data)
    refused(source, tmp_path / "out", "not valid UTF-8")


def test_file_where_a_folder_is_needed(tmp_path):
    source = make_zip(tmp_path / "sub.zip", {"memorace.toml": MANIFEST, "a": "x", "a/b": "y"})
    refused(source, tmp_path / "out", "cannot unpack a/b")


def test_single_top_level_folder_with_ds_store_junk(tmp_path):
    files = {"team/memorace.toml": MANIFEST, ".DS_Store": "junk", "__MACOSX/._team": "junk"}
    sub = prepare_submission(make_zip(tmp_path / "sub.zip", files), tmp_path / "out")
    assert sub.root == tmp_path / "out" / "team"
