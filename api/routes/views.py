"""What contestants and organizers look at beyond the board: the starter kit, the
per-case comparison, the score-history chart and the exports (API; the pages link here)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query
from fastapi.responses import Response

from api.access.deps import DB, Admin, Config, Contestant, ContestRef, Id, Viewer
from api.actions import contests, messages, problems, submissions
from api.errors import Forbidden
from api.reads import compare, exports, hidden, history
from judge.starterkit import starter_kit

router = APIRouter(prefix="/api/v1", tags=["views"])
Format = Annotated[Literal["csv", "json"], Query(description="csv or json")]
Slug = Annotated[str | None, Query(max_length=64, description="one problem; default: all")]
Score = Annotated[Literal["public_score", "hidden_score"], Query()]
EXPORT_ROWS = 100_000  # clarifications an export holds at most (newest first)
EXPORTS = {
    "standings": exports.STANDINGS,
    "results": exports.RESULTS,
    "audit": exports.AUDIT,
    "clarifications": messages.COLUMNS,
}


@router.get("/problems/{slug}/starter-kit", response_class=Response)
def get_starter_kit(
    slug: str, db: DB, settings: Config, viewer: Viewer, contest: ContestRef = None
) -> Response:
    """The contest's version's starter kit (zip): public cases, contract, templates, command."""
    chosen = contests.open_for(db, viewer, contest)
    package = problems.package_of(settings, problems.current_version(db, slug, chosen))
    name, data = starter_kit(package, settings.repository_url)
    return Response(data, media_type="application/zip", headers=_attachment(name))


@router.get("/submissions/{sub_id}/comparison")
def get_comparison(sub_id: Id, user: Contestant, db: DB) -> dict[str, Any]:
    """Per case: this submission's score, the best of any team and of the references,
    and the problem-score points to gain; public cases only before the reveal."""
    return compare.comparison(db, submissions.get_submission(db, sub_id, user), user)


@router.get("/problems/{slug}/history.svg", response_class=Response)
def get_history(
    slug: str, db: DB, viewer: Viewer, score: Score = "public_score", contest: ContestRef = None
) -> Response:
    """The best scores over time (top teams, the viewer's team, the references) as SVG."""
    chosen = contests.open_for(db, viewer, contest)
    if score == "hidden_score" and not hidden.hidden_visible(db, viewer, chosen):
        raise Forbidden("hidden scores show only after the reveal")
    svg = history.cached_svg(db, slug, viewer, score, chosen)
    return Response(svg, media_type="image/svg+xml", headers={"Cache-Control": "no-store"})


@router.get("/exports/mine", response_class=Response)
def export_mine(
    user: Contestant, db: DB, format: Format = "csv", contest: ContestRef = None
) -> Response:
    """Your team's judged submissions, case by case, as the API shows them to you
    (`contest`: that contest's only; absent, every contest's)."""
    chosen = contests.resolve(db, user, contest) if contest else None
    rows = exports.own_results(db, user, chosen)
    return _export(rows, exports.MINE, format, "my-results")


@router.get("/exports/clarifications", response_class=Response)
def export_clarifications(
    user: Contestant, db: DB, format: Format = "csv", contest: ContestRef = None
) -> Response:
    """The announcements and the questions you may read (your team's, those answered
    to all), as the API shows them to you, of the contest (absent: yours)."""
    chosen = contests.resolve(db, user, contest)
    rows = messages.visible(db, user, limit=EXPORT_ROWS, contest=chosen)
    return _export(rows, messages.COLUMNS, format, "clarifications")


@router.get("/admin/exports/{what}", response_class=Response)
def export_admin(
    what: Literal["standings", "results", "audit", "clarifications"],
    user: Admin,
    db: DB,
    format: Format = "csv",
    problem: Slug = None,
    contest: ContestRef = None,
) -> Response:
    """standings (every board, as organizers see it), results (each judged submission's
    per-case results), audit (the audit log, oldest first) or clarifications (every
    question with its team, every answer and announcement), of `contest` (absent: the
    current contest's standings and clarifications; every contest's results and audit)."""
    chosen = contests.resolve(db, user, contest) if contest else None
    if what == "clarifications":
        rows = messages.visible(db, user, limit=EXPORT_ROWS, contest=chosen)
        return _export(rows, messages.COLUMNS, format, what)
    if what == "standings":
        rows = exports.standings(db, user, problem, chosen)
    elif what == "results":
        rows = exports.results(db, problem, chosen)
    else:
        rows = exports.audit_log(db, chosen)
    return _export(rows, EXPORTS[what], format, what + (f"-{problem}" if problem else ""))


def _export(rows: list[dict[str, Any]], columns: tuple[str, ...], fmt: str, name: str) -> Response:
    if fmt == "csv":
        body, media = exports.as_csv(rows, columns), "text/csv; charset=utf-8"
    else:
        body, media = exports.as_json(rows, columns), "application/json"
    return Response(body, media_type=media, headers=_attachment(f"{name}.{fmt}"))


def _attachment(name: str) -> dict[str, str]:
    safe = "".join(c if c.isalnum() or c in "._-" else "_" for c in name)
    return {"Content-Disposition": f'attachment; filename="{safe}"', "Cache-Control": "no-store"}
