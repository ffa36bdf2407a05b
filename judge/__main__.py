"""`python -m judge` is the `memorace` command."""

from judge.cli import app

app()
