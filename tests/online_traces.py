"""Synthetic `online` traces and a small protocol driver, for testing allocators
before (and beside) the judge: a training-like trace that repeats an iteration and a
serving-like one that does not, and `drive`, which speaks the protocol to an allocator
over pipes and checks every answer with a sorted interval list."""

from __future__ import annotations

import random
import subprocess
from bisect import bisect_right, insort
from dataclasses import dataclass

Event = tuple  # ("a", id, size, alignment, values) or ("f", id)
MIB = 1 << 20
ALIGN = 512


def training_trace(
    seed: int = 0, layers: int = 6, iterations: int = 4, microbatches: int = 2,
    rescale: bool = False,
) -> tuple[tuple[str, ...], list[Event]]:  # fmt: skip
    """GPT-like training: parameters first, then per iteration and micro-batch a forward
    pass (saved activations; temporaries that live until the next op's), a backward
    pass (activation grads, parameter grads made in the first micro-batch and freed by
    the next iteration's zero_grad, accumulation temporaries), and an Adam step (its
    states made in iteration 0 and kept). Sizes are fixed per (layer, op), so every
    iteration after the first repeats the one before; `rescale`: from iteration 1 on,
    each micro-batch's activations and their temporaries (not the gradients nor the
    accumulation temporaries) are scaled by a factor of its own in [0.6, 1.4], as
    sequences of other lengths make them (online-train's re-drawn iterations)."""
    rng = random.Random(seed)
    names = ("category", "op", "layer", "iteration", "microbatch")
    ops = 6
    psize = [[rng.choice((1, 3, 4, 12)) * 256 * 1024 for _ in range(4)] for _ in range(layers)]
    out = [[rng.choice((1, 2, 3, 4, 6)) * MIB + 512 * rng.randrange(64) for _ in range(ops)]
           for _ in range(layers)]  # fmt: skip
    keep = [[rng.random() < 0.6 for _ in range(ops)] for _ in range(layers)]
    tmp = [[rng.choice((4096, 65536, 300_000, 3 * MIB, 5 * MIB + 4096, 12 * MIB))
            for _ in range(ops)] for _ in range(layers)]  # fmt: skip
    ev: list[Event] = []
    params = []
    for layer in range(layers):
        for k, size in enumerate(psize[layer]):
            ev.append(("a", f"w{layer}.{k}", size, ALIGN, ("parameter", "-", str(layer), "-", "-")))
            params.append((f"w{layer}.{k}", size, layer))
    grads: list[str] = []
    for it in range(iterations):
        i = str(it)
        ev += [("f", gid) for gid in grads]
        grads = []
        for mb in range(microbatches):
            tag = f"{it}.{mb}"
            factor = rng.uniform(0.6, 1.4) if rescale and it else 1.0

            def scaled(size: int, factor: float = factor) -> int:
                return -(-int(size * factor) // ALIGN) * ALIGN if factor != 1.0 else size

            def hint(cat: str, op: str, layer: object, i: str = i, mb: int = mb) -> tuple[str, ...]:
                return (cat, op, str(layer), i, str(mb))

            saved: list[list[str]] = []
            prev_tmp = None
            for layer in range(layers):
                kept = []
                for k in range(ops):
                    xid, tid = f"x{tag}.{layer}.{k}", f"t{tag}.{layer}.{k}"
                    x_size, t_size = scaled(out[layer][k]), scaled(tmp[layer][k])
                    ev.append(("a", xid, x_size, ALIGN, hint("activation", f"op{k}", layer)))
                    ev.append(("a", tid, t_size, ALIGN, hint("temporary", f"op{k}", layer)))
                    if prev_tmp:
                        ev.append(("f", prev_tmp))
                    prev_tmp = tid
                    if keep[layer][k]:
                        kept.append(xid)
                    else:
                        ev.append(("f", xid))
                saved.append(kept)
            ev.append(("f", prev_tmp))
            ev.append(("a", f"loss{tag}", 512, ALIGN, hint("activation", "loss", "-")))
            dx = None
            for layer in reversed(range(layers)):
                gx = f"gx{tag}.{layer}"
                gx_size = scaled(out[layer][0])
                ev.append(("a", gx, gx_size, ALIGN, hint("temporary", "grad_in", layer)))
                if dx is not None:
                    ev.append(("f", dx))
                dx = gx
                for pid, size, pl in params:
                    if pl != layer:
                        continue
                    if mb == 0:
                        grads.append(f"g{it}.{pid}")
                        ev.append(("a", grads[-1], size, ALIGN, hint("gradient", "grad", layer)))
                    else:
                        ev.append(
                            ("a", f"acc{tag}.{pid}", size, ALIGN, hint("temporary", "acc", layer))
                        )
                        ev.append(("f", f"acc{tag}.{pid}"))
                ev += [("f", aid) for aid in reversed(saved[layer])]
            ev.append(("f", dx))
            ev.append(("f", f"loss{tag}"))
        for pid, size, layer in params:
            if it == 0:
                for state in ("exp_avg", "exp_avg_sq"):
                    ev.append(("a", f"{state}.{pid}", size, ALIGN,
                               ("optimizer_state", state, str(layer), i, "-")))  # fmt: skip
            ev.append(("a", f"u{it}.{pid}", size, ALIGN, ("temporary", "adam", str(layer), i, "-")))
            ev.append(("f", f"u{it}.{pid}"))
    return names, ev


def serving_trace(
    seed: int = 0, steps: int = 60, layers: int = 4
) -> tuple[tuple[str, ...], list[Event]]:
    """Continuous batching: a request's KV cache is made when it is admitted and freed
    when it finishes; each decode step makes per-layer activations sized by the batch."""
    rng = random.Random(seed)
    names = ("category", "op", "layer", "request", "step")
    ev: list[Event] = []
    active: dict[int, int] = {}  # request -> steps left
    next_req = 0
    for step in range(steps):
        s = str(step)
        while len(active) < 8 and rng.random() < 0.7:
            r = next_req
            next_req += 1
            active[r] = rng.randrange(3, 25)
            tokens = rng.randrange(16, 512)
            for layer in range(layers):
                ev.append(("a", f"kv{r}.{layer}", tokens * 4096, ALIGN,
                           ("kv_cache", "prefill", str(layer), str(r), s)))  # fmt: skip
        batch = max(1, len(active))
        for layer in range(layers):
            h = f"h{step}.{layer}"
            ev.append(("a", h, batch * 16384, ALIGN, ("activation", "attn", str(layer), "-", s)))
            m = f"m{step}.{layer}"
            ev.append(("a", m, batch * 65536, ALIGN, ("activation", "mlp", str(layer), "-", s)))
            ev.append(("f", m))
            ev.append(("f", h))
        logits = f"logits{step}"
        ev.append(("a", logits, batch * 200_000, ALIGN, ("activation", "lm_head", "-", "-", s)))
        ev.append(("f", logits))
        for r in list(active):
            active[r] -= 1
            if active[r] == 0:
                del active[r]
                for layer in range(layers):
                    ev.append(("f", f"kv{r}.{layer}"))
    return names, ev


def lower_bound(events: list[Event]) -> int:
    live, best, size_of = 0, 0, {}
    for e in events:
        if e[0] == "a":
            size_of[e[1]] = e[2]
            live += e[2]
            best = max(best, live)
        else:
            live -= size_of[e[1]]
    return best


@dataclass
class Result:
    peak: int
    bound: int
    requests: int

    @property
    def score(self) -> float:
        return self.bound / self.peak if self.peak else 1.0


class Invalid(AssertionError):
    pass


def drive(
    cmd: list[str], names: tuple[str, ...], events: list[Event], capacity: int = 1 << 40,
    cwd: str | None = None, timeout: float = 60.0,
) -> Result:  # fmt: skip
    """Run an allocator over the protocol; raise Invalid at the first bad answer."""
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=cwd)
    assert proc.stdin is not None and proc.stdout is not None
    starts: list[int] = []
    end_at: dict[int, int] = {}
    where: dict[str, int] = {}
    pending = [f"capacity {capacity}\n", "hints" + "".join(f" {n}" for n in names) + "\n"]
    peak = requests = 0
    try:
        for n, e in enumerate(events, 1):
            if e[0] == "f":
                pending.append(f"f {e[1]}\n")
                off = where.pop(e[1])
                del starts[bisect_right(starts, off) - 1]
                del end_at[off]
                continue
            _, bid, size, align, values = e
            pending.append(f"a {bid} {size} {align}" + "".join(f" {v}" for v in values) + "\n")
            proc.stdin.write("".join(pending))
            proc.stdin.flush()
            pending = []
            line = proc.stdout.readline()
            if not line.strip().isdigit():
                raise Invalid(f"event {n}: answer {line!r} for {bid}")
            off = int(line)
            k = bisect_right(starts, off)
            if off % align or off + size > capacity:
                raise Invalid(f"event {n}: {bid} at {off} misaligned or past the capacity")
            below = k > 0 and end_at[starts[k - 1]] > off
            if below or (k < len(starts) and starts[k] < off + size):
                raise Invalid(f"event {n}: {bid} at {off} overlaps a live allocation")
            insort(starts, off)
            end_at[off] = off + size
            where[bid] = off
            peak = max(peak, off + size)
            requests += 1
        pending.append("end\n")
        proc.stdin.write("".join(pending))
        proc.stdin.close()
        assert proc.wait(timeout) == 0, "the allocator exited with an error"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return Result(peak, lower_bound(events), requests)
