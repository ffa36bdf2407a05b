"""Errors that carry a location a person can act on (file, line, rule)."""

from __future__ import annotations

from pathlib import Path


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
