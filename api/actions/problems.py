"""Problems in the database: import a package as a new version, read what pages show."""

from __future__ import annotations

import hashlib
import tempfile
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from api.actions import baselines, contests
from api.actions.audit import record
from api.blobs import blob_store
from api.blobs.packages import package_root, put_package
from api.db.models import Case, Contest, Problem, ProblemVersion, User
from api.errors import NotFound, ServiceError
from api.settings import Settings
from judge.archive import find_root, unpack_tar, unpack_zip
from judge.errors import InputError
from judge.package import Problem as Package
from judge.package import load_cases, load_problem


def package_digest(root: Path) -> str:
    """sha256 over every file's relative path and bytes (order-independent of the disk)."""
    h = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        h.update(str(path.relative_to(root)).encode() + b"\0")
        h.update(hashlib.sha256(path.read_bytes()).digest())
    return h.hexdigest()


def import_package(
    db: Session, settings: Settings, source: Path, actor: User | None
) -> ProblemVersion:
    """Validate the package at `source` and store it as the problem's newest version.

    Older versions and every result judged on them stay as they were. Importing
    bytes identical to the current version returns it (storing its package in the
    blob store if it was imported before there was one).
    """
    package = _load(source)
    digest = package_digest(package.root)
    problem = db.scalar(select(Problem).where(Problem.slug == package.slug))
    if problem is None:
        problem = Problem(slug=package.slug)
        db.add(problem)
        db.flush()
        contests.add_new_problem(db, problem)
    current = db.get(ProblemVersion, problem.current_version_id or -1)
    if current is not None and current.sha256 == digest:
        if current.package_blob is None:  # imported before the blob store: into it now
            current.package_blob = put_package(blob_store(settings), package.root)
        return current
    number = (
        db.scalar(
            select(func.max(ProblemVersion.number)).where(ProblemVersion.problem_id == problem.id)
        )
        or 0
    ) + 1
    # In the blob store, which every host reads (workers judge from it).
    blob = put_package(blob_store(settings), package.root)
    version = _version_row(db, problem, number, package, digest, blob)
    problem.current_version_id = version.id
    baselines.create_for(db, settings, version)  # judged once committed (baselines.send)
    record(db, actor, "import_problem", package.slug, {"version": number, "sha256": digest})
    return version


def import_upload(
    db: Session, settings: Settings, upload: Path, actor: User | None
) -> ProblemVersion:
    """An uploaded .zip / .tar.gz package: unpacked with the submission archive's limits."""
    with tempfile.TemporaryDirectory(prefix="memorace-import-") as tmp:
        dest = Path(tmp) / "package"
        dest.mkdir()
        name = upload.name.lower()
        try:
            if name.endswith(".zip"):
                unpack_zip(upload, dest)
            elif name.endswith((".tar.gz", ".tgz")):
                unpack_tar(upload, dest)
            else:
                raise ServiceError("upload a problem package as .zip or .tar.gz")
        except InputError as exc:
            raise ServiceError(str(exc)) from None
        return import_package(db, settings, _package_root(dest), actor)


def _package_root(dest: Path) -> Path:
    root = find_root(dest, "problem.toml")
    if root is None:
        raise ServiceError("problem.toml not found at the top of the archive or its single folder")
    return root


def _load(root: Path) -> Package:
    try:
        package = load_problem(root)
        load_cases(package)  # every case parses and is feasible
    except InputError as exc:
        raise ServiceError(f"bad problem package: {exc}", 422) from None
    return package


def _version_row(
    db: Session, problem: Problem, number: int, package: Package, digest: str, blob: str
) -> ProblemVersion:
    version = ProblemVersion(
        problem_id=problem.id,
        number=number,
        name=package.name,
        type=package.type,
        statement=package.statement,
        package_path="",
        package_blob=blob,
        time_limit_s=package.limits.time_limit_s,
        sha256=digest,
    )
    db.add(version)
    db.flush()
    for lc in load_cases(package):
        db.add(
            Case(
                version_id=version.id,
                name=lc.spec.name,
                split=lc.spec.split,
                weight=lc.spec.weight,
                capacity=lc.spec.capacity,
                lower_bound=lc.lower_bound,
                items=len(lc.case),
            )
        )
    db.flush()
    return version


