#!/usr/bin/env python3
"""Version 1 of the train-offload package (v1 `offload` cases from our own model of a
GPT training step), kept so that version 1's results stay reproducible:

    python problems/train-offload/generator/v1/generate.py --out DIR [case names...]

writes version 1's data/*/*.json and problem.toml into DIR (the shipped package is
version 2, made by ../generate.py from recorded traces).

Seeded and deterministic (Python 3.11, standard library only): running it
again rewrites every file byte for byte. Each case is one training step of a
GPT-style decoder on one device (see transformer.py) whose tensors do not all
fit: its capacity is `capacity_pct` % of the case's max load (rounded up to a
MiB), but never below the bytes that one step's own tensors need together.
With case names, only those cases are rewritten (problem.toml is left alone).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from case import GPT_1_3B, GPT_2_7B, GPT_125M, GPT_350M, GPT_760M, GPT_TINY, Case
from transformer import Step

PACKAGE = Path(__file__).resolve().parents[2]  # its slug names the package

TITLE = "Training step with host offload"
LIMITS = {"time_limit_s": 30.0, "memory_limit_mb": 2048, "cpus": 1, "gpus": 0}

T, S, M, L, XL, X2 = GPT_TINY, GPT_125M, GPT_350M, GPT_760M, GPT_1_3B, GPT_2_7B

# name, split, seed, model, micro-batches (gradient accumulation), sequences per
# micro-batch, sequence length, host link, capacity % of the max load, options.
# Names: model, micro-batches x sequences, sequence length, options, link.
# The seed only matters for ragged cases (it draws their sequence lengths).
CASES = [
    Case("p01-tiny-mb1x4-s512-pcie", "public", 101, T, 1, 4, 512, "pcie", 70),
    Case("p02-125m-mb2x8-s1024-c2c", "public", 102, S, 2, 8, 1024, "c2c", 60),
    Case(
        "p03-350m-mb2x4-s2048-full-pcie", "public", 103, M, 2, 4, 2048, "pcie", 80, recompute="full"
    ),
    Case(
        "p04-760m-mb2x2-s2048-eager-sel-c2c",
        "public",
        104,
        L,
        2,
        2,
        2048,
        "c2c",
        50,
        attention="eager",
        recompute="selective",
    ),
    Case(
        "p05-1.3b-mb1x4-s2048-fused-pcie",
        "public",
        105,
        XL,
        1,
        4,
        2048,
        "pcie",
        65,
        optimizer="fused",
    ),
    Case(
        "p06-125m-mb4x4-ragged-eager-pcie",
        "public",
        106,
        S,
        4,
        4,
        1024,
        "pcie",
        90,
        attention="eager",
        ragged=True,
    ),
    Case(
        "h01-tiny-mb2x8-s512-eager-c2c", "hidden", 201, T, 2, 8, 512, "c2c", 85, attention="eager"
    ),
    Case("h02-350m-mb4x4-ragged-c2c", "hidden", 202, M, 4, 4, 2048, "c2c", 75, ragged=True),
    Case(
        "h03-760m-mb2x4-s2048-full-pcie", "hidden", 203, L, 2, 4, 2048, "pcie", 55, recompute="full"
    ),
    Case("h04-1.3b-mb2x2-s2048-c2c", "hidden", 204, XL, 2, 2, 2048, "c2c", 62),
    Case(
        "h05-1.3b-mb8x4-s2048-full-pcie",
        "hidden",
        205,
        XL,
        8,
        4,
        2048,
        "pcie",
        50,
        recompute="full",
        weight=2.0,
    ),
    Case(
        "h06-2.7b-mb4x2-s2048-full-fused-c2c",
        "hidden",
        206,
        X2,
        4,
        2,
        2048,
        "c2c",
        68,
        recompute="full",
        optimizer="fused",
        weight=2.0,
    ),
    Case(
        "h07-2.7b-mb2x1-s4096-eager-sel-pcie",
        "hidden",
        207,
        X2,
        2,
        1,
        4096,
        "pcie",
        88,
        attention="eager",
        recompute="selective",
    ),
]


def main(out: Path, only: set[str] | None = None) -> None:
    unknown = (only or set()) - {c.name for c in CASES}
    if unknown:
        sys.exit(f"unknown case(s): {', '.join(sorted(unknown))}")
    for split in ("public", "hidden"):
        (out / "data" / split).mkdir(parents=True, exist_ok=True)
        if only is None:  # stale files from an older case list must not survive
            for old in (out / "data" / split).glob("*.json"):
                old.unlink()
    toml = [
        f'slug = "{PACKAGE.name}"\nname = "{TITLE}"\ntype = "offload"\nversion = 1\n',
        "\n[limits]\n" + "".join(f"{k} = {v}\n" for k, v in LIMITS.items()),
    ]
    for case in CASES:
        if only is not None and case.name not in only:
            continue
        step = Step(case).run()
        path = out / "data" / case.split / f"{case.name}.json"
        with open(path, "w", newline="\n") as f:
            f.write(step.to_json())
        cap, load = step.capacity(), step.max_load()
        # statement.md says the share, not the floor, sets every shipped capacity
        assert cap > step.floor(), f"{case.name}: the floor sets the capacity"
        toml.append(
            f'\n[[cases]]\nname = "{case.name}"\nsplit = "{case.split}"\n'
            f"capacity = {cap}\nweight = {case.weight:.1f}\n"
        )
        uses = sum(len(t.uses) for t in step.tensors.values())
        print(
            f"{case.name}: {len(step.durations)} steps, {len(step.tensors)} tensors, "
            f"{uses} uses, max load {load}, capacity {cap} ({100 * cap / load:.1f} %), "
            f"{sum(step.durations)} µs of compute"
        )
    if only is None:
        (out / "problem.toml").write_text("".join(toml), newline="\n")


if __name__ == "__main__":
    if len(sys.argv) < 3 or sys.argv[1] != "--out":
        sys.exit("usage: generate.py --out DIR [case names...]")
    main(Path(sys.argv[2]), set(sys.argv[3:]) or None)
