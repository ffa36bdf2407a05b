"""What goes wrong when talking to a server, said for a person."""


class ClientError(Exception):
    """A request failed; `message` is what a person should read."""

    def __init__(self, message: str, status: int | None = None):
        self.message = message
        self.status = status  # HTTP status, None when no answer came back
        super().__init__(message)


class ConfigError(ClientError):
    """The config file is missing (when named explicitly) or malformed."""
