"""`python -m client` is the `memorace` command."""

from client.main import main

main()
