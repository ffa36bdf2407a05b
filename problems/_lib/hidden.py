"""Hidden cases made per installation from a secret seed (standard library only).

The repository holds each shipped problem's public split and the pool of recorded
traces its family draws from; the hidden split is not in it. `materialize` writes a
complete package (the public split byte for byte, then a hidden split) into a folder
outside the repository: for each hidden slot the seed picks a base trace from the pool
and varies it (`vary_trace`: token-dependent tensors and their ops' work scaled per
run of ops, rounded to the allocator's 512 bytes), and the generator draws the rest
(links, GPU speed, steps, capacity share). Without the seed the draws cannot be
computed: each comes from SHA-256 of the seed and a label (`Draw`).
"""

from __future__ import annotations

import argparse
import bisect
import hashlib
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path

ALIGNMENT = 512
# What grows with the tokens of a micro-batch or request: scaled per run of ops.
# Parameters, optimizer state and gradients keep their sizes (the model is the model).
TOKEN_CATEGORIES = ("activation", "temporary", "input", "kv_cache")
SCALE = (600, 1400)  # per-mille range of a run's size factor
RUNS = (3, 12)  # runs of ops a trace is cut into, each with its own factor
ATTEMPTS = 40  # draws per slot before giving up (a draw the family refuses is drawn again)
HEX = frozenset("0123456789abcdefABCDEF")


class Reject(ValueError):
    """A draw that would not make a meaningful case of the family: draw again."""


def parse_seed(text: str) -> bytes:
    """A seed as written in secrets/hidden-seed or MEMORACE_HIDDEN_SEED: 32 to 128
    hexadecimal digits (128 to 512 bits), surrounding blanks ignored."""
    s = text.strip()
    if not 32 <= len(s) <= 128 or len(s) % 2 or not set(s) <= HEX:
        raise ValueError(
            "a hidden seed is an even number of hexadecimal digits, 32 to 128 of them "
            "(make one: python3 -c 'import secrets; print(secrets.token_hex(32))')"
        )
    return bytes.fromhex(s)


class Draw:
    """Deterministic draws from (seed, label): SHA-256 in counter mode, so the same
    seed gives the same cases on every Python version and machine."""

    def __init__(self, seed: bytes, *label: object) -> None:
        text = "/".join(str(x) for x in label).encode()
        self._key = hashlib.sha256(seed + b"\0" + text).digest()
        self._n = 0

    def below(self, n: int) -> int:
        """Uniform in [0, n) (bias under 2^-190 for the n used here)."""
        assert n > 0
        self._n += 1
        block = hashlib.sha256(self._key + self._n.to_bytes(8, "big")).digest()
        return int.from_bytes(block, "big") % n

    def between(self, lo: int, hi: int) -> int:
        """Uniform in [lo, hi]."""
        return lo + self.below(hi - lo + 1)

    def choice(self, items: Sequence):
        return items[self.below(len(items))]

    def permutation(self, n: int) -> list[int]:
        out = list(range(n))
        for i in range(n - 1, 0, -1):
            j = self.below(i + 1)
            out[i], out[j] = out[j], out[i]
        return out


