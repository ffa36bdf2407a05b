"""Issue 38's trace-tool findings, one test each (each failed before its fix): messages
keep their square brackets; an unknown --hidden name is an error; --dest defaults to
./problems of the current directory; an import prints the lower bounds; `memorace
trace` without PyTorch says to install the extra and checks its arguments against the
model; what it writes imports (offset and online); gzip traces are read, within the
limit, and the new reader is fuzzed."""

from __future__ import annotations

import gzip
import importlib.util
import json
import lzma
import os
import random
import shlex
import subprocess
import sys
import tracemalloc
import zlib
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from client import cli as client_cli
from judge.cli import app as judge_app
from judge.errors import CaseError, InputError
from judge.package import load_cases, load_problem
from tests.client_fakes import mock_client
from tests.conftest import ROOT
from tests.fuzzing import FUZZ, inputs, random_input, sweep
from tracer.trace_file import write_trace

CHROME = ROOT / "tests" / "fixtures" / "torch" / "mlp_cpu_trace.json"
CATEGORIES = ["parameter", "optimizer_state", "gradient", "kv_cache", "input", "activation",
              "temporary"]  # fmt: skip


def small_trace() -> dict[str, Any]:
    """A version-1 `memorace-torch-trace` (tracer/TRACE_FORMAT.md) of 4 ops: a weight
    live throughout, a temporary, an activation, and one more temporary. At op 1 the
    first three are live: 4096 + 1000 + 2048 = 7144 bytes, the lower bound."""
    return {
        "format": "memorace-torch-trace", "version": 1,
        "provenance": {"command": "memorace trace train --model gpt2-tiny --out t.json.xz"},
        "categories": CATEGORIES, "op_names": ["add", "mm"],
        "ops": {"name": [1, 0, 1, 0], "flops": [8, 0, 8, 0], "bytes": [1, 1, 1, 1]},
        "tensors": {
            "size": [4096, 1000, 2048, 512], "lower": [0, 0, 1, 2], "upper": [4, 2, 3, 4],
            "op": [-1, 0, 1, 2], "category": [0, 6, 5, 6],
        },
    }  # fmt: skip


BOUND = 7144


