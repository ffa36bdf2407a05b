"""Queue messages that cannot stop a worker. The embedded broker (api.filebroker): a
message file is seen only whole, a file that is not a message is set aside instead of
killing the worker, and every message is taken exactly once. Kombu's own filesystem
transport let a worker read a message file its producer had created but not yet
written: the worker's consumer died on the empty JSON and the process exited, so a CI
run's service judged nothing more. On either broker (worker.consumer), a task message
that makes Celery's own handler raise is rejected; on Redis it was redelivered forever."""

from __future__ import annotations

import base64
import json
import os
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from queue import Empty

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kombu import Connection

from api import filebroker
from tests.fuzzing import FUZZ, SPECIAL, mutate
from tests.service import ROOT, postgres_database, redis_server, small_package, start_service
from tests.test_service_e2e import sandbox_for_tests

QUEUE = "memorace"


@contextmanager
def connection(folder: Path, clear: bool = True) -> Iterator[Connection]:
    options = {
        "data_folder_in": str(folder),
        "data_folder_out": str(folder),
        "control_folder": str(folder / "control"),
    }
    conn = Connection("filesystem://", transport=filebroker.TRANSPORT, transport_options=options)
    # Kombu keeps the bindings it made in one state per process, and skips writing a
    # binding it knows to the control folder: a service has one folder, each test its own.
    if clear:
        conn.transport.state.clear()
    try:
        yield conn
    finally:
        conn.release()


def drop(folder: Path, payload: bytes) -> Path:
    """A file named as a message, with any bytes in it (what a torn write leaves)."""
    path = folder / f"0_{filebroker.message_name(QUEUE)}"  # older than any message
    path.write_bytes(payload)
    return path


def envelope(folder: Path, body: dict | None = None) -> bytes:
    """The bytes of one real message, as the producer writes it."""
    (folder / "seed").mkdir(exist_ok=True)
    with connection(folder / "seed") as conn:
        conn.SimpleQueue(QUEUE).put(body or {"task": "memorace.judge", "args": [1]})
        (path,) = (folder / "seed").glob(f"*.{QUEUE}.msg")
        return path.read_bytes()


BROKEN = {
    "empty": b"",
    "torn": b'{"body": "eyJ0YX',
    "not an object": b"[1, 2, 3]",
    "no properties": b'{"body": "e30=", "headers": {}}',
    "no delivery tag": json.dumps(
        {"body": "e30=", "properties": {"body_encoding": "base64"}}
    ).encode(),
    "bad base64": json.dumps(
        {"body": "e30", "properties": {"body_encoding": "base64", "delivery_tag": "x"}}
    ).encode(),
    "binary": bytes(range(256)),
    "list delivery tag": json.dumps(
        {"body": "e30=", "properties": {"body_encoding": "base64", "delivery_tag": ["x"]}}
    ).encode(),
    "headers a list": json.dumps(
        {"body": "e30=", "headers": [], "properties": {"delivery_tag": "x"}}
    ).encode(),
}


def task_message(headers: dict) -> bytes:
    """A message kombu delivers whose task headers Celery's own handler chokes on."""
    body = base64.b64encode(json.dumps([[1], {}, {}]).encode()).decode()
    properties = {
        "body_encoding": "base64",
        "delivery_tag": str(uuid.uuid4()),
        "delivery_info": {"exchange": "", "routing_key": QUEUE},
    }
    return json.dumps(
        {"body": body, "content-type": "application/json", "content-encoding": "utf-8",
         "headers": headers, "properties": properties}
    ).encode()  # fmt: skip


MALFORMED_TASKS = [
    {"task": ["memorace.judge"], "id": "a"},  # a list as the task's name
    {"task": "memorace.judge"},  # protocol 2 without the task's id
    {"task": "no.such.task"},  # unknown, and no id for Celery's report of it
]


@pytest.mark.parametrize("payload", list(BROKEN.values()), ids=list(BROKEN))
def test_a_broken_file_is_set_aside_and_the_next_message_is_delivered(tmp_path, payload):
    with connection(tmp_path) as conn:
        queue = conn.SimpleQueue(QUEUE)
        bad = drop(tmp_path, payload)  # older name: taken first
        queue.put({"n": 7})
        assert queue.get(timeout=2).payload == {"n": 7}
        assert (tmp_path / filebroker.UNREADABLE / bad.name).read_bytes() == payload
        with pytest.raises(Empty):
            queue.get(timeout=0.1)


