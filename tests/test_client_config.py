"""`client` without a server: config resolution, the SSE parser, errors and follow().

HTTP goes through httpx.MockTransport; the only socket used is one that is
refused on purpose.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from client import cli
from client.config import DEFAULT_URL, load_config
from client.errors import ClientError, ConfigError
from client.http import Client
from client.sse import SSEEvent, parse_sse
from tests.client_fakes import mock_client, result, sse, submission

# --- config ------------------------------------------------------------------


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh $HOME, so the default ~/.config/memorace/config.toml is ours."""
    monkeypatch.setenv("HOME", str(tmp_path))
    return tmp_path


def default_config(home: Path, text: str) -> Path:
    path = home / ".config" / "memorace" / "config.toml"
    path.parent.mkdir(parents=True)
    path.write_text(text)
    return path


def test_no_env_no_file_gives_default_url_and_no_token(home: Path) -> None:
    config = load_config({})
    assert (config.url, config.token) == (DEFAULT_URL, None)


def test_default_config_file_is_read(home: Path) -> None:
    default_config(home, 'url = "https://judge.example/"\ntoken = "file-token"\n')
    config = load_config({})
    assert (config.url, config.token) == ("https://judge.example", "file-token")


def test_env_beats_file(home: Path) -> None:
    default_config(home, 'url = "https://file.example"\ntoken = "file-token"\n')
    env = {"MEMORACE_URL": "http://env.example:9000", "MEMORACE_TOKEN": "env-token"}
    config = load_config(env)
    assert (config.url, config.token) == ("http://env.example:9000", "env-token")


def test_each_key_resolves_on_its_own(home: Path) -> None:
    default_config(home, 'token = "file-token"\n')
    config = load_config({"MEMORACE_URL": "http://env.example"})
    assert (config.url, config.token) == ("http://env.example", "file-token")


def test_empty_env_values_count_as_unset(home: Path) -> None:
    default_config(home, 'url = "https://file.example"\ntoken = "file-token"\n')
    config = load_config({"MEMORACE_URL": "", "MEMORACE_TOKEN": ""})
    assert (config.url, config.token) == ("https://file.example", "file-token")


def test_memorace_config_names_the_file(home: Path, tmp_path: Path) -> None:
    default_config(home, 'token = "default-file"\n')
    other = tmp_path / "other.toml"
    other.write_text('token = "other-file"\n')
    assert load_config({"MEMORACE_CONFIG": str(other)}).token == "other-file"


def test_named_config_that_is_missing_is_an_error(home: Path, tmp_path: Path) -> None:
    missing = tmp_path / "nope.toml"
    with pytest.raises(ConfigError, match=r"nope\.toml does not exist"):
        load_config({"MEMORACE_CONFIG": str(missing)})


def test_malformed_toml_names_the_file_and_line(home: Path) -> None:
    path = default_config(home, 'url = "http://x"\ntoken = unquoted\n')
    with pytest.raises(ConfigError) as info:
        load_config({})
    assert str(path) in info.value.message
    assert "not valid TOML" in info.value.message
    assert "line 2" in info.value.message


def test_malformed_toml_is_an_error_even_when_env_sets_everything(home: Path) -> None:
    # A broken file is reported, not silently skipped: the user meant something by it.
    default_config(home, "token = \n")
    with pytest.raises(ConfigError):
        load_config({"MEMORACE_URL": "http://a", "MEMORACE_TOKEN": "t"})


def test_non_string_values_are_rejected(home: Path) -> None:
    default_config(home, "token = 42\n")
    with pytest.raises(ConfigError, match="`token` must be a string"):
        load_config({})


def test_client_sends_the_bearer_token_from_config(home: Path) -> None:
    default_config(home, 'url = "http://judge.test"\ntoken = "s3cret"\n')
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json={"problem": "p", "rows": []})

    with Client.from_config({}, transport=httpx.MockTransport(handler)) as client:
        client.leaderboard("p")
    assert str(seen[0].url) == "http://judge.test/api/v1/leaderboard/p"
    assert seen[0].headers["authorization"] == "Bearer s3cret"


def test_no_token_sends_no_authorization_header() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json={})

    Client("http://judge.test", None, transport=httpx.MockTransport(handler)).submission(1)
    assert "authorization" not in seen[0].headers


# --- SSE parser --------------------------------------------------------------


