"""Problem packages: `problems/<slug>/` with problem.toml, statement.md and data/.

Loading validates everything an organizer can get wrong and reports the first
problem as one PackageError naming the file, the line and the rule.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from judge.csvtable import INT_LIMIT
from judge.errors import InputError, PackageError, show_value
from judge.types import ProblemType, get_type

SPLITS = ("public", "hidden")
SLUG = re.compile(r"[a-z0-9][a-z0-9-]{0,63}")  # importers check --slug with it too
CASE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
_TOP_KEYS = {"slug", "name", "type", "version", "limits", "cases", "description"}
_LIMIT_KEYS = {"time_limit_s", "memory_limit_mb", "cpus", "gpus"}
_CASE_KEYS = {"name", "split", "capacity", "weight"}
MAX_MEMORY_MB = 2**20  # 1 TiB
MAX_CPUS = 1024
MAX_GPUS = 64


@dataclass(frozen=True)
class Limits:
    time_limit_s: float = 10.0
    memory_limit_mb: int = 2048
    cpus: int = 1
    gpus: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "time_limit_s": self.time_limit_s,
            "memory_limit_mb": self.memory_limit_mb,
            "cpus": self.cpus,
            "gpus": self.gpus,
        }


@dataclass(frozen=True)
class CaseSpec:
    name: str
    split: str
    capacity: int
    weight: float
    path: Path


@dataclass(frozen=True)
class Problem:
    slug: str
    name: str
    type: str
    version: int
    limits: Limits
    cases: list[CaseSpec]
    root: Path
    statement: str = field(repr=False, default="")

    @property
    def ptype(self) -> ProblemType:
        return get_type(self.type)

    def cases_in(self, split: str) -> list[CaseSpec]:
        """Cases of one split, or of both for 'all'."""
        return [c for c in self.cases if split in ("all", c.split)]


@dataclass(frozen=True)
class LoadedCase:
    spec: CaseSpec
    case: Any
    lower_bound: int


def load_problem(root: Path) -> Problem:
    """Read and check problem.toml and statement.md (cases are not parsed here)."""
    root = Path(root)
    toml_path = root / "problem.toml"
    text = _read_text(toml_path)
    doc = _parse_toml(text, toml_path)
    where = _Locator(toml_path, text)
    _no_unknown_keys(doc, _TOP_KEYS, "problem.toml", where)
    slug = _get(doc, "slug", str, where)
    if not SLUG.fullmatch(slug):
        where.fail("slug", f"slug {slug!r} must be lowercase letters, digits and dashes")
    if slug != root.name:
        where.fail("slug", f"slug {slug!r} must equal the folder name {root.name!r}")
    ptype_name = _get(doc, "type", str, where)
    try:
        ptype = get_type(ptype_name)
    except KeyError as exc:
        where.fail("type", str(exc.args[0]))
    version = _get(doc, "version", int, where)
    if not 1 <= version < 2**31:
        where.fail("version", "version must be >= 1" if version < 1 else "version must be < 2^31")
    problem = Problem(
        slug=slug,
        name=_get(doc, "name", str, where),
        type=ptype_name,
        version=version,
        limits=_limits(doc.get("limits", {}), where),
        cases=_cases(doc.get("cases"), root, ptype, where),
        root=root,
        statement=_statement(root),
    )
    _no_stray_data(problem, ptype)
    return problem


def load_cases(problem: Problem, split: str = "all") -> list[LoadedCase]:
    """Parse and validate each case of `split`, with its lower bound."""
    return [load_case(problem, spec) for spec in problem.cases_in(split)]


def load_case(problem: Problem, spec: CaseSpec) -> LoadedCase:
    """Parse and validate one case of `problem`, with its lower bound."""
    ptype = problem.ptype
    try:
        case = ptype.parse_case(spec.path, spec.capacity)
    except InputError as exc:
        raise PackageError(exc.message, exc.file or spec.path, exc.line) from None
    bound = ptype.lower_bound(case)
    if ptype.bound_unit == "bytes" and bound > spec.capacity:
        raise PackageError(
            f"case {spec.name} is infeasible: its lower bound {bound} exceeds "
            f"its capacity {spec.capacity}",
            problem.root / "problem.toml",
        )
    return LoadedCase(spec, case, bound)


class _Locator:
    """Finds the line of a key in problem.toml so errors can point at it."""

    def __init__(self, path: Path, text: str):
        self.path = path
        self.lines = text.splitlines()

    def line_of(self, key: str, after: int = 0) -> int | None:
        pattern = re.compile(rf"^\s*{re.escape(key)}\s*=")
        for no, line in enumerate(self.lines[after:], start=after + 1):
            if pattern.match(line):
                return no
        return None

    def case_line(self, index: int) -> int | None:
        seen = -1
        for no, line in enumerate(self.lines, start=1):
            if line.strip() == "[[cases]]":
                seen += 1
                if seen == index:
                    return no
        return None

    def fail(self, key: str, message: str, after: int = 0) -> None:
        raise PackageError(message, self.path, self.line_of(key, after))


def _get(table: dict[str, Any], key: str, kind: type, where: _Locator, after: int = 0) -> Any:
    if key not in table:
        raise PackageError(f"missing key '{key}'", where.path, after or None)
    value = table[key]
    ok = isinstance(value, kind) and not (kind in (int, float) and isinstance(value, bool))
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        value, ok = float(value), True
    if not ok:
        where.fail(key, f"'{key}' must be {kind.__name__}, got {show_value(value)}", after)
    return value


def _limits(table: Any, where: _Locator) -> Limits:
    if not isinstance(table, dict):
        raise PackageError("[limits] must be a table", where.path, where.line_of("limits"))
    _no_unknown_keys(table, _LIMIT_KEYS, "[limits]", where)
    defaults = Limits()
    values = {
        k: _get(table, k, float if k == "time_limit_s" else int, where) if k in table else v
        for k, v in defaults.as_dict().items()
    }
    limits = Limits(**values)
    if not 0 < limits.time_limit_s <= 3600:
        where.fail("time_limit_s", "time_limit_s must be in (0, 3600]")
    if not 16 <= limits.memory_limit_mb <= MAX_MEMORY_MB:
        where.fail("memory_limit_mb", f"memory_limit_mb must be from 16 to {MAX_MEMORY_MB}")
    if not (1 <= limits.cpus <= MAX_CPUS and 0 <= limits.gpus <= MAX_GPUS):
        where.fail(
            "cpus" if not 1 <= limits.cpus <= MAX_CPUS else "gpus",
            f"need cpus from 1 to {MAX_CPUS} and gpus from 0 to {MAX_GPUS}",
        )
    return limits


def _cases(raw: Any, root: Path, ptype: ProblemType, where: _Locator) -> list[CaseSpec]:
    if not isinstance(raw, list) or not raw:
        raise PackageError("needs at least one [[cases]] entry", where.path)
    specs: list[CaseSpec] = []
    seen: set[str] = set()
    for index, entry in enumerate(raw):
        at = where.case_line(index) or 0
        _no_unknown_keys(entry, _CASE_KEYS, f"case {index + 1}", where, at)
        name = _get(entry, "name", str, where, at)
        if not CASE_NAME.fullmatch(name):
            where.fail("name", f"case name {name!r} may use letters, digits, '.', '_', '-'", at)
        if name in seen:
            where.fail("name", f"case name {name!r} is used twice", at)
        seen.add(name)
        split = entry.get("split", "public")
        if split not in SPLITS:
            where.fail("split", f"split must be 'public' or 'hidden', got {show_value(split)}", at)
        capacity = _get(entry, "capacity", int, where, at)
        if not 0 <= capacity <= INT_LIMIT:
            where.fail("capacity", "capacity must be from 0 to 2^62", at)
        weight = _get(entry, "weight", float, where, at) if "weight" in entry else 1.0
        if not 0 < weight <= 1e6:
            where.fail("weight", "weight must be > 0", at)
        path = root / "data" / split / f"{name}{ptype.case_suffix}"
        if not path.is_file():
            raise PackageError(f"case file {path.relative_to(root)} is missing", where.path, at)
        specs.append(CaseSpec(name, split, capacity, weight, path))
    return specs


def _no_unknown_keys(
    table: Any, allowed: set[str], what: str, where: _Locator, after: int = 0
) -> None:
    if not isinstance(table, dict):
        raise PackageError(f"{what} must be a table", where.path, after or None)
    for key in table:
        if key not in allowed:
            known = ", ".join(sorted(allowed))
            where.fail(key, f"unknown key '{key}' in {what} (known: {known})", after)


def _statement(root: Path) -> str:
    path = root / "statement.md"
    text = _read_text(path)
    if not text.strip():
        raise PackageError("statement is empty", path)
    return text


def _no_stray_data(problem: Problem, ptype: ProblemType) -> None:
    listed = {c.path for c in problem.cases}
    for split in SPLITS:
        for path in sorted((problem.root / "data" / split).glob(f"*{ptype.case_suffix}")):
            if path not in listed:
                raise PackageError(
                    "is not listed in problem.toml (add a [[cases]] entry or delete it)", path
                )


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise PackageError("file is missing", path) from None
    except IsADirectoryError:
        raise PackageError("is a folder, not a file", path) from None
    except UnicodeDecodeError:
        raise PackageError("is not UTF-8 text", path) from None
    except OSError as exc:
        raise PackageError(f"cannot read: {exc.strerror}", path) from None


def _parse_toml(text: str, path: Path) -> dict[str, Any]:
    """tomllib's own errors, and the two it lets escape: integers too long for int()
    (ValueError) and nesting past the recursion limit (RecursionError)."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise PackageError(f"not valid TOML: {exc}", path, _toml_error_line(exc)) from None
    except ValueError:
        raise PackageError("not valid TOML: a number has too many digits", path) from None
    except RecursionError:
        raise PackageError("not valid TOML: nested too deeply", path) from None


def _toml_error_line(exc: tomllib.TOMLDecodeError) -> int | None:
    found = re.search(r"line (\d+)", str(exc))
    return int(found.group(1)) if found else None
