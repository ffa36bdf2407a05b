"""Run a package import job in a child process with a time and memory limit.

A package's cases are parsed and their lower bounds computed on import: a huge or
hostile one may take long or a lot of memory. In a child, a limit ends the import
and not the worker; the job then fails with the reason.
"""

from __future__ import annotations

import logging
import math
import os
import resource
import subprocess
import sys

from api.actions import imports
from api.settings import ROOT, Settings

log = logging.getLogger("memorace.worker")


def run(settings: Settings, job_id: int) -> str:
    memory = settings.import_memory_mb * 2**20

    # CPU seconds too: a child left behind by a killed worker cannot outlive the limit
    # (the reaper re-sends such a job once the limit is long past: api.actions.imports).
    cpu = math.ceil(settings.import_time_limit_s) + 10

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))

    # One thread per numeric library: their per-thread buffers would count against the
    # address-space limit on a host with many cores.
    env = os.environ | dict.fromkeys(("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS"), "1")
    # Its unpacked files in the job's folder, which goes when the job ends, even if the
    # child is killed.
    env["TMPDIR"] = str(imports.job_folder(settings, job_id))
    try:
        child = subprocess.run(
            [sys.executable, "-m", "api.actions.imports", str(job_id)],
            cwd=ROOT,
            env=env,
            preexec_fn=limit,
            capture_output=True,
            text=True,
            timeout=settings.import_time_limit_s,
            check=False,
        )
    except subprocess.TimeoutExpired:
        reason = f"the import took more than {settings.import_time_limit_s:g} s and was stopped"
        imports.finish(settings, job_id, "failed", reason)
        return "failed"
    if child.returncode != 0:
        log.error("import job %s: child exited %s: %s", job_id, child.returncode, child.stderr)
        out_of_memory = "MemoryError" in child.stderr
        reason = (
            f"the import needed more than {settings.import_memory_mb} MiB of memory"
            if out_of_memory
            else f"the import stopped unexpectedly (exit status {child.returncode})"
        )
        imports.finish(settings, job_id, "failed", reason)
        return "failed"
    return child.stdout.strip().splitlines()[-1] if child.stdout.strip() else "done"
