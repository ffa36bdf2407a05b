"""Importers of PyTorch's memory files (judge.torch_import): a CUDA snapshot made by hand
to PyTorch's documented structure, a Chrome trace PyTorch's profiler wrote, hostile
files (code in a pickle, a 1 GB file, truncated JSON), and fuzzed bytes of both."""

from __future__ import annotations

import json
import os
import pickle
import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from judge.errors import CaseError, InputError
from judge.package import load_cases
from judge.torch_import.chrome import read_chrome_trace
from judge.torch_import.package import import_torch
from judge.torch_import.snapshot import read_snapshot
from tests.conftest import ROOT

FIXTURES = ROOT / "tests" / "fixtures" / "torch"
SNAPSHOT = FIXTURES / "cuda_snapshot.pickle"
TRACE = FIXTURES / "mlp_cpu_trace.json"


def rows(bufs) -> list[tuple[int, int, int]]:
    return sorted(zip(bufs.lower, bufs.upper, bufs.size, strict=True))


def test_snapshot_events_become_buffers_in_event_order():
    per_device = read_snapshot(SNAPSHOT)
    assert set(per_device) == {"cuda0", "cuda1"}
    cuda0 = per_device["cuda0"]
    assert rows(cuda0) == [
        (0, 10, 512),  # freed in the recording, allocated before it: from time 0
        (0, 11, 262144),  # the weights: held in the segments, no event: throughout
        (0, 11, 262144),
        (1, 11, 65536),  # x: allocated, never freed: to the end
        (2, 8, 65536),  # h: ends at its free_completed
        (3, 5, 65536),  # y
        (4, 7, 65536),  # gy
        (6, 9, 65536),  # gh: a request with no completion ends it
    ]
    assert sum(cuda0.guessed.values()) == 4
    assert rows(per_device["cuda1"]) == [(1, 2, 1024)]


def test_chrome_trace_written_by_pytorch():
    per_device = read_chrome_trace(TRACE)
    assert list(per_device) == ["cpu"]
    cpu = per_device["cpu"]
    assert len(cpu) == 55 and not cpu.guessed  # the warm-up step made the optimizer state
    assert all(lo < up for lo, up, _ in rows(cpu))


def test_import_torch_writes_a_valid_package(tmp_path: Path):
    problem, notes = import_torch([SNAPSHOT, TRACE], tmp_path, "recorded", hidden={"mlp_cpu_trace"})
    loaded = {lc.spec.name: lc for lc in load_cases(problem)}
    assert set(loaded) == {"cuda_snapshot-cuda0", "cuda_snapshot-cuda1", "mlp_cpu_trace"}
    assert loaded["mlp_cpu_trace"].spec.split == "hidden"
    for lc in loaded.values():  # the shipped problems' rule
        assert lc.lower_bound * 1.25 < lc.spec.capacity <= lc.lower_bound * 1.25 + 2**20
    assert "CUDA memory snapshot" in problem.statement and "Chrome trace" in problem.statement
    assert any("live from time 0" in n for n in notes)


