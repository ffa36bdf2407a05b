"""What the operator's TLS, sizing and monitoring pages say about the service is what
the code does: the stream headers and lifetimes a proxy must respect, the upload limits
its body sizes must pass (the nginx and Caddy examples included), the event and upload
paths their locations match, the settings the compose file passes, where each secret
lives, and the defaults the sizing arithmetic starts from."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from api.settings import Settings
from tests.conftest import ROOT

OPERATOR = ROOT / "docs" / "operator"
PAGES = ("tls.md", "sizing.md", "monitoring.md")
# Pages of this folder that other work writes; linking them is allowed before they land.
SIBLINGS = {"backup.md", "upgrade.md"}
MIB = 2**20


def page(name: str) -> str:
    return (OPERATOR / name).read_text()


def prose(name: str) -> str:
    """The page with its line breaks as spaces: a reflowed paragraph still matches."""
    return " ".join(page(name).split())


def block_after(text: str, heading: str) -> str:
    """The first fenced block below `heading`."""
    rest = text[text.index(heading) :]
    return re.search(r"^```\w*\n(.*?)^```$", rest, flags=re.S | re.M).group(1)  # type: ignore[union-attr]


@pytest.fixture
def defaults(monkeypatch) -> Settings:
    """The settings as an operator gets them: no MEMORACE_* from the test run."""
    import os

    for name in [n for n in os.environ if n.startswith("MEMORACE_")]:
        monkeypatch.delenv(name)
    return Settings()


def test_the_stream_facts_are_the_services():
    from api.live.events import STREAM_HEADERS
    from api.live.message_feed import STREAM_S

    tls = prose("tls.md")
    assert STREAM_HEADERS["X-Accel-Buffering"] == "no" and "`X-Accel-Buffering: no`" in tls
    assert STREAM_HEADERS["Cache-Control"] == "no-cache" and "`Cache-Control: no-cache`" in tls
    assert STREAM_S == 300 and "(it lasts 300 s" in tls


def test_the_limits_are_the_services(defaults):
    from api.access.bodylimit import DEFAULT_LIMIT_BYTES
    from api.access.uploads import OVERHEAD_BYTES

    tls = prose("tls.md")
    assert defaults.sse_keepalive_s == 15 and "keep-alive comment 15 s" in tls
    assert defaults.upload_limit_bytes == 16 * MIB and "(16 MiB)" in tls
    assert defaults.package_limit_bytes == 256 * MIB and "(256 MiB)" in tls
    assert DEFAULT_LIMIT_BYTES == 256 * 1024 and "(256 KiB)" in tls
    assert OVERHEAD_BYTES == 64 * 1024 and "64 KiB of form" in tls
    assert (defaults.login_addr_free_failures, defaults.login_addr_lock_after) == (30, 100)
    assert "after 30 failures" in tls and "100 lock" in tls


def test_the_proxies_let_the_largest_uploads_through(defaults):
    from api.access.uploads import OVERHEAD_BYTES

    submission = defaults.upload_limit_bytes + OVERHEAD_BYTES
    package = defaults.package_limit_bytes + OVERHEAD_BYTES
    nginx = block_after(page("tls.md"), "## nginx")
    general, packages = (int(n) * MIB for n in re.findall(r"client_max_body_size (\d+)m;", nginx))
    caddy = block_after(page("tls.md"), "## Caddy")
    caddy_packages, caddy_general = (
        int(n) * MIB for n in re.findall(r"max_size (\d+)MiB", caddy)
    )  # fmt: skip
    for small, large in ((general, packages), (caddy_general, caddy_packages)):
        assert submission <= small < package <= large


def serves(app, method: str, path: str) -> bool:  # type: ignore[no-untyped-def]
    """Whether a route of `app` takes `method path` (routers included, as Starlette
    matches them: FastAPI keeps an included router's routes inside it)."""
    from starlette.routing import Match

    scope = {"type": "http", "method": method, "path": path, "root_path": "", "headers": []}
    return any(route.matches(scope)[0] == Match.FULL for route in app.routes)


@pytest.fixture(scope="module")
def app(tmp_path_factory):  # type: ignore[no-untyped-def]
    from api import queue
    from api.app import create_app
    from api.settings import get_settings

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MEMORACE_DATA_DIR", str(tmp_path_factory.mktemp("routes") / "data"))
        get_settings.cache_clear()
        queue.producer.cache_clear()
        try:
            yield create_app()
        finally:
            get_settings.cache_clear()
            queue.producer.cache_clear()


EVENTS = {"/api/v1/submissions/12/events", "/api/v1/contest/events"}
PACKAGES = {"/api/v1/admin/problems", "/admin/problems"}
OTHERS = {"/api/v1/submissions/12", "/api/v1/submissions", "/admin/problems/tiny", "/"}


def test_the_proxies_match_the_event_and_package_paths(app):
    from api.access.bodylimit import UPLOAD_ROUTES

    assert all(serves(app, "GET", path) for path in EVENTS)
    assert {path for _, path in UPLOAD_ROUTES if path.endswith("/problems")} == PACKAGES
    assert all(serves(app, "POST", path) for path in PACKAGES)
    tls = page("tls.md")
    nginx = block_after(tls, "## nginx")
    caddy = block_after(tls, "## Caddy")
    matchers = re.findall(r"location ~ (\S+) \{", nginx)
    matchers += re.findall(r"path_regexp events (\S+)", caddy)
    assert len(matchers) == 3
    for pattern in matchers:
        chosen = {p for p in EVENTS | PACKAGES | OTHERS if re.search(pattern, p)}
        assert chosen in (EVENTS, PACKAGES), (pattern, chosen)
    caddy_packages = set(re.search(r"@packages path (.*)", caddy).group(1).split())  # type: ignore[union-attr]
    assert caddy_packages == PACKAGES


def test_compose_and_the_image_pass_the_proxy_settings():
    yaml = pytest.importorskip("yaml")
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    api = compose["services"]["api"]["environment"]
    assert {"MEMORACE_SECURE_COOKIES", "MEMORACE_FORWARDED_ALLOW_IPS"} <= set(api)
    for launcher in (ROOT / "docker" / "service.Dockerfile", ROOT / "scripts" / "serve"):
        text = launcher.read_text()
        assert "--forwarded-allow-ips" in text and "MEMORACE_FORWARDED_ALLOW_IPS" in text
    postgres = " ".join(compose["services"]["postgres"]["command"])
    assert "MEMORACE_POSTGRES_MAX_CONNECTIONS:-1000" in postgres
    assert "`max_connections=1000`" in prose("sizing.md")


def test_the_secrets_are_where_the_guide_says(defaults):
    from api import app
    from api.actions import shipped

    tls = prose("tls.md")
    assert shipped.seed_path(defaults) == defaults.data_dir / "secrets" / "hidden-seed"
    assert "`$MEMORACE_DATA_DIR/secrets/hidden-seed`" in tls
    assert '"secret_key"' in Path(app.__file__).read_text()
    assert "`$MEMORACE_DATA_DIR/secret_key`" in tls
    assert "--token-file" in (ROOT / "scripts" / "serve").read_text()
    assert "`$MEMORACE_DATA_DIR/admin.token`" in tls


def test_the_sizing_arithmetic_starts_from_the_defaults(defaults):
    from api.db.session import pool_sizes
    from worker.pacing import budget_s

    sizing = prose("sizing.md")
    per_process = sum(pool_sizes().values())
    assert pool_sizes() == {"pool_size": 40, "max_overflow": 40}
    rows = re.findall(r"^\| (\d+) \| ([\d,]+) \|", page("sizing.md"), flags=re.M)
    assert len(rows) == 5
    for cores, most in rows:
        assert int(cores) * per_process == int(most.replace(",", ""))
    assert budget_s(30) == pytest.approx(35) and "7 x (30 + 2 + 3) = 245 s" in sizing
    assert (defaults.rate_limit, defaults.rate_window_s) == (20, 300)
    assert (defaults.event_streams_per_user, defaults.event_streams_per_process) == (200, 5000)
    limits = {
        path.parent.name: float(re.search(r"time_limit_s = ([\d.]+)", path.read_text()).group(1))  # type: ignore[union-attr]
        for path in (ROOT / "problems").glob("*/problem.toml")
    }
    for slug, limit in limits.items():
        assert f"`{slug}`" in sizing and f"{limit:g} s" in sizing, slug


@pytest.mark.parametrize("name", PAGES)
def test_links_reach_pages_and_no_block_runs_unseen(name):
    text = page(name)
    for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", text):
        assert "://" not in target, target  # the guides are served offline
        assert (OPERATOR / target).is_file() or target in SIBLINGS, target
    # Every command here is a `text` block: none needs a test to run it.
    assert set(re.findall(r"^```(\S*)$", text, flags=re.M)[0::2]) == {"text"}
    assert not re.search(r"\n\n(    \S.*\n)+", re.sub(r"^```.*?^```$", "", text, flags=re.S | re.M))
