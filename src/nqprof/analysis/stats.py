"""Deciding whether two benchmarks' samples differ: a rank test plus a minimum effect.

The way asv and NVBench's compare decide, not a threshold on one run's spread alone:

* **too-few-rounds** when the rank test cannot reach :data:`ALPHA` with the rounds given
  (fewer than five a side at ALPHA = 0.01), or a side has no samples;
* **same** unless the Mann-Whitney U test calls the two sample sets different
  (two-sided p < ALPHA) *and* the ratio of medians moves by more than the floor: the
  largest of :data:`MIN_EFFECT`, each run's own drift (the relative range of the medians
  of its four quarters of rounds: conditions that move within a run move between runs
  too), half of each run's relative interquartile range (rounds that spread widely,
  or fall in two modes, have a median that moves between runs) and, where the rounds ran
  in several worker processes, what the processes alone can move between runs (the
  half-width of Student's interval on the runs' per-process medians: what a process gets,
  a core and its memory, or where its CUDA context's allocations land, moves its time;
  moderated by like cases' units where compare gives a prior, :mod:`nqprof.spread`);
* otherwise **faster** or **slower**;
* and **cannot-tell** where it would be **same** but the floor is wider than the smallest
  change the caller wants caught (``min_change``): a change that size could hide under the
  floor, so "same" would claim what the rounds cannot show. A change beyond a wide floor
  is still faster or slower.

Pure Python (no scipy): the exact U distribution for small samples, the normal
approximation with tie correction above :data:`EXACT_LIMIT` combinations; Student's t
from the regularized incomplete beta function.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from ..rounds import median
from ..spread import (  # noqa: F401 (between_process_floor, process_spread, t_cdf, t_quantile: stats' api too)
    ALPHA,
    between_process_floor,
    floor_and_variance,
    process_medians,
    process_spread,
    t_cdf,
    t_quantile,
    units_for_floor,
)

#: The smallest relative change of the median that is ever called faster or slower: for
#: GPU cases (CUDA events, launch latency held out), and for CPU cases, whose times move
#: between runs with the host's clocks and neighbours (asv's default factor, 1.1). Two
#: back-to-back runs on an H200 host moved single-thread CPU cases by up to 6%.
MIN_EFFECT = 0.05
MIN_EFFECT_CPU = 0.10
#: The smallest change a comparison must be able to catch by default, for GPU and for CPU
#: cases: a case whose floor is wider is cannot-tell, never same. The kinds' minimum
#: effects: a floor that nothing widened past its kind's minimum can tell.
MIN_CHANGE = MIN_EFFECT
MIN_CHANGE_CPU = MIN_EFFECT_CPU
#: Relative slack of the comparisons with the floor and with the smallest change, so that a
#: value computed to the same number in another order is on the boundary, not past it.
SLACK = 1e-9
#: Above this many (na * nb) the normal approximation is used.
EXACT_LIMIT = 400


@lru_cache(maxsize=1024)
def _u_counts(na: int, nb: int) -> tuple[int, ...]:
    """How many orderings of na + nb distinct values give each U from 0 to na*nb: the
    largest value is A's (adding nb to U) or B's (adding nothing)."""
    if na == 0 or nb == 0:
        return (1,) + (0,) * (na * nb)
    from_a, from_b = _u_counts(na - 1, nb), _u_counts(na, nb - 1)
    return tuple(
        (from_a[u - nb] if u >= nb else 0) + (from_b[u] if u < len(from_b) else 0)
        for u in range(na * nb + 1)
    )


def min_p_value(na: int, nb: int) -> float:
    """The smallest two-sided p the rank test can give with na and nb samples."""
    if na < 1 or nb < 1:
        return 1.0
    log_comb = math.lgamma(na + nb + 1) - math.lgamma(na + 1) - math.lgamma(nb + 1)
    return min(1.0, 2.0 * math.exp(-log_comb))  # 0.0 where C(na + nb, na) is past a float


def mann_whitney_p(a: Sequence[float], b: Sequence[float]) -> float:
    """Two-sided p-value of the Mann-Whitney U test between samples ``a`` and ``b``."""
    na, nb = len(a), len(b)
    if na == 0 or nb == 0:
        return 1.0
    ranked = sorted([(v, 0) for v in a] + [(v, 1) for v in b])
    ranks = [0.0] * len(ranked)
    ties = []
    i = 0
    while i < len(ranked):
        j = i
        while j + 1 < len(ranked) and ranked[j + 1][0] == ranked[i][0]:
            j += 1
        for k in range(i, j + 1):
            ranks[k] = (i + j) / 2 + 1
        ties.append(j - i + 1)
        i = j + 1
    rank_a = sum(r for r, (_, side) in zip(ranks, ranked, strict=True) if side == 0)
    u = rank_a - na * (na + 1) / 2
    mean = na * nb / 2
    if na * nb <= EXACT_LIMIT and all(t == 1 for t in ties):
        counts = _u_counts(na, nb)
        total = sum(counts)
        lo = min(u, na * nb - u)
        tail = sum(counts[: int(math.floor(lo)) + 1]) / total
        return min(1.0, 2 * tail)
    n = na + nb
    tie_term = sum(t**3 - t for t in ties) / (n * (n - 1))
    var = na * nb / 12 * ((n + 1) - tie_term)
    if var <= 0:
        return 1.0
    z = (abs(u - mean) - 0.5) / math.sqrt(var)  # continuity correction
    return min(1.0, math.erfc(max(z, 0.0) / math.sqrt(2)))


#: A run's rounds are cut into this many blocks in order for its drift.
DRIFT_BLOCKS = 4


def drift(samples: Sequence[float]) -> float:
    """Relative range of the medians of DRIFT_BLOCKS consecutive blocks of a run's rounds
    (0 below two rounds a block)."""
    size = len(samples) // DRIFT_BLOCKS
    if size < 2:
        return 0.0
    medians = [median(samples[i * size : (i + 1) * size]) for i in range(DRIFT_BLOCKS)]
    low = min(medians)
    return (max(medians) - low) / low if low > 0 else 0.0


def relative_iqr(samples: Sequence[float]) -> float:
    """Interquartile range over the median (quartiles as medians of the halves; 0 below 4)."""
    if len(samples) < 4:
        return 0.0
    v = sorted(samples)
    half = len(v) // 2
    q1, q3, mid = median(v[:half]), median(v[-half:]), median(v)
    return (q3 - q1) / mid if mid > 0 else 0.0


def floor_terms(
    a: Sequence[float],
    b: Sequence[float],
    min_effect: float = MIN_EFFECT,
    processes_a: Sequence[int] | None = None,
    processes_b: Sequence[int] | None = None,
    prior: tuple[float, int] | None = None,
) -> dict[str, float]:
    """What the floor is the largest of, relative: ``minimum`` (the minimum effect given),
    ``drift`` (the larger run's drift), ``spread`` (half the larger relative interquartile
    range) and ``processes`` (what the worker processes alone can move between the runs;
    ``prior``: the variance of like cases' units, :func:`nqprof.spread.unit_priors`)."""
    return _terms_and_variance(a, b, min_effect, processes_a, processes_b, prior)[0]


def _terms_and_variance(
    a: Sequence[float],
    b: Sequence[float],
    min_effect: float,
    processes_a: Sequence[int] | None,
    processes_b: Sequence[int] | None,
    prior: tuple[float, int] | None,
) -> tuple[dict[str, float], float | None]:
    """:func:`floor_terms` and the units' variance its ``processes`` term stands on
    (:func:`nqprof.spread.floor_and_variance`)."""
    processes, variance = floor_and_variance(a, b, processes_a, processes_b, prior=prior)
    terms = {
        "minimum": min_effect,
        "drift": max(drift(a), drift(b)),
        "spread": max(relative_iqr(a), relative_iqr(b)) / 2,
        "processes": processes,
    }
    return terms, variance


def floor_of(*args: Any, **kwargs: Any) -> float:
    """The smallest relative change of the median called a difference between runs a and b:
    the largest of their :func:`floor_terms` (which takes the same arguments)."""
    return max(floor_terms(*args, **kwargs).values())


def wider_than(floor: float, min_change: float) -> bool:
    """Whether a floor is wider than the smallest change to catch (one equal to it is not)."""
    return floor > min_change * (1 + SLACK)


@dataclass(frozen=True)
class Decision:
    verdict: str  # same | faster | slower | cannot-tell | too-few-rounds
    change: float | None  # median_b / median_a - 1
    floor: float | None  # the smallest change called a difference, relative
    p: float | None  # the rank test's two-sided p-value
    #: the smallest change the decision had to be able to catch, relative
    min_change: float | None = None
    #: the floor's terms (floor_terms), where it was computed
    terms: dict[str, float] | None = field(default=None, compare=False)
    #: where what the units alone move (terms["processes"]) is wider than min_change: the
    #: units each run would need to narrow it to min_change (spread.units_for_floor)
    units: int | None = field(default=None, compare=False)


def decide_exact(a: float, b: float, min_change: float) -> Decision:
    """The verdict for counts that do not move between runs of the same code (a CPU case's
    instructions under Valgrind): no floor, no test; a change of ``min_change`` or more is
    faster or slower, a smaller one same (its size shown)."""
    change = b / a - 1 if a > 0 else None
    if change is None:
        return Decision("too-few-rounds", None, None, None, min_change)
    verdict = "same" if abs(change) < min_change else ("slower" if change > 0 else "faster")
    return Decision(verdict, change, 0.0, None, min_change)


def decide(
    a: Sequence[float],
    b: Sequence[float],
    alpha: float = ALPHA,
    min_effect: float = MIN_EFFECT,
    processes_a: Sequence[int] | None = None,
    processes_b: Sequence[int] | None = None,
    min_change: float | None = None,
    prior: tuple[float, int] | None = None,
) -> Decision:
    """The verdict for the change from samples ``a`` to samples ``b`` (``processes_*``: the
    worker process of each round, where a run used several; ``prior``: the variance of like
    cases' units, :func:`nqprof.spread.unit_priors`). ``min_change``: the smallest
    relative change the caller wants caught (default ``min_effect``); a case that is not
    faster or slower and whose floor is wider than it is cannot-tell, not same."""
    wanted = min_effect if min_change is None else min_change
    if not a or not b:
        return Decision("too-few-rounds", None, None, None, wanted)
    change = median(b) / median(a) - 1 if median(a) > 0 else None
    terms, variance = _terms_and_variance(a, b, min_effect, processes_a, processes_b, prior)
    floor = max(terms.values())
    # at the floor's own level (floor_terms' ALPHA), whatever the rank test's alpha
    units = units_for_floor(variance, wanted) if wider_than(terms["processes"], wanted) else None

    def verdict(name: str, p: float | None) -> Decision:
        return Decision(name, change, floor, p, wanted, terms, units)

    if min_p_value(len(a), len(b)) >= alpha:
        return verdict("too-few-rounds", None)
    p = mann_whitney_p(a, b)
    if change is not None and p < alpha and abs(change) > floor * (1 + SLACK):  # on it: none
        return verdict("slower" if change > 0 else "faster", p)
    return verdict("cannot-tell" if wider_than(floor, wanted) else "same", p)
