"""How much a run's units alone (its worker processes, or the sessions of a GPU case's
processes) move its median: the units' medians, and Student's interval over them, which
compare's floor (:mod:`nqprof.analysis.stats`) and the round loop's choice of more units
(:meth:`nqprof.runner.RoundLoop.wants_unit`) both read. Student's t comes from the
regularized incomplete beta function (pure Python, no scipy)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from .rounds import median

#: Significance level of compare's tests (its rank test and this interval).
ALPHA = 0.01


def process_medians(samples: Sequence[float], processes: Sequence[int] | None) -> list[float]:
    """The median of the rounds each worker process ran, for processes of two rounds or
    more (none without a process per round)."""
    if not processes or len(processes) != len(samples):
        return []
    by: dict[int, list[float]] = {}
    for t, p in zip(samples, processes, strict=True):
        by.setdefault(int(p), []).append(t)
    return [median(v) for v in by.values() if len(v) >= 2]


def process_spread(samples: Sequence[float], processes: Sequence[int] | None) -> float:
    """Relative range of the medians of the rounds each worker process ran (0 with fewer
    than two processes of two rounds or more)."""
    medians = process_medians(samples, processes)
    if len(medians) < 2 or min(medians) <= 0:
        return 0.0
    return (max(medians) - min(medians)) / min(medians)


def _beta_cf(a: float, b: float, x: float) -> float:
    """The continued fraction of the regularized incomplete beta function (modified Lentz)."""
    tiny, c, d = 1e-300, 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        for num in (
            m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)),
        ):
            d = 1.0 + num * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + num / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-14:
            break
    return h


def _beta_inc(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _beta_cf(a, b, x) / a
    return 1.0 - front * _beta_cf(b, a, 1.0 - x) / b


def t_cdf(t: float, df: float) -> float:
    """Student's t distribution function with ``df`` degrees of freedom."""
    tail = 0.5 * _beta_inc(df / 2.0, 0.5, df / (df + t * t))
    return 1.0 - tail if t >= 0 else tail


def t_quantile(q: float, df: float) -> float:
    """The ``q`` quantile (0.5 < q < 1) of Student's t with ``df`` degrees of freedom."""
    lo, hi = 0.0, 1.0
    while t_cdf(hi, df) < q:
        lo, hi = hi, hi * 2
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if t_cdf(mid, df) < q else (lo, mid)
    return (lo + hi) / 2


#: The weight, in degrees of freedom, that a case's prior for its units' variance (the
#: same strategy's other cases in the comparison, :func:`unit_priors`) gets beside the
#: case's own units: the empirical-Bayes moderated variance of Smyth (2004, limma) with a
#: fixed prior weight. Two units a run give a case two degrees of freedom of its own, so
#: its own variance is a third of the moderated one there and most of it with eight units.
PRIOR_DF = 4
#: A case's prior pools the units of the same strategy's cases whose median time is within
#: this factor of its own: where a buffer lands moves a round by a share of its time that
#: shrinks as the round grows, so a strategy's shortest and longest cases do not share one
#: variance.
PRIOR_SPAN = 4.0


def _log_squares(medians: Sequence[float]) -> tuple[float, int]:
    """The sum of squares of unit medians' logs about their mean, and its degrees of
    freedom (units less one): (0, 0) under two units, or with a median not above 0."""
    if len(medians) < 2 or min(medians) <= 0:
        return 0.0, 0
    logs = [math.log(v) for v in medians]
    mean = sum(logs) / len(logs)
    return sum((x - mean) ** 2 for x in logs), len(logs) - 1


def run_squares(samples: Sequence[float], processes: Sequence[int] | None) -> tuple[float, int]:
    """One run's sum of squares of its log unit medians about their mean, and its degrees
    of freedom (units less one): (0, 0) under two units."""
    return _log_squares(process_medians(samples, processes))


def unit_squares(
    a: Sequence[float],
    b: Sequence[float],
    processes_a: Sequence[int] | None,
    processes_b: Sequence[int] | None,
) -> tuple[float, int]:
    """Both runs' :func:`run_squares` summed: (0, 0) unless both ran in two or more units."""
    return medians_squares(process_medians(a, processes_a), process_medians(b, processes_b))


def medians_squares(ma: Sequence[float], mb: Sequence[float]) -> tuple[float, int]:
    """:func:`unit_squares` of two runs' unit medians already taken (:func:`process_medians`)."""
    (sa, da), (sb, db) = _log_squares(ma), _log_squares(mb)
    return (sa + sb, da + db) if da and db else (0.0, 0)


def pooled_prior(
    cases: Sequence[tuple[object, float, float, int]],
    group: object,
    median_s: float,
    span: float = PRIOR_SPAN,
    skip: int | None = None,
) -> tuple[float, int] | None:
    """The variance pooled over ``cases`` (group, median, sum of squares, degrees of
    freedom) of ``group`` whose median is within ``span`` of ``median_s`` (``skip``: the
    index of the case itself), with their degrees of freedom; None where none has any."""
    ss = df = 0
    for j, (g, m, s, d) in enumerate(cases):
        if j != skip and g == group and d > 0 and m > 0 and median_s > 0:
            if max(m, median_s) / min(m, median_s) <= span:
                ss, df = ss + s, df + d
    return (ss / df, df) if df else None


