"""`memorace problem import-torch --type online` (judge.torch_import.online, .recorded):
the package loads, its bounds equal the offset import's, events keep the recorded order,
hints are what was known at the request (never its free), hostile files are refused with
one line, and fuzzed snapshots and traces either read or fail cleanly."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from judge.cli import app
from judge.errors import CaseError, InputError
from judge.package import load_cases
from judge.torch_import.chrome import trace_buffers
from judge.torch_import.online import events_bound, import_torch_online, online_events
from judge.torch_import.package import import_torch
from judge.torch_import.recorded import (
    chrome_recordings,
    hint_value,
    read_chrome_recordings,
    read_snapshot_recordings,
    snapshot_recordings,
)
from judge.torch_import.snapshot import load_snapshot, snapshot_buffers
from judge.types import get_type
from judge.types.offset.case import parse_case_bytes as parse_offset
from judge.types.offset.verifier import lower_bound
from judge.types.online.case import case_events, format_events, parse_case_bytes
from tests.conftest import ROOT
from tests.test_import_arguments import huge_address_bomb, shared_trace_bomb
from tests.test_torch_import import _snapshot_docs

FIXTURES = ROOT / "tests" / "fixtures" / "torch"
SNAPSHOT = FIXTURES / "cuda_snapshot.pickle"
TRACE = FIXTURES / "mlp_cpu_trace.json"


def as_case(rec, alignment: int = 512):
    events, _ = online_events(rec, alignment)
    return parse_case_bytes(format_events(rec.hint_names, events).encode(), "t", 2**62)


def offset_bound(bufs) -> int:
    return lower_bound(parse_offset(bufs.csv(512).encode(), "t", 2**62))


def test_the_package_loads_and_bounds_equal_the_offset_import(tmp_path: Path):
    problem, notes = import_torch_online(
        [SNAPSHOT, TRACE], tmp_path, "online", hidden=frozenset({"mlp_cpu_trace"})
    )
    offset, offset_notes = import_torch([SNAPSHOT, TRACE], tmp_path, "offset")
    assert problem.type == "online"
    got = {lc.spec.name: lc for lc in load_cases(problem)}
    want = {lc.spec.name: lc for lc in load_cases(offset)}
    assert set(got) == set(want) == {"cuda_snapshot-cuda0", "cuda_snapshot-cuda1", "mlp_cpu_trace"}
    for name, lc in got.items():
        assert lc.lower_bound == want[name].lower_bound > 0, name
        assert lc.spec.capacity == want[name].spec.capacity, name  # the same rule
        assert lc.spec.path.suffix == ".events"
    assert got["mlp_cpu_trace"].spec.split == "hidden"
    assert len(notes) == len(offset_notes)  # the same guesses, counted alike
    assert "hints `function` `op` `stream`" in problem.statement
    assert "hints `op` `category`" in problem.statement


def test_snapshot_requests_in_recorded_order():
    """The fixture's story (tests/fixtures/torch/make_snapshot.py): a block freed in the
    recording and the two weights held throughout are requested first; then the
    recorded allocs and frees, a free_completed ending its block (or the request, when
    no completion follows)."""
    recs = read_snapshot_recordings(SNAPSHOT)
    case = as_case(recs["cuda0"])
    events = [(e[0], e[1], *e[2:3]) for e in case_events(case)]
    k = 65536
    assert events == [
        ("a", "pre5", 512), ("a", "held6", 262144), ("a", "held7", 262144),
        ("a", "a0", k), ("a", "a1", k), ("a", "a2", k), ("a", "a3", k), ("f", "a2"),
        ("a", "a4", k), ("f", "a3"), ("f", "a1"), ("f", "a4"), ("f", "pre5"),
    ]  # fmt: skip
    assert case.hint_names == ("function", "op", "stream")
    assert case.hints[0] == ("-", "-", "0")  # from before the recording: only its stream
    assert set(case.hints[1:]) == {("train.py:step", "-", "0")}
    assert [e[:2] for e in case_events(as_case(recs["cuda1"]))] == [("a", "a0")]


def _memory(doc) -> list[dict]:
    mem = [e for e in doc["traceEvents"] if e.get("name") == "[memory]"]
    return sorted(mem, key=lambda e: (e["ts"], e["args"]["Ev Idx"]))


def _innermost(doc, ev) -> dict | None:
    """By brute force: the latest-starting op of the thread spanning the event."""
    spans = [
        (o["ts"], -o["dur"], i, o)
        for i, o in enumerate(doc["traceEvents"])
        if o.get("ph") == "X" and (o["pid"], o["tid"]) == (ev["pid"], ev["tid"])
        and o["ts"] <= ev["ts"] <= o["ts"] + o["dur"]
    ]  # fmt: skip
    return max(spans, key=lambda s: s[:3])[3] if spans else None


def test_chrome_requests_in_recorded_order_with_the_enclosing_op():
    doc = json.loads(TRACE.read_bytes())
    case = as_case(read_chrome_recordings(TRACE)["cpu"])
    mem, index = _memory(doc), case.index()
    events = list(case_events(case))
    assert len(events) == len(mem) == 110
    live: dict[int, str] = {}
    for event, ev in zip(events, mem, strict=True):
        nbytes, addr = ev["args"]["Bytes"], ev["args"]["Addr"]
        if event[0] == "a":
            assert event[2] == nbytes > 0
            op = _innermost(doc, ev)
            assert event[4] == ((op["name"], op["cat"]) if op else ("-", "-"))
            live[addr] = event[1]
        else:
            assert nbytes < 0 and event[1] == live.pop(addr)
            assert case.size[index[event[1]]] == -nbytes
    assert ("aten::addmm", "cpu_op") in case.hints


def test_hints_never_depend_on_the_future():
    """Cut the recording anywhere: every request before the cut keeps its hints (so they
    cannot tell when, or whether, it is freed)."""
    doc = json.loads(TRACE.read_bytes())
    mem = _memory(doc)
    full = as_case(chrome_recordings(doc, "t")["cpu"])
    for cut in range(1, len(mem), 7):
        kept = {id(e) for e in mem[:cut]}
        part = {"traceEvents": [e for e in doc["traceEvents"] if id(e) in kept or
                                e.get("name") != "[memory]"]}  # fmt: skip
        cut_case = as_case(chrome_recordings(part, "t")["cpu"])
        assert cut_case.hints == full.hints[: len(cut_case)]
    snap = load_snapshot(SNAPSHOT.read_bytes(), "s")
    whole = as_case(snapshot_recordings(snap, "s", 10**6)["cuda0"])
    trace = snap["device_traces"][0]
    for cut in range(2, len(trace)):
        snap["device_traces"][0] = trace[:cut]
        cut_case = as_case(snapshot_recordings(snap, "s", 10**6)["cuda0"])
        hints = {b: h for b, h in zip(cut_case.ids, cut_case.hints, strict=True)}
        assert all(whole.hints[whole.index()[b]] == h for b, h in hints.items() if b[0] == "a")


def test_stack_hints_python_frame_and_operator(tmp_path: Path):
    """The innermost Python frame names the function; the innermost ATen operator above
    it the op; a frame list or a long name shared by every entry is read once."""
    stack = [{"filename": "??", "line": 0, "name": "c10::alloc"},
             {"filename": "", "line": 0, "name": "at::_ops::addmm::call(at::Tensor const&)"},
             {"filename": "/x/torch/nn/modules/linear.py", "line": 125, "name": "forward"},
             {"filename": "", "line": 0, "name": "at::_ops::mm::call()"}]  # fmt: skip
    long_name = {"filename": "a.cpp", "line": 1, "name": "at::_ops::bmm::x" + "y" * 2**20}
    big = [{"filename": "b.cpp", "line": 1, "name": "z"}] * 200_000 + [long_name]
    trace = [{"action": "alloc", "addr": i, "size": 8, "stream": 7, "frames": stack}
             for i in range(3)]  # fmt: skip
    trace += [{"action": "alloc", "addr": 99 + i, "size": 8, "frames": big} for i in range(50_000)]
    trace += [{"action": "alloc", "addr": 9, "size": 8, "frames": [long_name], "stream": 2**70}]
    path = tmp_path / "s.pickle"
    path.write_bytes(pickle.dumps({"segments": [], "device_traces": [trace]}, protocol=4))
    hints = read_snapshot_recordings(path)["cuda0"].hints
    assert hints[0] == ("linear.py:forward", "aten::addmm", "7")
    assert set(hints[3:-1]) == {("-", "-", "-")}  # past MAX_FRAMES: not looked at
    assert hints[-1] == ("-", "aten::bmm", "-")


def run_cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["problem", "import-torch", *args])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code, result.output


def one_line_error(code: int, output: str) -> str:
    lines = [line for line in output.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1 and lines[0].startswith("error: "), output
    return lines[0]


def test_cli_online(tmp_path: Path):
    args = ["--slug", "o", "--dest", str(tmp_path), "--capacity", str(2**30), "--alignment", "64"]
    code, output = run_cli(str(TRACE), "--type", "online", *args)
    assert code == 0, output
    toml = (tmp_path / "o" / "problem.toml").read_text()
    assert 'type = "online"' in toml and "capacity = 1073741824" in toml
    text = (tmp_path / "o" / "data" / "public" / "mlp_cpu_trace.events").read_text()
    assert text.startswith("hints op category\na a0 16384 64 aten::addmm cpu_op\n")


class Runs:
    """Unpickling this would run a command: refused before anything runs."""

    def __reduce__(self):
        return (os.system, ("true",))


def test_bad_inputs_are_one_line_errors(tmp_path: Path):
    def mem(addr: int, nbytes) -> dict:
        args = {"Addr": addr, "Bytes": nbytes, "Device Type": 1, "Device Id": 0}
        return {"name": "[memory]", "ph": "i", "ts": 1, "args": args}

    files = {
        "huge.json": ({"traceEvents": [mem(0, 2**63)]}, "an allocation of 9223372036854775808"),
        "noargs.json": ({"traceEvents": [{"name": "[memory]"}]}, "needs an 'args' object"),
        "zero.json": ({"traceEvents": [mem(0, 0)]}, "no [memory] events"),
        "none.pickle": ({"segments": [], "device_traces": [[{"action": "oom"}]]}, "no alloc"),
        "nomem.json": ({"traceEvents": [{"name": "aten::mm", "ph": "X"}]}, "no [memory] events"),
        "code.pickle": (None, "refers to posix.system"),
    }
    for name, (doc, message) in files.items():
        path = tmp_path / name
        if name.endswith(".pickle"):
            path.write_bytes(pickle.dumps(doc if doc is not None else Runs(), protocol=4))
        else:
            path.write_text(json.dumps(doc))
        code, output = run_cli(str(path), "--type", "online", "--slug", "b", "--dest",
                               str(tmp_path / "out"))  # fmt: skip
        line = one_line_error(code, output)
        assert message is None or message in line, line
    line = one_line_error(*run_cli(str(TRACE), "--type", "offload", "--slug", "b"))
    assert "--type must be offset or online" in line
    line = one_line_error(*run_cli(str(tmp_path / "none.json"), "--type", "online", "--slug", "b"))
    assert "file not found" in line
    assert not (tmp_path / "out" / "b").exists()


@pytest.mark.parametrize(
    ("name", "make", "message"),
    [
        ("traces", lambda: shared_trace_bomb(2_000_000), "refers to one object 2,000,000 times"),
        ("huge int", lambda: huge_address_bomb(20_000), "not a 64-bit address or size"),
    ],
)
def test_memo_bombs_are_refused_on_the_online_path(tmp_path: Path, name, make, message):
    path = tmp_path / f"{name}.pickle"
    path.write_bytes(make())
    code = (
        "import sys\nfrom judge.cli import app\n"
        "sys.argv = ['memorace', 'problem', 'import-torch', sys.argv[1], '--type', 'online',"
        " '--slug', 'b', '--dest', sys.argv[2]]\napp()\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, str(path), str(tmp_path / "out")],
        cwd=ROOT, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 2 and message in proc.stderr, proc.stderr
    assert proc.stderr.count("\n") == 1 and not (tmp_path / "out" / "b").exists()


# Fuzz: the new reader path fails only with InputError, and wherever both imports read
# a file, the online case's bound is the offset import's.


def _check_same_bound(recs, bufs) -> None:
    assert set(recs) == set(bufs)
    for device, rec in recs.items():
        try:
            case = as_case(rec)
        except InputError as exc:  # sizes over 2^62: the offset import's CSV refuses them too
            assert "2^62" in str(exc)
            continue
        bound = get_type("online").lower_bound(case)
        assert bound == events_bound(online_events(rec, 512)[0]) == offset_bound(bufs[device])
        assert len(case.ids) == len(set(case.ids))


def _frames() -> st.SearchStrategy:
    frame = st.fixed_dictionaries(
        {"filename": st.sampled_from(["m.py", "x.cpp", "", 3]),
         "name": st.one_of(st.sampled_from(["at::_ops::mm::call", "f g", "é"]), st.none())}
    )  # fmt: skip
    return st.one_of(st.lists(frame, max_size=3), st.none(), st.integers())


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(doc=_snapshot_docs(), frames=st.lists(_frames(), max_size=6), protocol=st.integers(2, 5))
def test_fuzz_snapshot_online(tmp_path_factory, doc, frames, protocol: int):
    for k, entry in enumerate(e for t in doc["device_traces"] for e in t if isinstance(e, dict)):
        if frames:
            entry["frames"] = frames[k % len(frames)]
    path = tmp_path_factory.mktemp("s") / "s.pickle"
    path.write_bytes(pickle.dumps(doc, protocol=protocol))
    data = path.read_bytes()
    try:
        recs = read_snapshot_recordings(path)
    except InputError as exc:
        assert str(exc)
        with pytest.raises(InputError):  # the offset import refuses it too
            snapshot_buffers(load_snapshot(data, path), path, len(data))
        return
    _check_same_bound(recs, snapshot_buffers(load_snapshot(data, path), path, len(data)))


def _trace_events() -> st.SearchStrategy:
    thread = st.sampled_from([1, 2, "t", None])
    mem = st.builds(
        lambda ts, idx, addr, nbytes, dtype, thread: {
            "name": "[memory]", "ts": ts, "pid": 1, "tid": thread,
            "args": {"Addr": addr, "Bytes": nbytes, "Device Type": dtype, "Device Id": 0,
                     "Ev Idx": idx}},
        st.integers(0, 20), st.integers(0, 5), st.integers(0, 6),
        st.sampled_from([-512, -64, 0, 64, 512, 2**63]), st.sampled_from([0, 1]), thread,
    )  # fmt: skip
    op = st.builds(
        lambda ts, dur, name, cat, thread: {"name": name, "ph": "X", "ts": ts, "dur": dur,
                                            "cat": cat, "pid": 1, "tid": thread},
        st.one_of(st.integers(0, 20), st.floats()), st.one_of(st.integers(-1, 10), st.text()),
        st.text(max_size=4), st.one_of(st.text(max_size=3), st.none()), thread,
    )  # fmt: skip
    junk = st.dictionaries(st.sampled_from(["name", "ph", "ts"]), st.integers(), max_size=3)
    return st.lists(st.one_of(mem, op, junk), max_size=25)


@settings(max_examples=300, deadline=None)
@given(events=_trace_events())
def test_fuzz_chrome_online(events: list):
    doc = {"traceEvents": events}
    try:
        recs = chrome_recordings(doc, "t")
    except CaseError:
        with pytest.raises(CaseError):
            trace_buffers(doc, "t")
        return
    _check_same_bound(recs, trace_buffers(doc, "t"))
    for rec in recs.values():  # each alloc's op is the innermost span of its thread
        mem = sorted((e for e in events if e.get("name") == "[memory]"
                      and e["args"]["Bytes"] and ("cpu" if e["args"]["Device Type"] == 0
                                                  else "cuda0") == rec_device(recs, rec)),
                     key=lambda e: (e["ts"], e["args"]["Ev Idx"]))  # fmt: skip
        for ev, event, hints in zip(mem, rec.events, rec.hints, strict=True):
            assert event.size == abs(ev["args"]["Bytes"])
            op = _innermost_fuzzed(events, ev) if event.kind == "alloc" else None
            assert hints == ((hint_value(op["name"]), hint_value(op["cat"])) if op else ("-", "-"))


def rec_device(recs, rec) -> str:
    return next(d for d, r in recs.items() if r is rec)


def _innermost_fuzzed(events: list, ev: dict) -> dict | None:
    spans = [
        (o["ts"], -o["dur"], i, o)
        for i, o in enumerate(events)
        if o.get("ph") == "X" and o.get("tid") == ev["tid"]
        and isinstance(o["dur"], int) and o["dur"] >= 0 and o["ts"] == o["ts"]
        and abs(o["ts"]) != float("inf") and o["ts"] <= ev["ts"] <= o["ts"] + o["dur"]
    ]  # fmt: skip
    return max(spans, key=lambda s: s[:3])[3] if spans else None
