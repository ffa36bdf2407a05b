"""The starter kit of a problem version: one zip made from its package, with what a
contestant needs to start and to judge locally exactly as the service does.

    <slug>-v<N>-starter-kit/
      README.md          the exact local command, and how to install it
      CONTRACT.md        the planner contract of the problem's type
      planner.py         a template planner per language (a reference planner that
      planner.cpp        passes the public cases); for the online type allocator.py
                         and allocator.cpp (judge/starter/: best fit, commented)
      <slug>/            the package with its public cases only: problem.toml (hidden
                         cases left out), statement.md, data/public/

Hidden cases are not in it, not even their names. The zip is deterministic: the same
package gives the same bytes.
"""

from __future__ import annotations

import io
import json
import re
import tomllib
import zipfile
from pathlib import Path
from typing import Any

from judge.archive import tar_members
from judge.package import Problem
from judge.references import FOLDER, templates_for

STAMP = (1980, 1, 1, 0, 0, 0)
SUFFIX = {"python": "py", "cpp": "cpp"}
STARTER = Path(__file__).parent / "starter"  # package data
STARTERS = {"online": ("allocator.py", "allocator.cpp")}  # best fit over a free list, commented
INCLUDE = re.compile(r'#include "([^"]+)"')  # a C++ template's own module
INSTALL = "pip install 'memorace @ git+REPOSITORY'"  # REPOSITORY: where the service's code is


def kit_templates(ptype: str) -> dict[str, Path]:
    """{name in the kit: file}, Python first: the reference planners of the type, or for
    an interactive type (online) the allocator templates kept here (judge/starter/)."""
    if ptype in STARTERS:
        found = {name: STARTER / name for name in STARTERS[ptype]}
        return {name: path for name, path in found.items() if path.is_file()}
    named = templates_for(ptype)
    return {f"planner.{SUFFIX[lang]}": named[lang] for lang in SUFFIX if lang in named}


def template_source(path: Path) -> bytes:
    """A template's bytes for the kit: a single file as it is; a C++ archive of modules
    (such as offload_strong_v1.tar.gz) as one file, its main.cpp with each
    `#include "NAME"` of a member replaced by that member (the first time, as its
    `#pragma once` says), so the kit's planner.cpp is the program the archive builds, in
    one file."""
    if not path.name.endswith(".tar.gz"):
        return path.read_bytes()
    members, seen = tar_members(path), set[str]()

    def unfolded(name: str) -> str:
        seen.add(name)
        out: list[str] = []
        for line in members[name].decode().splitlines(keepends=True):
            included = INCLUDE.match(line)
            if included and included[1] in members:
                out.append("" if included[1] in seen else unfolded(included[1]))
            elif line.strip() != "#pragma once":
                out.append(line)
        return "".join(out)

    return unfolded("main.cpp").encode()


def command(problem: Problem, planner: str = "planner.py") -> str:
    """The documented local command: the same pipeline and verifier as the service."""
    return f"memorace judge {planner} --problem ./{problem.slug} --split public --sandbox local"


def starter_kit(problem: Problem, repository: str = "") -> tuple[str, bytes]:
    """(the zip's file name, its bytes)."""
    top = f"{problem.slug}-v{problem.version}-starter-kit"
    files: dict[str, bytes] = {
        f"{problem.slug}/problem.toml": public_toml(problem).encode(),
        f"{problem.slug}/statement.md": problem.statement.encode(),
    }
    for spec in problem.cases_in("public"):
        files[f"{problem.slug}/{spec.path.relative_to(problem.root).as_posix()}"] = (
            spec.path.read_bytes()
        )
    templates = kit_templates(problem.type)
    for name, path in templates.items():
        files[name] = template_source(path)
    files["CONTRACT.md"] = contract(problem.type).encode()
    files["README.md"] = readme(problem, list(templates), repository).encode()
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
        for name in sorted(files):
            info = zipfile.ZipInfo(f"{top}/{name}", STAMP)
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, files[name])
    return f"{top}.zip", buffer.getvalue()


