"""Errors that carry a location a person can act on (file, line, rule)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

_LONG = 10**40  # no valid number in any input is this long


class InputError(Exception):
    """Bad input: a malformed case, plan or package. Never a judge bug."""

    def __init__(self, message: str, file: Path | str | None = None, line: int | None = None):
        self.message = message
        self.file = str(file) if file is not None else None
        self.line = line
        super().__init__(str(self))

    def __str__(self) -> str:
        where = self.file or ""
        if self.line is not None:
            where = f"{where}:{self.line}" if where else f"line {self.line}"
        return f"{where}: {self.message}" if where else self.message

    def located(self, file: Path | str) -> InputError:
        """The same error, naming `file` when it did not name one yet."""
        return self if self.file else InputError(self.message, file, self.line)


class CaseError(InputError):
    """A case (organizer input) breaks a format rule."""


class PlanError(InputError):
    """A plan (contestant output) cannot be read: verdict BAD_OUTPUT."""


class PackageError(InputError):
    """A problem package breaks a rule."""


class NoPicture(InputError):
    """A plan that cannot be drawn (e.g. an invalid offload plan has no timeline)."""


class SubmissionError(InputError):
    """A broken upload: the message says what to fix; verdict BUILD_ERROR upstream."""


def show_value(value: Any) -> str:
    """A value from an input file for an error message: short, and safe for ints of any
    length (repr() of an int over 4,300 digits raises ValueError)."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= _LONG:
        return f"<a {_digits(abs(value))}-digit integer>"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _digits(value: int) -> int:
    n = int(value.bit_length() * 0.30102999566398120) + 1
    while n > 1 and 10 ** (n - 1) > value:
        n -= 1
    while 10**n <= value:
        n += 1
    return n