@FUZZ
@given(entropy=st.integers(0, 2**64), special=st.sampled_from(SPECIAL))
def test_the_reader_takes_any_file_without_raising(tmp_path_factory, entropy, special):
    folder = tmp_path_factory.mktemp("q")
    seed = envelope(folder)
    raw = mutate(seed, entropy) if entropy % 4 else special
    with connection(folder) as conn:
        channel = conn.default_channel
        path = drop(folder, raw)
        try:
            message = channel._get(QUEUE)
        except Empty:
            assert (folder / filebroker.UNREADABLE / path.name).read_bytes() == raw
        else:
            channel.Message(message, channel=channel)  # kombu can deliver what it got
            assert not path.exists() and not (folder / f"{filebroker.TAKEN}{path.name}").exists()


def test_producers_and_consumers_in_parallel_take_each_message_once(tmp_path):
    """Two producers and three consumers, each with its own connection, as the API's
    processes and the workers share the folder: every message arrives once, whole."""
    per_producer, got, lock = 300, [], threading.Lock()
    done = threading.Event()

    def produce(who: int) -> None:
        with connection(tmp_path) as conn:
            queue = conn.SimpleQueue(QUEUE)
            for i in range(per_producer):
                queue.put({"from": who, "n": i})

    def consume() -> None:
        with connection(tmp_path) as conn:
            queue = conn.SimpleQueue(QUEUE)
            while not done.is_set():
                try:
                    message = queue.get(timeout=0.05)
                except Empty:
                    continue
                message.ack()
                with lock:
                    got.append((message.payload["from"], message.payload["n"]))

    consumers = [threading.Thread(target=consume) for _ in range(3)]
    producers = [threading.Thread(target=produce, args=(who,)) for who in range(2)]
    for thread in consumers + producers:
        thread.start()
    for thread in producers:
        thread.join(60)
    deadline = threading.Event()
    for _ in range(200):
        if len(got) >= 2 * per_producer:
            break
        deadline.wait(0.05)
    done.set()
    for thread in consumers:
        thread.join(10)
    assert sorted(got) == [(who, i) for who in range(2) for i in range(per_producer)]
    assert not (tmp_path / filebroker.UNREADABLE).exists()
    assert not list(tmp_path.glob("*.part")) and not list(tmp_path.glob(".*.part"))


def test_a_worker_lives_through_broken_message_files_and_judges_on(tmp_path):
    """The service's own worker (embedded backend): files that are not messages in its
    queue folder are set aside and logged, a message that is no task is dropped by
    Celery, task messages that made Celery's handler raise are rejected and logged; the
    worker lives on and judges the next submission."""
    service = start_service(
        tmp_path, [small_package(tmp_path)], sandbox=sandbox_for_tests(), workers=("w1",)
    )
    try:
        queue_dir = service.data_dir / "queue"
        for payload in BROKEN.values():
            drop(queue_dir, payload)
        drop(queue_dir, envelope(tmp_path, {"not": "a task"}))  # kombu's, not Celery's
        for headers in MALFORMED_TASKS:
            drop(queue_dir, task_message(headers))
        token = service.add_team("red", "alice")
        sub = service.submit(token, "mini-gpt2", ROOT / "reference_solutions" / "naive.py")
        done = service.wait_done(token, sub["id"], timeout=120)
        assert done["status"] == "done", done["status_detail"]
        assert service.procs["w1"].poll() is None, service.log("w1")[-3000:]
        assert len(list((queue_dir / filebroker.UNREADABLE).iterdir())) == len(BROKEN)
        log = service.log("w1")
        assert log.count("is not a message") == len(BROKEN)
        assert "unknown message" in log
        assert log.count("malformed task message") == len(MALFORMED_TASKS)
    finally:
        service.stop()


