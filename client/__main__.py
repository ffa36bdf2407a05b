"""`python -m client` is the `memorace` command."""

from client.cli import app

app()
