"""The importers' arguments and hostile inputs: every bad `memorace problem import-torch` /
`import-minimalloc` argument is one line of error and exit 2, never a traceback; snapshot
pickles that share one object through the memo are refused after bounded work."""

from __future__ import annotations

import pickle
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from judge.cli import app
from judge.errors import CaseError
from judge.torch_import.snapshot import read_snapshot, visit_limit
from tests.conftest import ROOT

TRACE = ROOT / "tests" / "fixtures" / "torch" / "mlp_cpu_trace.json"
SNAPSHOT = ROOT / "tests" / "fixtures" / "torch" / "cuda_snapshot.pickle"


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["problem", *args])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    assert "Traceback" not in result.output
    return result.exit_code, result.output


def error_line(code: int, output: str) -> str:
    assert code == 2, output
    lines = [line for line in output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), output
    return lines[0]


@pytest.fixture
def minimalloc(tmp_path: Path) -> Path:
    src = tmp_path / "cases"
    src.mkdir()
    (src / "a.100.csv").write_text("id,lower,upper,size\n0,0,2,4\n1,1,3,4\n")
    return src


BAD_SLUGS = ["../x", "", "a/b", "..", ".", "ABC", "a b", "-x", "x" * 65, "[/red]", "a\nb"]


@pytest.mark.parametrize("slug", BAD_SLUGS)
def test_bad_slugs(tmp_path: Path, minimalloc: Path, slug: str):
    for args in (["import-torch", str(TRACE)], ["import-minimalloc", str(minimalloc)]):
        line = error_line(*run(*args, "--slug", slug, "--dest", str(tmp_path / "d")))
        assert "a slug is 1 to 64 lowercase letters" in line
    assert not (tmp_path / "x").exists() and not any((tmp_path / "d").glob("*"))


@pytest.mark.parametrize("capacity", ["0", "-5", str(2**62 + 1), "9" * 50])
def test_bad_capacities(tmp_path: Path, minimalloc: Path, capacity: str):
    for args in (["import-torch", str(TRACE)], ["import-minimalloc", str(minimalloc)]):
        line = error_line(
            *run(*args, "--slug", "p", "--capacity", capacity, "--dest", str(tmp_path))
        )
        assert "--capacity" in line and "from 1 to 2^62" in line


def test_non_integer_capacity_is_a_usage_error(tmp_path: Path):
    code, output = run("import-torch", str(TRACE), "--slug", "p", "--capacity", "1.5")
    assert code == 2 and "Invalid value for '--capacity'" in output


def test_hidden_must_name_a_case(tmp_path: Path, minimalloc: Path):
    line = error_line(*run("import-torch", str(TRACE), "--slug", "p", "--hidden", "mlp",
                           "--dest", str(tmp_path)))  # fmt: skip
    assert "--hidden 'mlp': no case has that name; the cases are: mlp_cpu_trace" in line
    line = error_line(*run("import-minimalloc", str(minimalloc), "--slug", "p", "--hidden", "b",
                           "--dest", str(tmp_path)))  # fmt: skip
    assert "the cases are: a" in line
    assert not (tmp_path / "p").exists()
    code, output = run("import-minimalloc", str(minimalloc), "--slug", "p", "--hidden", "a.100",
                       "--dest", str(tmp_path))  # fmt: skip
    assert code == 0, output  # the file's stem names the case too
    assert 'split = "hidden"' in (tmp_path / "p" / "problem.toml").read_text()


