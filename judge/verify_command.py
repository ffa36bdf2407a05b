"""`memorace verify CASE PLAN`: the one function behind the command, which scripts run
once per plan, and the plain arguments that client.main runs it with straight away
(without building the whole command line: typer's parsers and its pydantic adapters
cost about 0.2 s a run)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from rich.text import Text

from judge.console import fail, out
from judge.errors import InputError
from judge.importer import name_and_capacity
from judge.types import get_type, known_types
from judge.verdict import Verdict
from judge.verifier import check_plan


def verify_command(
    case: Path, plan: Path, capacity: int | None, type_: str | None, as_json: bool
) -> int:
    """Print the verdict, peak, lower bound and score of `plan` for `case`; the exit
    status: 0 OK, 1 another verdict, 2 a bad case or type."""
    cap = capacity if capacity is not None else name_and_capacity(case)[1]
    try:
        ptype = get_type(type_ or _type_of(case))
        parsed = ptype.parse_case(case, cap)  # None: the case file's own, or 2^62
    except (KeyError, InputError) as exc:
        message = f"bad case: {exc}" if isinstance(exc, InputError) else str(exc.args[0])
        if as_json:
            out.print_json(json.dumps({"verdict": None, "error": message}))
            return 2
        fail(message)
        return 2
    bound = ptype.lower_bound(parsed)
    verification, score = check_plan(ptype, parsed, bound, plan)
    result = {
        "verdict": str(verification.verdict),
        "message": verification.message,
        "peak": verification.peak,
        "makespan": verification.makespan,  # timed types (µs), else null
        "lower_bound": bound,
        "score": score,
        "capacity": parsed.capacity,
    }
    if as_json:
        out.print_json(json.dumps(result))
    else:
        colour = "green" if verification.verdict == Verdict.OK else "red"
        out.print(
            Text.assemble((str(verification.verdict), colour), " ", verification.message or "")
        )
        figures = [f"peak {verification.peak}"] if verification.peak is not None else []
        figures += [f"lower bound {bound} {ptype.bound_unit}", f"score {score:.6f}"]
        out.print("  ".join(figures))
    return 0 if verification.verdict == Verdict.OK else 1


def _type_of(case: Path) -> str:
    """The type whose case files end like `case` (offset's .csv when none)."""
    return next((t for t in known_types() if case.name.endswith(get_type(t).case_suffix)), "offset")


_DIGITS = re.compile(r"[0-9]{1,19}")


def quick_args(args: list[str]) -> tuple[Path, Path, int | None, str | None, bool] | None:
    """`verify`'s arguments when they are plainly what the command takes (two paths,
    --json, --type T, --capacity N); None for anything else (help, errors, oddities)."""
    paths: list[str] = []
    capacity, type_, as_json = None, None, False
    rest = list(args)
    while rest:
        arg = rest.pop(0)
        name, eq, value = arg.partition("=")
        if arg == "--json":
            as_json = True
        elif name in ("--type", "--capacity") and (eq or rest):
            value = value if eq else rest.pop(0)
            if name == "--type" and value and not value.startswith("-"):
                type_ = value
            elif name == "--capacity" and _DIGITS.fullmatch(value):
                capacity = int(value)
            else:
                return None
        elif arg.startswith("-") or len(paths) == 2:
            return None
        else:
            paths.append(arg)
    if len(paths) != 2:
        return None
    return Path(paths[0]), Path(paths[1]), capacity, type_, as_json
