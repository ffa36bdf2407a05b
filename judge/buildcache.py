"""The build cache: a submission's built tree, kept and reused when the same files meet
the same build command, limits and sandbox (kind + runner image, or the host toolchain).

A rejudge of a thousand submissions then compiles none of them again. The key is the
sha256 of everything the build's result may depend on, the submission's files first
(`tree_digest`: paths, modes, contents): one contestant's build is never served for other
bytes. Entries are per owner (the worker's: the team; the offline CLI's: "local"): the
owner enters the key and names the entry's folder, so no team is served another team's
build of the same bytes (a non-deterministic build stays theirs) nor learns from a fast
first build that someone else compiled those bytes. An entry is written only after a
successful build, complete into a temporary folder, then renamed into place (readers see
all of it or nothing); its manifest names its key and the digest of what it holds,
checked on every hit: a corrupt, partial or foreign entry is removed and the submission
is built again. Failed builds are not kept
(a timeout or an out-of-memory failure may not repeat; a compile error fails fast anyway).

The folder must be the judge's own (owned by it, writable by no one else), outside every
sandbox's mounts; else the cache is off. Size-bounded: past `max_bytes` the least
recently used entries go (mtime, touched on every hit). Operators clear it by deleting
the folder (or any entry in it) at any time: a missing entry is a miss.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import stat
import tarfile
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from judge.lru import evict_oldest, sweep_stale
from judge.package import Limits
from judge.sandbox.base import RunOutcome, SandboxError, Session
from judge.sandbox.local_fs import remove_tree

log = logging.getLogger("memorace.buildcache")
FORMAT = 2  # bump when an entry's layout or the key's inputs change
MANIFEST = "manifest.json"
PAYLOAD = "payload"  # what the sandbox exported: restored as the build's output
TMP = ".tmp"
MAX_ENTRIES = 20_000  # files and folders of one entry; more is not kept
GRACE_S = 60.0  # entries used this recently are not evicted (a reader may be restoring one)
DEFAULT_MB = 1024
LOCAL = "local"  # the owner of the offline CLI's builds
_OWNER = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


class NotCacheable(Exception):
    """This tree cannot be kept (too big, too many entries, a fifo, a path too long)."""


@dataclass(frozen=True)
class Entry:
    payload: Path
    meta: dict[str, Any]  # what the sandbox noted on export (e.g. the build's uid)


def tree_digest(root: Path, max_bytes: int | None = None) -> tuple[str, int]:
    """(sha256, bytes) of a tree: every path, its kind, mode bits and contents or link
    target (owners and times left out). An iterative walk in sorted order."""
    h, total, count, todo = hashlib.sha256(), 0, 0, [b""]
    base = os.fsencode(root)
    while todo:
        rel = todo.pop()
        try:
            names = sorted(os.listdir(base + rel if rel else base))
        except OSError as exc:
            raise NotCacheable(f"unreadable folder: {exc.strerror}") from None
        for name in reversed(names):  # popped in sorted order
            path_rel = rel + b"/" + name if rel else name
            count += 1
            if count > MAX_ENTRIES:
                raise NotCacheable(f"more than {MAX_ENTRIES} files")
            size = _hash_entry(h, base + b"/" + path_rel, path_rel, todo)
            total += size
            if max_bytes is not None and total > max_bytes:
                raise NotCacheable(f"more than {max_bytes} bytes")
    return h.hexdigest(), total


def _hash_entry(h: Any, path: bytes, rel: bytes, todo: list[bytes]) -> int:
    try:
        st = os.lstat(path)
    except OSError as exc:
        raise NotCacheable(f"unreadable entry: {exc.strerror}") from None
    mode = stat.S_IMODE(st.st_mode)
    if stat.S_ISDIR(st.st_mode):
        h.update(b"D%o\0%s\0" % (mode, rel))
        todo.append(rel)
        return 0
    try:
        if stat.S_ISLNK(st.st_mode):
            h.update(b"L\0%s\0%s\0" % (rel, os.readlink(path)))
            return 0
        if not stat.S_ISREG(st.st_mode):
            raise NotCacheable("a file that is neither a regular file, a folder nor a link")
        h.update(b"F%o %d\0%s\0" % (mode, st.st_size, rel))
        with open(path, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
    except OSError as exc:
        raise NotCacheable(f"unreadable entry: {exc.strerror}") from None
    return st.st_size


def build_key(
    source_digest: str, build: list[str], sandbox: str, limits: dict[str, Any], owner: str
) -> str:
    """The key of a build: the submission's files, the command, the sandbox, the limits,
    and whose build it is."""
    inputs = {"format": FORMAT, "source": source_digest, "build": build, "sandbox": sandbox}
    inputs["owner"] = owner
    blob = json.dumps({**inputs, "limits": limits}, sort_keys=True).encode()
    return hashlib.sha256(blob).hexdigest()


def read_manifest(data: bytes) -> dict[str, Any] | None:
    """A manifest's fields, or None when `data` is not one (never raises)."""
    try:
        found = json.loads(data)
    except (ValueError, RecursionError):
        return None
    if not isinstance(found, dict) or found.get("format") != FORMAT:
        return None
    kinds = {"key": str, "digest": str, "bytes": int, "meta": dict}
    if any(type(found.get(name)) is not kind for name, kind in kinds.items()):
        return None
    return found if found["bytes"] >= 0 else None


