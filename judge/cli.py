"""The offline judge's commands of `memorace`: verify plans, check and import problems, judge
planners. The server commands (submit, status, leaderboard) are `client.cli`'s."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.text import Text

from judge.console import err, fmt, new_table, out, print_cases, progress_bar, show
from judge.console import fail as _fail
from judge.errors import InputError
from judge.importer import import_minimalloc
from judge.package import Problem, load_cases, load_problem
from judge.scoring import CaseResult
from judge.types import known_types
from judge.verdict import Verdict
from judge.verify_command import verify_command

if TYPE_CHECKING:  # judging loads the sandboxes; `verify` needs none of it
    from judge.pipeline import JudgeReport

ROOT = Path(__file__).resolve().parents[1]
app = typer.Typer(help="MemoRace: judge and score memory planners.", no_args_is_help=True)
problem_app = typer.Typer(help="Check and import problem packages.", no_args_is_help=True)
app.add_typer(problem_app, name="problem")


@app.command()
def verify(
    case: Path,
    plan: Path,
    capacity: Annotated[
        int | None, typer.Option(help="bytes; default: from NAME.CAP.csv or the case file")
    ] = None,
    type_: Annotated[
        str | None,
        typer.Option("--type", help="problem type; default by the case's suffix (.events: online)"),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="one JSON object")] = False,
) -> None:
    """Verify PLAN for CASE: verdict, peak, lower bound and score (an `online` transcript
    is verified as the plan of its case)."""
    raise typer.Exit(verify_command(case, plan, capacity, type_, as_json))


@problem_app.command("check")
def problem_check(path: Path) -> None:
    """Validate a problem package and show its cases with their lower bounds."""
    _show_cases(_load(str(path)))


def _show_cases(problem: Problem) -> None:
    """The package's cases with their lower bounds (`problem check`, and each import)."""
    try:
        cases = load_cases(problem)
    except InputError as exc:
        raise _fail(str(exc)) from None
    columns = ("case", "split", "buffers", "capacity", "lower bound", "weight")
    table = new_table(f"{problem.slug} v{problem.version} ({problem.type})", columns, columns[:2])
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
    show(table)


Dest = Annotated[
    Path | None,
    typer.Option(help="where packages go", show_default="./problems of the current directory"),
]


@problem_app.command("import-minimalloc")
def problem_import_minimalloc(
    directory: Path,
    capacity: Annotated[int | None, typer.Option(help="bytes; default: from NAME.CAP.csv")] = None,
    slug: Annotated[str | None, typer.Option(help="package name; default: folder name")] = None,
    dest: Dest = None,
    hidden: Annotated[list[str] | None, typer.Option(help="case name for the hidden split")] = None,
) -> None:
    """Turn a folder of MiniMalloc CSV cases (id,lower,upper,size) into a package."""
    name = slug
    if name is None:  # from the folder's name; a name with no letter or digit gives ''
        folder = Path(os.path.abspath(str(directory).replace("\0", "?"))).name
        name = re.sub(r"[^a-z0-9-]+", "-", folder.lower()).strip("-")[:64].strip("-")
        if not name:
            raise _fail(f"cannot make a slug from the folder name {folder!r}; pass --slug")
    try:
        problem = import_minimalloc(directory, _dest(dest), name, capacity, frozenset(hidden or ()))
    except InputError as exc:
        raise _fail(str(exc)) from None
    _imported(problem)


