"""Measurements that are not strategy runs (a launch-cost grid, a memory reading, an
unverified build variant of a strategy), run in nqprof's watchdog worker processes.

The runner's worker (nqprof.runners.WorkerRunner, nqprof.worker) opens ``PROBE.open(n,
params)`` of a module in a fresh process and answers "run" with ``session.run_once()``; a
hung kernel costs only that process. A :class:`Probe` is the object such a module exposes
as ``PROBE`` (a strategy's module exposes ``STRATEGY``); its runner
(:class:`nqprof.runners.UnverifiedRunner`) returns what the session answers as it is (a dict
of readings, its ``measurement`` naming the probe), where a strategy's runner would verify
a count.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..options import DEFAULT_TIMEOUT
from ..runners import UnverifiedRunner as ProbeRunner


class Probe:
    """What a probe module exposes as ``PROBE`` to the worker: a name (for the watchdog's
    messages) and ``open(n, params)`` returning a session whose ``run_once`` returns a
    picklable reading."""

    name = "probe"
    device = "gpu"
    #: The module attribute the worker opens (nqprof.worker.Target).
    worker_attribute = "PROBE"

    @property
    def needs_gpu(self) -> bool:
        return True

    def open(self, n: int, params: dict[str, Any]):
        raise NotImplementedError


class SessionProbe(Probe):
    """A probe whose session is ``session(params)``: a measurement's own GPU session."""

    def __init__(self, name: str, session: Callable[[dict[str, Any]], Any]):
        self.name, self.session = name, session
        #: the module that defines the session holds this probe as ``PROBE``
        self.worker_module = session.__module__

    def open(self, n: int, params: dict[str, Any]):
        return self.session(params)


def run_probe(
    probe, params: dict[str, Any], timeout: float = DEFAULT_TIMEOUT, n: int = 0
) -> tuple[Any, dict[str, Any]]:
    """Open ``probe`` with ``params`` in a fresh worker (a fresh CUDA context), take one
    reading through nqprof's round loop (one round, no warm-up), close it: (the reading, the
    conditions around it: CPU, and the GPU's clocks and throttling)."""
    from ..runner import RoundLoop

    with ProbeRunner(probe, n, params, timeout) as runner:
        loop = RoundLoop(runner, 1, 0, statistic=lambda reading: 0.0)
        loop.keep_spare = False
        reading = loop.run()[-1]
    return reading, loop.conditions


#: What a paired round counts over every round its session ran (warm-up included).
PAIR_COUNTS = ("launches", "launch_failures", "first_error", "stream_failures")


def paired_round(session, with_launch, without, timed, **extra: Any) -> dict[str, Any]:
    """One round of Wang and Yalamanchili's measurement on one session: the parent with its
    launches (t1) and without them (t2), which goes first alternating round by round; the
    launches made and failed are counted on t1's runs, over every round the session ran
    (warm-up included: ``rounds``). ``timed(func, label)`` runs one and returns (seconds,
    launches, launch failures, first error, stream failures)."""
    if not hasattr(session, "pair_counts"):
        session.pair_counts, session.pair_rounds = dict.fromkeys(PAIR_COUNTS, 0), 0
    session.pair_rounds += 1
    counts, index = session.pair_counts, session.pair_rounds
    times = {}
    pair = [("t1", with_launch), ("t2", without)]
    for label, func in pair if index % 2 else pair[::-1]:
        seconds, launches, failures, first_error, stream_failures = timed(
            func, f"launch {session.mode} {label}"
        )
        counts["stream_failures"] += stream_failures
        if label == "t1":
            counts["launches"] += launches
            counts["launch_failures"] += failures
            counts["first_error"] = counts["first_error"] or first_error
        times[label] = seconds
    session.ran()
    return {"t1_s": times["t1"], "t2_s": times["t2"], "rounds": index, **counts, **extra}


def run_paired(probe, params: dict[str, Any], timeout: float = DEFAULT_TIMEOUT) -> dict[str, Any]:
    """A paired measurement (:func:`paired_round`) through nqprof's round loop in a fresh
    worker: ``params["warmup"]`` untimed rounds, then rounds by the rule of
    ``params["repeats"]`` (a count, or None: auto, the relative-standard-error rule) on each
    round's t1 - t2. Returns every timed round's t1 and t2, the counts over all rounds, the
    criterion that stopped the rounds and the run's conditions."""
    from ..runner import RoundLoop

    with ProbeRunner(probe, 0, params, timeout) as runner:
        loop = RoundLoop(
            runner,
            params.get("repeats"),
            params.get("warmup", 1),
            statistic=lambda reading: reading["t1_s"] - reading["t2_s"],
        )
        readings = loop.run()
        info = runner.info()
    last = readings[-1]
    return {
        **{k: v for k, v in last.items() if k not in ("t1_s", "t2_s")},
        "mode": params["mode"],
        "count": params["count"],
        "block": params["block"],
        "pending": info["memory"]["limits"]["pending_launches"],
        "t1_s": [r["t1_s"] for r in readings],
        "t2_s": [r["t2_s"] for r in readings],
        "criterion": loop.describe(),
        "conditions": loop.conditions,
        "device": info["device"]["name"],
        "toolkit": info["toolkit"]["version"],
        "driver": info["device"]["driver"],
    }
