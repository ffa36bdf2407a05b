"""The `docker` sandbox: one locked-down container per submission per judging.

The container (no network, read-only root, all capabilities dropped,
no-new-privileges, memory/pids/CPU limits, size-capped tmpfs for /tmp, /out
and /work) idles as root while each build and case runs in it through
`docker exec` as the unprivileged `planner` user. Limits are enforced from
outside: the judge times each run and, on expiry or after every case, kills
every process of the planner user (which cannot reach the idle root process).
"""

from __future__ import annotations

import io
import os
import signal
import tarfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from functools import cache
from pathlib import Path
from typing import Any

from judge.package import Limits
from judge.sandbox.base import LOG_TAIL_BYTES, OUTPUT_LIMIT_BYTES, RunOutcome, SandboxError, tail

IMAGE = os.environ.get("MEMORACE_RUNNER_IMAGE", "memorace/runner:latest")
PLANNER_USER = "10001"
PIDS_LIMIT = 256
TMPFS = {
    "/tmp": f"rw,exec,nosuid,nodev,size={OUTPUT_LIMIT_BYTES},mode=1777",
    "/out": f"rw,noexec,nosuid,nodev,size={OUTPUT_LIMIT_BYTES},mode=1777",
    "/work": "rw,exec,nosuid,nodev,size=512m,uid=10001,gid=10001,mode=0755",
}
LABEL = "memorace.sandbox"
LOG = "/tmp/.memorace.log"  # the planner's stdout and stderr


@cache
def _client() -> Any:
    import docker  # the SDK is imported only where a docker sandbox is used

    return docker.from_env(timeout=60)


def engine_available() -> bool:
    try:
        return bool(_client().ping())
    except Exception:  # no SDK, no socket, no daemon: all mean "not available"
        return False


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
        "labels": {LABEL: "1"},
        "detach": True,
    }
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
        try:
            container.start()
            session = DockerSession(container, host, build, run, limits)
            session.prepare()
            yield session
        finally:
            with suppress(Exception):  # always gone, also on KeyboardInterrupt
                container.remove(force=True)


OOM_KILLS = (
    "awk '/^oom_kill /{print $2; exit}' /sys/fs/cgroup/memory/memory.oom_control "
    "/sys/fs/cgroup/memory.events 2>/dev/null"
)
# One exec after every run, so that a case costs two round trips to the engine: kill
# what is left of the planner, report OOM kills and sizes, the log tail, /out as tar
# (a tmpfs, which `docker cp` cannot see), then wipe /out and /tmp for the next case.
AFTER_RUN = f"""kill -9 -1 2>/dev/null
oom=$({OOM_KILLS}); size=$(stat -c %s {LOG} 2>/dev/null || echo 0)
big=$(find /out -type f -size +{OUTPUT_LIMIT_BYTES - 1}c | head -n 1 | wc -l)
echo "${{oom:-0}} $size $big $(tail -c {LOG_TAIL_BYTES} {LOG} 2>/dev/null | wc -c)"
tail -c {LOG_TAIL_BYTES} {LOG} 2>/dev/null
tar -C /out -cf - .
rm -rf /out/* /out/.[!.]* /tmp/* /tmp/.[!.]* 2>/dev/null; true"""


class DockerSession:
    def __init__(
        self, container: Any, host: Path, build: list[str] | None, run: list[str], limits: Limits
    ):
        self.container, self.build_cmd, self.run_cmd, self.limits = container, build, run, limits
        self.case_dir, self.out_dir = host / "case", host / "out"
        self.oom_kills = 0

    def prepare(self) -> None:
        code, out = self.container.exec_run(
            ["sh", "-c", f"cp -R /submission/. /work/ && {OOM_KILLS}"], user=PLANNER_USER
        )
        if code != 0:
            raise SandboxError(f"cannot copy the submission into the sandbox: {out[-500:]!r}")
        self.oom_kills = int(out.strip() or 0)

    def build(self, timeout_s: float) -> RunOutcome | None:
        return self._run(self.build_cmd, timeout_s) if self.build_cmd else None

    def run_case(self, time_limit_s: float) -> RunOutcome:
        for entry in self.out_dir.iterdir():
            entry.unlink()
        return self._run(self.run_cmd, time_limit_s)

    def _run(self, cmd: list[str], wall_s: float) -> RunOutcome:
        code, elapsed, timed_out = self._exec(cmd, wall_s)
        oom, log_size, big, log, fetched = self._after_run()
        memory = not timed_out and oom > self.oom_kills
        self.oom_kills = oom
        too_much = not timed_out and (
            code == -signal.SIGXFSZ or log_size >= OUTPUT_LIMIT_BYTES or big or not fetched
        )
        return RunOutcome(
            None if timed_out else code,
            elapsed,
            timed_out,
            memory_exceeded=memory,
            output_exceeded=too_much,
            log=log,
        )

    def _exec(self, cmd: list[str], wall_s: float) -> tuple[int | None, float, bool]:
        # The log goes to a file under a file-size rlimit, not through the docker API:
        # a planner printing a gigabyte then dies of SIGXFSZ instead of flooding the judge.
        blocks = OUTPUT_LIMIT_BYTES // 512
        script = (
            f'ulimit -t {int(wall_s) + 1}; ulimit -c 0; ulimit -f {blocks}; exec "$@" > {LOG} 2>&1'
        )
        api = self.container.client.api
        exec_id = api.exec_create(
            self.container.id,
            ["sh", "-c", script, "planner", *cmd],
            user=PLANNER_USER,
            workdir="/work",
        )["Id"]
        waiter = threading.Thread(target=lambda: api.exec_start(exec_id), daemon=True)
        start = time.monotonic()
        waiter.start()
        waiter.join(wall_s)
        elapsed = time.monotonic() - start
        timed_out = waiter.is_alive()
        if timed_out:
            with suppress(Exception):
                self.container.exec_run(["sh", "-c", "kill -9 -1"], user=PLANNER_USER)
            waiter.join(10)
        code = api.exec_inspect(exec_id).get("ExitCode")
        if code is not None and code > 128:  # the shell convention for a signal death
            code = -(code - 128)
        return code, elapsed, timed_out

    def _after_run(self) -> tuple[int, int, bool, str, bool]:
        """(OOM kills so far, log size, a file in /out too big, log tail, /out fetched)."""
        api = self.container.client.api
        exec_id = api.exec_create(
            self.container.id, ["sh", "-c", AFTER_RUN], user=PLANNER_USER, stdout=True, stderr=False
        )["Id"]
        data = bytearray()
        for chunk in api.exec_start(exec_id, stream=True):
            data += chunk
            if len(data) > OUTPUT_LIMIT_BYTES + 2**20:
                return 0, 0, True, "", False
        header, _, rest = bytes(data).partition(b"\n")
        oom, log_size, big, tail_len = (int(x) for x in header.split())
        log, archive = rest[:tail_len], rest[tail_len:]
        self._unpack_out(archive)
        return oom, log_size, bool(big), tail(log), True

    def _unpack_out(self, archive: bytes) -> None:
        """Regular files at the top of /out, nothing else (no links, no paths)."""
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            for member in tar.getmembers():
                name = member.name.removeprefix("./")
                if member.isreg() and name and "/" not in name:
                    source = tar.extractfile(member)
                    if source is not None:
                        (self.out_dir / name).write_bytes(source.read())
