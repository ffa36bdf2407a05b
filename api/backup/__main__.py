"""`python -m api.backup create|restore ARCHIVE` (the operator's guide, backup.md)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from api.backup.create import BackupError, create
from api.backup.restore import RestoreError, restore
from api.settings import get_settings


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m api.backup",
        description="Back up the service (MEMORACE_* settings) or restore it onto an empty host.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("create", help="back up the running service").add_argument("archive", type=Path)
    sub.add_parser("restore", help="restore onto an empty host").add_argument("archive", type=Path)
    args = parser.parse_args(argv)
    settings = get_settings()
    started = time.monotonic()
    if args.command == "create":
        try:
            manifest = create(settings, args.archive)
        except BackupError as exc:
            print(f"backup failed: {exc}", file=sys.stderr)
            return 1
        what = "backed up"
    else:
        try:
            manifest = restore(settings, args.archive)
        except RestoreError as exc:
            print(f"restore refused: {exc}", file=sys.stderr)
            return 1
        what = "restored"
    rows = sum(manifest["tables"].values())
    size = sum(f["size"] for f in manifest["files"].values())
    print(f"{what} {rows} rows ({len(manifest['tables'])} tables, revision "
          f"{manifest['revision']}) and {len(manifest['files'])} files ({size} bytes) "
          f"in {time.monotonic() - started:.1f} s: {args.archive}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
