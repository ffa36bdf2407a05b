"""Set up a service: schema, the shipped problems, an organizer account and token.

python -m api.bootstrap [--admin NAME] [--problems DIR ...] [--token-file PATH]
"""

from __future__ import annotations

import argparse
from pathlib import Path

from sqlalchemy import select

from api import admin, problems
from api.auth import new_token
from api.db.models import User
from api.db.session import migrate, session_scope
from api.settings import ROOT, Settings, get_settings


def shipped_problems() -> list[Path]:
    return sorted(p.parent for p in (ROOT / "problems").glob("*/problem.toml"))


def bootstrap(
    settings: Settings, admin_name: str, packages: list[Path], password: str = ""
) -> str | None:
    """Idempotent: imports what changed, creates the admin once (with `password` for
    the web pages, if given). Returns a new admin token when the admin was created
    now (None when it existed)."""
    settings.ensure_dirs()
    migrate(settings.database_url)
    with session_scope(settings.database_url) as db:
        for package in packages:
            version = problems.import_package(db, settings, package, None)
            print(
                f"problem {version.problem.slug}: version {version.number},",
                f"{len(version.cases)} cases",
            )
        admin.contest(db)
        if db.scalar(select(User).where(User.username == admin_name)):
            return None
        user = admin.create_user(db, admin_name, password, None, True, None)
        return new_token(db, user, "bootstrap")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--admin", default="admin")
    parser.add_argument("--problems", nargs="*", type=Path, default=None)
    parser.add_argument("--token-file", type=Path, default=None)
    args = parser.parse_args()
    settings = get_settings()
    token = bootstrap(
        settings, args.admin, args.problems if args.problems is not None else shipped_problems()
    )
    if token:
        print(f"organizer '{args.admin}' created; API token (shown once): {token}")
        if args.token_file:
            args.token_file.write_text(token + "\n")
            args.token_file.chmod(0o600)
    else:
        print(f"organizer '{args.admin}' exists already (make a new token with the admin API)")


if __name__ == "__main__":
    main()
