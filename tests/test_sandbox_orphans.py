"""A sandbox container is an orphan once the judge process that made it is gone, even if
its pid now names another process (judge.sandbox.docker.remove_orphans): a worker
container restarted under its hostname gets its old pids back, and before, a killed
judge's containers (a planner may still run in one) stayed while the new process of
that pid lived. The owner labels carry the process's start time too."""

from __future__ import annotations

import contextlib
import os

import pytest

from judge.sandbox import base
from judge.sandbox.docker import (
    IMAGE,
    OWNER_STARTED_LABEL,
    _client,
    owner_labels,
    remove_orphans,
)
from tests.conftest import IN_CI
from tests.test_sandbox import docker_ready

pytestmark = pytest.mark.skipif(bool(docker_ready()) and not IN_CI, reason=docker_ready())


def test_the_start_time_tells_a_reused_pid() -> None:
    mine = base.process_started(os.getpid())
    assert mine and base.process_alive(os.getpid(), mine)
    assert not base.process_alive(os.getpid(), str(int(mine) - 1))  # an earlier process
    assert base.process_alive(os.getpid())  # a container labelled before the start time


def test_a_container_of_an_earlier_process_with_this_pid_is_removed() -> None:
    client = _client()
    earlier = {**owner_labels(), OWNER_STARTED_LABEL: "1"}  # this pid, another process
    ours = client.containers.create(IMAGE, ["true"], labels=owner_labels())
    orphan = client.containers.create(IMAGE, ["true"], labels=earlier)
    try:
        assert remove_orphans() >= 1
        left = {c.id for c in client.containers.list(all=True, filters={"id": orphan.id})}
        assert orphan.id not in left
        ours.reload()  # still there: its process (this one) lives
    finally:
        for container in (ours, orphan):
            with contextlib.suppress(Exception):  # removed already
                container.remove(force=True)
