"""Interleaved A/B (``nqprof ab``): two variants of one case, both sessions open in one
worker process, their rounds taken in turn (A B, then B A, ...), so that the host's drift
between minutes, and what a process gets (its core, its memory), move both alike. Two runs
minutes apart on a virtual machine differ by more than most real changes, and two worker
processes of one case can differ by a few percent for good; pairs of rounds seconds apart in
one process do not (:mod:`nqprof.analysis.paired` decides on them).

An arm is a strategy and its parameters (the same strategy with other parameters, or another
strategy). Every round's count is verified; the statistic of a round is the one benchmarks
record (CUDA events on the GPU, the worker's clock around the computation on the CPU).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from .analysis.paired import ALPHA, PairedDecision, decide_pairs
from .options import describe
from .runner import RoundLoop
from .runners import UnverifiedRunner, verify
from .strategies import get

#: Pairs by default (``pairs=None``): 20 first, then 10 more at a time while the verdict is
#: cannot-tell, up to AUTO_MAX_PAIRS pairs or AUTO_MAX_SECONDS of rounds.
AUTO_FIRST, AUTO_STEP, AUTO_MAX_PAIRS, AUTO_MAX_SECONDS = 20, 10, 200, 120.0
#: The smallest change to catch by default, GPU and CPU cases alike: pairs taken in turn in
#: one process cancel the host's drift that sets nqprof compare's wider CPU default (10%).
DEFAULT_MIN_CHANGE = 0.05


@dataclass(frozen=True)
class Arm:
    """A variant: a strategy (its name, or the object itself) and its parameters."""

    strategy: Any
    params: dict[str, Any]

    @property
    def name(self) -> str:
        return self.strategy if isinstance(self.strategy, str) else self.strategy.name

    def label(self, n: int) -> str:
        return describe(self.name, n, self.params)


@dataclass
class Interleaved:
    n: int
    a: Arm
    b: Arm
    samples_a: list[float] = field(default_factory=list)
    samples_b: list[float] = field(default_factory=list)
    #: seconds around each of A's rounds in the worker
    trips_a: list[float] = field(default_factory=list)
    #: which arm ran first in each pair ("ab" or "ba")
    order: list[str] = field(default_factory=list)
    decision: PairedDecision | None = None
    #: why the pairs stopped where they did
    stopped: str = ""
    #: the conditions of the pairs' rounds (nqprof.conditions)
    conditions: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": "nqprof-interleaved",
            "n": self.n,
            "a": {"strategy": self.a.name, "params": self.a.params},
            "b": {"strategy": self.b.name, "params": self.b.params},
            "samples_a": self.samples_a,
            "samples_b": self.samples_b,
            "order": self.order,
            "decision": self.decision.to_dict() if self.decision else None,
            "stopped": self.stopped,
            "conditions": self.conditions,
        }

    def summary(self) -> str:
        from .rounds import median
        from .textfmt import seconds

        def med(values):
            return seconds(median(values)) if values else "-"

        return "\n".join(
            [
                f"A          {self.a.label(self.n)}: median {med(self.samples_a)}",
                f"B          {self.b.label(self.n)}: median {med(self.samples_b)}",
                "rounds     interleaved A B, B A, ... in one session, every count verified; "
                + self.stopped,
                f"verdict    {self.decision.text() if self.decision else '-'}",
            ]
        )


class _PairSession:
    """Both arms' sessions, opened in one worker. A round (``run_once``) is a pair: both
    arms' rounds, A B then B A in turn from the first pair on (warm-up included); it
    answers the pair's order, each arm's measurement and the seconds around each here."""

    def __init__(self, n: int, params: dict[str, Any]):
        self.sessions = []
        self.pairs = 0
        try:
            for strategy, arm_params in params["arms"]:
                owner = get(strategy) if isinstance(strategy, str) else strategy
                self.sessions.append(owner.open(n, arm_params))
        except BaseException:
            self.close()
            raise

    def run_once(self) -> dict[str, Any]:
        order = "ab" if self.pairs % 2 == 0 else "ba"
        self.pairs += 1
        out: dict[str, Any] = {"order": order}
        for arm in order:
            session = self.sessions["ab".index(arm)]
            t0 = time.perf_counter()
            out[arm] = getattr(session, "run_round", session.run_once)()
            out[f"{arm}_s"] = time.perf_counter() - t0
        return out

    def info(self) -> dict[str, Any]:
        arms = [s.info() for s in self.sessions]
        return {"arms": arms, "device": arms[0].get("device", {}) if arms else {}}

    def close(self) -> None:
        for session in self.sessions:
            session.close()


class _Pair:
    """What the worker opens (``PAIR_CPU`` or ``PAIR_GPU`` of this module): both arms."""

    name = "ab"

    def __init__(self, gpu: bool):
        self.needs_gpu = gpu
        self.worker_attribute = "PAIR_GPU" if gpu else "PAIR_CPU"

    def open(self, n: int, params: dict[str, Any]) -> _PairSession:
        return _PairSession(n, params)


PAIR_CPU, PAIR_GPU = _Pair(False), _Pair(True)


class _PairRunner(UnverifiedRunner):
    """The worker of both arms; every pair's two counts verified, warm-up included."""

    def __init__(self, *args, arms: tuple[Arm, Arm], **kwargs):
        super().__init__(*args, **kwargs)
        self.arms = arms

    def run_once(self) -> dict[str, Any]:
        reading = super().run_once()
        for arm, name in zip(self.arms, "ab", strict=True):
            verify(arm.name, self.n, arm.params, reading[name])
        return reading


