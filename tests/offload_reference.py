# ruff: noqa: E501  (a plain transcription of the rules reads better unwrapped)
"""A deliberately slow `offload` v2 reference, written from judge/types/offload/README.md
and sharing no code with judge/: every rule on raw JSON dicts, all pairs for bytes,
and the timing as a fixed point (each item's end = max(its dependencies) + its
duration, relaxed until nothing changes) in Fractions."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

Res = dict[str, Any]


def residencies(case: dict[str, Any], plan: dict[str, Any]) -> list[Res]:
    """Every residency with what README.md derives for it; raises ValueError on a rule
    about ways in and out (the step fields, drops, out)."""
    rows: list[Res] = []
    n_steps = len(case["steps"])
    for t, (tensor, entry) in enumerate(zip(case["tensors"], plan["tensors"], strict=True)):
        start, end = tensor.get("start", "device"), tensor.get("end", "none")
        writes = set(tensor.get("writes", tensor["uses"]))
        # the tensor's off-device copy: where, in which form, current, which residency wrote it
        where, form, current, writer = start, "full", start != "device", None
        covered, mine = 0, []
        for k, res in enumerate(entry["residencies"]):
            uses = tensor["uses"][covered : covered + res["uses"]]
            covered += res["uses"]
            w: Res = {"t": t, "k": k, "res": res, "size": tensor["size"], "uses": uses,
                      "first": uses[0], "last": uses[-1], "tensor": tensor,
                      "final": k == len(entry["residencies"]) - 1, "prio": res.get("priority", 0)}  # fmt: skip
            prev_last = mine[-1]["last"] if mine else -1
            if k == 0 and start == "device":
                w["how"] = "produced"
                w["begin"] = 2 * uses[0]
            elif res.get("in", "copy") == "recompute":
                x = res["recompute_before"]
                if "recompute" not in tensor or not prev_last < x <= uses[0]:
                    raise ValueError("recompute")
                w.update(how="recompute", x=x, begin=2 * x)
            else:
                p = res["prefetch_after"]
                if not (prev_last <= p < uses[0]):
                    raise ValueError("prefetch range")
                w.update(how="copy", p=p, begin=2 * p + 1, small=form == "small",
                         nvme=where == "nvme", reads=writer)  # fmt: skip
                if form == "small":
                    x = res.get("decode_before", uses[0])
                    if not p < x <= uses[0]:
                        raise ValueError("decode range")
                    w["x"] = x
                elif "decode_before" in res:
                    raise ValueError("decode on a full copy")
            dirty = w["how"] == "produced" or any(u in writes for u in uses)
            if dirty:
                current = False
            w["end_point"] = 2 * n_steps if (w["final"] and end == "device") else 2 * uses[-1] + 1
            if w["final"]:
                if "out" in res:
                    raise ValueError("out on a last residency")
                needs = end == "host" and not (current and where == "host" and form == "full")
                w["out"] = "final" if needs else None
                w["host_at_end"] = end == "host"
            else:
                out = res.get("out", "copy")
                w["out"] = out
                if out == "drop":
                    nxt = entry["residencies"][k + 1]
                    if not current and nxt.get("in", "copy") != "recompute":
                        raise ValueError("dirty drop")
                else:
                    if out == "compressed" and "compress" not in tensor:
                        raise ValueError("not compressible")
                    if out == "nvme" and "nvme" not in case:
                        raise ValueError("no nvme")
                    where = "nvme" if out == "nvme" else "host"
                    form = "small" if out == "compressed" else "full"
                    current, writer = True, (t, k)
            mine.append(w)
        rows += mine
    return rows


def pieces(w: Res) -> list[tuple[int, int, int, int]]:
    """(first point, last point, first byte, end byte), points inclusive."""
    off, size = w["res"]["offset"], w["size"]
    if w["how"] == "copy" and w["small"]:
        k = w["tensor"]["compress"]["size"]
        out = [(w["begin"], w["end_point"] - 1, off + size - k, off + size)]
        if size > k:
            out.append((2 * w["x"], w["end_point"] - 1, off, off + size - k))
        return out
    return [(w["begin"], w["end_point"] - 1, off, off + size)]


def host_copies(case: dict[str, Any], rows: list[Res]) -> list[tuple[int, int, int]]:
    """(first point, last point, bytes) of every host copy, README "Static validity"."""
    last_point = 2 * len(case["steps"]) - 1
    copies: dict[Any, list[int]] = {}
    for t, tensor in enumerate(case["tensors"]):
        if tensor.get("start", "device") == "host":
            copies[(t, None)] = [-1, -1, tensor["size"]]
    for w in rows:
        key = (w["t"], w["k"])
        small = w["tensor"].get("compress", {}).get("size")
        if w["out"] in ("copy", "compressed"):
            nbytes = small if w["out"] == "compressed" else w["size"]
            copies[key] = [2 * w["last"] + 1, 2 * w["last"] + 1, nbytes]
        if w["out"] == "final":
            copies[("final", key)] = [2 * w["last"] + 1, last_point, w["size"]]
    for w in rows:  # readers keep their copy until their first use
        if w["how"] == "copy" and not w["nvme"]:
            src = (w["t"], w["reads"][1] if w["reads"] else None)
            copies[src][1] = max(copies[src][1], 2 * w["first"] - 1)
    for w in rows:  # a current host copy that the tensor ends in is kept to the end
        if w["final"] and w.get("host_at_end") and w["out"] is None:
            holder = max(
                (v for v in rows if v["t"] == w["t"] and v["out"] in ("copy",)),
                key=lambda v: v["k"], default=None,
            )  # fmt: skip
            src = (w["t"], holder["k"] if holder else None)
            copies[src][1] = last_point
    return [tuple(c) for c in copies.values()]  # type: ignore[misc]


def problem(case: dict[str, Any], plan: dict[str, Any]) -> str | None:
    """The kind of the first broken rule (any order), or None: all pairs, every point."""
    try:
        rows = residencies(case, plan)
    except ValueError as exc:
        return str(exc)
    for w in rows:
        align = w["tensor"]["alignment"]
        if w["res"]["offset"] % align:
            return "alignment"
        if w["res"]["offset"] + w["size"] > case["capacity"]:
            return "capacity"
    every = [(w, pc) for w in rows for pc in pieces(w)]
    for i, (w, a) in enumerate(every):
        for v, b in every[i + 1 :]:
            if v is not w and a[0] <= b[1] and b[0] <= a[1] and a[2] < b[3] and b[2] < a[3]:
                return "overlap"
    for w in rows:
        if w["how"] == "recompute":
            x = w["x"]
            for src in w["tensor"]["recompute"]["from"]:
                j = next(i for i, t in enumerate(case["tensors"]) if t["id"] == src)
                if not any(v["t"] == j and _full_from(v) <= 2 * x - 1 and v["end_point"] - 1 >= 2 * x
                           for v in rows):  # fmt: skip
                    return "source"
    if "host_capacity" in case:
        copies = host_copies(case, rows)
        for point in range(-1, 2 * len(case["steps"])):
            if sum(b for lo, hi, b in copies if lo <= point <= hi) > case["host_capacity"]:
                return "host capacity"
    return None


def _full_from(w: Res) -> int:
    return 2 * w["x"] if w["how"] == "copy" and w["small"] else w["begin"]


def makespan(case: dict[str, Any], plan: dict[str, Any]) -> Fraction:
    """The README's timing as a fixed point over every item's dependencies."""
    rows = residencies(case, plan)
    steps = case["steps"]
    nv = case.get("nvme", {})
    lat = {"h2d": case.get("h2d_latency", 0), "d2h": case.get("d2h_latency", 0),
           "nvme_read": nv.get("read_latency", 0), "nvme_write": nv.get("write_latency", 0)}  # fmt: skip
    bw = {"h2d": case["h2d_bandwidth"], "d2h": case["d2h_bandwidth"],
          "nvme_read": nv.get("read_bandwidth"), "nvme_write": nv.get("write_bandwidth")}  # fmt: skip
    order = {id(w): i for i, w in enumerate(rows)}  # plan order
    # the compute stream, in order
    stream: list[tuple[str, Res | None, int]] = []
    for s in range(len(steps)):
        stream += [("pre", w, s) for w in rows if w.get("x") == s]
        stream.append(("step", None, s))
        stream += [("encode", w, s) for w in rows if w["last"] == s and w["out"] == "compressed"]
    position = {(kind, id(w) if w else None, s): i for i, (kind, w, s) in enumerate(stream)}

    def issue_key(w: Res, direction: str) -> tuple:
        if direction == "in":
            return (w["p"], -w["prio"], order[id(w)])
        if w["out"] == "compressed":
            return (position[("encode", id(w), w["last"])], -w["prio"], order[id(w)])
        return (position[("step", None, w["last"])], -w["prio"], order[id(w)])

    ins = [w for w in rows if w["how"] == "copy"]
    outs = [w for w in rows if w["out"] in ("copy", "compressed", "nvme", "final")]
    queues = {
        "h2d": sorted(ins, key=lambda w: issue_key(w, "in")),
        "nvme_read": sorted((w for w in ins if w["nvme"]), key=lambda w: issue_key(w, "in")),
        "d2h": sorted(outs, key=lambda w: issue_key(w, "out")),
        "nvme_write": sorted((w for w in outs if w["out"] == "nvme"), key=lambda w: issue_key(w, "out")),
    }  # fmt: skip
    small = {id(w): w["tensor"].get("compress", {}).get("size", w["size"]) for w in rows}

    def nbytes(w: Res, engine: str) -> int:
        if engine == "h2d" and w["small"]:
            return small[id(w)]
        if engine == "d2h" and w["out"] == "compressed":
            return small[id(w)]
        return w["size"]

    end: dict[Any, Fraction] = {}
    get = lambda key: end.get(key, Fraction(0))  # noqa: E731
    every = [(w, pc) for w in rows for pc in pieces(w)]

    def release(v: Res) -> Fraction:
        if v["out"] in ("copy", "compressed", "nvme", "final"):
            return get(("d2h", id(v)))
        return get(("step", v["last"]))  # dropped, ends nowhere, or ends on the host clean

    def bytes_free(w: Res, piece: tuple[int, int, int, int]) -> Fraction:
        """Every residency that held any of these bytes before has released them."""
        lo, _, a, b = piece
        out = Fraction(0)
        for v, (_, vhi, va, vb) in every:
            if v is not w and vhi < lo and va < b and a < vb:
                out = max(out, release(v))
        return out

    def item_end(kind: str, w: Res | None, s: int, prev: Fraction) -> Fraction:
        if kind == "step":
            deps = [prev]
            deps += [get(("h2d", id(v))) for v in rows
                     if v["first"] == s and v["how"] == "copy" and not v["small"]]  # fmt: skip
            deps += [
                bytes_free(v, pieces(v)[0])
                for v in rows
                if v["how"] == "produced" and v["first"] == s
            ]
            return max(deps) + steps[s]
        assert w is not None
        t = w["tensor"]
        if kind == "encode":
            return prev + t["compress"]["encode"]
        if w["how"] == "recompute":
            deps = [prev, bytes_free(w, pieces(w)[0])]
            for src in t["recompute"]["from"]:
                for v in rows:
                    if (
                        v["t"] == _index(case, src)
                        and v["how"] == "copy"
                        and _full_from(v) <= 2 * s - 1
                        and v["end_point"] - 1 >= 2 * s
                    ):
                        deps.append(get(("h2d", id(v))))
            return max(deps) + t["recompute"]["cost"]
        head = pieces(w)[1:]
        deps = (
            [prev, get(("h2d", id(w))), bytes_free(w, head[0])]
            if head
            else [prev, get(("h2d", id(w)))]
        )
        return max(deps) + t["compress"]["decode"]

    def copy_end(engine: str, w: Res, prev: Fraction) -> Fraction:
        deps = [prev]
        if engine in ("h2d", "nvme_read"):
            deps.append(get(("step", w["p"])) if w["p"] >= 0 else Fraction(0))
            wrote = w["reads"]
            if wrote is not None:
                writer = next(v for v in rows if (v["t"], v["k"]) == wrote)
                deps.append(get(("nvme_write" if writer["out"] == "nvme" else "d2h", id(writer))))
            if engine == "h2d":
                if w["nvme"]:
                    deps.append(get(("nvme_read", id(w))))
                deps.append(bytes_free(w, pieces(w)[0]))
        elif engine == "d2h":
            issuer = ("encode", w["last"]) if w["out"] == "compressed" else ("step", w["last"])
            deps.append(get((issuer[0], id(w))) if issuer[0] == "encode" else get(issuer))
        else:
            deps.append(get(("d2h", id(w))))
        return max(deps) + lat[engine] + Fraction(nbytes(w, engine), bw[engine])

    for _ in range(10 * (len(rows) + len(steps)) + 10):
        before = dict(end)
        prev = Fraction(0)
        for kind, w, s in stream:
            key = ("step", s) if kind == "step" else (kind if kind == "encode" else "pre", id(w))
            end[key] = prev = item_end(kind, w, s, prev)
        for engine, queue in queues.items():
            prev = Fraction(0)
            for w in queue:
                end[(engine, id(w))] = prev = copy_end(engine, w, prev)
        if end == before:
            break
    else:
        raise AssertionError("no fixed point")
    return max(end.values(), default=Fraction(0))


def _index(case: dict[str, Any], tid: str) -> int:
    return next(i for i, t in enumerate(case["tensors"]) if t["id"] == tid)