class BuildCache:
    """The builds of one `owner` (letters, digits, '.', '_', '-'; e.g. "team-17") in a
    folder that all owners share (its size bound is for the whole folder)."""

    def __init__(self, folder: Path, max_bytes: int, grace_s: float = GRACE_S, owner: str = LOCAL):
        if not _OWNER.fullmatch(owner):
            raise ValueError(f"build cache owner {owner!r}: letters, digits, '.', '_', '-'")
        self.folder, self.max_bytes, self.grace_s = Path(folder), max_bytes, grace_s
        self.owner = owner
        self.usable = max_bytes > 0 and _own_folder(self.folder)

    def path(self, key: str) -> Path:
        return self.folder / f"owner-{self.owner}" / key[:2] / key

    def get(self, key: str) -> Entry | None:
        """The entry of `key`, checked whole (touched: recently used), or None; a damaged
        one is removed."""
        if not self.usable:
            return None
        path = self.path(key)
        try:
            manifest = read_manifest((path / MANIFEST).read_bytes())
        except OSError:
            manifest = None
        if manifest is None or manifest["key"] != key or not self._intact(path, manifest):
            if path.exists():
                log.warning("build cache: entry %s is damaged; it is removed", key[:16])
                self.discard(key)
            return None
        with suppress(OSError):
            os.utime(path)
        return Entry(path / PAYLOAD, manifest["meta"])

    def put(self, key: str, export: Callable[[Path], dict[str, Any]]) -> bool:
        """Keep what `export(folder)` writes into an empty folder (it returns the notes
        `restore` needs); False when it is not kept (too big, an export error)."""
        if not self.usable:
            return False
        tmp_root = self.folder / TMP
        try:  # an operator may have removed the whole folder meanwhile
            tmp_root.mkdir(mode=0o700, parents=True, exist_ok=True)
            tmp = Path(tempfile.mkdtemp(dir=tmp_root))
        except OSError:
            return False
        try:
            meta = export(tmp / PAYLOAD)
            digest, size = tree_digest(tmp / PAYLOAD, self.max_bytes // 2)
            manifest = {"format": FORMAT, "key": key, "digest": digest, "bytes": size}
            (tmp / MANIFEST).write_text(json.dumps({**manifest, "meta": meta}))
            self.path(key).parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            os.replace(tmp, self.path(key))  # fails when another process kept it first
        except (OSError, NotCacheable, SandboxError) as exc:
            log.info("build cache: build %s not kept (%s)", key[:16], exc)
            return False
        finally:
            _remove(tmp, tmp_root)
        self.evict()
        return True

    def pack(self, key: str, dest: Path) -> bool:
        """The whole entry of `key` (manifest and payload) as one tar file at `dest`."""
        entry = self.get(key)
        if entry is None:
            return False
        try:
            with tarfile.open(dest, "w") as tar:  # the same entry packs to the same bytes
                tar.add(self.path(key), arcname=".", filter=_plain_member)
        except OSError as exc:
            log.info("build cache: entry %s not packed (%s)", key[:16], exc)
            return False
        return True

    def unpack(self, key: str, tar_path: Path) -> bool:
        """Keep a packed entry of `key`; whether it is now here whole. Its manifest is
        checked like any entry's (`get`): what does not match its own digest goes."""
        if not self.usable:
            return False
        if self.get(key) is not None:
            return True
        tmp_root = self.folder / TMP
        try:
            tmp_root.mkdir(mode=0o700, parents=True, exist_ok=True)
            tmp = Path(tempfile.mkdtemp(dir=tmp_root))
        except OSError:
            return False
        try:
            with tarfile.open(tar_path, "r:") as tar:  # uncompressed: no decompression bomb
                tar.extractall(tmp, members=self._members(tar), filter="data")
            self.path(key).parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            os.replace(tmp, self.path(key))
        except (OSError, tarfile.TarError, NotCacheable) as exc:
            log.info("build cache: entry %s not unpacked (%s)", key[:16], exc)
        finally:
            _remove(tmp, tmp_root)
        if self.get(key) is None:
            return False
        self.evict()
        return True

    def _members(self, tar: tarfile.TarFile) -> Iterator[tarfile.TarInfo]:
        """An entry's members only (its manifest and payload), at most half the cache's
        bound in all; the "data" filter then keeps links and modes inside the folder (a
        mode it changes fails the entry's digest, like any damage)."""
        total = 0
        for member in tar:
            name = member.name.removeprefix("./")
            if name not in (".", "", MANIFEST) and name.split("/")[0] != PAYLOAD:
                raise NotCacheable(f"an entry holds no {member.name!r}")
            total += member.size
            if total > self.max_bytes // 2:
                raise NotCacheable(f"more than {self.max_bytes // 2} bytes")
            yield member

    def discard(self, key: str) -> None:
        _remove(self.path(key), self.folder / TMP)

    def evict(self) -> None:
        """Least recently used first, until the entries fit the bound."""
        tmp_root = self.folder / TMP
        evict_oldest(self._entries(), self.max_bytes, self.grace_s, lambda p: _remove(p, tmp_root))
        sweep_stale(tmp_root, lambda p: _remove(p, tmp_root))

    def _entries(self) -> list[tuple[float, int, Path]]:
        """Every owner's entries (the bound is the folder's); entries of the layout before
        owners (FORMAT 1: `??/<key>` at the top) have no manifest read here: evicted."""
        found = []
        for prefix in [*self.folder.glob("owner-*/??"), *self.folder.glob("??")]:
            for path in prefix.iterdir():
                with suppress(OSError):
                    manifest = read_manifest((path / MANIFEST).read_bytes())
                    size = manifest["bytes"] if manifest else self.max_bytes + 1  # junk: out
                    found.append((path.stat().st_mtime, size, path))
        return found

    def _intact(self, path: Path, manifest: dict[str, Any]) -> bool:
        try:
            digest, size = tree_digest(path / PAYLOAD, manifest["bytes"])
        except NotCacheable:
            return False
        return digest == manifest["digest"] and size == manifest["bytes"]


def cache_from_env(owner: str = LOCAL) -> BuildCache | None:
    """`owner`'s cache in the folder MEMORACE_BUILD_CACHE_DIR names (at most
    MEMORACE_BUILD_CACHE_MB), or None."""
    folder = os.environ.get("MEMORACE_BUILD_CACHE_DIR", "")
    if not folder:
        return None
    mb = int(os.environ.get("MEMORACE_BUILD_CACHE_MB") or DEFAULT_MB)
    return BuildCache(Path(folder), mb << 20, owner=owner)


def _plain_member(member: tarfile.TarInfo) -> tarfile.TarInfo:
    """No time, owner or name of an owner in a pack: its bytes depend on the entry only."""
    member.mtime, member.uid, member.gid, member.uname, member.gname = 0, 0, 0, "", ""
    return member


def _own_folder(folder: Path) -> bool:
    """Made when missing; usable only when it is ours and no one else may write in it
    (a planner that could write there could serve its build for another's bytes)."""
    with suppress(FileExistsError):
        folder.mkdir(mode=0o700, parents=True)
    try:
        st = folder.lstat()
    except OSError:
        return False
    ours = stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid() and not st.st_mode & 0o022
    if not ours:
        log.warning(
            "build cache off: %s must be a folder of this user, writable by it only", folder
        )
    return ours


def _remove(path: Path, tmp_root: Path) -> None:
    """Gone at once for readers: renamed aside, then deleted."""
    aside = tmp_root / f"gone-{os.getpid()}-{time.monotonic_ns()}"
    try:
        tmp_root.mkdir(mode=0o700, exist_ok=True)
        path.rename(aside)
        remove_tree(aside)  # also folders the build made unwritable
    except OSError:
        return


HIT_NOTE = "(the build cache had this build: these files, built by this command here before)"


def cached_build(
    session: Session,
    source: Path,
    build: list[str] | None,
    limits: Limits,
    timeout_s: float,
    cache: BuildCache | None,
    share: BuildShare | None = None,
) -> tuple[RunOutcome | None, bool]:
    """session.build(timeout_s), or the kept output of the same build restored into the
    session; (outcome, from the cache). A successful build is kept for the next time."""
    identity = session.build_identity() if cache and cache.usable and build else None
    reuse_only = share is not None and share.reuse_only
    if cache is None or build is None or identity is None:
        if reuse_only and build is not None:
            raise BuildUnavailable("this build cannot be kept here (no usable build cache)")
        return session.build(timeout_s), False
    try:
        source_digest, _ = tree_digest(source)
    except NotCacheable as exc:
        if reuse_only:
            raise BuildUnavailable(f"this submission cannot be kept: {exc}") from None
        return session.build(timeout_s), False
    bounds = {"memory_limit_mb": limits.memory_limit_mb, "cpus": limits.cpus, "gpus": limits.gpus}
    limits_key = {**bounds, "build_timeout_s": timeout_s}
    key = build_key(source_digest, build, identity, limits_key, cache.owner)
    entry = cache.get(key)
    if entry is None and share is not None and share.fetch(key, cache):
        entry = cache.get(key)
    if entry is not None:
        try:
            session.restore_build(entry.payload, entry.meta)
            log.info("build cache: hit %s", key[:16])
            if share is not None and not reuse_only:
                share.publish(key, cache)
            return RunOutcome(0, 0.0, log=HIT_NOTE), True
        except (OSError, SandboxError) as exc:  # evicted meanwhile, or a damaged tree
            if reuse_only:
                raise BuildUnavailable(f"the kept build was not restored: {exc}") from None
            log.warning("build cache: entry %s not restored (%s); building", key[:16], exc)
    if reuse_only:
        raise BuildUnavailable("nobody kept this build where this process can reach it")
    built = session.build(timeout_s)
    ok = built is not None and built.exit_code == 0 and not built.timed_out
    if ok and cache.put(key, session.export_build) and share is not None:
        share.publish(key, cache)
    return built, False


class BuildUnavailable(Exception):
    """A process that may only reuse a build (a judging's helper) found none."""


class BuildShare(Protocol):
    """How a build made by one process reaches the others judging the same submission
    (worker.cases: through the blob store, for helpers on other hosts)."""

    reuse_only: bool  # never build: restore what another process kept, or give up

    def publish(self, key: str, cache: BuildCache) -> None:
        """The entry of `key` (in `cache`) is there: make it reachable to the others."""

    def fetch(self, key: str, cache: BuildCache) -> bool:
        """Bring the entry of `key` into `cache` from elsewhere; whether it came."""
