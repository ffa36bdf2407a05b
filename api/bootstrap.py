"""Set up a service: schema, the shipped problems, an organizer account and token.

python -m api.bootstrap [--admin NAME] [--problems DIR ...] [--token-file PATH] [--new-token]
                        [--hidden-seed-file PATH]

Without --problems: the shipped problems, each with hidden cases made from this
installation's secret seed (api/actions/shipped.py; MEMORACE_HIDDEN_SEED or --hidden-seed-file
give one, else the kept or a new random one).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from sqlalchemy import select

from api.access.auth import new_token, token_hash
from api.actions import admin, baselines, problems, shipped
from api.db.models import ApiToken, User, aware, utcnow
from api.db.session import migrate, session_scope
from api.settings import Settings, get_settings


def shipped_problems(settings: Settings, seed_file: Path | None = None) -> list[Path]:
    """The shipped problems' packages with this installation's hidden cases (made from
    the seed given in `seed_file`, else MEMORACE_HIDDEN_SEED, else the kept one)."""
    given = os.environ.get(shipped.SEED_ENV) or None
    if seed_file is not None:
        try:
            given = seed_file.read_text()
        except (OSError, UnicodeDecodeError) as exc:
            raise SystemExit(f"cannot read {seed_file}: {exc.__class__.__name__}") from None
    kept = shipped.ensure_seed(settings, given)
    packages = shipped.materialize(settings, kept)
    print(f"hidden cases of the shipped problems: made from the secret seed in {kept}")
    return packages


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
            token = None
        else:
            user = admin.create_user(db, admin_name, password, None, True, None)
            token = new_token(db, user, "bootstrap")
    baselines.catch_up(settings)  # the new versions' reference planners, once committed
    return token


def fresh_token(settings: Settings, admin_name: str) -> str:
    """Another token for an existing organizer (the first one was lost or revoked)."""
    with session_scope(settings.database_url) as db:
        user = db.scalar(select(User).where(User.username == admin_name))
        if user is None or not user.is_admin:
            raise SystemExit(f"no organizer named '{admin_name}'")
        return new_token(db, user, "bootstrap --new-token")


def saved_token(settings: Settings, admin_name: str, path: Path | None) -> str | None:
    """The token kept in `path` when it still lets `admin_name` in (not revoked or
    expired), else None."""
    if path is None or not path.is_file():
        return None
    token = path.read_text().strip()
    with session_scope(settings.database_url) as db:
        row = db.scalar(select(ApiToken).where(ApiToken.token_hash == token_hash(token)))
        valid = (
            row is not None
            and row.user.username == admin_name
            and not row.revoked
            and (row.expires_at is None or aware(row.expires_at) > utcnow())
        )
    return token if valid else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--admin", default="admin")
    parser.add_argument("--problems", nargs="*", type=Path, default=None)
    parser.add_argument("--token-file", type=Path, default=None)
    parser.add_argument(
        "--new-token", action="store_true", help="issue a new token for an existing organizer"
    )
    parser.add_argument(
        "--hidden-seed-file",
        type=Path,
        default=None,
        help="the shipped problems' hidden cases from the seed in this file (hex, 128-512 bits)",
    )
    args = parser.parse_args()
    settings = get_settings()
    if args.problems is None:
        settings.ensure_dirs()
        packages = shipped_problems(settings, args.hidden_seed_file)
    else:
        packages = args.problems
    token = bootstrap(settings, args.admin, packages)
    kept = f" (kept in {args.token_file})" if args.token_file else ""
    if not token and args.new_token:
        token = fresh_token(settings, args.admin)
    if token:
        if args.token_file:
            args.token_file.write_text(token + "\n")
            args.token_file.chmod(0o600)
        made = "new token" if args.new_token else "created"
        print(f"organizer '{args.admin}' {made}; API token{kept}: {token}")
    elif token := saved_token(settings, args.admin, args.token_file):
        print(f"organizer '{args.admin}'; API token{kept}: {token}")
    else:  # a restart without the file (or with a revoked token): one line, no token
        into = f" --token-file {args.token_file}" if args.token_file else ""
        print(
            f"organizer '{args.admin}' exists; its token was shown when it was made "
            f"(a new one: .venv/bin/python -m api.bootstrap --new-token{into})"
        )


if __name__ == "__main__":
    main()
