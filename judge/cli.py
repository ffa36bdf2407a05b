"""The `memorace` command line: verify plans, check and import problems, judge planners."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from judge.client import FINAL, Client, ClientError
from judge.csvtable import INT_LIMIT
from judge.errors import InputError
from judge.importer import import_minimalloc, name_and_capacity
from judge.package import Problem, load_cases, load_problem
from judge.pipeline import JudgeReport, judge_planner
from judge.sandbox import SandboxError, default_sandbox_name
from judge.scoring import CaseResult
from judge.types import get_type, known_types
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
    replay: Annotated[
        str | None, typer.Option(help="also replay every plan on memory: numpy | cupy | auto")
    ] = None,
) -> None:
    """Judge PLANNER (.py, .cpp, or a .zip/.tar.gz with memorace.toml) on a problem."""
    if split not in ("public", "hidden", "all"):
        raise _fail("--split must be public, hidden or all")
    if sandbox not in (None, "docker", "local"):
        raise _fail("--sandbox must be docker or local")
    prob = _load(problem)
    box = sandbox or default_sandbox_name()
    if replay not in (None, "numpy", "cupy", "auto"):
        raise _fail("--replay must be numpy, cupy or auto")
    report = _judge_with_progress(
        prob, planner, split, time_limit, quiet=as_json, sandbox=box, replay=replay
    )
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
        for planner in _planners_for(prob, planners):
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


def _planners_for(prob: Problem, planners: list[Path]) -> list[Path]:
    """Planners named `<type>_*.py|cpp` are for that problem type; the rest for `offset`."""
    typed = [p for p in planners if p.name.startswith(f"{prob.type}_")]
    if prob.type != "offset":
        return typed
    return [p for p in planners if "_" not in p.name or p.name.split("_")[0] not in known_types()]


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
    replay: str | None = None,
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
            return judge_planner(
                prob, planner, split, advance, time_limit, sandbox, replay_backend=replay
            )
        except (InputError, SandboxError) as exc:
            raise _fail(str(exc)) from None


def _print_report(report: JudgeReport) -> None:
    if report.build_error:
        err.print(f"[red]build error[/red]\n{report.build_error}", highlight=False)
    table = Table(title=f"{report.planner} on {report.problem} ({report.sandbox} sandbox)")
    timed = any(r.makespan_us is not None for r in report.results)
    columns = ["case", "split", "verdict", "peak", "lower bound", "score", "time s"]
    for col in columns + (["makespan µs"] if timed else []):
        table.add_column(col, justify="left" if col in ("case", "split", "verdict") else "right")
    for r in report.results:
        colour = "green" if r.verdict == Verdict.OK else "red"
        cells = [r.case, r.split, f"[{colour}]{r.verdict}[/{colour}]", _fmt(r.peak)]
        cells += [_fmt(r.lower_bound), f"{r.score:.4f}", _fmt(r.time_s)]
        table.add_row(*cells, *([_fmt(r.makespan_us)] if timed else []))
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


# --- server commands: talk to a MemoRace server (judge.client) ---------------


@app.command()
def submit(
    file: Annotated[Path, typer.Argument(help="the planner: .py, .cpp, .zip or .tar.gz")],
    problem: Annotated[str, typer.Option(help="problem slug")],
    follow: Annotated[bool, typer.Option(help="watch the judging until it ends")] = True,
    as_json: Annotated[bool, typer.Option("--json", help="one JSON object")] = False,
) -> None:
    """Upload FILE for PROBLEM to the server and follow its judging.

    Exit status: 0 when judged (or queued, with --no-follow), 1 when the
    judging ended in error, 2 when the request failed.
    """
    with _server() as client, _server_errors():
        sub = client.submit(file, problem)
        if sub.get("reused") and not as_json:
            err.print(f"identical to an earlier upload: reusing submission #{sub['id']}")
        if follow and sub.get("status") not in FINAL:
            sub = _follow(client, sub, quiet=as_json)
    _show_submission(sub, as_json)
    raise typer.Exit(1 if sub.get("status") == "error" else 0)


@app.command("status")
def status_cmd(
    sub_id: Annotated[int, typer.Argument(metavar="ID", help="submission id")],
    as_json: Annotated[bool, typer.Option("--json", help="one JSON object")] = False,
) -> None:
    """Show a submission: its status and the results so far."""
    with _server() as client, _server_errors():
        sub = client.submission(sub_id)
    _show_submission(sub, as_json)


@app.command("leaderboard")
def leaderboard_cmd(
    slug: Annotated[str, typer.Argument(help="problem slug")],
    as_json: Annotated[bool, typer.Option("--json", help="one JSON object")] = False,
) -> None:
    """Show the leaderboard of a problem."""
    with _server() as client, _server_errors():
        board = client.leaderboard(slug)
    if as_json:
        out.print_json(json.dumps(board))
        return
    notes = [n for n, on in (("frozen", board.get("frozen")),) if on]
    notes.append("hidden revealed" if board.get("hidden_revealed") else "hidden not revealed")
    table = Table(title=f"{board.get('problem', slug)} leaderboard ({', '.join(notes)})")
    for col in ("rank", "team", "public", "hidden", "submission", "submitted at"):
        table.add_column(col, justify="left" if col in ("team", "submitted at") else "right")
    for row in board.get("rows", []):
        table.add_row(
            str(row.get("rank")),
            str(row.get("team")),
            _fmt(row.get("public_score")),
            _fmt(row.get("hidden_score")),
            f"#{row.get('submission_id')}",
            str(row.get("submitted_at", "")),
        )
    out.print(table if board.get("rows") else "no submissions yet", highlight=False)


def _server() -> Client:
    try:
        return Client.from_config()
    except ClientError as exc:
        raise _fail(exc.message) from None


@contextmanager
def _server_errors() -> Iterator[None]:
    """A ClientError becomes `error: <server message>` on stderr and exit status 2."""
    try:
        yield
    except ClientError as exc:
        raise _fail(exc.message) from None


def _follow(client: Client, sub: dict[str, Any], quiet: bool) -> dict[str, Any]:
    """Live progress on stderr until the judging ends; returns the final Submission."""
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        disable=quiet,
        transient=True,
    ) as bar:
        task = bar.add_task(_progress_text(sub), total=sub.get("cases_total") or None, completed=0)
        try:
            for event, data in client.follow(sub["id"]):
                if event == "end":
                    return data
                if event in ("status", "case"):
                    text = (
                        _progress_text(sub | data) if event == "status" else _case_text(sub, data)
                    )
                    bar.update(
                        task,
                        description=text,
                        total=data.get("cases_total") or None,
                        completed=data.get("cases_done") or 0,
                    )
        except KeyboardInterrupt:
            # Stopping the watch does not stop the judging: say how to look again.
            err.print(f"stopped following; the judging goes on: memorace status {sub['id']}")
            raise typer.Exit(130) from None
    return client.submission(sub["id"])  # follow always ends with "end"; be safe anyway


def _progress_text(sub: dict[str, Any]) -> str:
    text = f"#{sub['id']} {sub.get('status', '')}"
    if sub.get("status") == "queued" and sub.get("queue_position") is not None:
        text += f" (position {sub['queue_position']})"
    return text


def _case_text(sub: dict[str, Any], case: dict[str, Any]) -> str:
    return f"#{sub['id']} {case.get('case', '')}: {case.get('verdict', '')}"


def _show_submission(sub: dict[str, Any], as_json: bool) -> None:
    if as_json:
        out.print_json(json.dumps(sub))
        return
    if sub.get("results"):
        _print_report(_server_report(sub))
    state = sub.get("status", "")
    line = f"submission #{sub.get('id')} {sub.get('filename', '')}: {state}"
    if state == "queued" and sub.get("queue_position") is not None:
        line += f", position {sub['queue_position']} in the queue"
    elif state == "running":
        line += f", {sub.get('cases_done', 0)}/{sub.get('cases_total', 0)} cases"
    out.print(line, highlight=False)
    if sub.get("status_detail"):
        colour = "red" if state == "error" else "default"
        out.print(f"[{colour}]{sub['status_detail']}[/{colour}]", highlight=False)


@dataclass
class _ServerReport(JudgeReport):
    """A server Submission in the shape `_print_report` shows, so both use one table.

    The scores are the server's: the API sends no case weights, so they cannot
    be recomputed here (and the server may withhold the hidden score).
    """

    scores: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {**super().as_dict(), **self.scores}


def _server_report(sub: dict[str, Any]) -> _ServerReport:
    results = [
        CaseResult(
            case=r.get("case", ""),
            split=r.get("split", ""),
            weight=1.0,  # unused: scores come from the server (see _ServerReport)
            verdict=_verdict(r.get("verdict", "")),
            message=r.get("message", ""),
            lower_bound=r.get("lower_bound", 0),
            peak=r.get("peak"),
            score=r.get("score") or 0.0,
            time_s=r.get("time_s"),
            log=r.get("log", ""),
            makespan_us=r.get("makespan_us"),
        )
        for r in sub.get("results", [])
    ]
    return _ServerReport(
        problem=f"{sub.get('problem')} v{sub.get('problem_version')}",
        planner=f"#{sub.get('id')} {sub.get('filename', '')}",
        sandbox="server",
        results=results,
        scores={k: sub.get(k) for k in ("public_score", "hidden_score")},
    )


def _verdict(value: str) -> Verdict:
    try:
        return Verdict(value)
    except ValueError:  # a verdict newer than this client: show it as sent
        return value  # type: ignore[return-value]
