"""Room for Adam's state, kept free right above the parameters.

torch.optim.Adam makes two moments per parameter, each the parameter's size, lazily in
the first optimizer step: after the first iteration's activations are freed, while its
gradients are live. Best fit would scatter them through the holes the activations left,
and every later iteration would have to fit between them. So, once the parameters are
in (their bytes told by the `category` hint), twice their bytes right above them are
held back. Until the state comes, the first iteration's micro-batch tensors
(activations, temporaries, inputs: all freed before the optimizer step) may use the
room; nothing else may. The state then takes the room in order, each moment where it
is free; what is left is given back when the second iteration starts.

The room is held as placeholder blocks ("#room1", ...) in the BestFit arena covering
its free bytes, so best fit keeps out of it; they are dropped around a request that
may use it and made again after.
"""

from __future__ import annotations

from bisect import bisect_right

from online_greedy import BestFit, align_up

MOMENTS = 2  # Adam's exp_avg and exp_avg_sq
SHARERS = ("activation", "temporary", "input")  # freed within their micro-batch


class AdamRoom:
    def __init__(self, bf: BestFit) -> None:
        self.bf = bf
        self.param_bytes = 0
        self.span: list[int] | None = None  # [cursor, end) still reserved
        self.pieces: list[str] = []
        self.made = 0
        self.watching = True  # the parameters are still coming

    def before(self, bid: str, size: int, align: int, category: str | None) -> int | None:
        """Called first for every request: counts the parameters, opens the room after
        them, and places Adam's state in it (its offset, or None for everything else)."""
        if self.watching:
            if category == "parameter":
                self.param_bytes += align_up(size, align)
            else:
                self.watching = False
                if category is not None and self.param_bytes:
                    top = self.bf.top
                    self.span = [top, top + MOMENTS * self.param_bytes]
                    self.hold()
        if category != "optimizer_state" or self.span is None:
            return None
        self.release()
        off = align_up(self.span[0], align)
        end = align_up(off + size, align)
        got = None
        if end <= self.span[1] and self.bf.take(bid, off, end):
            self.span[0], got = end, off
        if self.span[0] >= self.span[1]:
            self.span = None
        self.hold()
        return got

    def shares(self, category: str | None, microbatch: str) -> bool:
        """May this request use the room while Adam's state has not come?"""
        return bool(self.pieces) and category in SHARERS and microbatch != "-"

    def close(self) -> None:
        """The first iteration is over: what was not taken is free again."""
        self.release()
        self.span = None

    def covers(self, bid: str) -> bool:
        """Is the live block `bid` inside the room (its free would open room bytes)?"""
        got = self.bf.live.get(bid)
        span = self.span
        return span is not None and got is not None and got[0] < span[1] and got[1] > span[0]

    def release(self) -> None:
        for piece in self.pieces:
            self.bf.free(piece)
        self.pieces = []

    def hold(self) -> None:
        """Cover every free byte of the room (from its cursor on) with placeholders."""
        if self.span is None:
            return
        lo, hi = self.span
        bf, spans = self.bf, []
        k = max(0, bisect_right(bf.starts, lo) - 1)
        while k < len(bf.starts) and bf.starts[k] < hi:
            a, b = max(bf.starts[k], lo), min(bf.gap_end[bf.starts[k]], hi)
            if a < b:
                spans.append((a, b))
            k += 1
        if bf.top < hi:
            a = max(bf.top, lo)
            if spans and spans[-1][1] == a:
                a = spans.pop()[0]
            spans.append((a, hi))
        for a, b in spans:
            self.made += 1
            name = f"#room{self.made}"
            if bf.take(name, a, b):
                self.pieces.append(name)
