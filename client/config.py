"""Where the server is and who we are: environment, then the config file."""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from client.errors import ConfigError

DEFAULT_URL = "http://127.0.0.1:8000"
DEFAULT_CONFIG = "~/.config/memorace/config.toml"


@dataclass(frozen=True)
class Config:
    url: str
    token: str | None
    contest: str | None = None  # a contest's slug or id; None: the server's default


def load_config(env: Mapping[str, str] | None = None) -> Config:
    """Token and contest: env, then file. URL: env, then file, then DEFAULT_URL.

    Empty environment values count as unset (`MEMORACE_TOKEN= memorace ...`).
    """
    env = os.environ if env is None else env
    explicit = env.get("MEMORACE_CONFIG") or None
    path = Path(explicit or DEFAULT_CONFIG).expanduser()
    # The default file is optional; one the user named must exist.
    data = _read_config(path) if explicit or path.is_file() else {}
    url = env.get("MEMORACE_URL") or data.get("url") or DEFAULT_URL
    token = env.get("MEMORACE_TOKEN") or data.get("token") or None
    contest = env.get("MEMORACE_CONTEST") or data.get("contest") or None
    return Config(url=url.rstrip("/"), token=token, contest=contest)


def _read_config(path: Path) -> dict[str, str]:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"config file {path} does not exist (MEMORACE_CONFIG)") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read config file {path}: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config file {path} is not valid TOML: {exc}") from None
    for key in ("url", "token"):
        if key in data and not isinstance(data[key], str):
            raise ConfigError(f"config file {path}: `{key}` must be a string")
    return {k: data[k] for k in ("url", "token") if k in data}