def test_cli_import_torch(tmp_path: Path):
    from typer.testing import CliRunner

    from judge.cli import app

    result = CliRunner().invoke(
        app, ["problem", "import-torch", str(TRACE), "--slug", "mlp", "--dest", str(tmp_path),
              "--capacity", str(2**30)],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "imported 1 cases" in result.output
    assert "capacity = 1073741824" in (tmp_path / "mlp" / "problem.toml").read_text()


class Payload:
    """Unpickling this runs os.system: the reader must refuse it before anything runs."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


@pytest.mark.parametrize("where", ["top", "inside"])
def test_a_pickle_with_code_is_refused_and_nothing_runs(tmp_path: Path, where: str):
    marker = tmp_path / "ran"
    payload = Payload(marker)
    doc = payload if where == "top" else {"segments": [], "device_traces": [[payload]]}
    path = tmp_path / "evil.pickle"
    path.write_bytes(pickle.dumps(doc))
    with pytest.raises(CaseError, match=r"refers to posix.system.*nothing in it was run"):
        read_snapshot(path)
    with pytest.raises(InputError, match="refused"):
        import_torch([path], tmp_path / "out", "evil")
    assert not marker.exists() and not (tmp_path / "out" / "evil").exists()


def test_hostile_files_get_clear_errors(tmp_path: Path):
    huge = tmp_path / "huge.json"
    with huge.open("wb") as f:
        f.truncate(2**30)  # sparse: 1 GB without writing it
    with pytest.raises(CaseError, match="the limit here is"):
        read_chrome_trace(huge)
    with pytest.raises(CaseError, match="the limit here is"):
        read_snapshot(huge)
    cut = tmp_path / "cut.json"
    cut.write_bytes(TRACE.read_bytes()[:5000])
    with pytest.raises(CaseError, match="not JSON"):
        read_chrome_trace(cut)
    cut_pickle = tmp_path / "cut.pickle"
    cut_pickle.write_bytes(SNAPSHOT.read_bytes()[:700])
    with pytest.raises(CaseError, match="not a memory snapshot: pickle data was truncated"):
        read_snapshot(cut_pickle)
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(CaseError, match=r"nested too deeply|no 'traceEvents'"):
        read_chrome_trace(deep)
    other = tmp_path / "other.bin"
    other.write_bytes(b"PK\x03\x04")
    with pytest.raises(InputError, match="neither a memory snapshot"):
        import_torch([other], tmp_path / "o", "other")


def _snapshot_docs() -> st.SearchStrategy:
    """Snapshot-shaped documents with random fields, actions and types."""
    scalar = st.one_of(st.integers(-3, 2**70), st.text(max_size=5), st.none(), st.booleans())
    action = st.sampled_from(
        ["alloc", "free_requested", "free_completed", "free", "segment_alloc", "oom", "x"]
    )
    entry = st.fixed_dictionaries(
        {"action": st.one_of(action, scalar), "addr": st.one_of(st.integers(0, 64), scalar),
         "size": st.one_of(st.integers(0, 2**20), scalar)}
    )  # fmt: skip
    block = st.fixed_dictionaries(
        {"address": st.one_of(st.integers(0, 64), scalar), "size": st.integers(-1, 99),
         "state": st.sampled_from(["active_allocated", "inactive", 3])}
    )  # fmt: skip
    segment = st.fixed_dictionaries(
        {"device": st.one_of(st.integers(0, 2), scalar), "blocks": st.lists(block, max_size=3)}
    )
    return st.fixed_dictionaries(
        {"segments": st.one_of(st.lists(segment, max_size=3), scalar),
         "device_traces": st.lists(st.lists(st.one_of(entry, scalar), max_size=12), max_size=3)}
    )  # fmt: skip


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(doc=_snapshot_docs(), protocol=st.integers(0, 5))
def test_fuzz_snapshot_documents(tmp_path_factory, doc, protocol: int):
    path = tmp_path_factory.mktemp("s") / "s.pickle"
    path.write_bytes(pickle.dumps(doc, protocol=protocol))
    _only_clear_errors(read_snapshot, path)


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_fuzz_mutated_files(tmp_path_factory, data: st.DataObject):
    source = data.draw(st.sampled_from([SNAPSHOT, TRACE]))
    raw = bytearray(source.read_bytes() if source == SNAPSHOT else _small_trace())
    rng = random.Random(data.draw(st.integers(0, 2**32)))
    for _ in range(data.draw(st.integers(1, 8))):
        at = rng.randrange(len(raw))
        choice = rng.random()
        if choice < 0.4:
            raw[at] = rng.randrange(256)
        elif choice < 0.7:
            del raw[at : at + rng.randrange(1, 40)]
        else:
            raw[at:at] = raw[rng.randrange(len(raw)) :][: rng.randrange(1, 40)]
    path = tmp_path_factory.mktemp("m") / source.name
    path.write_bytes(bytes(raw))
    reader = read_snapshot if source == SNAPSHOT else read_chrome_trace
    _only_clear_errors(reader, path)
    _only_clear_errors(lambda p: import_torch([p], path.parent / "out", "fz"), path)


def _memory_events() -> st.SearchStrategy:
    keys = st.sampled_from(["Addr", "Bytes", "Device Type", "Device Id", "Ev Idx"])
    values = st.one_of(st.integers(-(2**64), 2**64), st.floats(), st.text(max_size=3))
    return st.fixed_dictionaries(
        {"name": st.just("[memory]"), "ts": st.one_of(st.integers(), st.floats()),
         "args": st.dictionaries(keys, values)}
    )  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(
    events=st.lists(
        st.one_of(_memory_events(), st.dictionaries(st.text(max_size=4), st.integers())),
        max_size=20,
    ),
    wrap=st.booleans(),
)
def test_fuzz_trace_events(tmp_path_factory, events: list, wrap: bool):
    path = tmp_path_factory.mktemp("t") / "t.json"
    path.write_text(json.dumps({"traceEvents": events} if wrap else events))
    _only_clear_errors(read_chrome_trace, path)


def _small_trace() -> bytes:
    doc = json.loads(TRACE.read_bytes())
    mem = [e for e in doc["traceEvents"] if e.get("name") == "[memory]"][:12]
    return json.dumps({"traceEvents": mem}).encode()


def _only_clear_errors(reader, path: Path) -> None:
    try:
        reader(path)
    except InputError as exc:
        assert str(exc)


def test_chrome_trace_devices_and_order(tmp_path: Path):
    """Events sort by time then event index; a case per device; frees of blocks from
    before the recording live from time 0."""

    def mem(ts, idx, addr, nbytes, dtype=1, did=0):
        args = {"Addr": addr, "Bytes": nbytes, "Device Type": dtype, "Device Id": did,
                "Ev Idx": idx}  # fmt: skip
        return {"ph": "i", "name": "[memory]", "ts": ts, "args": args}

    events = [mem(5, 3, 64, -512), mem(1, 1, 64, 512), mem(1, 0, 0, 1024), mem(2, 2, 0, -1024)]
    events += [mem(3, 4, 9, -256), mem(1, 5, 7, 128, 0, -1), {"name": "aten::mm", "ph": "X"}]
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"traceEvents": events}))
    per_device = read_chrome_trace(path)
    assert set(per_device) == {"cuda0", "cpu"}
    assert rows(per_device["cuda0"]) == [(0, 4, 256), (1, 3, 1024), (2, 5, 512)]
    assert rows(per_device["cpu"]) == [(1, 2, 128)]
