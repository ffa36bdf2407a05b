"""The case as the greedy offload planner reads it: case.json, the tensors as
(id, size, alignment, uses) tuples, and each tensor's v2 kind (where it starts and ends,
which uses write it, how to recompute or compress it).

Why a module of its own: every other part takes these tuples and kinds, and the strong
planner (offload_strong_v2/strong.py) reads the kinds through it (`kinds_of`)."""

import json
import os
from collections import namedtuple

# v2 per tensor: start/end tiers, written flag per use, (cost, source indices) or None,
# (compressed size, encode, decode) or None; a v1 tensor is device/none/all written.
Kind = namedtuple("Kind", "start end writes recompute compress")


def read_case(case_dir):
    with open(os.path.join(case_dir, "case.json")) as f:
        case = json.load(f)
    tensors = [
        (t["id"], int(t["size"]), max(1, int(t["alignment"])), list(t["uses"]))
        for t in case["tensors"]
    ]
    return case, tensors


def kinds_of(case):
    index = {t["id"]: i for i, t in enumerate(case["tensors"])}
    out = []
    for t in case["tensors"]:
        writes, rc, cz = set(t.get("writes", t["uses"])), t.get("recompute"), t.get("compress")
        out.append(
            Kind(
                t.get("start", "device"),
                t.get("end", "none"),
                [u in writes for u in t["uses"]],
                None if rc is None else (int(rc["cost"]), [index[x] for x in rc["from"]]),
                None if cz is None else (int(cz["size"]), int(cz["encode"]), int(cz["decode"])),
            )
        )
    return out
