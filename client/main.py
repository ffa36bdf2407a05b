"""The `memorace` entry point. A plain `memorace verify CASE PLAN` (the call scripts
make once per plan) runs judge.verify_command at once; every other command, `--help`
and any doubtful argument go to client.cli's app, which prints and exits alike."""

from __future__ import annotations

import sys

from judge.verify_command import quick_args, verify_command


def main() -> None:
    argv = sys.argv[1:]
    if argv[:1] == ["verify"] and (quick := quick_args(argv[1:])) is not None:
        sys.exit(verify_command(*quick))
    from client.cli import app

    app()


if __name__ == "__main__":
    main()
