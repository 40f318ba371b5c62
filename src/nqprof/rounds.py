"""How many timed rounds a case gets: the one rule of `nqprof solve`, `nqprof sweep` and the
pytest plugin.

``auto`` (the default everywhere) follows NVBench's stdrel criterion: after the warm-up,
time at least :data:`MIN_ROUNDS` rounds and :data:`MIN_TIME` seconds, then go on until the
median's relative standard error is under :data:`TARGET_NOISE`; stop anyway after
:data:`MAX_TIME` seconds or :data:`MAX_ROUNDS` rounds (never before MIN_ROUNDS). A fixed
count (``--rounds 7``) times exactly that many.

The noise is the median's standard error estimated robustly from the median absolute
deviation (MAD): ``1.2533 * 1.4826 * MAD / sqrt(n)``, relative to the median. It falls as
rounds are added, so the rule ends; samples that vary a lot end at MAX_TIME.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from .textfmt import plural

#: Rounds timed at the least (auto): with five a side, compare's rank test can decide.
MIN_ROUNDS = 5
#: Seconds of timed rounds at the least (auto), NVBench's default min-time.
MIN_TIME = 0.5
#: Seconds after which auto stops even if the median is still noisy. The noise falls as
#: one over the root of the rounds, so a median still noisier than the target after this
#: long needs several times as long again to reach it: compare's floors take such a case's
#: noise into account instead.
MAX_TIME = 3.0
#: Rounds after which auto stops. A median of 200 rounds of a steady kernel meets the noise
#: target; a kernel of a few microseconds, whose launches jitter by more than the target
#: allows, stops here, and compare's floors take its noise into account.
MAX_ROUNDS = 200
#: The median's relative standard error auto aims for.
TARGET_NOISE = 0.005
#: Warm-up rounds by default, everywhere (untimed, verified): the first launch pays for
#: lazy loading.
DEFAULT_WARMUP = 1
#: The confidence of a --benchmark-precision bound where none is given (pytest-benchmark's
#: --benchmark-confidence default).
DEFAULT_CONFIDENCE = 0.99


def median(values: Iterable[float]) -> float:
    """The median (statistics.median, without importing statistics: start-up time)."""
    v = sorted(values)
    if not v:
        raise ValueError("median of no values")
    mid = len(v) // 2
    return v[mid] if len(v) % 2 else (v[mid - 1] + v[mid]) / 2


def median_noise(samples: Sequence[float]) -> float:
    """The median's relative standard error (MAD-based); inf below 2 samples or at a
    median of 0."""
    if len(samples) < 2:
        return math.inf
    mid = median(samples)
    if mid <= 0:
        return math.inf
    mad = median([abs(s - mid) for s in samples])
    return 1.2533 * 1.4826 * mad / math.sqrt(len(samples)) / mid


@dataclass(frozen=True)
class RoundRule:
    """``fixed`` rounds, or (None) the auto rule with these bounds."""

    fixed: int | None = None
    min_rounds: int = MIN_ROUNDS
    min_time: float = MIN_TIME
    max_time: float = MAX_TIME
    max_rounds: int = MAX_ROUNDS
    target_noise: float = TARGET_NOISE

    def done(self, samples: Sequence[float], elapsed: float) -> bool:
        """Whether the rounds timed so far (their statistic ``samples``, ``elapsed`` host
        seconds since the first timed round started) are enough."""
        n = len(samples)
        if self.fixed is not None:
            return n >= self.fixed
        if n < self.min_rounds:
            return False
        if n >= self.max_rounds or elapsed >= self.max_time:
            return True
        return elapsed >= self.min_time and median_noise(samples) <= self.target_noise

    def describe(self) -> str:
        if self.fixed is not None:
            return plural(self.fixed, "round")
        return (
            f"auto: at least {plural(self.min_rounds, 'round')} and {self.min_time:g} s, "
            "then until the "
            f"median's relative standard error is under {self.target_noise:.1%}; at most "
            f"{self.max_time:g} s or {plural(self.max_rounds, 'round', fmt=',')}"
        )

    def split(self, processes: int) -> list[RoundRule]:
        """The rules of ``processes`` worker processes that take a case's rounds one after
        another: a fixed count divided among them (no process gets none: ``--rounds 1``
        opens one); auto's times and rounds divided, each process timing at least
        ceil(MIN_ROUNDS / processes) rounds and at least two (so each has a median of its
        own, which compare counts: :func:`nqprof.analysis.stats.process_medians`) to the
        same noise target."""
        k = max(1, processes)
        if self.fixed is not None:
            counts = [self.fixed // k + (1 if i < self.fixed % k else 0) for i in range(k)]
            return [RoundRule(fixed=c) for c in counts if c > 0]
        if k == 1:
            return [self]
        share = RoundRule(
            min_rounds=max(2, -(-self.min_rounds // k)),
            min_time=self.min_time / k,
            max_time=self.max_time / k,
            max_rounds=max(2, self.max_rounds // k),
            target_noise=self.target_noise,
        )
        return [share] * k

    def bounded(
        self,
        min_rounds: int | None = None,
        max_time: float | None = None,
        precision: float | None = None,
        confidence: float | None = None,
    ) -> RoundRule:
        """This auto rule with pytest-benchmark's bounds where given: at least ``min_rounds``
        rounds; at most ``max_time`` seconds of timed rounds (and no more than that at the
        least); rounds until the median's relative margin of error at ``confidence`` (None:
        DEFAULT_CONFIDENCE) is under ``precision`` (a noise target of
        precision / z, z the normal quantile)."""
        from dataclasses import replace

        rule = self
        if min_rounds is not None:
            rule = replace(rule, min_rounds=int(min_rounds))
        if max_time is not None:
            rule = replace(
                rule, max_time=float(max_time), min_time=min(rule.min_time, float(max_time))
            )
        if precision is not None:
            from statistics import NormalDist

            level = DEFAULT_CONFIDENCE if confidence is None else float(confidence)
            z = NormalDist().inv_cdf(0.5 + level / 2)
            rule = replace(rule, target_noise=float(precision) / z)
        return rule

    @classmethod
    def of(cls, rounds: int | None) -> RoundRule:
        """The rule for a ``--rounds`` value (None: auto)."""
        return cls(fixed=rounds)


#: The help text of ``--rounds``/``--nq-rounds``, from the rule itself.
AUTO_TEXT = RoundRule().describe()