def current_version(db: Session, slug: str, contest: Contest | None = None) -> ProblemVersion:
    """The problem's current version; with `contest`, the version that contest uses (a
    problem not in it is not found)."""
    problem = db.scalar(select(Problem).where(Problem.slug == slug))
    if problem is None or problem.current_version_id is None:
        raise NotFound(f"no problem '{slug}'")
    version_id = problem.current_version_id
    if contest is not None:
        version_id = contests.pinned_version(db, contest, problem)
        if version_id is None:
            raise NotFound(f"no problem '{slug}' in contest '{contest.slug}'")
    version = db.get(ProblemVersion, version_id)
    assert version is not None
    return version


@dataclass(frozen=True)
class VersionFacts:
    """What a submission's answer needs of its problem version; none of it changes after
    the import (a case's weight does, and is not here)."""

    slug: str
    number: int
    splits: tuple[str, ...]  # the cases' splits, in case name order


_facts: dict[tuple[str, int], VersionFacts] = {}  # per process: a few per problem
_facts_lock = threading.Lock()


def version_facts(db: Session, ids: Iterable[int]) -> dict[int, VersionFacts]:
    ids, url = set(ids), str(db.get_bind().url)
    with _facts_lock:
        found = {i: _facts[(url, i)] for i in ids if (url, i) in _facts}
    missing = ids - set(found)
    if missing:
        heads = db.execute(
            select(ProblemVersion.id, Problem.slug, ProblemVersion.number)
            .join(Problem, Problem.id == ProblemVersion.problem_id)
            .where(ProblemVersion.id.in_(missing))
        ).all()
        splits: dict[int, list[str]] = {i: [] for i in missing}
        for version_id, split in db.execute(
            select(Case.version_id, Case.split)
            .where(Case.version_id.in_(missing))
            .order_by(Case.version_id, Case.name)
        ):
            splits[version_id].append(split)
        made = {i: VersionFacts(slug, n, tuple(splits[i])) for i, slug, n in heads}
        with _facts_lock:
            _facts.update({(url, i): f for i, f in made.items()})
        found |= made
    return found


def all_current(db: Session, contest: Contest | None = None) -> list[ProblemVersion]:
    """Every problem's current version; with `contest`, the versions it uses, in order."""
    if contest is None:
        ids = db.scalars(select(Problem.current_version_id).order_by(Problem.slug)).all()
    else:
        ids = contests.version_ids(db, contest)
    return [v for v in (db.get(ProblemVersion, i) for i in ids if i) if v is not None]


def shown_in(db: Session, contest: Contest, viewer: Any) -> list[ProblemVersion]:
    """The contest's problems as a form lists them to `viewer`: none before its start,
    but for organizers (their names are the contest's until it starts)."""
    if contests.started(contest) or (viewer is not None and viewer.is_admin):
        return all_current(db, contest)
    return []


def package_of(settings: Settings, version: ProblemVersion) -> Package:
    """The version's package, read from this host's copy (api.blobs)."""
    return load_problem(package_root(settings, version.package_blob, version.package_path))


def public_case_path(
    db: Session, settings: Settings, slug: str, case_name: str, contest: Contest | None = None
) -> Path:
    version = current_version(db, slug, contest)
    case = next((c for c in version.cases if c.name == case_name), None)
    if case is None or case.split != "public":
        raise NotFound(f"no public case '{case_name}' in '{slug}'")
    package = package_of(settings, version)
    spec = next(s for s in package.cases if s.name == case_name)
    return spec.path


def set_case_weight(
    db: Session, slug: str, case_name: str, weight: float, actor: User | None
) -> Case:
    if not weight >= 0 or weight > 1e6:
        raise ServiceError("a case weight is a number from 0 to 1e6")
    version = current_version(db, slug)
    case = next((c for c in version.cases if c.name == case_name), None)
    if case is None:
        raise NotFound(f"no case '{case_name}' in '{slug}'")
    rest = sum(c.weight for c in version.cases if c.split == case.split and c is not case)
    if not rest + weight > 0:
        raise ServiceError(
            f"the {case.split} cases of '{slug}' would weigh 0 in all: at least one of them "
            "must keep a weight above 0 (a score is a weighted mean)",
            422,
        )
    old, case.weight = case.weight, weight
    record(db, actor, "set_weight", f"{slug}/{case_name}", {"from": old, "to": weight})
    return case
