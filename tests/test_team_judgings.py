"""One team's judgings run one at a time (MEMORACE_JUDGINGS_PER_TEAM, 1 by default:
worker.judging): a hidden case of one submission never runs beside a public case of the
same team's other submission, where it could slow it on a shared host (cache, memory
bandwidth) and the public case's time, or a plan its planner made of its own clock,
would show what the hidden case holds. Another team is not held back, the waiting
submission says why, and the wait is not taken for a lost queue message. Both backends,
two worker slots, one slot per judging (no helpers)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from sqlalchemy import bindparam, create_engine, text
from sqlalchemy.pool import NullPool

from tests.service import start_service, wait_for
from tests.test_package import CASE, make_package
from tests.test_service_e2e import backends, sandbox_for_tests

PLANNER = textwrap.dedent(
    """
    import os, time
    time.sleep(2.0)
    open(os.path.join(os.environ['MEMORACE_OUT_DIR'], 'plan.csv'), 'w').write(
        'id,offset\\na,0\\nb,8\\n')
    # variant {variant}
    """
)


def two_splits(root: Path) -> Path:
    toml = ['slug = "tiny"', 'name = "Two"', 'type = "offset"', "version = 1", "",
            "[limits]", "time_limit_s = 20.0", "memory_limit_mb = 512", "",
            "[[cases]]", 'name = "p1"', 'split = "public"', "capacity = 16", "",
            "[[cases]]", 'name = "h1"', 'split = "hidden"', "capacity = 16", ""]  # fmt: skip
    return make_package(root, "\n".join(toml), {"public/p1": CASE, "hidden/h1": CASE})


@pytest.fixture(params=["embedded", "postgres+redis"])
def stack(request, tmp_path):
    with backends(request.param) as (db_url, broker_url):
        service = start_service(
            tmp_path, [two_splits(tmp_path / "pkg")], database_url=db_url,
            broker_url=broker_url, sandbox=sandbox_for_tests(),
            extra_env={"MEMORACE_CASE_HELPERS": "0"},
        )  # fmt: skip
        try:
            yield service, db_url or f"sqlite:///{service.data_dir}/db.sqlite"
        finally:
            service.stop(warm=False)


def spans(db_url: str, sub_ids: list[int]) -> dict[int, tuple]:
    """{submission: (started_at, finished_at, reason)} of its judging."""
    with create_engine(db_url, poolclass=NullPool).connect() as conn:
        rows = conn.execute(
            text("SELECT submission_id, started_at, finished_at, reason FROM judgings "
                 "WHERE submission_id IN :ids").bindparams(bindparam("ids", expanding=True)),
            {"ids": sub_ids},
        )  # fmt: skip
        return {r[0]: tuple(r[1:]) for r in rows}


def test_a_teams_judgings_wait_for_each_other_and_no_one_else(stack, tmp_path):
    service, db_url = stack
    red, blue = service.add_team("red", "alice"), service.add_team("blue", "bob")
    planners = []
    for k in range(3):
        planners.append(tmp_path / f"p{k}.py")
        planners[-1].write_text(PLANNER.format(variant=k))
    service.start_worker("w1")
    first = service.submit(red, "tiny", planners[0])["id"]
    wait_for(lambda: service.api("GET", f"/api/v1/submissions/{first}", red).json()["status"]
             == "running", 60, "red's first judging to start")  # fmt: skip
    second = service.submit(red, "tiny", planners[1])["id"]
    service.start_worker("w2", beat=False)  # a free slot: still red's second waits

    def told() -> str | None:
        detail = service.api("GET", f"/api/v1/submissions/{second}", red).json()["status_detail"]
        return detail if f"waits for your team's submission {first}" in detail else None

    wait_for(told, 60, "red's second submission to say why it waits")
    other = service.submit(blue, "tiny", planners[2])["id"]  # blue runs beside red
    for token, sub_id in ((red, first), (red, second), (blue, other)):
        done = service.wait_done(token, sub_id, timeout=180)
        assert done["status"] == "done", done["status_detail"]
        assert {r["verdict"] for r in done["results"]} == {"OK"}
    got = spans(db_url, [first, second, other])
    assert got[second][0] >= got[first][1], got  # red's second began after its first ended
    assert got[other][0] < max(got[first][1], got[second][1]), got  # blue did not wait
    assert not any("re-sent" in (r[2] or "") for r in got.values()), got
