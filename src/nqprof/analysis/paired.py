"""Deciding an interleaved A/B measurement: rounds of A and B taken in turn in one session
(``nqprof ab``), so that the host's drift between minutes moves both alike and cancels in each
pair's ratio (asv's ``continuous`` runs two revisions' benchmarks interleaved for this reason).

Each pair gives the log of its ratio, ``log(b / a)``. The change is the median of those logs
(as a relative change), with the distribution-free confidence interval of a median: the order
statistics ``k`` in from each end, ``k`` from the binomial(n, 1/2) law (the sign test), so no
shape of the noise is assumed and a stray round moves nothing. The verdict weighs that
interval against the smallest change the user wants caught (``min_change``):

* **slower** / **faster**: the interval excludes no change and the estimate is at least half
  the change to catch;
* **same**: the whole interval lies within plus or minus the change to catch;
* **cannot-tell**: neither (too few pairs, or pairs too noisy, for that change): more pairs
  narrow it;
* **too-few-pairs**: fewer pairs than any interval at ``alpha`` needs (8 at 0.01).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass

from ..rounds import median

#: Two-sided level of the interval.
ALPHA = 0.01
#: Every verdict :func:`decide_pairs` gives.
VERDICTS = ("slower", "faster", "same", "cannot-tell", "too-few-pairs")


def _binom_cdf_half(k: int, n: int) -> float:
    """P(X <= k) for X ~ binomial(n, 1/2)."""
    return sum(math.comb(n, i) for i in range(k + 1)) / 2**n


def rank_depth(n: int, alpha: float = ALPHA) -> int:
    """How many order statistics in from each end the (1 - alpha) interval of a median of
    ``n`` values starts: the largest k with 2 P(X <= k - 1) <= alpha; 0 when none exists."""
    k = 0
    while k < n // 2 and 2 * _binom_cdf_half(k, n) <= alpha:
        k += 1
    return k


@dataclass(frozen=True)
class PairedDecision:
    verdict: str  # slower | faster | same | cannot-tell | too-few-pairs
    change: float | None  # the median pair's b / a - 1
    low: float | None  # the interval's ends, as relative changes
    high: float | None
    pairs: int
    min_change: float
    alpha: float

    def to_dict(self) -> dict:
        return asdict(self)

    def text(self) -> str:
        if self.change is None:
            return f"{self.verdict} ({self.pairs} pairs)"
        level = f"{100 * (1 - self.alpha):g}%"
        return (
            f"{self.verdict}: {self.change:+.1%} ({level} interval {self.low:+.1%} .. "
            f"{self.high:+.1%}, {self.pairs} pairs; change to catch {self.min_change:.0%})"
        )


def decide_pairs(
    a: Sequence[float], b: Sequence[float], min_change: float, alpha: float = ALPHA
) -> PairedDecision:
    """The verdict on pairs ``(a[i], b[i])`` of one interleaved session (positive times)."""
    if len(a) != len(b):
        raise ValueError(f"pairs need as many A as B samples, got {len(a)} and {len(b)}")
    if not 0 < min_change < 1:
        raise ValueError(f"the change to catch must be in (0, 1), got {min_change}")
    n = len(a)
    logs = sorted(math.log(y / x) for x, y in zip(a, b, strict=True))
    k = rank_depth(n, alpha)
    if k == 0:
        change = math.expm1(median(logs)) if logs else None
        return PairedDecision("too-few-pairs", change, None, None, n, min_change, alpha)
    est, lo, hi = (math.expm1(x) for x in (median(logs), logs[k - 1], logs[n - k]))
    if lo > 0 and est >= min_change / 2:
        verdict = "slower"
    elif hi < 0 and est <= -min_change / 2:
        verdict = "faster"
    elif -min_change < lo and hi < min_change:
        verdict = "same"
    else:
        verdict = "cannot-tell"
    return PairedDecision(verdict, est, lo, hi, n, min_change, alpha)
