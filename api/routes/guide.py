"""The guides at /guide: the Sphinx site that `make guide` builds from docs/ into
api/guide/ (ignored by git, carried by the wheel), served from the package so that
no internet is needed. The site's pages run only its own scripts (search), never
inline ones, under a policy of their own: the default for answers without one
(api.access.headers) sandboxes the document, which would stop the search page."""

from __future__ import annotations

import re
from pathlib import Path

from fastapi import FastAPI
from starlette.responses import PlainTextResponse, Response
from starlette.staticfiles import StaticFiles
from starlette.types import Scope

SITE = Path(__file__).parents[1] / "guide"  # api/guide/, beside api/routes/
PATH = "/guide"
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
NOT_BUILT = "The guides are not built here: run `make guide` (make run and make test do).\n"


class GuideFiles(StaticFiles):
    """The built site with its policy; a clear 404 where it was never built."""

    async def check_config(self) -> None:
        if Path(str(self.directory)).is_dir():  # else get_response says it is not built
            await super().check_config()

    async def get_response(self, path: str, scope: Scope) -> Response:
        if not (Path(str(self.directory)) / "index.html").is_file():
            return PlainTextResponse(NOT_BUILT, status_code=404)
        if any(p.startswith(".") and p != "." for p in re.split(r"[/\\]", path)):
            # Sphinx's own files (.buildinfo; .doctrees, the pickled build environment
            # with the build host's paths, where an older `make guide` left it): never
            # pages. ("." is the site's root; ".." Starlette has refused already.)
            return PlainTextResponse(
                "Not Found\n", status_code=404, headers={"Content-Security-Policy": CSP}
            )
        response = await super().get_response(path, scope)
        response.headers["Content-Security-Policy"] = CSP
        return response


def add_guide(app: FastAPI, site: Path = SITE) -> None:
    """GET /guide/... (a folder answers its index.html, as the dirhtml build expects)."""
    app.mount(PATH, GuideFiles(directory=site, html=True, check_dir=False), name="guide")
