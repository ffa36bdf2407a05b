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


def scaled(category: str | None, microbatch: str, size: int) -> bool:
    """Does this request's size follow its micro-batch's sequence length?"""
    return category in SCALED and microbatch != "-" and size >= GRAIN


class Factors:
    def __init__(self) -> None:
        self.best: dict[str, tuple[int, int]] = {}  # micro-batch -> (template, current) size
        self.planned: dict[str, int] = {}  # micro-batch -> template size its plan used
        self.assumed = 1.0  # the factor the plan gave micro-batches not seen yet

    def learn(self, mb: str, template: int, size: int) -> None:
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
        b = self.best.get(mb)
        if b is None:
            return align_up(int(template * self.unseen()), GRAIN)
        t, c = b
        return align_up(int(template * c / t + GRAIN + template * GRAIN / t), GRAIN)

    def agrees(self, mb: str, template: int, size: int) -> bool:
        """Is `size` the template's size scaled by the micro-batch's factor?"""
        if size < GRAIN:
            return False
        b = self.best.get(mb)
        if b is None:
            return LO <= size / template <= HI
        t, c = b
        return abs(size - template * c / t) <= self._slack(template, t)

    def consistent(self, mb: str, template: int, size: int) -> bool:
        """After learning a whole prefix: is the micro-batch's factor in range and
        `size` that factor's?"""
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

    def news(self, mb: str) -> bool:
        """Did the micro-batch's last request tell more than its plan assumed: a first
        factor other than the unseen one, or a much sharper one?"""
        t, c = self.best[mb]
        r, old = c / t, self.planned.get(mb)
        if old is None:
            return abs(r - self.assumed) > TOL * r
        return t >= 4 * old and GRAIN / old > SHARPEN

    def reset(self) -> None:
        self.best, self.planned, self.assumed = {}, {}, 1.0
