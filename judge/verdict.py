"""Verdicts a case result can carry (DESIGN.md, "Verdicts")."""

from enum import StrEnum


class Verdict(StrEnum):
    OK = "OK"  # valid, scored
    INVALID_PLAN = "INVALID_PLAN"  # parsable but breaks a rule
    BAD_OUTPUT = "BAD_OUTPUT"  # unparsable, missing or duplicate ids
    TIME_LIMIT = "TIME_LIMIT"
    MEMORY_LIMIT = "MEMORY_LIMIT"
    RUNTIME_ERROR = "RUNTIME_ERROR"
    OUTPUT_LIMIT = "OUTPUT_LIMIT"
    BUILD_ERROR = "BUILD_ERROR"
    JUDGE_ERROR = "JUDGE_ERROR"  # our fault: retried, never scored silently