def unit_priors(
    cases: Sequence[tuple[object, float, float, int]], span: float = PRIOR_SPAN
) -> list[tuple[float, int] | None]:
    """Each case's prior for its units' variance (:func:`pooled_prior` over the others):
    ``cases`` are (group, median, sum of squares, degrees of freedom) as
    :func:`unit_squares` gives them, the group a strategy."""
    return [pooled_prior(cases, c[0], c[1], span, skip=i) for i, c in enumerate(cases)]


class UnitLedger:
    """The units of the cases a session has run, by group (a strategy): the prior that a
    later case's choice of more units reads (:meth:`nqprof.runner.RoundLoop.wants_unit`),
    as compare reads the other cases of a comparison."""

    def __init__(self) -> None:
        self.cases: list[tuple[object, float, float, int]] = []

    def add(self, group: object, samples: Sequence[float], processes: Sequence[int]) -> None:
        """A finished case's units (nothing for a case of fewer than two)."""
        ss, df = run_squares(samples, processes)
        if df:
            self.cases.append((group, median(samples), ss, df))

    def prior(self, group: object, median_s: float) -> tuple[float, int] | None:
        return pooled_prior(self.cases, group, median_s)


def between_process_floor(*args: Any, **kwargs: Any) -> float:
    """What the worker processes alone can move between two runs: the floor of
    :func:`floor_and_variance` (the same arguments)."""
    return floor_and_variance(*args, **kwargs)[0]


def _half_width(variance: float, freedom: int, scale: float, alpha: float) -> float:
    """Student's (1 - alpha) half-width over ``freedom`` degrees of freedom for a difference
    of mean logs whose variance is ``variance * scale``, as a relative change."""
    if variance <= 0 or freedom <= 0:
        return 0.0
    return math.expm1(t_quantile(1 - alpha / 2, freedom) * math.sqrt(variance * scale))


def floor_and_variance(
    a: Sequence[float],
    b: Sequence[float],
    processes_a: Sequence[int] | None,
    processes_b: Sequence[int] | None,
    alpha: float = ALPHA,
    prior: tuple[float, int] | None = None,
) -> tuple[float, float | None]:
    """What the worker processes alone can move between two runs. Where both ran in two
    or more processes: the half-width of Student's (1 - alpha) interval for the difference
    of the runs' mean log process medians, the variance pooled over both runs (an A/A pair
    shares it; the process, not the round, is what each run draws anew), as a relative
    change: processes that agree closely give a narrow floor, processes that differ a wide
    one. Where only one did: the range of its process medians.

    ``prior``: (variance, degrees of freedom) of the units of like cases
    (:func:`unit_priors`). Two units a run estimate their variance from two degrees of
    freedom, and two that agree by chance make a floor narrower than the runs' difference
    (devgraph N=12's false "faster" in docs/results/verdicts-h200). With a prior, the
    variance is moderated, (own squares + d0 * prior) / (own df + d0) with
    d0 = min(prior df, PRIOR_DF), and Student's t takes own df + d0. The prior only
    widens: a case whose own units disagree keeps its own interval (a CPU case's processes
    move with the host, case by case, and a quiet neighbour does not vouch for them).

    Returns the floor and the units' variance (of log unit medians) it stands on: the
    pooled one, or the moderated one where that makes the wider floor; None where a run has
    fewer than two units."""
    ma, mb = process_medians(a, processes_a), process_medians(b, processes_b)
    if len(ma) < 2 or len(mb) < 2 or min(ma + mb) <= 0:
        return max(process_spread(a, processes_a), process_spread(b, processes_b)), None
    ss, df = medians_squares(ma, mb)
    scale = 1 / len(ma) + 1 / len(mb)
    own = (_half_width(ss / df, df, scale, alpha), ss / df)
    if prior is None or prior[1] <= 0:
        return own
    d0 = min(prior[1], PRIOR_DF)
    moderated = (ss + d0 * prior[0]) / (df + d0)
    return max(own, (_half_width(moderated, df + d0, scale, alpha), moderated))


#: The most units a run that :func:`units_for_floor` counts up to: $NQPROF_GPU_SESSIONS
#: sessions (at most 16) in each of a GPU case's two worker processes.
MOST_UNITS = 32


def units_for_floor(
    variance: float | None, floor: float, alpha: float = ALPHA, most: int = MOST_UNITS
) -> int | None:
    """How many units each run would need for what its units alone move
    (:func:`between_process_floor`) to be at most ``floor``, if they vary with ``variance``
    (of log unit medians: the one that floor stands on, :func:`floor_and_variance`): the
    smallest k from 2 whose Student's half-width over 2(k - 1) degrees of freedom, for two
    runs of k units, is at most ``floor``; ``most + 1`` where even ``most`` would not do;
    None for no variance (a run of fewer than two units: nothing to tell it from)."""
    if variance is None:
        return None
    for k in range(2, most + 1):
        if _half_width(variance, 2 * (k - 1), 2 / k, alpha) <= floor:
            return k
    return most + 1
