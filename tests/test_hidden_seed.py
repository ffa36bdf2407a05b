"""Each installation's own hidden cases of the shipped problems (api/actions/shipped.py,
problems/_lib/hidden.py): made from a secret seed by the bootstrap `make run` runs,
different between installations and from every file of the repository, the same bytes
again on a second bootstrap; a given seed is kept, a conflicting or malformed one refused
with one clear line."""

from __future__ import annotations

import hashlib
import lzma
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from api.settings import Settings
from tests.conftest import ROOT, TEST_HIDDEN_SEED, shipped
from tests.service import postgres_database

sys.path.insert(0, str(ROOT / "problems" / "_lib"))
from hidden import Draw, parse_seed

ONLINE = {"online-train", "online-serve"}  # 7 hidden cases each, like the offset problems


def bootstrap(data: Path, *args: str, db_url: str | None = None, seed: str | None = None):
    """`python -m api.bootstrap` as scripts/serve runs it (no service needed)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORACE_")}
    env |= {"MEMORACE_DATA_DIR": str(data), "MEMORACE_BASELINES": "0"}
    if db_url:
        env["MEMORACE_DATABASE_URL"] = db_url
    if seed is not None:
        env["MEMORACE_HIDDEN_SEED"] = seed
    argv = [sys.executable, "-m", "api.bootstrap", "--token-file", str(data / "admin.token")]
    return subprocess.run(
        [*argv, *args], env=env, cwd=ROOT, capture_output=True, text=True, timeout=600
    )


def imported_hidden(data: Path, db_url: str | None = None) -> dict[str, str]:
    """{slug/case: sha256} of every hidden case of every problem's current version, read
    from the package the service stores (the blob store), as the workers do."""
    from api.actions.problems import all_current, package_of
    from api.db.session import session_scope

    config = Settings(data_dir=data, database_url=db_url or f"sqlite:///{data}/db.sqlite")
    found = {}
    with session_scope(config.database_url) as db:
        for version in all_current(db):
            root = package_of(config, version).root
            hidden = [c.name for c in version.cases if c.split == "hidden"]
            assert hidden, version.problem.slug
            for name in hidden:
                (path,) = (root / "data" / "hidden").glob(f"{name}.*")
                found[f"{version.problem.slug}/{name}"] = hashlib.sha256(
                    path.read_bytes()
                ).hexdigest()
    return found


def repository_digests() -> set[str]:
    """sha256 of every file git tracks, and of every trace decompressed."""
    names = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout.split(b"\0")
    out = set()
    for name in filter(None, names):
        path = ROOT / name.decode()
        if not path.is_file():
            continue  # removed in the working tree, not yet committed
        body = path.read_bytes()
        out.add(hashlib.sha256(body).hexdigest())
        if path.suffix == ".xz":
            out.add(hashlib.sha256(lzma.decompress(body)).hexdigest())
    return out


def test_two_installations_have_their_own_hidden_cases(tmp_path):
    """Done when of issue 34: two fresh data directories, two bootstraps: the hidden
    cases differ between them and from every file of the repository; a second bootstrap
    keeps the seed and the bytes (no new version)."""
    one, two = tmp_path / "one", tmp_path / "two"
    for data in (one, two):
        run = bootstrap(data)
        assert run.returncode == 0, run.stderr
    first, second = imported_hidden(one), imported_hidden(two)
    slugs = {k.split("/")[0] for k in first}
    assert slugs == {"gpt2-train", "llama-infer", "train-offload", "infer-offload"} | ONLINE
    assert first.keys() == second.keys() and len(first) == 40
    assert not set(first.values()) & set(second.values())
    repo = repository_digests()
    assert len(repo) > 300  # the whole tree was read
    assert not (set(first.values()) | set(second.values())) & repo

    seed = one / "secrets" / "hidden-seed"
    assert stat.S_IMODE(seed.stat().st_mode) == 0o600
    assert stat.S_IMODE(seed.parent.stat().st_mode) == 0o700
    kept = seed.read_text()
    again = bootstrap(one)
    assert again.returncode == 0, again.stderr
    assert again.stdout.count("version 1,") == 6  # nothing new imported
    assert seed.read_text() == kept and imported_hidden(one) == first
    for run in (again,):  # the seed is never printed
        assert kept.strip() not in run.stdout + run.stderr


def test_a_given_seed_is_kept_and_a_conflicting_one_refused(tmp_path):
    """On PostgreSQL: MEMORACE_HIDDEN_SEED makes the same cases as the generators with
    that seed (the tests' own, tests/conftest.shipped), is kept in the data directory;
    another seed later, or a malformed one, is refused in one line, nothing printed of
    either seed."""
    data = tmp_path / "data"
    with postgres_database() as db_url:
        run = bootstrap(data, db_url=db_url, seed=TEST_HIDDEN_SEED)
        assert run.returncode == 0, run.stderr
        assert (data / "secrets" / "hidden-seed").read_text().strip() == TEST_HIDDEN_SEED
        made = {
            f"{p.parents[2].name}/{p.stem}": hashlib.sha256(p.read_bytes()).hexdigest()
            for slug in ("gpt2-train", "llama-infer", "train-offload", "infer-offload", *ONLINE)
            for p in (shipped(slug) / "data" / "hidden").iterdir()
        }
        assert imported_hidden(data, db_url) == made

        other = "ab" * 32
        for seed, says in ((other, "holds another hidden seed"), ("not hex", "hexadecimal")):
            refused = bootstrap(data, db_url=db_url, seed=seed)
            assert refused.returncode != 0
            assert says in refused.stderr and "Traceback" not in refused.stderr
            assert len(refused.stderr.strip().splitlines()) == 1
            for secret in (TEST_HIDDEN_SEED, other):
                assert secret not in refused.stdout + refused.stderr
        assert imported_hidden(data, db_url) == made  # untouched


def test_a_damaged_seed_file_is_refused_in_one_line(tmp_path):
    data = tmp_path / "data"
    (data / "secrets").mkdir(parents=True)
    (data / "secrets" / "hidden-seed").write_bytes(b"\xff\xfe not a seed")
    run = bootstrap(data)
    assert run.returncode != 0 and "Traceback" not in run.stderr
    assert "damaged" in run.stderr and len(run.stderr.strip().splitlines()) == 1
    missing = bootstrap(data, "--hidden-seed-file", str(tmp_path / "nowhere"))
    assert missing.returncode != 0 and "cannot read" in missing.stderr
    assert "Traceback" not in missing.stderr


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200))
def test_seed_reader_takes_any_text(text):
    """Outside input (the seed file, the environment): a seed or a ValueError that says
    what a seed is; never another exception."""
    try:
        seed = parse_seed(text)
    except ValueError as exc:
        assert "hexadecimal" in str(exc)
    else:
        assert 16 <= len(seed) <= 64 and seed.hex() == text.strip().lower()


@given(st.binary(min_size=16, max_size=64))
def test_seed_reader_reads_what_is_written(seed):
    assert parse_seed(seed.hex().upper() + "\n") == seed


def test_draws_are_deterministic_and_depend_on_every_bit_of_the_seed():
    seed = bytes.fromhex(TEST_HIDDEN_SEED)
    a, b = Draw(seed, "x"), Draw(seed, "x")
    assert [a.below(10**9) for _ in range(5)] == [b.below(10**9) for _ in range(5)]
    flipped = bytes([seed[0] ^ 1]) + seed[1:]
    assert Draw(seed, "x").below(2**64) != Draw(flipped, "x").below(2**64)
    assert sorted(Draw(seed, "p").permutation(50)) == list(range(50))
    assert all(3 <= Draw(seed, i).between(3, 5) <= 5 for i in range(100))


@pytest.mark.parametrize("slug", ["gpt2-train", "train-offload", "online-serve"])
def test_generator_refuses_bad_arguments_in_one_line(slug, tmp_path):
    gen = ROOT / "problems" / slug / "generator" / "generate.py"
    bad = tmp_path / "seed"
    bad.write_text("zz")
    for args in (["--hidden-seed", str(bad), "--out", str(tmp_path / "o")],
                 ["--hidden-seed", str(tmp_path / "none"), "--out", str(tmp_path / "o")],
                 ["--out", str(tmp_path)]):  # fmt: skip
        run = subprocess.run([sys.executable, str(gen), *args], capture_output=True, text=True)
        assert run.returncode == 2 and "Traceback" not in run.stderr, run.stderr
        assert not (tmp_path / "o").exists()
