"""Redirects never name the Host header's site: Starlette makes a trailing-slash redirect
and the guide's folder redirect absolute from the request's Host; api.access.headers sends
them as paths, so a forged Host (a poisoned cache in front) cannot send anyone away."""

from __future__ import annotations

from urllib.parse import urlsplit

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from api.access.headers import secured
from tests.test_api import client  # noqa: F401

REDIRECTING = ("/api/v1/problems/", "/guide", "/login/")


def test_a_forged_host_gets_a_path(client):  # noqa: F811
    found = 0
    for path in REDIRECTING:
        reply = client.get(path, headers={"Host": "evil.example:8443"}, follow_redirects=False)
        if reply.is_redirect:
            found += 1
            location = reply.headers["location"]
            assert location.startswith("/") and "evil" not in location, (path, location)
    assert found >= 2, "no redirect left to check"  # the slash redirect and /guide
    reply = client.get("/api/v1/problems/", follow_redirects=True)  # a path still works
    assert reply.status_code == 200, reply.text[:200]


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(host=st.text(st.characters(min_codepoint=33, max_codepoint=126), min_size=1, max_size=40))
@example(host="[bad")
@example(host="evil.example")
def test_any_host_header_never_leaves_the_site(client, host):  # noqa: F811
    reply = client.get("/api/v1/problems/", headers={"Host": host}, follow_redirects=False)
    assert reply.status_code < 500, (host, reply.status_code)
    location = reply.headers.get("location", "/")
    assert location.startswith("/") and not location.startswith("//"), (host, location)


def _as_a_browser_reads(location: str) -> str:
    return (
        location.replace("\t", "")
        .replace("\n", "")
        .replace("\r", "")
        .lstrip("".join(map(chr, range(33))))
    )


@given(location=st.text(max_size=60).map(lambda t: t.encode("latin-1", "replace")))
@example(location=b"/\\evil.example")
@example(location=b"http://h/\\evil.example/x?y=1")
@example(location=b"/\t/evil.example")
@example(location=b" \\\\evil.example")
def test_no_location_names_another_site(location: bytes) -> None:
    """Whatever a route or Starlette puts in Location goes out naming no other site, read
    as a browser reads it (tabs and line breaks dropped; a backslash is a slash)."""
    sent = dict(secured([(b"location", location)]))[b"location"].decode("latin-1")
    seen = _as_a_browser_reads(sent).replace("\\", "/")
    url = urlsplit(seen)
    assert not url.scheme and not url.netloc and not seen.startswith("//"), (location, sent)
