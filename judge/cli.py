"""The `memorace` command line: verify plans, check and import problems, judge planners."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from judge.csvtable import INT_LIMIT
from judge.errors import InputError
from judge.importer import import_minimalloc, name_and_capacity
from judge.package import Problem, load_cases, load_problem
from judge.pipeline import JudgeReport, judge_planner
from judge.sandbox import SandboxError, default_sandbox_name
from judge.scoring import CaseResult
from judge.types import get_type
from judge.verdict import Verdict
from judge.verifier import check_plan

ROOT = Path(__file__).resolve().parents[1]
app = typer.Typer(help="MemoRace: judge and score memory planners.", no_args_is_help=True)
problem_app = typer.Typer(help="Check and import problem packages.", no_args_is_help=True)
app.add_typer(problem_app, name="problem")
out = Console()
err = Console(stderr=True)


def _fail(message: str, code: int = 2) -> typer.Exit:
    err.print(f"[red]error:[/red] {message}", highlight=False)
    return typer.Exit(code)


@app.command()
def verify(
    case: Path,
    plan: Path,
    capacity: Annotated[int | None, typer.Option(help="bytes; default: from NAME.CAP.csv")] = None,
    type_: Annotated[str, typer.Option("--type", help="problem type")] = "offset",
    as_json: Annotated[bool, typer.Option("--json", help="one JSON object")] = False,
) -> None:
    """Verify PLAN for CASE: verdict, peak, lower bound and score."""
    cap = capacity if capacity is not None else name_and_capacity(case)[1]
    ptype = get_type(type_)
    try:
        parsed = ptype.parse_case(case, INT_LIMIT if cap is None else cap)
    except InputError as exc:
        raise _fail(f"bad case: {exc}") from None
    bound = ptype.lower_bound(parsed)
    verification, score = check_plan(ptype, parsed, bound, plan)
    result = {
        "verdict": str(verification.verdict),
        "message": verification.message,
        "peak": verification.peak,
        "lower_bound": bound,
        "score": score,
        "capacity": cap,
    }
    if as_json:
        out.print_json(json.dumps(result))
    else:
        colour = "green" if verification.verdict == Verdict.OK else "red"
        out.print(f"[{colour}]{verification.verdict}[/{colour}] {verification.message}")
        out.print(f"peak {verification.peak}  lower bound {bound}  score {score:.6f}")
    raise typer.Exit(0 if verification.verdict == Verdict.OK else 1)


@problem_app.command("check")
def problem_check(path: Path) -> None:
    """Validate a problem package and show its cases with their lower bounds."""
    problem = _load(str(path))
    try:
        cases = load_cases(problem)
    except InputError as exc:
        raise _fail(str(exc)) from None
    table = Table(title=f"{problem.slug} v{problem.version} ({problem.type})")
    for col in ("case", "split", "buffers", "capacity", "lower bound", "weight"):
        table.add_column(col, justify="left" if col in ("case", "split") else "right")
    for lc in cases:
        s = lc.spec
        table.add_row(
            s.name,
            s.split,
            str(len(lc.case)),
            str(s.capacity),
            str(lc.lower_bound),
            f"{s.weight:g}",
        )
    out.print(table)


@problem_app.command("import-minimalloc")
def problem_import_minimalloc(
    directory: Path,
    capacity: Annotated[int | None, typer.Option(help="bytes; default: from NAME.CAP.csv")] = None,
    slug: Annotated[str | None, typer.Option(help="package name; default: folder name")] = None,
    dest: Annotated[Path, typer.Option(help="where packages live")] = ROOT / "problems",
    hidden: Annotated[list[str] | None, typer.Option(help="case name for the hidden split")] = None,
) -> None:
    """Turn a folder of MiniMalloc CSV cases (id,lower,upper,size) into a package."""
    name = slug or re.sub(r"[^a-z0-9-]+", "-", directory.resolve().name.lower()).strip("-")
    try:
        problem = import_minimalloc(directory, dest, name, capacity, frozenset(hidden or ()))
    except InputError as exc:
        raise _fail(str(exc)) from None
    out.print(f"imported {len(problem.cases)} cases into {problem.root}")


@app.command("judge")
def judge_cmd(
    planner: Path,
    problem: Annotated[str, typer.Option(help="slug under problems/ or a package path")],
    split: Annotated[str, typer.Option(help="public | hidden | all")] = "all",
    time_limit: Annotated[float | None, typer.Option(help="override, seconds")] = None,
    sandbox: Annotated[
        str | None, typer.Option(help="docker | local; default: docker if an engine answers")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="one JSON object")] = False,
) -> None:
    """Judge PLANNER (.py, .cpp, or a .zip/.tar.gz with memorace.toml) on a problem."""
    if split not in ("public", "hidden", "all"):
        raise _fail("--split must be public, hidden or all")
    if sandbox not in (None, "docker", "local"):
        raise _fail("--sandbox must be docker or local")
    prob = _load(problem)
    box = sandbox or default_sandbox_name()
    report = _judge_with_progress(prob, planner, split, time_limit, quiet=as_json, sandbox=box)
    if as_json:
        out.print_json(json.dumps(report.as_dict()))
    else:
        _print_report(report)


@app.command()
def baselines(
    split: Annotated[str, typer.Option(help="public | hidden | all")] = "all",
    time_limit: Annotated[float | None, typer.Option(help="override, seconds")] = None,
) -> None:
    """Judge every reference planner on every shipped problem; print the scores."""
    planners = sorted(
        p for p in (ROOT / "reference_solutions").iterdir() if p.suffix in (".py", ".cpp")
    )
    problems = [
        _load(str(p))
        for p in sorted((ROOT / "problems").iterdir())
        if (p / "problem.toml").is_file()
    ]
    summary = Table(title="reference planners")
    for col in ("problem", "planner", "OK", "public", "hidden"):
        summary.add_column(col, justify="left" if col in ("problem", "planner") else "right")
    for prob in problems:
        for planner in planners:
            report = _judge_with_progress(prob, planner, split, time_limit, quiet=False)
            ok = sum(r.verdict == Verdict.OK for r in report.results)
            data = report.as_dict()
            summary.add_row(
                prob.slug,
                planner.name,
                f"{ok}/{len(report.results)}",
                _fmt(data["public_score"]),
                _fmt(data["hidden_score"]),
            )
    out.print(summary)


def _load(slug_or_path: str) -> Problem:
    path = Path(slug_or_path)
    if not (path / "problem.toml").is_file():
        path = ROOT / "problems" / slug_or_path
    try:
        return load_problem(path)
    except InputError as exc:
        raise _fail(str(exc)) from None


def _judge_with_progress(
    prob: Problem,
    planner: Path,
    split: str,
    time_limit: float | None,
    quiet: bool,
    sandbox: str = "local",
) -> JudgeReport:
    total = len(prob.cases_in(split))
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        disable=quiet,
        transient=True,
    ) as bar:
        task = bar.add_task(f"{planner.name} on {prob.slug}", total=total)

        def advance(result: CaseResult) -> None:
            bar.update(task, advance=1, description=f"{planner.name}: {result.case}")

        try:
            return judge_planner(prob, planner, split, advance, time_limit, sandbox)
        except (InputError, SandboxError) as exc:
            raise _fail(str(exc)) from None


def _print_report(report: JudgeReport) -> None:
    if report.build_error:
        err.print(f"[red]build error[/red]\n{report.build_error}", highlight=False)
    table = Table(title=f"{report.planner} on {report.problem} ({report.sandbox} sandbox)")
    for col in ("case", "split", "verdict", "peak", "lower bound", "score", "time s"):
        table.add_column(col, justify="left" if col in ("case", "split", "verdict") else "right")
    for r in report.results:
        colour = "green" if r.verdict == Verdict.OK else "red"
        table.add_row(
            r.case,
            r.split,
            f"[{colour}]{r.verdict}[/{colour}]",
            _fmt(r.peak),
            str(r.lower_bound),
            f"{r.score:.4f}",
            _fmt(r.time_s),
        )
    out.print(table)
    for r in report.results:
        if r.message:
            out.print(f"{r.case}: {r.message}", highlight=False)
    data = report.as_dict()
    out.print(
        f"public {_fmt(data['public_score'])}  hidden {_fmt(data['hidden_score'])}  "
        f"verdicts {data['verdicts']}"
    )


def _fmt(value: object) -> str:
    if value is None:
        return "-"
    return f"{value:.4f}" if isinstance(value, float) else str(value)
