"""strong_search as an archive of modules (reference_solutions/strong_search/): the
archive the judge runs holds the current sources, packs the same way every time, and is
built as the judge builds a single .cpp file (its flags, one translation unit, so the
program is the one the single strong_search.cpp was); every module says what it holds.
Whether it plans well is tests/test_reference_planners.py's (slow) business."""

from __future__ import annotations

import re
from pathlib import Path

from judge.references import baselines_for
from judge.submission import CXX_FLAGS, prepare_submission
from tests.conftest import ROOT, load_script

FOLDER = ROOT / "reference_solutions" / "strong_search"
ARCHIVE = ROOT / "reference_solutions" / "strong_search.tar.gz"
MODULES = ("common", "io", "case_facts", "greedy_seeds", "large_traces", "canonical_search",
           "section_floors", "anytime", "filler_guesses", "sibling_merges")  # fmt: skip
MAX_LINES = 600


def load_pack():
    return load_script(FOLDER / "pack.py")


def test_the_archive_holds_the_current_sources(tmp_path: Path) -> None:
    """By members and contents, never by gzip's bytes (another zlib, other bytes)."""
    pack = load_pack()
    assert pack.current(), "run python reference_solutions/strong_search/pack.py"
    names = {f"{m}.hpp" for m in MODULES} | {"main.cpp", "memorace.toml"}
    assert set(pack.members()) == names
    fresh = tmp_path / "fresh.tar.gz"
    fresh.write_bytes(pack.pack())
    assert pack.contents(fresh) == pack.members()


def test_packing_twice_gives_the_same_bytes() -> None:
    pack = load_pack()
    assert pack.pack() == pack.pack()


def test_the_archive_is_the_offset_strong_baseline() -> None:
    assert baselines_for("offset")["strong"] == ARCHIVE


def test_the_archive_builds_main_cpp_as_the_judge_builds_a_single_file(tmp_path: Path) -> None:
    """The judge's flags for a .cpp upload, on main.cpp alone (a unity build)."""
    sub = prepare_submission(ARCHIVE, tmp_path / "unpacked")
    assert sub.build == ["g++", *CXX_FLAGS, "-o", "planner", "main.cpp"]
    assert sub.run == ["./planner"]


def test_main_includes_every_module_in_order_and_each_says_what_it_holds() -> None:
    """main.cpp includes the modules in pipeline order (each includes the one before
    it, so the unit reads as the single file did); each opens with a comment naming
    itself and stays under MAX_LINES lines."""
    main = (FOLDER / "main.cpp").read_text()
    included = re.findall(r'^#include "(\w+)\.hpp"', main, flags=re.MULTILINE)
    assert tuple(included) == MODULES
    assert sorted(p.stem for p in FOLDER.glob("*.hpp")) == sorted(MODULES)
    for before, module in zip((None, *MODULES), MODULES, strict=False):
        text = (FOLDER / f"{module}.hpp").read_text()
        assert text.startswith(f"// {module}.hpp -- strong_search"), module
        assert "#pragma once" in text, module
        if before is not None:
            assert f'#include "{before}.hpp"' in text, module
        assert text.count("\n") <= MAX_LINES, module