# The online protocol in brief (CONTRACT.md has it whole: judge/types/online/README.md).
PROTOCOL = [
    "The allocator reads the case on stdin, one event at a time, and answers each "
    "allocation request before it is told anything more:",
    "",
    "```text",
    "capacity 1073741824                       the arena",
    "hints category op layer iteration        the hint names of every request",
    "a x17 6291456 512 activation addmm 3 0   ID SIZE ALIGNMENT VALUE...: answer the offset",
    "f x17                                    a free: no answer",
    "end                                      exit with status 0",
    "```",
    "",
    "Each answer is one line holding the offset (a multiple of ALIGNMENT, inside the "
    "capacity, overlapping no live allocation); flush stdout after each one, or the judge "
    "waits until the time limit. The score is lower bound / peak; the judge also reports "
    "the time per request (mean and p99, µs). The templates mark where your policy goes "
    "(`choose`).",
    "",
]


def public_toml(problem: Problem) -> str:
    """problem.toml with the public cases alone (a hidden case's name or capacity would
    tell something of it)."""
    doc = tomllib.loads((problem.root / "problem.toml").read_text())
    lines = [f"{k} = {_value(v)}" for k, v in doc.items() if k not in ("limits", "cases")]
    if "limits" in doc:
        lines += ["", "[limits]", *(f"{k} = {_value(v)}" for k, v in doc["limits"].items())]
    for case in doc.get("cases", []):
        if case.get("split") == "public":
            lines += ["", "[[cases]]", *(f"{k} = {_value(v)}" for k, v in case.items())]
    return "\n".join(lines) + "\n"


def _value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    return json.dumps(str(v))  # a TOML basic string: JSON's escapes are TOML's


def contract(ptype: str) -> str:
    """The planner contract of the type, from reference_solutions/README.md (and the
    type's own rules for offload)."""
    text = (FOLDER / "README.md").read_text() if (FOLDER / "README.md").is_file() else ""
    start = text.find(f"## Planner contract ({ptype})")
    section = text[start:].split("\n## ", 2)
    body = section[0] if start >= 0 else f"## Planner contract ({ptype})\n"
    rules = Path(__file__).parent / "types" / ptype / "README.md"
    if rules.is_file():  # the type's README alone when the folder has no section for it
        body = (body + "\n\n" if start >= 0 else "") + rules.read_text()
    return body.rstrip() + "\n"


def type_rules(ptype: str) -> str | None:
    """A problem type's rules for contestants (the /types/NAME page): its README
    (package data), else the planner contract of reference_solutions/README.md; None
    for a type with neither."""
    readme_path = Path(__file__).parent / "types" / ptype / "README.md"
    if readme_path.is_file():
        return readme_path.read_text()
    text = (FOLDER / "README.md").read_text() if (FOLDER / "README.md").is_file() else ""
    start = text.find(f"## Planner contract ({ptype})")
    return text[start:].split("\n## ", 2)[0].rstrip() + "\n" if start >= 0 else None


def readme(problem: Problem, planners: list[str], repository: str) -> str:
    where = repository or "the repository the organizers published"
    online = problem.type in STARTERS
    what = "allocator" if online else "planner"
    lines = [
        f"# {problem.name}: starter kit (version {problem.version})",
        "",
        f"The problem `{problem.slug}` (type `{problem.type}`) with its public cases, the "
        f"{'rules' if online else 'planner contract'} (CONTRACT.md) and a template {what} per "
        f"language ({', '.join(planners)}): each one passes the public cases. Improve one "
        "and submit it.",
        "",
        *(PROTOCOL if online else []),
        f"Install the judge (Python >= 3.11; from {where}):",
        "",
        "```sh",
        INSTALL.replace("REPOSITORY", repository or "https://REPOSITORY"),
        "```",
        "",
        f"Judge {'an allocator' if online else 'a planner'} locally, with the service's own "
        "pipeline and verifier (same cases, same scores; add `--json` for a machine-readable "
        "report):",
        "",
        "```sh",
        *(command(problem, p) for p in planners),
        "```",
        "",
        f"C++ {what}s are compiled with `g++ -O2 -std=c++20`. The time limit is "
        f"{problem.limits.time_limit_s:g} s per case. The hidden cases are scored on the "
        "service only.",
    ]
    return "\n".join(lines) + "\n"
