"""`offload` v2 cases from recorded PyTorch traces (tracer/TRACE_FORMAT.md, with the
`reads`/`writes` columns), standard library only: what the generators of
`train-offload` (v2) and `infer-offload` share.

- Steps: the trace's aten ops cut into `n_steps` runs of about equal time; an op takes
  max(FLOPs / FLOPS, bytes / HBM) at the stated GPU (GPU below), a step the sum of its
  ops, rounded to whole µs.
- Tensors: one per recorded storage with its uses (the steps of the op that made it,
  the ops that read it and those that wrote it in place) and its writes (making and
  in-place ops). Storages living inside one step and ending nowhere are that step's
  scratch: merged into one tensor per step, as large as their peak together there.
- Tiers, by the offload scheme (`Scheme`): per category, where it starts and ends.
- Recompute: an activation written only when made may be rebuilt by re-running the op
  that made it (a checkpoint boundary at op granularity, as selective activation
  recomputation does), from that op's recorded inputs, at that op's cost.
- Compression (`CODECS`): per category, a ratio and the codec's cost, one pass over
  the full and the compressed bytes at HBM bandwidth plus a kernel launch, each way.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

ALIGNMENT = 512  # the CUDA caching allocator's granularity
MIB = 2**20
ROOM = 0.85  # with `below`: a step's own tensors hold at most this share of its bytes


@dataclass(frozen=True)
class Gpu:
    name: str
    flops_per_us: float  # dense FLOP per µs
    hbm_bytes_per_us: float


# H100 SXM5 (NVIDIA H100 datasheet): 494.7 TFLOP/s is the dense TF32 tensor-core peak
# (the recorded training models are fp32) and half the 989.4 TFLOP/s dense BF16 peak
# (what a bf16 decoder's GEMMs sustain, about: the serving traces are bf16); 3.35 TB/s HBM3.
H100_SXM = Gpu("H100 SXM5 (494.7 TFLOP/s dense TF32, 3.35 TB/s HBM3)", 494.7e6, 3.35e6)
LAUNCH_US = 3  # a kernel launch, added to every codec call


@dataclass(frozen=True)
class Link:
    """Host <-> device link, bytes per µs and µs per copy (PCIe-class, effective)."""

    name: str
    bandwidth: int
    latency: int


PCIE4 = Link("PCIe 4.0 x16 (25 GB/s effective, 10 µs per copy)", 25_000, 10)
PCIE5 = Link("PCIe 5.0 x16 (50 GB/s effective, 10 µs per copy)", 50_000, 10)
# A datacenter NVMe SSD (PCIe 4): 7 GB/s read, 4 GB/s write, 80 µs per request.
NVME = {"read_bandwidth": 7_000, "write_bandwidth": 4_000, "read_latency": 80, "write_latency": 80}


def drawn_link(draw) -> Link:
    """A host link for a hidden case (hidden.Draw): PCIe 4.0 to 5.0 x16, effective."""
    bandwidth, latency = draw.between(20_000, 64_000), draw.between(5, 15)
    name = f"PCIe x16 ({bandwidth / 1000:.1f} GB/s effective, {latency} µs per copy)"
    return Link(name, bandwidth, latency)


def drawn_nvme(draw) -> dict:
    """NVMe speeds for a hidden case: PCIe 3 to PCIe 5 datacenter SSDs."""
    read = draw.between(3_000, 14_000)
    return {
        "read_bandwidth": read,
        "write_bandwidth": draw.between(2_000, read),
        "read_latency": draw.between(50, 120),
        "write_latency": draw.between(50, 120),
    }


def drawn_gpu(draw) -> Gpu:
    """Compute speeds for a hidden case: 40 to 120 % of H100 SXM5's FLOPS, 50 to 120 %
    of its HBM bandwidth (A100-class to a faster H100-class part)."""
    flops, hbm = draw.between(400, 1200), draw.between(500, 1200)
    name = f"{flops / 10:.0f} % of H100 SXM5's FLOPS, {hbm / 10:.0f} % of its HBM bandwidth"
    return Gpu(name, H100_SXM.flops_per_us * flops / 1000, H100_SXM.hbm_bytes_per_us * hbm / 1000)


# category: (ratio, what it is) — the compressed form a plan may park the tensor in.
CODECS = {
    "activation": (4, "fp32 -> fp8 (E4M3) with a per-tensor scale"),
    "gradient": (2, "fp32 -> bf16"),
    "kv_cache": (4, "bf16 -> 4-bit with per-group scales (FlexGen's group-wise quantization)"),
}


@dataclass(frozen=True)
class Scheme:
    """Where each category starts and ends (device | host | nvme; none | host | device)."""

    name: str
    start: dict[str, str] = field(default_factory=dict)
    end: dict[str, str] = field(default_factory=dict)
    compress: tuple[str, ...] = ()
    recompute: bool = False
    # categories whose end tier holds even where PyTorch frees them within the step
    # (ZeRO-Offload moves gradients to the host although the step then drops them)
    keep: tuple[str, ...] = ()

    def tiers(self, s: Store, n_ops: int) -> tuple[str, str]:
        start = self.start.get(s.category, "device") if s.op < 0 else "device"
        alive = s.upper >= n_ops or s.category in self.keep
        return start, self.end.get(s.category, "none") if alive else "none"


@dataclass
class Store:
    """One recorded storage: bytes, category, the op that made it (-1: before the step),
    its life [lower, upper) in ops, the ops that read it, those that wrote it."""

    size: int
    category: str
    op: int
    lower: int
    upper: int
    reads: list[int]
    writes: list[int]


def stores(doc: dict) -> list[Store]:
    t, cats = doc["tensors"], doc["categories"]
    cols = ("size", "category", "op", "lower", "upper", "reads", "writes")
    rows = zip(*(t[c] for c in cols), strict=True)
    return [Store(s, cats[c], op, lo, up, r, w) for s, c, op, lo, up, r, w in rows]


def op_times(doc: dict, gpu: Gpu) -> list[float]:
    ops = doc["ops"]
    return [
        max(f / gpu.flops_per_us, b / gpu.hbm_bytes_per_us)
        for f, b in zip(ops["flops"], ops["bytes"], strict=True)
    ]


def cut_steps(times: list[float], n_steps: int) -> tuple[list[int], list[int]]:
    """(step of each op, µs of each step): runs of about total / n_steps µs each."""
    total, step_of, steps, acc, done = sum(times), [], [0.0], 0.0, 0.0
    for t in times:
        if steps[-1] > 0 and done + acc >= total * len(steps) / n_steps and len(steps) < n_steps:
            steps.append(0.0)
            done += acc
            acc = 0.0
        steps[-1] += t
        acc += t
        step_of.append(len(steps) - 1)
    return step_of, [max(1, round(s)) for s in steps]


def write_case(
    doc: dict,
    scheme: Scheme,
    n_steps: int,
    link: Link,
    share: float,
    nvme: bool | dict = False,
    host_slack: float | None = None,
    below: str | None = None,
    gpu: Gpu = H100_SXM,
) -> tuple[dict, dict]:
    """(case JSON, facts for the statement and the generator's log). The capacity is
    the least the case allows (each step's tensors and those kept on the device) plus
    `share` of the way to holding every tensor all the time (with `below`, a category:
    to holding all of that category's bytes, when that is less: a step's own tensors
    may then hold at most ROOM of them), rounded up to a MiB. `nvme`: True for NVME's
    speeds, or the speeds; `gpu`: the speeds steps and codecs take."""
    times = op_times(doc, gpu)
    step_of, steps = cut_steps(times, n_steps)
    recs = []
    for i, s in enumerate(stores(doc)):
        when = sorted({step_of[o] for o in [s.op, *s.reads, *s.writes] if o >= 0})
        if not when:
            continue  # neither made nor touched in the recorded step
        start, end = scheme.tiers(s, len(step_of))
        if start == "device" and end == "none" and len(when) == 1:
            continue  # step scratch: merged by _scratch_peaks
        written = sorted({step_of[o] for o in [*s.writes, *([s.op] if s.op >= 0 else [])]})
        recs.append((i, s, when, written, start, end))
    peaks = _scratch_peaks(doc, step_of, steps, scheme)
    names = {i: f"{s.category}.{i}" for i, s, *_ in recs}
    made_by = _inputs_by_op(doc, names)
    tensors = [
        _tensor(names[i], s, when, written, start, end, scheme, made_by, times, gpu)
        for i, s, when, written, start, end in recs
    ]
    tensors += [
        {"id": f"scratch.{k}", "size": peak, "alignment": ALIGNMENT, "uses": [k]}
        for k, peak in enumerate(peaks)
        if peak > 0
    ]
    least, most = _least_and_most(tensors, len(steps))
    if below is not None:
        most = min(most, sum(t["size"] for t in tensors if t["id"].startswith(below + ".")))
        if least > ROOM * most:  # else a step's own tensors leave the weights no room
            raise ValueError(f"a step's tensors alone hold {least} bytes, over {ROOM} of {below}")
    capacity = math.ceil((least + share * (most - least)) / MIB) * MIB
    case: dict = {
        "capacity": capacity,
        "h2d_bandwidth": link.bandwidth,
        "d2h_bandwidth": link.bandwidth,
        "h2d_latency": link.latency,
        "d2h_latency": link.latency,
    }
    if nvme:
        case["nvme"] = dict(NVME if nvme is True else nvme)
    if host_slack is not None:
        on_host = [sum(t["size"] for t in tensors if t.get(k) == "host") for k in ("start", "end")]
        case["host_capacity"] = math.ceil(max(on_host) * host_slack / MIB) * MIB
    case["steps"] = steps
    case["tensors"] = tensors
    facts = {
        "steps": len(steps),
        "tensors": len(tensors),
        "uses": sum(len(t["uses"]) for t in tensors),
        "compute_us": sum(steps),
        "least": least,
        "most": most,
        "capacity": capacity,
    }
    return case, facts


def _tensor(tid, s, when, written, start, end, scheme, made_by, times, gpu) -> dict:
    t: dict = {"id": tid, "size": s.size, "alignment": ALIGNMENT, "uses": when}
    writes = [w for w in written if w in set(when)]
    if writes != when:
        t["writes"] = writes
    if start != "device":
        t["start"] = start
    if end != "none":
        t["end"] = end
    sources = made_by.get(s.op, [])
    if (
        scheme.recompute
        and s.category == "activation"
        and start == "device"
        and written == when[:1]
        and sources
        and tid not in sources
    ):
        t["writes"] = when[:1]
        t["recompute"] = {"cost": math.ceil(times[s.op]) + LAUNCH_US, "from": sources}
    if s.category in scheme.compress and s.category in CODECS:
        ratio = CODECS[s.category][0]
        small = max(1, s.size // ratio)
        codec = math.ceil((s.size + small) / gpu.hbm_bytes_per_us) + LAUNCH_US
        t["compress"] = {"size": small, "encode": codec, "decode": codec}
    return t


def _inputs_by_op(doc: dict, names: dict[int, str]) -> dict[int, list[str]]:
    """op -> the case tensors it read (recompute sources), in trace order."""
    out: dict[int, list[str]] = {}
    for i, reads in enumerate(doc["tensors"]["reads"]):
        if i in names:
            for o in reads:
                out.setdefault(o, []).append(names[i])
    made = set(doc["tensors"]["op"])
    scratch_read = {
        o for i, reads in enumerate(doc["tensors"]["reads"]) if i not in names for o in reads
    }
    # an op that also read step scratch cannot be re-run from case tensors alone
    return {o: v for o, v in out.items() if o in made and o not in scratch_read}


def _scratch_peaks(doc: dict, step_of: list[int], steps: list[int], scheme: Scheme) -> list[int]:
    """Per step: the most bytes its scratch storages hold together (sweep over ops)."""
    events: dict[int, list[tuple[int, int]]] = {}
    for s in stores(doc):
        when = {step_of[o] for o in [s.op, *s.reads, *s.writes] if o >= 0}
        start, end = scheme.tiers(s, len(step_of))
        if len(when) == 1 and start == "device" and end == "none":
            k = when.pop()
            events.setdefault(k, []).extend([(s.lower, s.size), (s.upper, -s.size)])
    peaks = [0] * len(steps)
    for k, ev in events.items():
        held = 0
        for _, d in sorted(ev):
            held += d
            peaks[k] = max(peaks[k], held)
    return peaks


def _least_and_most(tensors: list[dict], n_steps: int) -> tuple[int, int]:
    """(the verifier's floor: a step's tensors and those kept on the device before it,
    aligned; every tensor held from its first use to its last, or the end)."""
    used, kept, held = [0] * n_steps, [0] * (n_steps + 1), [0] * (n_steps + 1)
    for t in tensors:
        size = -(-t["size"] // ALIGNMENT) * ALIGNMENT
        for u in t["uses"]:
            used[u] += size
        if t.get("end") == "device":
            kept[t["uses"][-1] + 1] += size
        held[t["uses"][0]] += size
        if t.get("end") != "device":
            held[t["uses"][-1] + 1] -= size
    least = most = acc_kept = acc_held = 0
    for s in range(n_steps):
        acc_kept += kept[s]
        acc_held += held[s]
        least, most = max(least, used[s] + acc_kept), max(most, acc_held)
    return least, most


def dump(case: dict) -> str:
    return json.dumps(case, separators=(",", ":")) + "\n"


@dataclass(frozen=True)
class OffloadTraceCase:
    """A case: its trace (recorded by `memorace trace <args>`), how it is cut and offloaded."""

    name: str
    split: str
    args: tuple[str, ...]
    scheme: Scheme
    n_steps: int
    link: Link
    share: float  # capacity: this share of the way from the least allowed to all of it
    nvme: bool | dict = False  # True: NVME's speeds; or the speeds
    host_slack: float | None = None  # host capacity: this times the host's floor
    weight: float = 1.0
    below: str | None = None  # capacity: the share's top is at most this category's bytes
    gpu: Gpu = H100_SXM


def write_offload_package(
    package, title: str, limits: dict, cases: list, version: int, trace_of, slug: str = ""
) -> None:
    """data/<split>/<case>.json and problem.toml of `package` (type offload; its slug is
    the folder's name unless given)."""
    for split in sorted({c.split for c in cases}):  # the repository's: public only
        (package / "data" / split).mkdir(parents=True, exist_ok=True)
        for old in (package / "data" / split).glob("*.json"):
            old.unlink()
    slug = slug or package.name
    toml = [
        f'slug = "{slug}"\nname = "{title}"\ntype = "offload"\nversion = {version}\n',
        "\n[limits]\n" + "".join(f"{k} = {v}\n" for k, v in limits.items()),
    ]
    for case in cases:
        body, facts = case_of(trace_of(case), case)
        path = package / "data" / case.split / f"{case.name}.json"
        path.write_text(dump(body), newline="\n")
        toml.append(
            f'\n[[cases]]\nname = "{case.name}"\nsplit = "{case.split}"\n'
            f"capacity = {body['capacity']}\nweight = {case.weight:.1f}\n"
        )
        print(f"{case.name}: " + ", ".join(f"{k} {v}" for k, v in facts.items()))
    (package / "problem.toml").write_text("".join(toml), newline="\n")


def case_of(doc: dict, case: OffloadTraceCase) -> tuple[dict, dict]:
    """write_case with `case`'s settings."""
    return write_case(
        doc,
        case.scheme,
        case.n_steps,
        case.link,
        case.share,
        case.nvme,
        case.host_slack,
        case.below,
        case.gpu,
    )


@dataclass(frozen=True)
class HiddenSplit:
    """How a family's hidden cases are made from the seed: their weights; the base
    trace's case with drawn settings (draw: hidden.Draw); and what a made case must
    satisfy to belong to the family (a reason to draw again, or None)."""

    weights: tuple[float, ...]
    draw_settings: Callable[[OffloadTraceCase, Any], OffloadTraceCase]
    refuse: Callable[[dict], str | None] = lambda body: None


def generator_main(
    here,
    title: str,
    limits: dict,
    cases: list,
    version: int,
    argv: list,
    hidden: HiddenSplit | None = None,
) -> None:
    """A generator's command line: rewrite the package (its public split) from the
    traces in `here`/traces, or with --record (the trace extra: PyTorch) record the
    named traces (all by default), or with `--hidden-seed FILE --out DIR` write the
    package plus a hidden split made from the seed (`hidden`; every trace of `cases` is
    in the pool)."""
    from hidden import Reject, hidden_args, materialize, vary_trace  # beside this file
    from torchtrace import read_trace, record, trace_path

    def trace_of(case: OffloadTraceCase) -> dict:
        return read_trace(trace_path(here, case))

    if hidden is not None and (args := hidden_args(argv)) is not None:

        def make(base: OffloadTraceCase, draw) -> tuple[str, str, int]:
            doc = vary_trace(trace_of(base), draw)
            try:
                body, facts = case_of(doc, hidden.draw_settings(base, draw))
            except ValueError as exc:  # the step's own tensors crowd out the weights
                raise Reject(str(exc)) from None
            if not facts["least"] < body["capacity"] < facts["most"]:
                raise Reject("nothing would have to leave the device")
            if reason := hidden.refuse(body):
                raise Reject(reason)
            return ".json", dump(body), body["capacity"]

        materialize(here.parent, args.out, args.seed, cases, hidden.weights, make)
        return
    names = {a for a in argv[1:] if a != "--record"} or None
    if "--record" in argv:
        record(here, cases, names)
        return
    public = [c for c in cases if c.split == "public"]
    write_offload_package(here.parent, title, limits, public, version, trace_of)