@problem_app.command("import-torch")
def problem_import_torch(
    files: Annotated[list[Path], typer.Argument(help="snapshot pickles or profiler JSON traces")],
    slug: Annotated[str, typer.Option(help="package name")],
    capacity: Annotated[
        int | None, typer.Option(help="bytes; default: 25 % above each case's lower bound")
    ] = None,
    alignment: Annotated[int, typer.Option(help="bytes, every buffer")] = 512,
    dest: Dest = None,
    hidden: Annotated[list[str] | None, typer.Option(help="case name for the hidden split")] = None,
    type_: Annotated[
        str, typer.Option("--type", help="offset (the whole trace) | online (request by request)")
    ] = "offset",
) -> None:
    """Make an `offset` (or `--type online`) package from what PyTorch recorded: CUDA
    memory snapshots (`torch.cuda.memory._dump_snapshot`) or profiler Chrome traces
    (profile_memory=True), one case per file and device. Snapshots are read as data:
    nothing in them runs."""
    from judge.torch_import.online import import_torch_online
    from judge.torch_import.package import import_torch

    if type_ not in ("offset", "online"):
        raise _fail("--type must be offset or online")
    if not 1 <= alignment <= 2**30:
        raise _fail("--alignment must be from 1 to 2^30")
    importer = import_torch_online if type_ == "online" else import_torch
    try:
        problem, notes = importer(
            files, _dest(dest), slug, capacity, alignment, frozenset(hidden or ())
        )
    except InputError as exc:
        raise _fail(str(exc)) from None
    for note in notes:
        err.print(Text.assemble(("guessed", "yellow"), " ", note))
    _imported(problem)


def _dest(dest: Path | None) -> Path:
    """--dest, by default ./problems of the current directory: never the checkout's own
    problems/ (an import there would sit among the shipped packages, in git's way)."""
    return Path.cwd() / "problems" if dest is None else dest


def _imported(problem: Problem) -> None:
    out.print(f"imported {len(problem.cases)} cases into {problem.root}")
    _show_cases(problem)


@app.command("judge")
def judge_cmd(
    planner: Path,
    problem: Annotated[
        str, typer.Option(help="a package path, or a slug under ./problems or the checkout's")
    ],
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
    from judge.sandbox import default_sandbox_name

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
        p
        for p in (ROOT / "reference_solutions").iterdir()
        if p.name.endswith((".py", ".cpp", ".tar.gz"))
    )
    problems = [
        _load(str(p))
        for p in sorted((ROOT / "problems").iterdir())
        if (p / "problem.toml").is_file()
    ]
    columns = ("problem", "planner", "OK", "public", "hidden")
    summary = new_table("reference planners", columns, columns[:2])
    for prob in problems:
        for planner in _planners_for(prob, planners):
            report = _judge_with_progress(prob, planner, split, time_limit, quiet=False)
            ok = sum(r.verdict == Verdict.OK for r in report.results)
            data = report.as_dict()
            summary.add_row(
                prob.slug,
                planner.name,
                f"{ok}/{len(report.results)}",
                fmt(data["public_score"]),
                fmt(data["hidden_score"]),
            )
    show(summary, whole=(0, 1))


def _planners_for(prob: Problem, planners: list[Path]) -> list[Path]:
    """Planners named `<type>_*.py|cpp|tar.gz` are for that problem type; the rest for `offset`."""
    typed = [p for p in planners if p.name.startswith(f"{prob.type}_")]
    if prob.type != "offset":
        return typed
    return [p for p in planners if "_" not in p.name or p.name.split("_")[0] not in known_types()]


def _load(slug_or_path: str) -> Problem:
    """A package path, else a slug under ./problems (where imports and the starter kit
    put packages), else under the checkout's problems/ (the shipped ones)."""
    places = [Path(slug_or_path)]
    if slug_or_path and "/" not in slug_or_path and slug_or_path not in (".", ".."):
        places += [Path.cwd() / "problems" / slug_or_path, ROOT / "problems" / slug_or_path]
    path = next((p for p in places if (p / "problem.toml").is_file()), None)
    if path is None:
        looked = ", ".join(str(p) for p in dict.fromkeys(places))
        raise _fail(f"no problem package {slug_or_path!r}: no problem.toml in {looked}")
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
    from judge.pipeline import judge_planner
    from judge.sandbox import SandboxError

    total = len(prob.cases_in(split))
    with progress_bar(quiet) as bar:
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
        err.print(Text.assemble(("build error", "red"), "\n", report.build_error))
    data = report.as_dict()
    title = f"{report.planner} on {report.problem} ({report.sandbox} sandbox)"
    print_cases(title, data["cases"], data["public_score"], data["hidden_score"])
