"""Timeline recorder shared by the problem generators (problems/*/generator/).

A case is a list of buffers with half-open lifespans [lower, upper) measured in
op indices of one step's schedule. The recorder hands out op indices in
program order: a buffer allocated during op t has lower = t, and a buffer whose
last reader is op t gets upper = t + 1 (it is still live while t runs, so an
op's inputs and outputs never share memory).
"""

from __future__ import annotations

from dataclasses import dataclass, field

MIB = 1 << 20


@dataclass
class Buffer:
    id: str
    lower: int
    size: int
    alignment: int
    upper: int = -1  # -1 until freed


@dataclass
class Timeline:
    now: int = -1
    buffers: list[Buffer] = field(default_factory=list)
    _ids: set[str] = field(default_factory=set)

    def op(self) -> int:
        """Start the next op of the schedule and return its index."""
        self.now += 1
        return self.now

    def alloc(self, name: str, size: int, alignment: int = 512) -> Buffer:
        """A buffer produced by the current op."""
        assert size > 0, name
        assert name not in self._ids and "," not in name, name
        self._ids.add(name)
        buf = Buffer(name, max(self.now, 0), int(size), alignment)
        self.buffers.append(buf)
        return buf

    def free(self, *bufs: Buffer) -> None:
        """The current op is the last reader of these buffers."""
        for b in bufs:
            assert b.upper < 0, f"{b.id} freed twice"
            b.upper = self.now + 1

    def temp(self, name: str, size: int, alignment: int = 512) -> Buffer:
        """Scratch memory that lives only while the current op runs."""
        b = self.alloc(name, size, alignment)
        self.free(b)
        return b

    def close(self, *persistent: Buffer) -> None:
        """End the step: state that lives across steps dies with the last op."""
        self.free(*persistent)
        dangling = [b.id for b in self.buffers if b.upper < 0]
        assert not dangling, f"never freed: {dangling[:5]}"
        assert all(b.lower < b.upper for b in self.buffers)


def lower_bound(bufs: list[Buffer]) -> int:
    """Largest total size of the buffers live at one time."""
    delta: dict[int, int] = {}
    for b in bufs:
        delta[b.lower] = delta.get(b.lower, 0) + b.size
        delta[b.upper] = delta.get(b.upper, 0) - b.size
    live = best = 0
    for t in sorted(delta):
        live += delta[t]
        best = max(best, live)
    return best


def capacity_for(bufs: list[Buffer]) -> int:
    """Device memory limit of a case: 25 % above the lower bound, rounded up to a MiB.

    Tight enough that wasteful plans do not fit (a planner that never reuses a
    hole needs 2x to 26x the bound on these traces), loose enough for every
    reference planner: greedy by size ends at most ~14 % above the bound here.
    """
    return -(-(lower_bound(bufs) * 5 // 4 + 1) // MIB) * MIB


def csv_text(bufs: list[Buffer]) -> str:
    rows = ["id,lower,upper,size,alignment\n"]
    rows += [f"{b.id},{b.lower},{b.upper},{b.size},{b.alignment}\n" for b in bufs]
    return "".join(rows)


def write_csv(path, bufs: list[Buffer]) -> None:
    with open(path, "w", newline="\n") as f:
        f.write(csv_text(bufs))


def write_package(
    package, title: str, limits: dict, cases: list, build, only=None, version: int = 1
) -> None:
    """Write data/<split>/<case>.csv and problem.toml of `package` from `cases`.

    `build(case)` returns the case's buffers; `only` limits the run to some case
    names (problem.toml is then left alone).
    """
    for split in sorted({c.split for c in cases}):  # the repository's: public only
        (package / "data" / split).mkdir(parents=True, exist_ok=True)
        if only is None:  # stale files from an older case list must not survive
            for old in (package / "data" / split).glob("*.csv"):
                old.unlink()
    toml = [
        f'slug = "{package.name}"\nname = "{title}"\ntype = "offset"\nversion = {version}\n',
        "\n[limits]\n" + "".join(f"{k} = {v}\n" for k, v in limits.items()),
    ]
    for case in cases:
        if only is not None and case.name not in only:
            continue
        bufs = build(case)
        write_csv(package / "data" / case.split / f"{case.name}.csv", bufs)
        cap = capacity_for(bufs)
        toml.append(
            f'\n[[cases]]\nname = "{case.name}"\nsplit = "{case.split}"\n'
            f"capacity = {cap}\nweight = {case.weight:.1f}\n"
        )
        print(f"{case.name}: {len(bufs)} buffers, lower bound {lower_bound(bufs)}, capacity {cap}")
    if only is None:
        (package / "problem.toml").write_text("".join(toml), newline="\n")
