"""The local sandbox fails closed, and no planner reaches the network (issue 34, item 1).

The host without user namespaces is simulated honestly: a `bwrap` early on PATH that
prints bubblewrap's own error and exits 1, as it does in a container or on a kernel
that does not allow unprivileged user namespaces. With it:
- a worker (a real Celery process) refuses to start: non-zero exit, one line saying
  why and what to install; scripts/serve says so and stops instead of restarting it;
- with MEMORACE_ALLOW_UNISOLATED=1 (development) it judges, loudly (each judging's log,
  /healthz, the admin page), and its planners still cannot connect to 127.0.0.1;
- a non-root judge cannot take the network away, so it refuses even then.
A planner that tries Redis and PostgreSQL on 127.0.0.1 cannot connect in the local
sandbox with bubblewrap, in the development mode, nor in the docker sandbox.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from api.service_urls import with_password
from judge.package import load_problem
from judge.pipeline import judge_planner
from judge.sandbox.docker import container_spec
from judge.sandbox.local_isolation import UNISOLATED, bwrap_works, one_line
from judge.verdict import Verdict
from tests.conftest import ROOT
from tests.service import VENV_BIN, small_package, start_service
from tests.test_compose_stack import compose_config
from tests.test_package import make_package
from tests.test_sandbox import SANDBOXES
from tests.test_service_e2e import backends

BWRAP_ERROR = (
    "bwrap: No permissions to creating new namespace, likely because the kernel does not "
    "allow non-privileged user namespaces. On e.g. debian this can be enabled with "
    "'sysctl kernel.unprivileged_userns_clone=1'."
)
WORKER = [str(VENV_BIN / "celery"), "-A", "worker.celery_app", "worker", "-c", "1",
          "--loglevel", "INFO"]  # fmt: skip
SERVICE_PORTS = (6379, 5432)  # the test host's Redis and PostgreSQL
UNREACHABLE = re.compile(r"127\.0\.0\.1:\d+ unreachable: ")


@pytest.fixture(scope="module")
def no_namespaces() -> Iterator[str]:
    """A PATH whose `bwrap` fails as bubblewrap fails without user namespaces (in a
    folder every user may read: the probe runs it as `nobody`)."""
    folder = Path(tempfile.mkdtemp(prefix="memorace-fake-bwrap-"))
    folder.chmod(0o755)
    fake = folder / "bwrap"
    fake.write_text(f'#!/bin/sh\necho "{BWRAP_ERROR}" >&2\nexit 1\n')
    fake.chmod(0o755)
    try:
        yield f"{folder}:{os.environ['PATH']}"
    finally:
        shutil.rmtree(folder)


def probe_source(ports: tuple[int, ...], then: str) -> str:
    """A planner that tries each port of 127.0.0.1, says what happened, exits 42 if one
    answered, else runs `then` (a planner's source)."""
    return (
        "import socket, sys\n"
        f"for port in {sorted(set(ports))!r}:\n"
        "    try:\n"
        "        socket.create_connection(('127.0.0.1', port), timeout=3).close()\n"
        "        print('CONNECTED to 127.0.0.1:%d' % port); sys.exit(42)\n"
        "    except OSError as exc:\n"
        "        print('127.0.0.1:%d unreachable: %s' % (port, exc))\n" + then
    )


def _host_answers(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
        return True
    except OSError:
        return False


def _one_refusal(out: str) -> str:
    lines = [line for line in out.splitlines() if "refuses to start" in line]
    assert len(lines) == 1, out[-3000:]
    return lines[0]


# --- the worker refuses ----------------------------------------------------------------
@pytest.mark.parametrize("kind", ["embedded", "postgres+redis"])
def test_a_worker_without_namespaces_refuses_to_start(tmp_path, no_namespaces, kind):
    """Checked in worker_init, before Celery connects to its broker or the schema is
    migrated: the same on both backends (both are run to show it)."""
    with backends(kind) as (db_url, broker_url):
        env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORACE_")}
        env |= {"PATH": no_namespaces, "MEMORACE_SANDBOX": "local", "PYTHONUNBUFFERED": "1",
                "MEMORACE_DATA_DIR": str(tmp_path / "data"),
                **({"MEMORACE_DATABASE_URL": db_url, "MEMORACE_BROKER_URL": broker_url}
                   if db_url and broker_url else {})}  # fmt: skip
        proc = subprocess.run(
            WORKER, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False
        )
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and " ready." not in out, out[-3000:]
    line = _one_refusal(out)
    assert "No permissions to creating new namespace" in line
    assert "apt-get install bubblewrap" in line and "MEMORACE_ALLOW_UNISOLATED=1" in line


def test_a_bubblewrap_that_leaves_the_network_is_caught():
    """The probe makes its sandbox as a run does (/proc, /dev, read-only root) and checks
    that only loopback is left: a bubblewrap that shares the host's network (here the
    real one, told --share-net) does not pass for an isolating one."""
    real = shutil.which("bwrap")
    if real is None:
        pytest.skip("needs bubblewrap")  # the refusal without it is tested above
    folder = Path(tempfile.mkdtemp(prefix="memorace-net-bwrap-"))  # `nobody` runs it
    folder.chmod(0o755)
    # --share-net after the probe's first option, --unshare-all (the later one counts)
    wrapper = f'#!/bin/sh\nfirst=$1; shift\nexec {real} "$first" --share-net "$@"\n'
    (folder / "bwrap").write_text(wrapper)
    (folder / "bwrap").chmod(0o755)
    code = "from judge.sandbox.local_isolation import bwrap_problem; print(bwrap_problem())"
    env = {**os.environ, "PATH": f"{folder}:{os.environ['PATH']}"}
    try:
        said = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, text=True,
                              capture_output=True, timeout=120, check=True).stdout  # fmt: skip
    finally:
        shutil.rmtree(folder)
    assert "still has a network interface" in said, said
    plain = subprocess.run([sys.executable, "-c", code], cwd=ROOT, text=True,
                           capture_output=True, timeout=120, check=True).stdout  # fmt: skip
    assert plain.strip() == "", plain


def test_a_non_root_worker_refuses_even_in_development_mode(no_namespaces):
    """Without root there is no network namespace to give: no setting allows it. The
    check itself runs as `nobody` (this interpreter lies where `nobody` cannot read)."""
    if os.geteuid() != 0:
        pytest.skip("needs root to become another user")
    script = (
        "import os, sys\n"
        "from judge.sandbox.local_isolation import worker_refusal\n"
        "os.setgroups([]); os.setgid(65534); os.setuid(65534)\n"
        "why = worker_refusal(allow_unisolated=True)\n"
        "print(f'the worker refuses to start: {why}' if why else 'allowed', file=sys.stderr)\n"
    )
    env = os.environ | {"PATH": no_namespaces}
    proc = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True,
        timeout=120, check=False,
    )  # fmt: skip
    line = _one_refusal(proc.stderr)
    assert "does not run as root" in line and "even MEMORACE_ALLOW_UNISOLATED=1" in line
    assert "No permissions to creating new namespace" in line


