"""Redirects never name the Host header's site: Starlette makes a trailing-slash redirect
and the guide's folder redirect absolute from the request's Host; api.access.headers sends
them as paths, so a forged Host (a poisoned cache in front) cannot send anyone away."""

from __future__ import annotations

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

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
