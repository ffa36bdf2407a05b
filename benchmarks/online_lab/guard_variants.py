"""Experiments (not shipped): Ties with greedy (best fit) run in shadow as a guard. See
predict_notes.md, "Structural layouts"."""

from __future__ import annotations

from cold_variants import Ties
from online_greedy import BestFit, align_up


class Guard(Ties):
    """Ties; greedy runs beside it on the same requests. When Ties' answer would end above
    both peaks so far (its own and greedy's), greedy's answer is taken instead if that range
    is free here (the layouts drift apart, so it often is not); else Ties'."""

    def __init__(self, capacity: int, names: list[str]) -> None:
        super().__init__(capacity, names)
        self.shadow = BestFit(capacity)
        self.fired = self.saved = 0

    def ties_end(self, size: int, align: int, high: bool) -> int:
        """Where Ties' answer would end (without placing it)."""
        bf = self.bf
        found = bf._highest(size, align) if high else None
        found = found or bf._find(size, align, 64)
        off = found[1] if found else align_up(bf.top, align)
        return off + size

    def alloc(self, bid: str, size: int, align: int, values: list[str]) -> int:
        g = self.shadow.alloc(bid, size, align)
        cat = values[self.cat]
        high = self.high(cat)
        ceiling = max(self.bf.peak, self.shadow.peak)
        if self.ties_end(size, align, high) > ceiling:
            self.fired += 1
            if self.bf.take(bid, g, align_up(g + size, align)):
                self.saved += 1
                return g
        return self.bf.alloc(bid, size, align, high)

    def free(self, bid: str) -> None:
        self.shadow.free(bid)
        super().free(bid)


class Sync(Guard):
    """Greedy's answer whenever that range is free here, else Ties: starts identical to
    greedy and drifts only where a tie-break differs (a control for Guard)."""

    def alloc(self, bid: str, size: int, align: int, values: list[str]) -> int:
        g = self.shadow.alloc(bid, size, align)
        if self.bf.take(bid, g, align_up(g + size, align)):
            return g
        return self.bf.alloc(bid, size, align, self.high(values[self.cat]))


class EchoFF:
    """predict_variants.Echo for the temporaries (a layer repeats the one before), KV
    caches first fit (the lowest gap that fits), so that caches settle low and stay out
    of the temporaries' echoed layout."""

    def __new__(cls, capacity: int, names: list[str]):
        from ceiling_variants import first_fit_kv
        from predict_variants import Echo

        class _EchoFF(Echo):
            def alloc(self, bid: str, size: int, align: int, values: list[str]) -> int:
                if values[self.cat] != "kv_cache":
                    return super().alloc(bid, size, align, values)
                return first_fit_kv(self, bid, size, align)

        return _EchoFF(capacity, names)
