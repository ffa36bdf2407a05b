"""The shipped problems with this installation's own hidden cases.

The repository holds each shipped problem's public split only. Its hidden split is
made here from a secret seed (problems/_lib/hidden.py): the seed is kept in
`$MEMORACE_DATA_DIR/secrets/hidden-seed` (256 random bits, made on the first
bootstrap, owner-only), or given (MEMORACE_HIDDEN_SEED, `--hidden-seed-file`) and
then kept there. Each problem's generator writes the complete package into
`$MEMORACE_DATA_DIR/problems/<slug>/`; the same seed gives the same bytes, so a
second bootstrap imports no new version. The seed is never printed or logged.
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from api.settings import ROOT, Settings

SEED_ENV = "MEMORACE_HIDDEN_SEED"
GENERATOR_TIMEOUT_S = 600


def _parse_seed(text: str) -> bytes:
    sys.path.insert(0, str(ROOT / "problems" / "_lib"))
    try:
        from hidden import parse_seed  # problems/_lib: standard library only
    finally:
        sys.path.remove(str(ROOT / "problems" / "_lib"))
    return parse_seed(text)


def seed_path(settings: Settings) -> Path:
    return settings.data_dir / "secrets" / "hidden-seed"


def ensure_seed(settings: Settings, given: str | None = None) -> Path:
    """The installation's seed file, made now (from `given`, else 256 random bits) when
    absent. A given seed that differs from the kept one is refused: the hidden cases
    would change under a running contest. Errors say what to do, never the seed."""
    path = seed_path(settings)
    if given is not None:
        try:
            seed = _parse_seed(given)
        except ValueError as exc:
            raise SystemExit(f"the given hidden seed: {exc}") from None
    else:
        seed = secrets.token_bytes(32)
    if path.exists():
        try:
            kept = _parse_seed(path.read_text())
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            raise SystemExit(f"{path} is unreadable or damaged ({exc.__class__.__name__}); "
                             "restore it from the data directory's backup") from None  # fmt: skip
        if given is not None and kept != seed:
            raise SystemExit(
                f"{path} holds another hidden seed than the one given; the hidden cases "
                "are made from the kept one (to change them, a new problem version: remove "
                "the file first)"
            )
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    path.parent.chmod(0o700)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(seed.hex() + "\n")
    return path


def generators() -> list[Path]:
    """Each shipped problem's generator (problems/<slug>/generator/generate.py)."""
    return sorted(
        p.parent / "generator" / "generate.py"
        for p in (ROOT / "problems").glob("*/problem.toml")
        if (p.parent / "generator" / "generate.py").is_file()
    )


def run_generators(seed_file: Path, into: Path) -> list[Path]:
    """Each shipped problem's complete package made from the seed in `seed_file`, as
    `into`/<slug> (new folders), the generators running side by side."""
    runs = []
    for gen in generators():
        out = into / gen.parents[1].name
        argv = [sys.executable, str(gen), "--hidden-seed", str(seed_file), "--out", str(out)]
        log = open(into / f".{out.name}.log", "w+b")  # noqa: SIM115 (closed below)
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT)
        runs.append((out, proc, log))
    failed = []
    for out, proc, log in runs:
        try:
            code = proc.wait(GENERATOR_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            code = proc.wait()
        log.seek(0)
        tail = log.read().decode(errors="replace").strip().splitlines()[-1:]
        log.close()
        Path(log.name).unlink()
        if code != 0:  # its last line: the reason (the generators print no figures then)
            failed.append(f"{out.name}: {' '.join(tail) or f'exit status {code}'}")
    if failed:
        raise SystemExit("making the hidden cases failed: " + "; ".join(failed))
    return [out for out, _, _ in runs]


def materialize(settings: Settings, seed_file: Path) -> list[Path]:
    """Every shipped problem's package with its hidden split from the seed, in
    data_dir/problems/<slug>/ (rewritten only where the bytes changed)."""
    from api.actions.problems import package_digest

    dest = settings.packages
    dest.mkdir(parents=True, exist_ok=True)
    packages = []
    with tempfile.TemporaryDirectory(prefix=".made-", dir=dest) as tmp:
        for out in run_generators(seed_file, Path(tmp)):
            target = dest / out.name
            if not target.is_dir() or package_digest(target) != package_digest(out):
                if target.is_dir():
                    shutil.rmtree(target)
                out.rename(target)
            target.chmod(0o700)
            packages.append(target)
    return packages
