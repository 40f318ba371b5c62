"""Interleaved A/B (``nqprof ab``): two variants of one case, each in a worker process of its
own, their rounds taken in turn in one session (A B, then B A, ...), so that the host's
drift between minutes moves both alike. Two runs minutes apart on a virtual machine differ
by more than most real changes; pairs of rounds seconds apart do not
(:mod:`nqprof.analysis.paired` decides on them).

An arm is a strategy and its parameters (the same strategy with other parameters, or another
strategy). Every round's count is verified; the statistic of a round is the one benchmarks
record (CUDA events on the GPU, the worker's clock around the computation on the CPU).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .analysis.paired import ALPHA, PairedDecision, decide_pairs
from .options import describe
from .runner import WorkerRunner, verify
from .strategies import get

#: Pairs by default: enough for a 99% interval on the median pair (8 at least).
DEFAULT_PAIRS = 20
#: The smallest change to catch by default, by kind of case (as nqprof compare's floors).
DEFAULT_MIN_CHANGE = {"gpu": 0.05, "cpu": 0.05}


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
    #: which arm ran first in each pair ("ab" or "ba")
    order: list[str] = field(default_factory=list)
    decision: PairedDecision | None = None

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
        }

    def summary(self) -> str:
        from .textfmt import seconds

        def med(values):
            return seconds(sorted(values)[len(values) // 2]) if values else "-"

        return "\n".join(
            [
                f"A          {self.a.label(self.n)}: median {med(self.samples_a)}",
                f"B          {self.b.label(self.n)}: median {med(self.samples_b)}",
                "rounds     interleaved A B, B A, ... in one session, every count verified",
                f"verdict    {self.decision.text() if self.decision else '-'}",
            ]
        )


def _statistic(m) -> float:
    return m.gpu_s if m.gpu_s is not None else m.wall_s


def interleave(
    n: int,
    a: Arm,
    b: Arm,
    pairs: int = DEFAULT_PAIRS,
    warmup: int = 1,
    timeout: float | None = None,
    min_change: float | None = None,
    alpha: float = ALPHA,
    progress=None,
) -> Interleaved:
    """Open both arms' sessions, warm each up, then take ``pairs`` pairs of rounds in turn
    (the order alternates, A B then B A, so a trend within a pair cancels over two)."""
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
        min_change = DEFAULT_MIN_CHANGE["gpu" if gpu else "cpu"]
    result = Interleaved(n, a, b)
    runners = [
        WorkerRunner(s, n, dict(arm.params), timeout)
        for arm, s in zip(arms, strategies, strict=True)
    ]
    try:
        for runner in runners:
            runner.start()

        def one(i: int) -> float:
            m = runners[i].ask("run")
            verify(arms[i].name, n, arms[i].params, m)
            return _statistic(m)

        for i in range(warmup):
            for k in (0, 1) if i % 2 == 0 else (1, 0):
                one(k)
        for i in range(pairs):
            order = "ab" if i % 2 == 0 else "ba"
            times = {k: one(k) for k in ((0, 1) if order == "ab" else (1, 0))}
            result.samples_a.append(times[0])
            result.samples_b.append(times[1])
            result.order.append(order)
            if progress is not None:
                progress.update(f"pair {i + 1}/{pairs}")
    except BaseException:
        for runner in runners:
            runner.kill()
        raise
    for runner in runners:
        runner.close()
    result.decision = decide_pairs(result.samples_a, result.samples_b, min_change, alpha)
    return result
