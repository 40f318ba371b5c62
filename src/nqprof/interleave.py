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
from .runner import compute_statistic
from .runners import WorkerRunner, verify
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
    #: host seconds around each of A's rounds (the worker's round trip)
    trips_a: list[float] = field(default_factory=list)
    #: which arm ran first in each pair ("ab" or "ba")
    order: list[str] = field(default_factory=list)
    decision: PairedDecision | None = None
    #: why the pairs stopped where they did
    stopped: str = ""

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
    """Both arms' sessions, opened in one worker: ``run_arm(k)`` is arm k's round."""

    def __init__(self, n: int, params: dict[str, Any]):
        self.sessions = []
        try:
            for strategy, arm_params in params["arms"]:
                owner = get(strategy) if isinstance(strategy, str) else strategy
                self.sessions.append(owner.open(n, arm_params))
        except BaseException:
            self.close()
            raise

    def run_arm(self, k: int):
        return self.sessions[k].run_once()

    def info(self) -> dict[str, Any]:
        return {"arms": [s.info() for s in self.sessions]}

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
    runner = WorkerRunner(pair, n, {"arms": given}, timeout)
    try:
        runner.start()

        def one(i: int) -> tuple[float, float]:
            t0 = time.perf_counter()
            m = runner.call("run_arm", i)
            trip = time.perf_counter() - t0
            verify(arms[i].name, n, arms[i].params, m)
            return compute_statistic(m), trip

        for i in range(warmup):
            for k in (0, 1) if i % 2 == 0 else (1, 0):
                one(k)
        t0 = time.perf_counter()
        target = pairs or AUTO_FIRST
        while True:
            i = len(result.order)
            order = "ab" if i % 2 == 0 else "ba"
            times = {k: one(k) for k in ((0, 1) if order == "ab" else (1, 0))}
            result.samples_a.append(times[0][0])
            result.samples_b.append(times[1][0])
            result.trips_a.append(times[0][1])
            result.order.append(order)
            if progress is not None:
                progress.update(f"pair {i + 1}/{target}")
            if i + 1 < target:
                continue
            decision = decide_pairs(result.samples_a, result.samples_b, min_change, alpha)
            if pairs is not None:
                result.stopped = f"{pairs} pairs, as asked"
                break
            if decision.verdict != "cannot-tell":
                result.stopped = f"{target} pairs (auto: the verdict settled)"
                break
            if target >= AUTO_MAX_PAIRS or time.perf_counter() - t0 > AUTO_MAX_SECONDS:
                result.stopped = (
                    f"{target} pairs (auto: still cannot tell at the cap of "
                    f"{AUTO_MAX_PAIRS} pairs or {AUTO_MAX_SECONDS:g} s)"
                )
                break
            target += AUTO_STEP
    except BaseException:
        runner.kill()
        raise
    runner.close()
    result.decision = decision
    return result