def events(*chunks: bytes) -> list[SSEEvent]:
    return list(parse_sse(chunks))


def test_multi_line_data_is_joined_with_newlines() -> None:
    got = events(b'event: case\ndata: {"a":\ndata: 1}\n\n')
    assert got == [SSEEvent("case", '{"a":\n1}')]
    assert json.loads(got[0].data) == {"a": 1}


def test_comments_are_skipped_between_and_inside_events() -> None:
    stream = b": keep-alive\n\nevent: status\n: ping\ndata: {}\n\n:\n\n"
    assert events(stream) == [SSEEvent("status", "{}")]


def test_event_without_data_is_not_dispatched() -> None:
    # WHATWG: a block with no data field is dropped, and its event name with it.
    stream = b"event: end\n\nevent: case\ndata: x\n\n"
    assert events(stream) == [SSEEvent("case", "x")]


def test_empty_data_line_is_dispatched_with_empty_data() -> None:
    assert events(b"event: end\ndata:\n\n") == [SSEEvent("end", "")]


def test_field_without_colon_has_empty_value() -> None:
    assert events(b"data\n\n") == [SSEEvent("message", "")]


def test_default_event_name_is_message() -> None:
    assert events(b"data: hi\n\n") == [SSEEvent("message", "hi")]


def test_only_one_space_after_the_colon_is_removed() -> None:
    assert events(b"data:  two\ndata:none\n\n") == [SSEEvent("message", " two\nnone")]


def test_id_is_kept_and_retry_ignored() -> None:
    assert events(b"id: 7\nretry: 100\ndata: x\n\n") == [SSEEvent("message", "x", "7")]


@pytest.mark.parametrize("eol", [b"\n", b"\r\n", b"\r"])
def test_every_line_ending(eol: bytes) -> None:
    stream = eol.join([b"event: a", b"data: 1", b"data: 2", b"", b"data: 3", b"", b""])
    assert events(stream) == [SSEEvent("a", "1\n2"), SSEEvent("message", "3")]


@pytest.mark.parametrize("eol", [b"\n", b"\r\n", b"\r"])
def test_chunks_split_anywhere_give_the_same_events(eol: bytes) -> None:
    stream = eol.join(
        [b": hi", b"event: case", b'data: {"case": "\xc3\xa9t\xc3\xa9"}', b"", b"data: z", b"", b""]
    )
    whole = events(stream)
    assert whole == [SSEEvent("case", '{"case": "été"}'), SSEEvent("message", "z")]
    assert events(*(stream[i : i + 1] for i in range(len(stream)))) == whole
    for cut in range(len(stream)):
        assert events(stream[:cut], b"", stream[cut:]) == whole


def test_crlf_cut_between_chunks_is_one_line_end() -> None:
    # Read as two line ends, the LF would be a blank line and split the event in two.
    assert events(b"data: a\r", b"\ndata: b\r\n\r\n") == [SSEEvent("message", "a\nb")]


def test_unterminated_last_event_is_discarded() -> None:
    assert events(b"data: whole\n\ndata: cut off") == [SSEEvent("message", "whole")]


def test_leading_bom_is_ignored_even_when_split() -> None:
    assert events(b"\xef", b"\xbb\xbfdata: x\n\n") == [SSEEvent("message", "x")]


# --- errors ------------------------------------------------------------------


def test_server_detail_becomes_the_error_message() -> None:
    client = mock_client(lambda r: httpx.Response(404, json={"detail": "no submission 9"}))
    with pytest.raises(ClientError) as info:
        client.submission(9)
    assert (info.value.status, info.value.message) == (404, "no submission 9")


def test_validation_detail_list_is_readable() -> None:
    detail = [
        {"loc": ["body", "problem"], "msg": "Field required", "type": "missing"},
        {"loc": ["body", "file"], "msg": "Field required", "type": "missing"},
    ]
    client = mock_client(lambda r: httpx.Response(422, json={"detail": detail}))
    with pytest.raises(ClientError, match=r"^problem: Field required; file: Field required$"):
        client.submission(1)


def test_error_without_json_body_names_the_status() -> None:
    client = mock_client(lambda r: httpx.Response(502, text="<html>bad gateway</html>"))
    with pytest.raises(ClientError, match="HTTP 502 Bad Gateway"):
        client.leaderboard("p")