def test_bad_files_and_destinations(tmp_path: Path, minimalloc: Path):
    not_a_folder = tmp_path / "file"
    not_a_folder.write_text("x")
    cases = [
        (["import-torch", str(tmp_path / "missing.json")], "file not found"),
        (["import-torch", str(tmp_path)], "is a directory, not a file"),
        (["import-minimalloc", str(tmp_path / "missing")], "not found"),
        (["import-minimalloc", str(not_a_folder)], "is not a folder"),
        (["import-torch", str(TRACE), "--dest", str(not_a_folder)], "--dest is not a folder"),
        (["import-minimalloc", str(minimalloc), "--dest", str(not_a_folder)], "not a folder"),
    ]
    for args, message in cases:
        line = error_line(*run(*args, "--slug", "p"))
        assert message in line, (args, line)
    code, output = run("import-torch", "a\0b", "--slug", "p")  # typer's own usage error
    assert code == 2 and "embedded null byte" in output
    (minimalloc / "b.5.csv").mkdir()  # a folder named like a case is not a case
    code, output = run("import-minimalloc", str(minimalloc), "--slug", "q", "--dest", str(tmp_path))
    assert code == 0, output
    bang = tmp_path / "!!!"
    bang.mkdir()
    line = error_line(*run("import-minimalloc", str(bang)))
    assert "cannot make a slug from the folder name '!!!'; pass --slug" in line


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    command=st.sampled_from(["import-torch", "import-minimalloc"]),
    slug=st.one_of(st.text(max_size=70), st.from_regex(r"[a-z0-9][a-z0-9-]{0,8}", fullmatch=True)),
    hidden=st.lists(st.one_of(st.text(max_size=12), st.just("mlp_cpu_trace"), st.just("a")),
                    max_size=2),
    capacity=st.one_of(st.none(), st.text(max_size=8), st.integers(-(2**70), 2**70).map(str)),
)  # fmt: skip
def test_fuzz_import_arguments(tmp_path_factory, command, slug, hidden, capacity):
    tmp = tmp_path_factory.mktemp("fz")
    src = TRACE
    if command == "import-minimalloc":
        src = tmp / "cases"
        src.mkdir()
        (src / "a.64.csv").write_text("id,lower,upper,size\n0,0,2,4\n")
    args = [command, str(src), "--slug", slug, "--dest", str(tmp / "out")]
    args += [x for h in hidden for x in ("--hidden", h)]
    args += ["--capacity", capacity] if capacity is not None else []
    code, output = run(*args)
    assert code in (0, 2), output
    if code == 0:
        assert (tmp / "out" / slug / "problem.toml").is_file()
    elif "Usage:" not in output:  # typer's own usage errors: a box, exit 2
        error_line(code, output)


# Snapshots that share objects through the pickle memo (bytes written by hand).


def _su(text: str) -> bytes:
    raw = text.encode()
    return b"\x8c" + bytes([len(raw)]) + raw


def _entry() -> bytes:
    """{"action": "alloc", "addr": 0, "size": 512}"""
    pairs = _su("action") + _su("alloc") + _su("addr") + b"J" + struct.pack("<i", 0)
    return b"}(" + pairs + _su("size") + b"J" + struct.pack("<i", 512) + b"u"


def shared_trace_bomb(entries: int, devices: int = 1024) -> bytes:
    """device_traces = [T] * devices; T = [E] * entries (one dict, pushed again by DUP)."""
    body = b"}(" + _su("segments") + b"]" + _su("device_traces") + b"]("
    body += b"]\x94(" + _entry() + b"2" * (entries - 1) + b"e"
    body += b"h\x00" * (devices - 1) + b"eu"
    return b"\x80\x04" + body + b"."


def shared_blocks_bomb(n: int) -> bytes:
    """segments = [S] * n; S's blocks = [B] * n."""
    block = _su("state") + _su("active_allocated") + _su("address") + b"K\x00"
    block = b"}(" + block + _su("size") + b"K\x08u"
    seg = b"}(" + _su("device") + b"K\x00" + _su("blocks") + b"](" + block + b"2" * (n - 1)
    body = b"}(" + _su("device_traces") + b"]" + _su("segments") + b"](" + seg + b"eu\x94"
    return b"\x80\x04" + body + b"2" * (n - 1) + b"eu."


def tuple_key_bomb(depth: int) -> bytes:
    """{t: 0} where t = (t', t'), 'depth' levels: hashing t takes 2^depth steps."""
    return b"\x80\x04}K\x01\x85" + b"2\x86" * depth + b"K\x00s."


def nested_list_bomb(depth: int) -> bytes:
    """An entry whose 'action' is a list holding one list twice, 'depth' levels: its repr
    would take 2^depth steps."""
    inner = b"]"
    for _ in range(depth):
        inner = b"](" + inner + b"2e"  # [x, x]
    return b"\x80\x04}(" + _su("device_traces") + b"]]}" + _su("action") + inner + b"saau."


def huge_address_bomb(digits_bytes: int) -> bytes:
    """Every entry shares one integer of `digits_bytes` bytes as its address: hashed again
    at each use (an hour for 4 MB before); 20,000 bytes is past int-to-str's limit."""
    entry = {"action": "alloc", "addr": 1 << (8 * digits_bytes - 2), "size": 1}
    n = digits_bytes // 2 + 19_000
    return pickle.dumps({"device_traces": [[entry] * n], "segments": []}, protocol=4)


