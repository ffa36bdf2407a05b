"""The `docker` sandbox: one locked-down container per submission per judging.

The container (no network, read-only root, all capabilities dropped,
no-new-privileges, memory/pids/CPU limits, size-capped tmpfs for /tmp, /out,
/work and /built) idles as root while each build and case runs in it through
`docker exec` as the unprivileged `planner` user. After the build, root copies
/work to /built, where the planner user cannot write, and every case starts
from it: the supervisor empties every place that user can write and restores
/work from /built first, so nothing one case leaves reaches the next. One exec per judging starts
the supervisor (`agent.py`) that runs every build and case on request, so a
case costs no engine round trip; it enforces the wall limit, then kills every
process of the planner user (which cannot reach the idle root process). The
judge keeps its own deadline: a supervisor that the planner killed or stopped
is replaced and that case fails.
"""

from __future__ import annotations

import io
import os
import signal
import socket
import tarfile
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from functools import cache
from pathlib import Path
from typing import Any

from judge.package import Limits
from judge.sandbox import base, docker_builds
from judge.sandbox.base import OUTPUT_LIMIT_BYTES, RunOutcome, SandboxError, tail
from judge.sandbox.cores import docker_cpuset
from judge.sandbox.dialog import CLOSED, LOST, Talk
from judge.sandbox.docker_agent import HELLO, PLANNER_USER, Agent, AgentLost

IMAGE = os.environ.get("MEMORACE_RUNNER_IMAGE") or "memorace/runner:latest"
SEAL_TIMEOUT_S = 60.0
PIDS_LIMIT = 256
TMPFS = {
    "/tmp": f"rw,exec,nosuid,nodev,size={OUTPUT_LIMIT_BYTES},mode=1777",
    "/out": f"rw,noexec,nosuid,nodev,size={OUTPUT_LIMIT_BYTES},mode=1777",
    "/work": "rw,exec,nosuid,nodev,size=512m,uid=10001,gid=10001,mode=0755",
    "/built": "rw,noexec,nosuid,nodev,size=512m,mode=0755",  # root's copy of /work after the build
}
LABEL = "memorace.sandbox"
OWNER_LABEL = "memorace.owner"  # host:pid of the judge process that made it
OWNER_STARTED_LABEL = "memorace.owner_started"  # and when that process started


@cache
def _client() -> Any:
    import docker  # the SDK is imported only where a docker sandbox is used

    return docker.from_env(timeout=60)


def engine_available() -> bool:
    try:
        return bool(_client().ping())
    except Exception:  # no SDK, no socket, no daemon: all mean "not available"
        return False


def owner_labels() -> dict[str, str]:
    """A sandbox container's labels: ours, and which process of which host made it."""
    started = base.process_started(os.getpid()) or ""
    owner = f"{socket.gethostname()}:{os.getpid()}"
    return {LABEL: "1", OWNER_LABEL: owner, OWNER_STARTED_LABEL: started}


def remove_orphans() -> int:
    """Remove sandbox containers whose judge process (on this host) is gone: a judge
    killed with SIGKILL could not remove its own."""
    host, removed = socket.gethostname(), 0
    for container in _client().containers.list(all=True, filters={"label": LABEL}):
        owner_host, _, pid = container.labels.get(OWNER_LABEL, "").rpartition(":")
        started = container.labels.get(OWNER_STARTED_LABEL)
        if owner_host != host or not pid.isdigit() or base.process_alive(int(pid), started):
            continue
        with suppress(Exception):
            container.remove(force=True)
            removed += 1
    return removed


PROBE_FILE = "memorace-probe"
VISIBLE_HINT = (
    "the Docker engine resolves bind mounts on its own host, so the worker's scratch "
    "folder (TMPDIR) must be the same path inside the worker and on the engine's host "
    "(in docker-compose.yml: mount it at the same path, e.g. /var/lib/memorace:/var/lib/memorace)"
)