def test_connection_refused_names_the_url() -> None:
    with socket.socket() as sock:  # a port that was free a moment ago: nothing listens
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    with pytest.raises(ClientError) as info:
        Client(url).submission(1)
    assert info.value.status is None
    assert f"cannot connect to the MemoRace server at {url}" in info.value.message


def test_submit_sends_problem_and_file(tmp_path: Path) -> None:
    planner = tmp_path / "plan.py"
    planner.write_bytes(b"print('hi')\n")
    seen: list[bytes] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.read())
        return httpx.Response(200, json={"id": 3, "reused": True})

    assert mock_client(handler).submit(planner, "toy")["reused"] is True
    body = seen[0]
    assert b'name="problem"\r\n\r\ntoy\r\n' in body
    assert b'name="file"; filename="plan.py"' in body
    assert b"print('hi')\n" in body


def test_submit_missing_file_is_a_client_error(tmp_path: Path) -> None:
    with pytest.raises(ClientError, match="cannot read"):
        mock_client(lambda r: httpx.Response(500)).submit(tmp_path / "none.py", "toy")


# --- CLI on top of the client ------------------------------------------------


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Callable[[Any], None]:
    """server(handler): the CLI's Client talks to `handler` instead of the network."""

    def install(handler: Callable[[httpx.Request], httpx.Response]) -> None:
        def from_config(*args: Any, **kwargs: Any) -> Client:
            return mock_client(handler)

        monkeypatch.setattr(Client, "from_config", from_config)

    return install


def test_status_prints_results_with_the_server_scores(server: Any) -> None:
    # Recomputed from the cases the public score would be 40.0; the server's 12.5 must show.
    sub = submission("done", [result("a"), result("b", "TIME_LIMIT")]) | {"public_score": 12.5}
    server(lambda r: httpx.Response(200, json=sub))
    run = CliRunner().invoke(cli.app, ["status", "5"])
    assert run.exit_code == 0, run.output
    assert "TIME_LIMIT" in run.output
    assert "public 12.5000" in run.output
    assert "submission #5 plan.py: done" in run.output


def test_server_error_prints_error_and_exits_2(server: Any) -> None:
    server(lambda r: httpx.Response(404, json={"detail": "no problem 'nope'"}))
    run = CliRunner().invoke(cli.app, ["leaderboard", "nope"])
    assert run.exit_code == 2
    assert "error: no problem 'nope'" in run.output


def test_submit_follows_and_exits_1_on_error(server: Any, tmp_path: Path) -> None:
    planner = tmp_path / "plan.py"
    planner.write_text("pass\n")
    final = submission("error", []) | {"status_detail": "judge fault"}

    def handler(request: httpx.Request) -> httpx.Response:
        if request.method == "POST":
            return httpx.Response(201, json=submission("queued", []))
        return httpx.Response(200, content=sse("end", final))

    server(handler)
    run = CliRunner().invoke(cli.app, ["submit", str(planner), "--problem", "toy", "--json"])
    assert run.exit_code == 1, run.output
    assert json.loads(run.stdout)["status_detail"] == "judge fault"


def test_submit_prints_the_table_after_following(server: Any, tmp_path: Path) -> None:
    planner = tmp_path / "plan.py"
    planner.write_text("pass\n")
    final = submission("done", [result("a"), result("b")])
    body = sse("case", {**result("a"), "cases_done": 1, "cases_total": 2}) + sse("end", final)

    def handler(request: httpx.Request) -> httpx.Response:
        if request.method == "POST":
            return httpx.Response(201, json=submission("queued", []))
        return httpx.Response(200, content=body)

    server(handler)
    run = CliRunner().invoke(cli.app, ["submit", str(planner), "--problem", "toy"])
    assert run.exit_code == 0, run.output
    assert "#5 plan.py on toy v1 (server sandbox)" in run.output
    assert "public 80.0000  hidden —" in run.output


def test_submit_no_follow_shows_the_queue_position(server: Any, tmp_path: Path) -> None:
    planner = tmp_path / "plan.py"
    planner.write_text("pass\n")
    queued = submission("queued", []) | {"queue_position": 3}
    server(lambda r: httpx.Response(201, json=queued))
    run = CliRunner().invoke(cli.app, ["submit", str(planner), "--problem", "toy", "--no-follow"])
    assert run.exit_code == 0, run.output
    assert "queued, position 3 in the queue" in run.output
