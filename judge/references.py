"""The reference planners of `reference_solutions/` by problem type and level: what the
service judges as each problem's baselines and what the starter kit hands out as
templates (every one obeys the planner contract, so each is also a valid submission)."""

from __future__ import annotations

from pathlib import Path

FOLDER = Path(__file__).resolve().parents[1] / "reference_solutions"
# "caching" (PyTorch's CUDA caching allocator) only for the online type: the board
# shows what a framework's allocator scores between greedy and strong.
LEVELS = ("naive", "greedy", "caching", "strong")
BASELINES: dict[str, dict[str, str]] = {
    "offset": {
        "naive": "naive.py",
        "greedy": "greedy_size.cpp",
        "strong": "strong_search.tar.gz",  # made by reference_solutions/strong_search/pack.py
    },
    "offload": {
        "naive": "offload_naive.py",
        "greedy": "offload_greedy.tar.gz",  # made by reference_solutions/offload_greedy/pack.py
        "strong": "offload_strong.tar.gz",  # made by reference_solutions/offload_strong_v2/pack.py
    },
    "online": {
        "naive": "online_naive.py",
        "greedy": "online_greedy.py",
        "caching": "online_caching.py",
        "strong": "online_strong.tar.gz",  # made by reference_solutions/online_strong/pack.py
    },
}
# The starter kit's template per language: the simplest reference that passes. Offload's
# C++ template is offload_naive_cpp.tar.gz (made by reference_solutions/offload_naive_cpp/
# pack.py), a port of offload_naive.py (the v1-only offload_strong_v1 archive failed every
# shipped case, all v2); a single file goes into the kit as it is, a C++ archive as one
# planner.cpp (judge.starterkit.template_source).
TEMPLATES: dict[str, dict[str, str]] = {
    "offset": {"python": "naive.py", "cpp": "greedy_size.cpp"},
    "offload": {"python": "offload_naive.py", "cpp": "offload_naive_cpp.tar.gz"},
}


def baselines_for(ptype: str, folder: Path = FOLDER) -> dict[str, Path]:
    """{level: planner file} for a problem type; levels whose file is missing are left out
    (an installation without the folder has no baselines, and says so by their absence)."""
    named = BASELINES.get(ptype, {})
    return {level: folder / name for level, name in named.items() if (folder / name).is_file()}


def templates_for(ptype: str, folder: Path = FOLDER) -> dict[str, Path]:
    named = TEMPLATES.get(ptype, {})
    return {lang: folder / name for lang, name in named.items() if (folder / name).is_file()}