def run(app: Any, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    assert "Traceback" not in result.output
    return result.exit_code, result.output


# --- messages keep their brackets ----------------------------------------------------------------


def test_an_error_keeps_the_brackets_of_its_message(tmp_path: Path):
    """The issue's example; console.fail already printed it as Text (a guard: it
    passed before this change too)."""
    empty = tmp_path / "empty.json"
    empty.write_text('{"traceEvents": [{"name": "x", "ph": "X"}]}')
    code, output = run(judge_app, "problem", "import-torch", str(empty), "--slug", "p",
                       "--dest", str(tmp_path))  # fmt: skip
    assert code == 2
    assert "no [memory] events: record with profile_memory=True" in output


def test_verify_prints_ids_from_the_case_as_they_are(tmp_path: Path):
    case, plan = tmp_path / "c.csv", tmp_path / "p.csv"
    case.write_text("id,lower,upper,size\n[red]a[/red],0,2,8\n[b],1,3,8\n")
    plan.write_text("id,offset\n[red]a[/red],0\n[b],4\n")
    code, output = run(judge_app, "verify", str(case), str(plan), "--capacity", "64")
    assert code == 1
    assert "[red]a[/red]" in output and "[b]" in output, output


def test_a_build_error_keeps_the_compiler_s_brackets(capsys: pytest.CaptureFixture[str]):
    from types import SimpleNamespace

    from judge import cli as judge_cli

    message = "planner.cpp:3: error: no match for 'operator+' [with T = int]"
    report = SimpleNamespace(
        build_error=message, planner="planner.cpp", problem="p", sandbox="local",
        as_dict=lambda: {"cases": [], "public_score": None, "hidden_score": None},
    )  # fmt: skip
    judge_cli._print_report(report)
    assert message in capsys.readouterr().err


def test_a_team_name_in_a_table_prints_verbatim(monkeypatch: pytest.MonkeyPatch):
    board = {"problem": "p", "rows": [
        {"rank": 1, "team": "[red]x[/red]", "public_score": 0.5, "hidden_score": None,
         "submission_id": 3, "submitted_at": "2026-01-01"},
    ]}  # fmt: skip
    client = mock_client(lambda request: httpx.Response(200, json=board))
    monkeypatch.setattr(client_cli, "connect", lambda: client)
    code, output = run(client_cli.app, "leaderboard", "p")
    assert code == 0 and "[red]x[/red]" in output, output


# --- the import's arguments and output -----------------------------------------------------------


@pytest.mark.parametrize("type_", ["offset", "online"])
def test_an_unknown_hidden_name_is_an_error(tmp_path: Path, type_: str):
    code, output = run(judge_app, "problem", "import-torch", str(CHROME), "--slug", "p",
                       "--type", type_, "--hidden", "mlp", "--dest", str(tmp_path))  # fmt: skip
    assert code == 2 and "--hidden 'mlp': no case has that name" in output
    assert not (tmp_path / "p").exists()


def test_dest_defaults_to_problems_in_the_current_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    slug = "trace-findings-default-dest"
    shipped = ROOT / "problems" / slug
    monkeypatch.chdir(tmp_path)
    try:
        code, output = run(judge_app, "problem", "import-torch", str(CHROME), "--slug", slug)
        assert code == 0, output
        assert (tmp_path / "problems" / slug / "problem.toml").is_file()
        assert not shipped.exists()
    finally:
        if shipped.is_dir():  # what the old default did: clean the checkout up
            import shutil

            shutil.rmtree(shipped)
    code, output = run(judge_app, "problem", "import-torch", "--help")
    assert "./problems" in output


def test_an_import_prints_each_case_with_its_lower_bound(tmp_path: Path):
    trace = tmp_path / "step.json.xz"
    write_trace(trace, small_trace())
    code, output = run(judge_app, "problem", "import-torch", str(trace), "--slug", "p",
                       "--dest", str(tmp_path))  # fmt: skip
    assert code == 0, output
    assert "lower bound" in output and str(BOUND) in output, output


# --- memorace trace: the extra and the arguments -------------------------------------------------

NO_TORCH = "import sys; sys.modules['torch'] = None; from client.main import main; main()"


def test_trace_without_pytorch_says_to_install_the_extra(tmp_path: Path):
    """sys.modules['torch'] = None: as if the extra were absent (CI installs it)."""
    argv = ["trace", "train", "--model", "gpt2-tiny", "--seq", "16",
            "--out", str(tmp_path / "t.json.xz")]  # fmt: skip
    done = subprocess.run([sys.executable, "-c", NO_TORCH, *argv], cwd=ROOT,
                          capture_output=True, text=True)  # fmt: skip
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 1
    assert "pip install -e '.[trace]'" in done.stderr
    assert not (tmp_path / "t.json.xz").exists()


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["train", "--model", "gpt2-tiny", "--stages", "2", "--stage", "5"], "--stage"),
        (["train", "--model", "gpt2-tiny", "--stages", "0"], "--stages"),
        (["train", "--model", "gpt2-tiny", "--stages", "3"], "gpt2-tiny has 2 layers"),
        (["train", "--model", "gpt2-tiny", "--seq", "0"], "--seq"),
        (["train", "--model", "gpt2-tiny", "--seq", "129"], "context is 128 tokens"),
        (["train", "--model", "gpt2-xxl"], "--model"),
        (["serve", "--model", "llama-tiny", "--prompt-mean", "0"], "--prompt-mean"),
        (["vision", "--model", "vit-tiny", "--batch", "0"], "--batch"),
    ],
)
def test_trace_arguments_are_checked_against_the_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str], says: str
):
    monkeypatch.setitem(sys.modules, "torch", None)  # checked before torch is needed
    out = str(tmp_path / "t.json.xz")
    code, output = run(client_cli.app, "trace", *args, "--out", out)
    assert code == 2, output
    assert says in output, output


# --- what `memorace trace` writes imports ---------------------------------------------------------


@pytest.mark.parametrize("name", ["step.json.xz", "step.json", "step.json.gz"])
@pytest.mark.parametrize("type_", ["offset", "online"])
def test_a_recorded_trace_imports_as_a_package(tmp_path: Path, name: str, type_: str):
    trace = tmp_path / name
    text = json.dumps(small_trace(), sort_keys=True).encode()
    if name.endswith(".xz"):
        write_trace(trace, small_trace())  # the recorder's own writer
    else:
        trace.write_bytes(gzip.compress(text) if name.endswith(".gz") else text)
    code, output = run(judge_app, "problem", "import-torch", str(trace), "--slug", "rec",
                       "--type", type_, "--dest", str(tmp_path / "out"))  # fmt: skip
    assert code == 0, output
    problem = load_problem(tmp_path / "out" / "rec")
    (case,) = load_cases(problem)
    assert case.spec.name == "step" and case.lower_bound == BOUND
    assert "`memorace trace` recording" in (problem.root / "statement.md").read_text()