def test_the_bombs_are_what_they_claim():
    doc = pickle.loads(shared_trace_bomb(1000, 8))
    traces = doc["device_traces"]
    assert len(traces) == 8 and all(t is traces[0] for t in traces)
    assert len(traces[0]) == 1000 and all(e is traces[0][0] for e in traces[0])
    doc = pickle.loads(shared_blocks_bomb(50))
    assert len(doc["segments"]) == 50 and len(doc["segments"][0]["blocks"]) == 50
    action = pickle.loads(nested_list_bomb(5))["device_traces"][0][0]["action"]
    assert action[0] is action[1] and len(action) == 2


@pytest.mark.parametrize(
    ("name", "make", "message"),
    [
        ("traces", lambda: shared_trace_bomb(4_000_000), "refers to one object 4,000,000 times"),
        ("blocks", lambda: shared_blocks_bomb(1_000_000), "refers to one object 1,000,000 times"),
        ("tuple", lambda: tuple_key_bomb(60), "a dict key is a tuple"),
        ("repr", lambda: nested_list_bomb(80), "'action' must be str, got a list of 2 items"),
        ("huge int", lambda: huge_address_bomb(4096), "not a 64-bit address or size"),
        ("huger int", lambda: huge_address_bomb(20_000), "not a 64-bit address or size"),
    ],
)
def test_memo_bombs_are_refused_in_bounded_work(tmp_path: Path, name, make, message):
    """Before: minutes to days of work for a 4 MB file. A generous timeout, no timing."""
    path = tmp_path / f"{name}.pickle"
    path.write_bytes(make())
    code = (
        "import sys; from pathlib import Path\n"
        "from judge.cli import app\n"
        "sys.argv = ['memorace', 'problem', 'import-torch', sys.argv[1], '--slug', 'b',"
        " '--dest', sys.argv[2]]\n"
        "app()\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, str(path), str(tmp_path / "out")],
        cwd=ROOT, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr and "Traceback" not in proc.stderr
    assert proc.stderr.count("\n") == 1, proc.stderr
    assert not (tmp_path / "out" / "b").exists()


def test_distinct_entries_never_reach_the_limit(tmp_path: Path):
    """The smallest entries the reader accepts, all distinct: read in full."""
    n = 50_000
    entries = [{"action": "alloc", "addr": i, "size": 1} for i in range(n)]
    entries += [{"action": "oom"} for _ in range(n)]
    path = tmp_path / "many.pickle"
    path.write_bytes(pickle.dumps({"segments": [], "device_traces": [entries]}, protocol=4))
    assert 2 * n < visit_limit(path.stat().st_size)
    assert len(read_snapshot(path)["cuda0"]) == n
    shared = pickle.dumps({"segments": [], "device_traces": [entries[:n]] * 3}, protocol=4)
    path.write_bytes(shared)  # a little sharing within the limit is read
    assert len(read_snapshot(path)) == 3


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ({frozenset({1}): 2}, "holds a set|refers to .*frozenset"),
        ({"device_traces": [], "x": {1, 2}}, "holds a set|refers to .*set"),
        ({2**65: 1}, "a dict key is an integer over 64 bits"),
        ({(1, 2): 1}, "a dict key is a tuple"),
    ],
)
def test_what_a_snapshot_never_holds_is_refused(tmp_path: Path, doc, message: str):
    path = tmp_path / "s.pickle"
    for protocol in range(6):
        path.write_bytes(pickle.dumps(doc, protocol=protocol))
        with pytest.raises(CaseError, match=message):
            read_snapshot(path)


def test_a_pytorch_shaped_snapshot_still_reads(tmp_path: Path):
    """Tuples as values (segment_pool_id), int keys, frames shared by entries: all fine."""
    doc = pickle.loads(SNAPSHOT.read_bytes())
    frames = [{"filename": "model.py", "line": 3, "name": "forward"}]
    for entry in doc["device_traces"][0]:
        entry["frames"] = frames
    for seg in doc["segments"]:
        seg["segment_pool_id"] = (0, 0)
    doc["allocator_settings"] = {"roundup_power2_divisions": {1: 4, 2**63: 8}, "x": 0.5}
    path = tmp_path / "s.pickle"
    for protocol in range(6):
        path.write_bytes(pickle.dumps(doc, protocol=protocol))
        assert read_snapshot(path) == read_snapshot(SNAPSHOT)