def check_bind_mounts(path: Path) -> None:
    """Raise SandboxError unless a sandbox container sees, through a bind mount, what
    this process writes under `path`: a probe container (the runner image, no network,
    the planner's user, a read-only bind mount like the sandbox's) reads back a random
    token from a fresh folder. A worker whose scratch folder the engine cannot see at
    the same path would judge every submission against empty folders."""
    import secrets
    import shutil
    import tempfile

    if not engine_available():
        raise SandboxError("no Docker engine answers (is dockerd running?)")
    token = secrets.token_hex(16)
    folder = Path(tempfile.mkdtemp(prefix="memorace-probe-", dir=path))
    try:
        folder.chmod(0o755)  # the planner's user reads it, as it reads a submission
        (folder / PROBE_FILE).write_text(token)
        (folder / PROBE_FILE).chmod(0o644)
        seen = _probe_sees(folder, token)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    if seen is not None:
        raise SandboxError(
            f"a sandbox container does not see the scratch folder {path}: where this worker "
            f"wrote a token it finds {seen or 'an empty folder'}; {VISIBLE_HINT}"
        )


def _probe_sees(folder: Path, token: str) -> str | None:
    """None when a sandbox-like container with `folder` on /probe reads `token` there,
    else what it lists there. Told by the exit status: a short-lived container's last
    output line can be lost by the engine's log driver."""
    import docker.errors

    check = f'[ "$(cat /probe/{PROBE_FILE} 2>/dev/null)" = "{token}" ] && exit 0'
    try:
        _client().containers.run(
            IMAGE,
            ["sh", "-c", f"{check}; ls -A /probe >&2; exit 3"],
            user=PLANNER_USER,
            network_mode="none",
            read_only=True,
            cap_drop=["ALL"],
            security_opt=["no-new-privileges"],
            volumes={str(folder): {"bind": "/probe", "mode": "ro"}},
            labels=owner_labels(),
            remove=True,
        )
    except docker.errors.ContainerError as exc:
        if exc.exit_status == 3:
            listed = (exc.stderr or b"").decode("utf-8", "replace").split()
            return ", ".join(listed[:5]) or ""
        raise SandboxError(f"the bind-mount probe container failed ({IMAGE}): {exc}") from exc
    except Exception as exc:  # no image, an engine error: no sandbox could run either
        raise SandboxError(f"the bind-mount probe container failed ({IMAGE}): {exc}") from exc
    return None


def container_spec(
    case_dir: Path, submission_root: Path, limits: Limits, gpu_slot: int | None
) -> dict[str, Any]:
    """Keyword arguments for `containers.create`: every isolation setting in one place."""
    spec: dict[str, Any] = {
        "image": IMAGE,
        "command": ["sleep", "infinity"],
        "user": "0",  # the idle process; planners run as PLANNER_USER via exec
        "init": True,  # reaps orphans so they do not pile up against the pids limit
        "network_mode": "none",
        "read_only": True,
        "cap_drop": ["ALL"],
        "security_opt": ["no-new-privileges"],
        "mem_limit": f"{limits.memory_limit_mb}m",
        "memswap_limit": f"{limits.memory_limit_mb}m",  # no swap
        "pids_limit": PIDS_LIMIT,
        "nano_cpus": int(limits.cpus * 1e9),
        "tmpfs": dict(TMPFS),
        "volumes": {
            str(case_dir): {"bind": "/case", "mode": "ro"},
            str(submission_root): {"bind": "/submission", "mode": "ro"},
        },
        "environment": {"MEMORACE_CASE_DIR": "/case", "MEMORACE_OUT_DIR": "/out"},
        "labels": owner_labels(),
        "detach": True,
    }
    if cpuset := docker_cpuset():  # the worker slot's own cores (judge.sandbox.cores)
        spec["cpuset_cpus"] = cpuset
    if limits.gpus > 0:
        from docker.types import DeviceRequest

        slot = 0 if gpu_slot is None else gpu_slot
        spec["device_requests"] = [DeviceRequest(device_ids=[str(slot)], capabilities=[["gpu"]])]
    return spec