def documented_route() -> list[list[str]]:
    """The commands of TRACE_FORMAT.md's route from a recording to a package."""
    text = (ROOT / "tracer" / "TRACE_FORMAT.md").read_text()
    block = text.split("## From a recorded trace to a problem package")[1]
    block = block.split("```text\n")[1].split("```")[0]
    return [shlex.split(line.split("#")[0]) for line in block.splitlines()]


def test_the_documented_route_runs(tmp_path: Path):
    """As written, from an empty folder; without PyTorch (not in CI) the recording is
    stood in for by a hand-made trace at the same path."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for argv in documented_route():
        assert argv[0] == "memorace"
        if argv[1] == "trace" and importlib.util.find_spec("torch") is None:
            write_trace(tmp_path / argv[argv.index("--out") + 1], small_trace())
            continue
        done = subprocess.run([sys.executable, "-m", "client", *argv[1:]], cwd=tmp_path,
                              env=env, capture_output=True, text=True)  # fmt: skip
        assert done.returncode == 0, done.stderr
        if argv[1] == "problem" and argv[2] == "import-torch":
            assert "lower bound" in done.stdout
    assert (tmp_path / "problems" / "tiny-train" / "problem.toml").is_file()
    assert (tmp_path / "problems" / "tiny-online" / "problem.toml").is_file()


def test_trace_buffers_keep_the_trace_times_and_name_what_they_are():
    from judge.torch_import.memtrace import trace_buffers, trace_recordings

    bufs = trace_buffers(small_trace(), "t")["meta"]
    assert bufs.ids == ["parameter.pre.0", "temporary.mm.1", "activation.add.2", "temporary.mm.3"]
    assert (bufs.lower, bufs.upper) == ([0, 0, 1, 2], [4, 2, 3, 4])
    rec = trace_recordings(small_trace(), "t")["meta"]
    order = [(e.kind, e.addr) for e in rec.events]
    assert order.index(("free", 1)) < order.index(("alloc", 3))  # freed at 2 before born at 2
    assert rec.hints[0] == ("parameter", "pre")


@pytest.mark.parametrize(
    ("change", "says"),
    [
        ({"version": 2}, "version 2"),
        ({"tensors": {"size": [1]}}, "tensors.lower must be a list"),
        ({"tensors": {**small_trace()["tensors"], "size": [0, 1, 1, 1]}}, "size 0"),
        ({"tensors": {**small_trace()["tensors"], "upper": [0, 2, 3, 4]}}, "life [0, 0)"),
        ({"tensors": {**small_trace()["tensors"], "op": [9, 0, 1, 2]}}, "op 9"),
        ({"tensors": {**small_trace()["tensors"], "category": [7, 6, 5, 6]}}, "category 7"),
        ({"tensors": {**small_trace()["tensors"], "lower": [0, 0, 1]}}, "differ in length"),
        ({"ops": {"name": [True]}}, "ops.name[0] must be an integer"),
    ],
)
def test_a_broken_trace_is_one_clear_error(tmp_path: Path, change: dict, says: str):
    trace = tmp_path / "bad.json.xz"
    write_trace(trace, {**small_trace(), **change})
    code, output = run(judge_app, "problem", "import-torch", str(trace), "--slug", "p",
                       "--dest", str(tmp_path))  # fmt: skip
    assert code == 2 and says in output, output


# --- compressed inputs ----------------------------------------------------------------------------


def test_a_gzip_profiler_trace_reads_as_the_plain_one(tmp_path: Path):
    from judge.torch_import.chrome import read_chrome_trace
    from judge.torch_import.recorded import read_chrome_recordings

    gz = tmp_path / "mlp.pt.trace.json.gz"  # TensorBoard's trace handler's name
    gz.write_bytes(gzip.compress(CHROME.read_bytes()))
    assert read_chrome_trace(gz) == read_chrome_trace(CHROME)
    assert read_chrome_recordings(gz) == read_chrome_recordings(CHROME)
    code, output = run(judge_app, "problem", "import-torch", str(gz), "--slug", "p",
                       "--dest", str(tmp_path))  # fmt: skip
    assert code == 0, output


def bomb(decompressed: int) -> bytes:
    """A gzip stream of `decompressed` zero bytes, made a MiB at a time."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    chunk = bytes(2**20)
    parts = [packer.compress(chunk) for _ in range(decompressed // len(chunk))]
    return b"".join(parts) + packer.flush()


def test_a_gzip_bomb_stops_at_the_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    from judge.torch_import import compressed

    data = bomb(64 * 2**20)
    tracemalloc.start()
    try:
        with pytest.raises(CaseError, match="decompresses to over 1,048,576 bytes"):
            compressed.decompress_bounded(data, 2**20, "bomb.json.gz")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    print(f"{len(data):,} bytes of gzip for 64 MiB: peak {peak:,} bytes held, limit 1 MiB")
    assert peak < 8 * 2**20  # a bounded read, not the 64 MiB
    path = tmp_path / "bomb.pt.trace.json.gz"
    path.write_bytes(data)
    monkeypatch.setattr(compressed, "MAX_INPUT_BYTES", 2**20)  # the CLI's limit, smaller
    code, output = run(judge_app, "problem", "import-torch", str(path), "--slug", "p",
                       "--dest", str(tmp_path))  # fmt: skip
    assert code == 2 and "decompresses to over" in output, output


@pytest.mark.parametrize("pack", [gzip.compress, lzma.compress])
def test_a_cut_off_stream_is_a_clear_error(tmp_path: Path, pack: Any):
    from judge.torch_import.compressed import read_input

    whole = pack(CHROME.read_bytes())
    for cut in (6, len(whole) // 2, len(whole) - 1):  # past the magic bytes
        path = tmp_path / "cut"
        path.write_bytes(whole[:cut])
        with pytest.raises(CaseError, match=r"a damaged (gzip|xz) file"):
            read_input(path)


# --- fuzzing the new reader (tests/test_fuzz_readers.py's engine and budget) ---------------------


def _seeds() -> list[bytes]:
    plain = json.dumps(small_trace(), sort_keys=True).encode()
    return [plain, gzip.compress(plain), lzma.compress(plain)]


def _cut(data: bytes, at: int) -> bytes:
    return data[:at]


SEEDS = _seeds()
TRACE_INPUTS = inputs(SEEDS)
PLAIN_INPUTS = inputs(SEEDS[:1])
FILES = st.one_of(
    TRACE_INPUTS,
    st.builds(gzip.compress, PLAIN_INPUTS),  # hostile content inside a sound stream
    st.builds(_cut, st.sampled_from(SEEDS[1:]), st.integers(0, 400)),
)


def read_everything(data: bytes) -> None:
    """What import-torch does with a file's bytes, both types; only InputError may escape."""
    from judge.torch_import import chrome, memtrace, package
    from judge.torch_import.compressed import decompress_bounded
    from judge.torch_import.recorded import chrome_recordings, snapshot_recordings
    from judge.torch_import.snapshot import snapshot_buffers

    try:
        kind, doc, size = package.load_torch_data(decompress_bounded(data, 2**20, "f"), "f")
        if kind == "trace":
            memtrace.trace_buffers(doc, "f")
            memtrace.trace_recordings(doc, "f")
        elif kind == "chrome":
            chrome.trace_buffers(doc, "f")
            chrome_recordings(doc, "f")
        else:
            snapshot_buffers(doc, "f", size)
            snapshot_recordings(doc, "f", size)
    except InputError:
        pass


def test_the_fuzz_seeds_are_valid():
    from judge.torch_import import package
    from judge.torch_import.compressed import decompress_bounded

    for seed in SEEDS:
        assert package.load_torch_data(decompress_bounded(seed, 2**20, "f"), "f")[0] == "trace"


@FUZZ
@given(FILES)
def test_fuzz_compressed_and_recorded_traces(data: bytes):
    read_everything(data)


def _draw(rng: random.Random) -> tuple[bytes]:
    """The same mix as FILES, drawn with `random` (the sweep's 10,000 inputs)."""
    pick = rng.randrange(3)
    if pick == 0:
        return (random_input(rng, TRACE_INPUTS),)
    if pick == 1:
        return (gzip.compress(random_input(rng, PLAIN_INPUTS)),)
    seed = rng.choice(SEEDS[1:])
    return (seed[: rng.randrange(len(seed) + 1)],)


def test_compressed_and_recorded_traces_on_a_seeded_sweep():
    sweep(read_everything, _draw)
