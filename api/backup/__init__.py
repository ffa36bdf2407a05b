"""A consistent backup of a running service, and its restore onto an empty host.

    python -m api.backup create backup.tar      # or backup.tar.gz
    python -m api.backup restore backup.tar

One logical dump for both backends, so a backup of the embedded service restores onto
PostgreSQL too. What it holds: every table's rows (read from one snapshot: a
REPEATABLE READ READ ONLY transaction on PostgreSQL, SQLite's online backup of the
file), then the data directory's files worth keeping (blobs, older plans and
artifacts, problem packages with their hidden cases, secrets, import uploads). The
database comes first on purpose: a blob is written before the row that names it
commits and is never deleted, so every blob a snapshot row names is on disk when the
files are copied after it. Caches, the embedded broker's queue, scratch and logs stay
behind: the reaper re-sends a judging the restored service finds unfinished.

The archive (a tar): `tables/NAME.jsonl` (a line of column names, then one JSON list
per row; api.backup.format keeps every value's exact type), `files/PATH` and last
`manifest.json` (schema revision, backend, row counts, each member's size and sha256),
which the restore checks everything against before it writes anything.
"""

from __future__ import annotations

from api.backup.create import BackupError, create
from api.backup.restore import RestoreError, restore

__all__ = ["BackupError", "RestoreError", "create", "restore"]
