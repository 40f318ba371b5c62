"""Measurements that are not strategy runs (a launch-cost grid, a memory reading, an
unverified build variant of a strategy), run in nqprof's watchdog worker processes.

The runner's worker (nqprof.runner.WorkerRunner) opens ``STRATEGY.open(n, params)`` of a
module in a fresh process and answers "run" with ``session.run_once()``; a hung kernel
costs only that process. A :class:`Probe` is the object such a module exposes as
``STRATEGY`` so that the same worker runs it; :class:`ProbeRunner` returns what the
session answers as it is (a dict of readings), where the runner would verify a count.
"""

from __future__ import annotations

from typing import Any

from ..options import DEFAULT_TIMEOUT
from ..runner import WorkerRunner


class Probe:
    """What a probe module exposes as ``STRATEGY`` to the worker: a name (for the
    watchdog's messages) and ``open(n, params)`` returning a session whose ``run_once``
    returns a picklable reading."""

    name = "probe"
    device = "gpu"

    @property
    def needs_gpu(self) -> bool:
        return True

    def open(self, n: int, params: dict[str, Any]):
        raise NotImplementedError


class ProbeRunner(WorkerRunner):
    """A watchdog worker whose rounds return the session's answer unverified."""

    def run_once(self) -> Any:
        self._conn.send("run")
        return self._receive("run")


def run_probe(probe, params: dict[str, Any], timeout: float = DEFAULT_TIMEOUT, n: int = 0) -> Any:
    """Open ``probe`` with ``params`` in a fresh worker (a fresh CUDA context), take one
    reading, close it."""
    with ProbeRunner(probe, n, params, timeout) as runner:
        return runner.run_once()
