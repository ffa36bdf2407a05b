"""Ids read from outside text (a header, a path, a news message)."""

from __future__ import annotations


def plain_id(word: str) -> int | None:
    """The id `word` spells in ASCII digits, at most 18 of them (below 2^63, a database
    id), else None: str.isdigit alone takes other scripts' digits and superscripts,
    which int() reads differently or refuses."""
    if word.isascii() and word.isdigit() and len(word) <= 18:
        return int(word)
    return None
