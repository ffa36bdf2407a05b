"""Micro-batch scale factors: how an iteration's sizes relate to its template's.

When an iteration repeats one seen before but with other sequence lengths, each
micro-batch's token-dependent tensors (activations, temporaries, inputs, KV caches of a
micro-batch) are the template's times a factor of that micro-batch, rounded to the
allocator's granularity; every other tensor (parameters' gradients...) keeps its size.
A factor is read from the micro-batch's largest request so far whose size changed (the
least rounding error; a tensor of the same size tells nothing: it may not scale at
all); a request agrees with it up to the rounding. Factors stay within the range a
sequence length may vary (0.6x to 1.4x each way); outside it the iteration is another
step, not a rescaled one. A micro-batch not seen yet is predicted at the smallest factor
seen, at most 1 (over-predicting pushes planned blocks up for nothing; measured against
1.0, the mean and the largest seen).
"""

from __future__ import annotations

from online_greedy import align_up

SCALED = ("activation", "temporary", "input", "kv_cache")
GRAIN = 512  # sizes are rounded up to this
LO, HI = 0.6 / 1.4 - 0.01, 1.4 / 0.6 + 0.01
TOL = 0.002  # a factor this far from the planned one calls for a new plan
SHARPEN = 0.01  # ... and so does one first known to worse than this
WIDE = (1 / 16, 16)  # size ratios allowed between micro-batches of one step
WIDE_TOL = 0.02  # a size class this far from its planned size calls for a new plan


def scaled(category: str | None, microbatch: str, size: int) -> bool:
    """Does this request's size follow its micro-batch's sequence length?"""
    return category in SCALED and microbatch != "-" and size >= GRAIN


class Factors:
    """`wide`: the template is another micro-batch of the same step (or of another
    one), whose tensors need not follow one factor: recorded micro-batches differ in
    batch and sequence length, and attention scores go with the square of the length.
    Then any ratio in WIDE matches, and each size class (the template's size, per
    micro-batch) is predicted as seen once it has been."""

    def __init__(self, wide: bool = False) -> None:
        self.wide = wide
        self.best: dict[str, tuple[int, int]] = {}  # micro-batch -> (template, current) size
        self.known: dict[tuple[str, int], int] = {}  # (micro-batch, template size) -> size (wide)
        self.planned_known: set[tuple[str, int]] = set()
        self.planned: dict[str, int] = {}  # micro-batch -> template size its plan used
        self.planned_factor: dict[str, float] = {}
        self.assumed = 1.0  # the factor the plan gave micro-batches not seen yet

    def learn(self, mb: str, template: int, size: int) -> None:
        if self.wide:
            self.known[(mb, template)] = size  # its size class
        b = self.best.get(mb)
        if b is None or template > b[0]:
            self.best[mb] = (template, size)

    def ratio(self, mb: str) -> float | None:
        b = self.best.get(mb)
        return None if b is None else b[1] / b[0]

    def unseen(self) -> float:
        return min(min((c / t for t, c in self.best.values()), default=1.0), 1.0)

    def predict(self, mb: str, template: int) -> int:
        """A request's size as the template's scaled by its micro-batch (with slack for
        the rounding), or by the unseen factor."""
        seen = self.known.get((mb, template))
        if seen is not None:
            return seen
        b = self.best.get(mb)
        if b is None:
            return align_up(int(template * self.unseen()), GRAIN)
        t, c = b
        return align_up(int(template * c / t + GRAIN + template * GRAIN / t), GRAIN)

    def agrees(self, mb: str, template: int, size: int) -> bool:
        """Is `size` the template's size scaled by the micro-batch's factor?"""
        if size < GRAIN:
            return False
        if self.known.get((mb, template)) == size:
            return True
        if self.wide:
            return WIDE[0] <= size / template <= WIDE[1]
        b = self.best.get(mb)
        if b is None:
            return LO <= size / template <= HI
        t, c = b
        return abs(size - template * c / t) <= self._slack(template, t)

    def consistent(self, mb: str, template: int, size: int) -> bool:
        """After learning a whole prefix: is the micro-batch's factor in range and
        `size` that factor's?"""
        if self.wide:
            return WIDE[0] <= size / template <= WIDE[1]
        t, c = self.best[mb]
        return LO <= c / t <= HI and abs(size - template * c / t) <= self._slack(template, t)

    @staticmethod
    def _slack(template: int, t: int) -> float:
        """Rounding error allowed when scaling `template` by a factor read at size t."""
        return 2 * GRAIN + template * 2 * GRAIN / t

    def planning(self) -> None:
        """A plan is being made with the factors known now."""
        self.assumed = self.unseen()
        self.planned = {m: t for m, (t, _) in self.best.items()}
        self.planned_factor = {m: c / t for m, (t, c) in self.best.items()}
        self.planned_known = set(self.known)

    def news(self, mb: str, template: int = 0, size: int = 0, least: int = 0) -> bool:
        """Did the micro-batch's last request tell more than its plan assumed: a first
        factor other than the unseen one, or a much sharper one? (wide: a size class
        the plan did not know, off its prediction by more than WIDE_TOL and `least` bytes)"""
        if self.wide:
            if (mb, template) in self.planned_known:
                return False
            off = abs(size - template * self.planned_factor.get(mb, self.assumed))
            return off > WIDE_TOL * size and off > least
        t, c = self.best[mb]
        r, old = c / t, self.planned.get(mb)
        if old is None:
            return abs(r - self.assumed) > TOL * r
        return t >= 4 * old and GRAIN / old > SHARPEN

    def reset(self) -> None:
        self.best, self.planned, self.assumed = {}, {}, 1.0
        self.known, self.planned_known, self.planned_factor = {}, set(), {}