def test_a_table_file_being_written_is_waited_for(tmp_path):
    """Kombu writes an exchange's table after creating its file: a publisher that reads
    it in between waits for the writer instead of failing."""
    with connection(tmp_path) as conn:
        conn.SimpleQueue(QUEUE)
        table = tmp_path / "control" / f"{QUEUE}.exchange"
        whole = table.read_bytes()
        table.write_bytes(b"")
        writer = threading.Timer(0.1, table.write_bytes, args=(whole,))
        writer.start()
        assert [list(q) for q in conn.default_channel.get_table(QUEUE)] == json.loads(whole)
        writer.join()


def test_a_directory_named_as_a_message_is_set_aside(tmp_path):
    with connection(tmp_path) as conn:
        queue = conn.SimpleQueue(QUEUE)
        odd = tmp_path / f"0_{filebroker.message_name(QUEUE)}"
        odd.mkdir()
        queue.put({"n": 1})
        assert queue.get(timeout=2).payload == {"n": 1}
        assert (tmp_path / filebroker.UNREADABLE / odd.name).is_dir()


def test_a_torn_table_is_made_again_and_binders_at_once_lose_no_binding(tmp_path):
    """A table that never parses (an older process's torn write) is made again by the
    next binding; eight processes binding at once to a new exchange all end up in it."""
    with connection(tmp_path) as conn:
        table = tmp_path / "control" / f"{QUEUE}.exchange"
        table.parent.mkdir()
        table.write_bytes(b'[["memorace", "", "memorace"]]]]')
        conn.SimpleQueue(QUEUE).put({"n": 2})
        assert conn.SimpleQueue(QUEUE).get(timeout=2).payload == {"n": 2}
        assert json.loads(table.read_bytes()) == [[QUEUE, "", QUEUE]]

    def bind(i: int) -> None:
        with connection(tmp_path, clear=False) as conn:
            conn.default_channel.exchange_declare("fan", "direct")
            conn.default_channel.queue_declare(f"q{i}")
            conn.default_channel.queue_bind(f"q{i}", "fan", f"k{i}")

    with connection(tmp_path):
        pass  # clears this process's memory of bindings once, before the threads
    threads = [threading.Thread(target=bind, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    rows = json.loads((tmp_path / "control" / "fan.exchange").read_bytes())
    assert sorted(rows) == sorted([f"k{i}", "", f"q{i}"] for i in range(8))


def test_sweep_removes_only_old_leftovers(tmp_path):
    """The worker's housekeeping removes what dead processes left: taken files and
    unfinished writes older than an hour; messages and fresh files stay."""
    old = time.time() - 2 * filebroker.LEFTOVER_AGE_S
    names = [f"{filebroker.TAKEN}1_a.{QUEUE}.msg", f".1_b.{QUEUE}.msg{filebroker.PART}"]
    for name in names:
        (tmp_path / name).write_bytes(b"{}")
        os.utime(tmp_path / name, (old, old))
    fresh = tmp_path / f"{filebroker.TAKEN}2_c.{QUEUE}.msg"
    fresh.write_bytes(b"{}")
    waiting = drop(tmp_path, b"{}")
    os.utime(waiting, (old, old))
    assert filebroker.sweep(tmp_path) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([fresh.name, waiting.name])


def test_a_worker_on_redis_rejects_malformed_task_messages_and_judges_on(tmp_path):
    """The same guard on the production broker (worker/consumer.py is Celery's, not the
    transport's): task messages that made Celery's handler raise are pushed straight
    into the Redis queue; the worker rejects each, lives on and judges."""
    import redis

    with postgres_database() as db_url, redis_server() as server:
        service = start_service(
            tmp_path, [small_package(tmp_path)], database_url=db_url, broker_url=server.url,
            sandbox=sandbox_for_tests(), workers=("w1",),
        )  # fmt: skip
        try:
            client = redis.Redis.from_url(server.url)
            for headers in MALFORMED_TASKS:
                client.lpush(QUEUE, task_message(headers))
            token = service.add_team("red", "alice")
            sub = service.submit(token, "mini-gpt2", ROOT / "reference_solutions" / "naive.py")
            done = service.wait_done(token, sub["id"], timeout=120)
            assert done["status"] == "done", done["status_detail"]
            assert service.procs["w1"].poll() is None, service.log("w1")[-3000:]
            assert service.log("w1").count("malformed task message") == len(MALFORMED_TASKS)
        finally:
            service.stop()
