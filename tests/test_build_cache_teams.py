"""Builds are kept per team (judge.buildcache, worker.judging): a team that submits the
bytes another team built gets a build of its own, so the speed of its first result
tells it nothing of other teams' uploads; its own rejudge reuses its own build. On both
backends, with real workers."""

from __future__ import annotations

import json

import pytest

from benchmarks.hidden_channel import SLUG, channel_service
from tests.service import Service, wait_for

PLANNER = r"""// the same bytes from two teams
#include <cstdio>
#include <cstdlib>
#include <string>
int main() {
    std::string out = std::string(std::getenv("MEMORACE_OUT_DIR")) + "/plan.csv";
    FILE* f = std::fopen(out.c_str(), "w");
    std::fputs("id,offset\na,0\nb,8\nc,16\n", f);
    return std::fclose(f);
}
"""


@pytest.fixture(scope="module", params=["embedded", "postgres"])
def service(request, tmp_path_factory):
    with channel_service(tmp_path_factory.mktemp("teams"), request.param) as svc:
        yield svc


def reused(service: Service, judging: int) -> bool:
    lines = [json.loads(x) for x in service.log("w1").splitlines() if x.startswith("{")]
    return any(
        e.get("judging") == judging and "reused from the build cache" in e.get("message", "")
        for e in lines
    )


def test_no_team_gets_another_teams_build(service: Service) -> None:
    path = service.data_dir.parent / "planner.cpp"
    path.write_text(PLANNER)
    judgings = {}
    for team in ("red", "blue"):
        token = service.add_team(team, f"{team}-user")
        sub = service.submit(token, SLUG, path)
        body = service.wait_done(token, sub["id"])
        assert body["status"] == "done" and body["public_score"] is not None, body
        judgings[team] = (sub["id"], body["judging_id"])
    assert not reused(service, judgings["red"][1])
    assert not reused(service, judgings["blue"][1]), "blue was served red's build"
    rejudge = service.api("POST", "/api/v1/admin/rejudge",
                          json={"submission_id": judgings["blue"][0]})  # fmt: skip
    assert rejudge.status_code == 202, rejudge.text
    again = rejudge.json()["judgings"][0]

    def final() -> bool:
        return (
            service.api("GET", f"/api/v1/submissions/{judgings['blue'][0]}").json()["judging_id"]
            == again
        )

    wait_for(final, 120, "the rejudge")
    wait_for(lambda: reused(service, again), 10, "the rejudge's log line")
