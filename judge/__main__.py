"""`python -m judge`: the offline judge's commands (`memorace` less the server ones)."""

from judge.cli import app

app()
