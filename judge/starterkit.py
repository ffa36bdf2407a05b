"""The starter kit of a problem version: one zip made from its package, with what a
contestant needs to start and to judge locally exactly as the service does.

    <slug>-v<N>-starter-kit/
      README.md          the exact local command, and how to install it
      CONTRACT.md        the planner contract of the problem's type
      planner.py         a template planner per language (a reference planner that
      planner.cpp        passes the public cases)
      <slug>/            the package with its public cases only: problem.toml (hidden
                         cases left out), statement.md, data/public/

Hidden cases are not in it, not even their names. The zip is deterministic: the same
package gives the same bytes.
"""

from __future__ import annotations

import io
import json
import tomllib
import zipfile
from pathlib import Path
from typing import Any

from judge.package import Problem
from judge.references import FOLDER, templates_for

STAMP = (1980, 1, 1, 0, 0, 0)
SUFFIX = {"python": "py", "cpp": "cpp"}
INSTALL = "pip install 'memorace @ git+REPOSITORY'"  # REPOSITORY: where the service's code is


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
    templates = templates_for(problem.type)
    for lang, path in templates.items():
        files[f"planner.{SUFFIX[lang]}"] = path.read_bytes()
    files["CONTRACT.md"] = contract(problem.type).encode()
    files["README.md"] = readme(problem, sorted(templates), repository).encode()
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
        for name in sorted(files):
            info = zipfile.ZipInfo(f"{top}/{name}", STAMP)
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, files[name])
    return f"{top}.zip", buffer.getvalue()


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
    if rules.is_file():
        body += "\n\n" + rules.read_text()
    return body.rstrip() + "\n"


def readme(problem: Problem, languages: list[str], repository: str) -> str:
    where = repository or "the repository the organizers published"
    planners = [f"planner.{SUFFIX[lang]}" for lang in languages]
    lines = [
        f"# {problem.name}: starter kit (version {problem.version})",
        "",
        f"The problem `{problem.slug}` (type `{problem.type}`) with its public cases, the "
        "planner contract (CONTRACT.md) and a template planner per language "
        f"({', '.join(planners)}): each one passes the public cases. Improve one and submit it.",
        "",
        f"Install the judge (Python >= 3.11; from {where}):",
        "",
        "```sh",
        INSTALL.replace("REPOSITORY", repository or "https://REPOSITORY"),
        "```",
        "",
        "Judge a planner locally, with the service's own pipeline and verifier (same cases, "
        "same scores; add `--json` for a machine-readable report):",
        "",
        "```sh",
        *(command(problem, p) for p in planners),
        "```",
        "",
        f"C++ planners are compiled with `g++ -O2 -std=c++20`. The time limit is "
        f"{problem.limits.time_limit_s:g} s per case. The hidden cases are scored on the "
        "service only.",
    ]
    return "\n".join(lines) + "\n"