def test_serve_says_why_and_stops(tmp_path, no_namespaces):
    """scripts/serve (make run) checks before it starts anything: no loop of restarts."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORACE_")}
    env |= {"PATH": no_namespaces, "MEMORACE_SANDBOX": "local", "VENV": str(VENV_BIN.parent),
            "MEMORACE_DATA_DIR": str(tmp_path / "data"), "PORT": "1"}  # fmt: skip
    proc = subprocess.run(
        [str(ROOT / "scripts" / "serve")], cwd=ROOT, env=env, capture_output=True, text=True,
        timeout=120, check=False,
    )  # fmt: skip
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "No permissions to creating new namespace" in _one_refusal(proc.stderr)
    assert "scripts/serve: not started" in proc.stderr
    assert not (tmp_path / "data" / "admin.token").exists()  # nothing was started


# --- no network in any mode -----------------------------------------------------------
@pytest.fixture(scope="module")
def problem(tmp_path_factory):
    return load_problem(make_package(tmp_path_factory.mktemp("pkg")))


PLAN = (
    "import os\nopen(os.path.join(os.environ['MEMORACE_OUT_DIR'], 'plan.csv'), 'w')"
    ".write('id,offset\\na,0\\nb,8\\n')\n"
)


@pytest.mark.parametrize("sandbox", SANDBOXES)
def test_a_planner_cannot_reach_redis_or_postgres(problem, tmp_path, sandbox):
    """(a) the local sandbox with bubblewrap, (c) the docker sandbox (network none)."""
    assert all(map(_host_answers, SERVICE_PORTS)), "Redis and PostgreSQL must listen here"
    if sandbox == "local" and not bwrap_works():
        pytest.fail("the local sandbox needs bubblewrap here")
    source = tmp_path / "probe.py"
    source.write_text(probe_source(SERVICE_PORTS, PLAN))
    report = judge_planner(problem, source, split="public", time_limit_s=20, sandbox=sandbox)
    for result in report.results:
        assert result.verdict == Verdict.OK, result.log
        assert len(UNREACHABLE.findall(result.log)) == len(SERVICE_PORTS), result.log
    if sandbox == "docker":
        spec = container_spec(tmp_path, tmp_path, problem.limits, None)
        assert spec["network_mode"] == "none"


def test_the_development_mode_has_no_network_either(problem, tmp_path, no_namespaces):
    """(b) the judge alone (the offline CLI's path) as root without bubblewrap: the
    planner's own network namespace; the session warns."""
    if os.geteuid() != 0:
        pytest.skip("a non-root judge without bubblewrap has no network namespace to give")
    source = tmp_path / "probe.py"
    source.write_text(probe_source(SERVICE_PORTS, PLAN))
    script = (
        "import sys; from pathlib import Path\n"
        "from judge.package import load_problem\nfrom judge.pipeline import judge_planner\n"
        "r = judge_planner(load_problem(Path(sys.argv[1])), Path(sys.argv[2]),"
        " split='public', time_limit_s=20, sandbox='local')\n"
        "for x in r.results: print('VERDICT', x.verdict, x.log)\n"
    )
    env = os.environ | {"PATH": no_namespaces}
    proc = subprocess.run(
        [sys.executable, "-c", script, str(problem.root), str(source)], cwd=ROOT, env=env,
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    assert out.count("VERDICT OK") == 1 and "CONNECTED" not in out, out[-3000:]
    assert len(UNREACHABLE.findall(out)) == len(SERVICE_PORTS), out[-3000:]
    assert "local sandbox UNISOLATED" in out  # the session's warning


@pytest.mark.parametrize("kind", ["embedded", "postgres+redis"])
def test_development_mode_judges_loudly_and_offline(tmp_path, no_namespaces, kind):
    """A worker with MEMORACE_ALLOW_UNISOLATED=1 on a host without namespaces starts,
    says so at start and in each judging, shows as `local UNISOLATED` to organizers,
    and its planners reach neither the service's Redis and PostgreSQL nor the test's."""
    if os.geteuid() != 0:
        pytest.skip("a non-root worker refuses here (test above)")
    naive = (ROOT / "reference_solutions" / "naive.py").read_text()
    with backends(kind) as (db_url, broker_url):
        ports = [*SERVICE_PORTS, *(urlsplit(u).port for u in (db_url, broker_url) if u)]
        planners = [tmp_path / f"probe{i}.py" for i in range(2)]  # two judgings
        for i, planner in enumerate(planners):
            planner.write_text(f"# {i}\n" + probe_source(tuple(p for p in ports if p), naive))
        dev = {"PATH": no_namespaces, "MEMORACE_ALLOW_UNISOLATED": "1"}
        service = start_service(
            tmp_path, [small_package(tmp_path, public=2, hidden=1)], database_url=db_url,
            broker_url=broker_url, sandbox="local", extra_env=dev, workers=("w1",),
        )  # fmt: skip
        try:
            token = service.add_team("red", "alice")
            subs = [service.submit(token, "mini-gpt2", p)["id"] for p in planners]
            for sub in subs:
                done = service.wait_done(token, sub, 240)
                assert {r["verdict"] for r in done["results"]} == {"OK"}, done["results"]
                for r in done["results"]:
                    if r["split"] == "public":
                        assert "CONNECTED" not in r["log"] and "unreachable" in r["log"]
            health = service.api("GET", "/healthz").json()["workers"]
            assert [w["sandbox"] for w in health["list"]] == [UNISOLATED], health
            assert "UNISOLATED" in health["warning"]
            assert UNISOLATED in service.api("GET", "/admin").text
        finally:
            service.stop()
        log = service.log("w1")
    assert "worker judges with the local sandbox UNISOLATED" in log
    # One warning per judging (each judging opens one sandbox session).
    assert len(re.findall(r"local sandbox UNISOLATED \(development only", log)) >= 2, log


# --- outside input: bubblewrap's error, the passwords ------------------------------------
@settings(max_examples=300, deadline=None)
@given(st.text(), st.integers(min_value=4, max_value=400))
def test_any_tool_error_becomes_one_bounded_printable_line(text, limit):
    line = one_line(text, limit)
    assert len(line) <= limit and line.isprintable() and "\n" not in line
    assert line == line.strip()


@settings(max_examples=300, deadline=None)
@given(st.text(min_size=1), st.sampled_from(["postgresql", "redis"]))
def test_any_password_survives_the_url(password, kind):
    from kombu.utils.url import url_to_parts
    from redis.connection import parse_url
    from sqlalchemy.engine import make_url

    if kind == "postgresql":
        url = with_password("postgresql+psycopg://memorace@postgres:5432/memorace", password, kind)
        parsed = make_url(url)
        assert (parsed.password, parsed.username, parsed.host) == (password, "memorace", "postgres")
    else:
        url = with_password("redis://redis:6379/0", password, kind)
        assert parse_url(url)["password"] == password
        assert url_to_parts(url).password == password and url_to_parts(url).hostname == "redis"


@given(st.text(), st.text(min_size=1))
def test_urls_of_other_kinds_or_with_a_password_are_left_alone(url, password):
    kept = ["filesystem://", "sqlite:///x/db.sqlite", "redis://:own@redis:6379/0", url]
    for given_url in kept[:3]:
        assert with_password(given_url, password, "redis") == given_url
        assert with_password(given_url, password, "postgresql") == given_url
    with_password(url, password, "redis")  # anything: an answer, never an exception


# --- the compose stack's passwords --------------------------------------------------------
PASSWORDS = {"MEMORACE_POSTGRES_PASSWORD": "pg-secret", "MEMORACE_REDIS_PASSWORD": "redis-secret"}


def test_compose_refuses_to_start_without_passwords():
    unset = {"MEMORACE_POSTGRES_PASSWORD": "", "MEMORACE_REDIS_PASSWORD": ""}
    said = compose_config(ROOT / "docker-compose.yml", extra_env=unset, ok=False)
    assert "MEMORACE_POSTGRES_PASSWORD" in said or "MEMORACE_REDIS_PASSWORD" in said


def test_compose_services_use_the_passwords():
    services = compose_config(ROOT / "docker-compose.yml", extra_env=PASSWORDS)
    assert services["postgres"]["environment"]["POSTGRES_PASSWORD"] == "pg-secret"
    redis_cmd = " ".join(services["redis"]["command"])
    assert "--requirepass" in redis_cmd and "redis-secret" not in redis_cmd  # not in `ps`
    assert services["redis"]["environment"]["MEMORACE_REDIS_PASSWORD"] == "redis-secret"
    for name in ("api", "worker", "beat"):
        env = services[name]["environment"]
        assert env["MEMORACE_POSTGRES_PASSWORD"] == "pg-secret", name
        assert env["MEMORACE_REDIS_PASSWORD"] == "redis-secret", name
    shared = compose_config(
        ROOT / "docker-compose.yml", ROOT / "docker-compose.shared.yml",
        extra_env=PASSWORDS | {"MEMORACE_SHARED_ADDR": "10.0.0.1"},
    )  # fmt: skip
    assert "--requirepass" in " ".join(shared["redis"]["command"])
