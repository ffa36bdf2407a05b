"""Structured logs: one JSON object per line (python-json-logger) for the API and the
workers, so that an operator can grep, ship and aggregate them. MEMORACE_LOG_FORMAT=text
gives plain lines instead."""

from __future__ import annotations

import logging
import os

from pythonjsonlogger.json import JsonFormatter

FIELDS = "{asctime}{levelname}{name}{message}"


def formatter() -> logging.Formatter:
    if os.environ.get("MEMORACE_LOG_FORMAT", "json") == "text":
        return logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s")
    return JsonFormatter(FIELDS, style="{", rename_fields={"asctime": "time", "levelname": "level"})


def setup(level: int = logging.INFO) -> None:
    """Our loggers (memorace.*) write JSON lines to stderr."""
    handler = logging.StreamHandler()
    handler.setFormatter(formatter())
    root = logging.getLogger("memorace")
    root.handlers[:] = [handler]
    root.setLevel(level)
    root.propagate = False
