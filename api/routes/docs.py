"""The OpenAPI page at /docs, served without internet: FastAPI's default page loads
Swagger UI from a CDN (a blank page offline). The assets come from the
fastapi-offline package (Swagger UI's own dist files, MIT/Apache-2.0)."""

from __future__ import annotations

import secrets
from pathlib import Path

import fastapi_offline
from fastapi import FastAPI
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

ASSETS = Path(fastapi_offline.__file__).parent / "static"
ASSETS_URL = "/docs-assets"
# Swagger UI sets inline styles; its one inline script runs with this response's nonce.
CSP = (
    "default-src 'self'; script-src 'self' 'nonce-{nonce}'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; object-src 'none'; base-uri 'none'; frame-ancestors 'none'"
)


def add_docs(app: FastAPI) -> None:
    """GET /docs and its assets; create the app with docs_url=None, redoc_url=None."""
    app.mount(ASSETS_URL, StaticFiles(directory=ASSETS), name="docs-assets")

    @app.get("/docs", include_in_schema=False)
    def docs() -> HTMLResponse:
        nonce = secrets.token_urlsafe(16)
        page = get_swagger_ui_html(
            openapi_url=app.openapi_url or "/openapi.json",
            title=f"{app.title} API",
            swagger_js_url=f"{ASSETS_URL}/swagger-ui-bundle.js",
            swagger_css_url=f"{ASSETS_URL}/swagger-ui.css",
            swagger_favicon_url="/static/favicon.svg",
        )
        html = bytes(page.body).decode().replace("<script>", f'<script nonce="{nonce}">')
        return HTMLResponse(html, headers={"Content-Security-Policy": CSP.format(nonce=nonce)})
