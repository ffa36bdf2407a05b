"""The barrier between a judging's public and hidden cases (worker.cases), claim by
claim on the embedded backend: no hidden case is taken while a public one runs; a
helper waits for the public cases' end only while hidden cases are left over for it
(more than the processes running public cases take next), and not for a public case
abandoned past the owner's take-over (its owner is gone: the reaper's)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from api.db.models import CaseRun, utcnow
from api.db.session import session_scope
from judge.package import CaseSpec
from tests.test_build_blobs import bootstrapped, judging
from worker.cases import WAIT, CaseClaims


@pytest.fixture
def settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    env = {"MEMORACE_HEARTBEAT_TIMEOUT_S": "60"}
    with bootstrapped(tmp_path, monkeypatch, env) as config:
        yield config


def specs(public: int, hidden: int) -> list[CaseSpec]:
    made = [CaseSpec(f"p{k}", "public", 16, 1.0, Path("-")) for k in range(public)]
    return made + [CaseSpec(f"h{k}", "hidden", 16, 1.0, Path("-")) for k in range(hidden)]


def running(settings, public_beat_age_s: float, public: int = 1) -> int:
    """A running judging whose public cases all run elsewhere, beating that long ago."""
    beat = utcnow() - timedelta(seconds=public_beat_age_s)
    with session_scope(settings.database_url) as db:
        jid = judging(db, "running", None)
        for k in range(public):
            db.add(CaseRun(judging_id=jid, attempt=0, case=f"p{k}", worker="other:1#a",
                           status="running", started_at=beat, heartbeat_at=beat))  # fmt: skip
    return jid


def answer(settings, jid: int, cases: list[CaseSpec], owner: bool = False) -> str | None:
    claims = CaseClaims(settings, jid, 0, "me:2#b", owner=owner)
    return claims._next([c.name for c in cases], {c.name for c in cases if c.split == "public"})


def test_no_hidden_case_while_a_public_one_runs(settings):
    jid = running(settings, 0)
    assert answer(settings, jid, specs(1, 3)) == WAIT  # three hidden left: one is its
    assert answer(settings, jid, specs(1, 3), owner=True) == WAIT


def test_a_helper_leaves_when_no_hidden_case_is_left_over_for_it(settings):
    jid = running(settings, 0, public=2)
    assert answer(settings, jid, specs(2, 2)) is None  # the two public runners take both
    assert answer(settings, jid, specs(2, 3)) == WAIT


def test_a_helper_does_not_wait_for_an_abandoned_public_case(settings):
    assert answer(settings, running(settings, 90), specs(1, 3)) == WAIT  # the owner's to take
    assert answer(settings, running(settings, 150), specs(1, 3)) is None  # owner gone too


def test_the_hidden_cases_start_once_the_public_ones_are_done(settings):
    jid = running(settings, 0)
    with session_scope(settings.database_url) as db:
        db.query(CaseRun).filter(CaseRun.judging_id == jid).update({"status": "done"})
    assert answer(settings, jid, specs(1, 3)) == "h0"