class DockerSandbox:
    name = "docker"

    @contextmanager
    def session(
        self,
        submission_root: Path,
        build: list[str] | None,
        run: list[str],
        limits: Limits,
        gpu_slot: int | None = None,
    ) -> Iterator[DockerSession]:
        if not engine_available():
            raise SandboxError("no Docker engine answers (is dockerd running?)")
        host = submission_root.parent / "docker-host"
        (host / "case").mkdir(parents=True)
        (host / "out").mkdir()
        os.chmod(host / "case", 0o755)
        spec = container_spec(host / "case", submission_root, limits, gpu_slot)
        try:
            container = _client().containers.create(**spec)
        except Exception as exc:
            raise SandboxError(f"cannot create the sandbox container: {exc}") from exc
        session = DockerSession(container, host, build, run, limits)
        try:
            try:
                container.start()
            except Exception as exc:
                raise SandboxError(f"cannot start the sandbox container: {exc}") from exc
            session.prepare(submission_root)
            yield session
        finally:
            session.close()
            with suppress(Exception):  # always gone, also on KeyboardInterrupt
                container.remove(force=True)


class DockerSession:
    def __init__(
        self, container: Any, host: Path, build: list[str] | None, run: list[str], limits: Limits
    ):
        self.container, self.build_cmd, self.run_cmd, self.limits = container, build, run, limits
        self.case_dir, self.out_dir = host / "case", host / "out"
        self.oom_kills = 0
        self.agent: Agent | None = None
        self.sealed = False

    def prepare(self, submission_root: Path) -> None:
        self._check_mounts(submission_root)
        code, out = self.container.exec_run(
            ["sh", "-c", "cp -R /submission/. /work/"], user=PLANNER_USER
        )
        if code != 0:
            raise SandboxError(f"cannot copy the submission into the sandbox: {out[-500:]!r}")
        self._start_agent()

    def _check_mounts(self, submission_root: Path) -> None:
        """The container must see the submission's files and the case folder as the
        judge wrote them; else the build would fail on missing files and the contestant
        would be blamed for our set-up (a SandboxError is a JUDGE_ERROR, retried)."""
        marker = self.case_dir / PROBE_FILE
        marker.write_text("case")
        script = (
            f"cat /case/{PROBE_FILE} 2>/dev/null; printf '\\0'; "
            "cd /submission && find . -type f -print0 2>/dev/null"
        )
        try:
            _, out = self.container.exec_run(["sh", "-c", script], user=PLANNER_USER)
        finally:
            marker.unlink()
        case, _, listing = out.partition(b"\0")
        expected = {
            b"./" + os.fsencode(p.relative_to(submission_root))
            for p in submission_root.rglob("*")
            if p.is_file() and not p.is_symlink()
        }
        seen = set(listing.split(b"\0")) - {b""}
        if case != b"case" or not expected <= seen:
            raise SandboxError(
                f"the sandbox does not see the judge's files ({len(expected & seen)} of "
                f"{len(expected)} submission files, case folder "
                f"{'visible' if case == b'case' else 'empty'}); {VISIBLE_HINT}"
            )

    def close(self) -> None:
        if self.agent:
            self.agent.close()

    def build(self, timeout_s: float) -> RunOutcome | None:
        built = self._run(self.build_cmd, timeout_s) if self.build_cmd else None
        if built is not None and (built.timed_out or built.exit_code != 0):
            return built
        why = self._seal()
        if why and built is None:  # the submission's own files: our failure
            raise SandboxError(why)
        if why:  # e.g. paths too long to copy: what the build made
            return RunOutcome(1, built.time_s, log=why)
        return built

    def build_identity(self) -> str | None:
        return docker_builds.image_identity(self.container)

    def export_build(self, dest: Path) -> dict[str, Any]:
        return docker_builds.export_built(self.container, dest)

    def restore_build(self, payload: Path, meta: dict[str, Any]) -> None:
        docker_builds.restore_built(self.container, self.case_dir, payload)
        self.sealed = True  # each case restores /work from /built

    def run_case(self, time_limit_s: float) -> RunOutcome:
        if not self.sealed and (why := self._seal()):
            raise SandboxError(why)
        for entry in self.out_dir.iterdir():
            entry.unlink()
        return self._run(self.run_cmd, time_limit_s, fresh=True)

    def run_dialog(self, script: bytes, time_limit_s: float) -> tuple[RunOutcome, Talk]:
        """The allocator's dialog runs inside the container (agent.run_dialog)."""
        if not self.sealed and (why := self._seal()):
            raise SandboxError(why)
        for entry in self.out_dir.iterdir():
            entry.unlink()
        assert self.agent is not None
        start = time.monotonic()
        try:
            header, log, body = self.agent.call(self.run_cmd, time_limit_s, True, script)
            answers = [int(a) for a in body.split()]
            talk = Talk.from_summary(header["talk"], answers)
        except (AgentLost, ValueError, KeyError, TypeError) as exc:
            run = self._recover(time.monotonic() - start, time_limit_s, str(exc))
            return run, Talk().fail(CLOSED, LOST, "the sandbox's supervisor was lost")
        return self._outcome(header, log), talk

    def _seal(self) -> str:
        """Keep /work as the build left it in /built, owned by root ('' or why not)."""
        readable = self._run(["chmod", "-R", "a+rX,go-w,ug-s", "/work"], SEAL_TIMEOUT_S)
        if readable.timed_out or readable.exit_code != 0:
            return f"the build's output cannot be kept for the cases: {readable.log}"
        code, out = self.container.exec_run(
            ["cp", "-R", "--preserve=mode,timestamps,links", "/work/.", "/built/"], user="0"
        )
        if code != 0:
            return f"the build's output cannot be kept for the cases: {base.brief(out)}"
        self.sealed = True
        return ""

    def _start_agent(self) -> None:
        try:
            self.agent = Agent(self.container)
            header, _, _ = self.agent.call(HELLO["cmd"], HELLO["wall_s"])
        except Exception as exc:
            raise SandboxError(f"the sandbox supervisor did not start: {exc}") from exc
        self.oom_kills = int(header["oom"])

    def _run(self, cmd: list[str], wall_s: float, fresh: bool = False) -> RunOutcome:
        assert self.agent is not None
        start = time.monotonic()
        try:
            header, log, archive = self.agent.call(cmd, wall_s, fresh)
        except AgentLost as exc:
            return self._recover(time.monotonic() - start, wall_s, str(exc))
        self._unpack_out(archive)
        return self._outcome(header, log)

    def _outcome(self, header: dict[str, Any], log: bytes) -> RunOutcome:
        if header.get("tainted"):  # the planner changed the agent's priority or limits
            self._restart_agent()
        oom = int(header["oom"])
        timed_out = bool(header["timed_out"])
        memory = not timed_out and oom > self.oom_kills
        self.oom_kills = oom
        code = header["code"]
        too_much = not timed_out and (
            code == -signal.SIGXFSZ or header["log_size"] >= OUTPUT_LIMIT_BYTES or header["big"]
        )
        return RunOutcome(
            None if timed_out else code,
            float(header["time_s"]),
            timed_out,
            memory_exceeded=memory,
            output_exceeded=too_much,
            log=tail(log),
        )

    def _recover(self, elapsed: float, wall_s: float, why: str) -> RunOutcome:
        """The planner killed or stopped its supervisor: kill everything, start a new one."""
        self._restart_agent()
        timed_out = elapsed >= wall_s
        note = f"the planner broke the sandbox's supervisor ({why})"
        return RunOutcome(None if timed_out else -signal.SIGKILL, elapsed, timed_out, log=note)

    def _restart_agent(self) -> None:
        """A fresh supervisor (a new exec: the engine's priority and limits, not what a
        planner left on the old one), every process of the planner user killed first."""
        self.close()
        with suppress(Exception):
            self.container.exec_run(["sh", "-c", "kill -9 -1"], user=PLANNER_USER)
        self._start_agent()

    def _unpack_out(self, archive: bytes) -> None:
        """Regular files at the top of /out, nothing else (no links, no paths)."""
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            for member in tar.getmembers():
                name = member.name.removeprefix("./")
                if member.isreg() and name and "/" not in name:
                    source = tar.extractfile(member)
                    if source is not None:
                        (self.out_dir / name).write_bytes(source.read())