class PairRule:
    """When the pairs stop, as nqprof's round loop asks its rule (``done``, ``describe``,
    ``split``, ``fixed``): ``pairs`` pairs, or (None) AUTO_FIRST and then AUTO_STEP more at a
    time while the paired verdict is cannot-tell, up to AUTO_MAX_PAIRS pairs or
    AUTO_MAX_SECONDS. Its samples are the pairs' (A, B) statistics; ``stopped`` says why
    it stopped."""

    def __init__(self, pairs: int | None, min_change: float, alpha: float = ALPHA):
        self.fixed, self.min_change, self.alpha = pairs, min_change, alpha
        self.stopped = ""

    def done(self, samples: list[tuple[float, float]], elapsed: float) -> bool:
        count = len(samples)
        if self.fixed is not None:
            if count >= self.fixed:
                self.stopped = f"{self.fixed} pairs, as asked"
            return count >= self.fixed
        if count < AUTO_FIRST or (count - AUTO_FIRST) % AUTO_STEP:
            return False
        a, b = [x for x, _ in samples], [y for _, y in samples]
        if decide_pairs(a, b, self.min_change, self.alpha).verdict != "cannot-tell":
            self.stopped = f"{count} pairs (auto: the verdict settled)"
            return True
        if count >= AUTO_MAX_PAIRS or elapsed > AUTO_MAX_SECONDS:
            self.stopped = (
                f"{count} pairs (auto: still cannot tell at the cap of "
                f"{AUTO_MAX_PAIRS} pairs or {AUTO_MAX_SECONDS:g} s)"
            )
            return True
        return False

    def describe(self) -> str:
        return self.stopped or (
            f"{self.fixed} pairs" if self.fixed is not None else "auto pairs (nqprof ab)"
        )

    def split(self, processes: int) -> list[PairRule]:
        return [self]  # both arms in one worker: one phase


def interleave(
    n: int,
    a: Arm,
    b: Arm,
    pairs: int | None = None,
    warmup: int = 1,
    timeout: float | None = None,
    min_change: float | None = None,
    alpha: float = ALPHA,
    progress=None,
) -> Interleaved:
    """Open both arms' sessions, warm each up, then take ``pairs`` pairs of rounds in turn
    (the order alternates, A B then B A, so a trend within a pair cancels over two). With
    ``pairs`` None, pairs are added while the verdict is cannot-tell (:data:`AUTO_FIRST`...)."""
    strategies = [
        get(arm.strategy) if isinstance(arm.strategy, str) else arm.strategy for arm in (a, b)
    ]
    # every parameter resolved (a bad value is one line before anything starts)
    a, b = (
        Arm(arm.strategy, s.resolve(n, dict(arm.params)))
        for arm, s in zip((a, b), strategies, strict=True)
    )
    arms = (a, b)
    gpu = any(s.needs_gpu for s in strategies)
    if min_change is None:
        min_change = DEFAULT_MIN_CHANGE
    result = Interleaved(n, a, b)
    pair = PAIR_GPU if gpu else PAIR_CPU
    # a GPU worker is spawned and gets the arms by name; a forked CPU worker the objects
    given = [(arm.name if gpu else arm.strategy, dict(arm.params)) for arm in arms]
    rule = PairRule(pairs, min_change, alpha)

    def statistic(reading: dict[str, Any]) -> tuple[float, float]:
        return reading["a"].compute_s, reading["b"].compute_s

    with _PairRunner(pair, n, {"arms": given}, timeout, arms=arms) as runner:
        loop = RoundLoop(runner, None, warmup, progress=progress, statistic=statistic)
        loop.rule = rule
        readings = loop.run()
    result.samples_a = [a for a, _ in loop.samples]
    result.samples_b = [b for _, b in loop.samples]
    result.trips_a = [r["a_s"] for r in readings]
    result.order = [r["order"] for r in readings]
    result.stopped = rule.stopped
    result.conditions = loop.conditions
    decision = decide_pairs(result.samples_a, result.samples_b, min_change, alpha)
    result.decision = decision
    return result
