"""The compose stack's passwords put into the service URLs (MEMORACE_POSTGRES_PASSWORD,
MEMORACE_REDIS_PASSWORD): an operator sets a password once and keeps the default URLs,
and a password with URL characters in it (`@`, `/`, `:`) needs no quoting by hand."""

from __future__ import annotations

from urllib.parse import quote, urlsplit, urlunsplit

SCHEMES = {"postgresql": ("postgresql", "postgresql+psycopg"), "redis": ("redis", "rediss")}


def with_password(url: str, password: str, kind: str) -> str:
    """`url` with `password` in it when it is a `kind` URL (postgresql, redis) naming a
    host and no password of its own; any other URL unchanged."""
    if not password:
        return url
    try:
        parts = urlsplit(url)
        has_password = parts.password is not None
    except ValueError:  # not a URL we can read: the engine will say what is wrong
        return url
    if parts.scheme not in SCHEMES[kind] or has_password or not parts.hostname:
        return url
    user = quote(parts.username or "", safe="") if parts.username else ""
    netloc = f"{user}:{quote(password, safe='')}@{parts.netloc.rpartition('@')[2]}"
    return urlunsplit(parts._replace(netloc=netloc))