def scale_size(size: int, per_mille: int) -> int:
    """A token-dependent size times per_mille / 1000, to whole ALIGNMENT units (sizes
    under one unit are left alone: they do not grow with tokens)."""
    if size < ALIGNMENT:
        return size
    return max(ALIGNMENT, (size * per_mille // 1000 + ALIGNMENT // 2) // ALIGNMENT * ALIGNMENT)


def vary_trace(doc: dict, draw: Draw) -> dict:
    """A copy of a recorded trace whose token-dependent tensors (and the work of the
    ops) are scaled per run of ops: as if the micro-batches or requests made in that
    run had other token counts. Lifetimes and the op sequence stay as recorded."""
    ops, t, cats = doc["ops"], doc["tensors"], doc["categories"]
    n_ops = len(ops["name"])
    runs = min(draw.between(*RUNS), n_ops)
    starts: set[int] = set()  # ops 1 .. n_ops - 1 where a new run starts
    while len(starts) < runs - 1:
        starts.add(1 + draw.below(n_ops - 1))
    cuts = sorted(starts)
    factors = [draw.between(*SCALE) for _ in range(len(cuts) + 1)]
    scaled = {i for i, c in enumerate(cats) if c in TOKEN_CATEGORIES}

    def run_of(op: int) -> int:
        return bisect.bisect_right(cuts, op)

    sizes = []
    for size, op, lower, cat in zip(t["size"], t["op"], t["lower"], t["category"], strict=True):
        if cat in scaled:
            size = scale_size(size, factors[run_of(op if op >= 0 else lower)])
        sizes.append(size)
    work = {
        key: [v * factors[run_of(i)] // 1000 for i, v in enumerate(ops[key])]
        for key in ("flops", "bytes")
    }
    return {**doc, "ops": {**ops, **work}, "tensors": {**t, "size": sizes}}


# make(base, draw) -> (file suffix, case text, capacity); raises Reject to be drawn again.
MakeCase = Callable[[object, Draw], tuple[str, str, int]]


def materialize(
    package: Path, out: Path, seed: bytes, pool: Sequence, weights: Sequence[float], make: MakeCase
) -> None:
    """Write into `out` (a new folder) the package at `package` (problem.toml,
    statement.md, data/public, byte for byte) plus a hidden split of len(weights)
    cases h01, h02, ..., each made by `make` from a base trace of `pool` drawn from
    the seed (every base once before any twice)."""
    slug = package.name
    out.mkdir(parents=True)
    shutil.copyfile(package / "problem.toml", out / "problem.toml")
    shutil.copyfile(package / "statement.md", out / "statement.md")
    shutil.copytree(package / "data" / "public", out / "data" / "public")
    (out / "data" / "hidden").mkdir()
    order = Draw(seed, slug, "pool").permutation(len(pool))
    toml = [(out / "problem.toml").read_text()]
    for slot, weight in enumerate(weights):
        name = f"h{slot + 1:02d}"
        base = pool[order[slot % len(pool)]]
        for attempt in range(ATTEMPTS):
            try:
                suffix, text, capacity = make(base, Draw(seed, slug, name, attempt))
                break
            except Reject:
                continue
        else:
            raise SystemExit(f"{slug} {name}: no acceptable draw in {ATTEMPTS} attempts")
        (out / "data" / "hidden" / f"{name}{suffix}").write_text(text, newline="\n")
        toml.append(
            f'\n[[cases]]\nname = "{name}"\nsplit = "hidden"\n'
            f"capacity = {capacity}\nweight = {weight:.1f}\n"
        )
    (out / "problem.toml").write_text("".join(toml), newline="\n")


def hidden_args(argv: Sequence[str]) -> argparse.Namespace | None:
    """`--hidden-seed FILE --out DIR` (the package with a hidden split made from the
    seed in FILE, written into the new folder DIR), else None: the generator's usual
    command line. The seed is read from a file, never the command line (ps shows it)."""
    if "--hidden-seed" not in argv and "--out" not in argv:
        return None
    parser = argparse.ArgumentParser(description="write the package with a seeded hidden split")
    parser.add_argument("--hidden-seed", type=Path, required=True, metavar="FILE")
    parser.add_argument("--out", type=Path, required=True, metavar="DIR")
    args = parser.parse_args(list(argv[1:]))
    if args.out.exists():
        parser.error(f"{args.out} exists: give a new folder")
    try:
        args.seed = parse_seed(args.hidden_seed.read_text())
    except (OSError, UnicodeDecodeError) as exc:
        parser.error(f"cannot read the seed file {args.hidden_seed}: {exc}")
    except ValueError as exc:
        parser.error(f"{args.hidden_seed}: {exc}")
    return args
