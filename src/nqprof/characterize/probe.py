"""Measurements that are not strategy runs (a launch-cost grid, a memory reading, an
unverified build variant of a strategy), run in nqprof's watchdog worker processes.

The runner's worker (nqprof.runners.WorkerRunner, nqprof.worker) opens ``PROBE.open(n,
params)`` of a module in a fresh process and answers "run" with ``session.run_once()``; a
hung kernel costs only that process. A :class:`Probe` is the object such a module exposes
as ``PROBE`` (a strategy's module exposes ``STRATEGY``); :class:`ProbeRunner` returns what
the session answers as it is (a dict of readings, its ``measurement`` naming the probe),
where the runner would verify a count.
"""

from __future__ import annotations

from typing import Any

from ..options import DEFAULT_TIMEOUT
from ..runners import WorkerRunner


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


class ProbeRunner(WorkerRunner):
    """A watchdog worker whose rounds return the session's answer unverified."""

    def run_once(self) -> Any:
        return self.ask("run")


def run_probe(probe, params: dict[str, Any], timeout: float = DEFAULT_TIMEOUT, n: int = 0) -> Any:
    """Open ``probe`` with ``params`` in a fresh worker (a fresh CUDA context), take one
    reading, close it."""
    with ProbeRunner(probe, n, params, timeout) as runner:
        return runner.run_once()


def paired_rounds(session, with_launch, without, timed, **extra: Any) -> dict[str, Any]:
    """Wang and Yalamanchili's measurement on one session: warm-up plus repeated rounds of the
    parent with its launches (t1) and without them (t2), alternating which goes first; the
    launches made and failed are counted on t1's runs. ``timed(func, label)`` runs one and
    returns (seconds, launches, launch failures, first error, stream failures)."""
    p = session.params
    t1, t2 = [], []
    counts = {"launches": 0, "launch_failures": 0, "first_error": 0, "stream_failures": 0}
    for r in range(p["warmup"] + p["repeats"]):
        pair = [("t1", with_launch), ("t2", without)]
        for label, func in pair if r % 2 == 0 else pair[::-1]:
            seconds, launches, failures, first_error, stream_failures = timed(
                func, f"launch {session.mode} {label}"
            )
            counts["stream_failures"] += stream_failures
            if label == "t1":
                counts["launches"] += launches
                counts["launch_failures"] += failures
                counts["first_error"] = counts["first_error"] or first_error
            if r >= p["warmup"]:
                (t1 if label == "t1" else t2).append(seconds)
    session.ran()
    info = session.info()
    return {
        "mode": session.mode,
        "count": session.count,
        "block": session.block,
        "pending": info["memory"]["limits"]["pending_launches"],
        "t1_s": t1,
        "t2_s": t2,
        "rounds": p["warmup"] + p["repeats"],
        **counts,
        **extra,
        "device": info["device"]["name"],
        "toolkit": info["toolkit"]["version"],
        "driver": info["device"]["driver"],
    }
