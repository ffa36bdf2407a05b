"""The `{openapi}` directive: the API reference, rendered from the service's own OpenAPI
document (api.app.create_app().openapi()) at build time, so it cannot drift from the
routes. One section per tag, one entry per operation: method, path, summary,
parameters and the answers it documents."""

from __future__ import annotations

import os
import re
import tempfile
from collections import defaultdict
from typing import Any

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective

METHODS = ("get", "post", "put", "patch", "delete")


def openapi_document() -> dict[str, Any]:
    """The service's OpenAPI document, from an app on a throwaway data directory and
    database: never the host's own (MEMORACE_* set where `make run` or `make test`
    builds the guides), which create_app would migrate and write its secret key into.
    Set in the environment, not only passed: parts of the app read get_settings()."""
    with tempfile.TemporaryDirectory() as data:
        throwaway = {
            "MEMORACE_DATA_DIR": data,
            "MEMORACE_DATABASE_URL": f"sqlite:///{data}/db.sqlite",
            "MEMORACE_BROKER_URL": "filesystem://",
            "MEMORACE_BLOB_STORE": "local",
        }
        saved = {key: os.environ.get(key) for key in throwaway}
        os.environ.update(throwaway)
        try:
            from api.app import create_app
            from api.settings import get_settings

            get_settings.cache_clear()
            return create_app().openapi()
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value
            get_settings.cache_clear()


def plain(text: str) -> str:
    """`text` as reStructuredText that shows it as written (no markup from it)."""
    return re.sub(r"([\\`*_|\[\]<>])", r"\\\1", text)


def operation_lines(method: str, path: str, op: dict[str, Any]) -> list[str]:
    """reStructuredText for one operation."""
    title = f"``{method.upper()} {path}``"
    lines = [title, "~" * len(title), ""]
    for text in (op.get("summary"), op.get("description")):
        if text:
            lines += [plain(line.strip()) for line in text.strip().splitlines()] + [""]
    params = op.get("parameters", [])
    if params:
        lines += ["Parameters:", ""]
        for p in params:
            need = "required" if p.get("required") else "optional"
            lines.append(f"- ``{p['name']}`` ({p['in']}, {need})")
        lines.append("")
    body = op.get("requestBody", {}).get("content", {})
    if body:
        lines += ["Body: " + ", ".join(f"``{kind}``" for kind in sorted(body)), ""]
    answers = op.get("responses", {})
    if answers:
        lines += ["Answers: " + ", ".join(f"``{code}``" for code in sorted(answers)), ""]
    return lines


def reference_lines(doc: dict[str, Any]) -> list[str]:
    by_tag: dict[str, list[tuple[str, str, dict[str, Any]]]] = defaultdict(list)
    for path, item in sorted(doc.get("paths", {}).items()):
        for method in METHODS:
            if method in item:
                op = item[method]
                by_tag[(op.get("tags") or ["other"])[0]].append((method, path, op))
    lines: list[str] = []
    for tag in sorted(by_tag):
        lines += [tag, "-" * len(tag), ""]
        for method, path, op in by_tag[tag]:
            lines += operation_lines(method, path, op)
    return lines


class OpenAPIDirective(SphinxDirective):
    has_content = False

    def run(self) -> list[nodes.Node]:
        container = nodes.section()
        container.document = self.state.document
        text = StringList(reference_lines(openapi_document()), source="openapi")
        self.state.nested_parse(text, self.content_offset, container, match_titles=True)
        return list(container.children)


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_directive("openapi", OpenAPIDirective)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
