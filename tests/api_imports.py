"""The api modules each Python file imports, resolved statically (AST), for
test_import_boundary: `from api import news` names the module api.news, `from
api.news import News` names api.news, `import api.db.models` names
api.db.models. Imports inside functions count: a run may never reach them."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def module_name(path: Path) -> str:
    """api/news.py -> api.news; api/live/__init__.py -> api.live."""
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def is_module(name: str) -> bool:
    """A module or a package of the repository (api.news, api.live)."""
    path = ROOT.joinpath(*name.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def imported(path: Path, top: str) -> Iterator[str]:
    """Each module under `top` that the file at `path` imports (absolute imports: the
    project writes no relative ones), as many times as it is named."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names if _under(a.name, top))
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if not _under(node.module, top):
                continue
            for alias in node.names:  # a submodule by name, or a name from the module
                name = f"{node.module}.{alias.name}"
                yield name if is_module(name) else node.module


def api_files() -> list[Path]:
    return sorted((ROOT / "api").rglob("*.py"))


def within(name: str, prefixes: tuple[str, ...]) -> bool:
    """api.live.events is within ("api.live",) and ("api.live.events",), not ("api.li",)."""
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def _under(name: str, top: str) -> bool:
    return name == top or name.startswith(top + ".")
