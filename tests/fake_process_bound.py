"""A GPU-like strategy whose time depends on the worker process (imported by workers)."""

import os

from nqprof.result import Measurement
from nqprof.strategies.base import Session, Strategy


class _ProcessBound(Session):
    """A GPU-like session whose time depends on its context, as a real one's can: the k-th
    session opened (a line "pid previous-alive" appended to the file named by
    $NQPROF_TEST_PID_LOG) times 1 ms * (1 + 0.15 k) (the step: :func:`unit_step`), so
    rounds of two sessions differ by 15%; it notes whether the process of the session
    before it was still alive (the same process: yes)."""

    def __init__(self, log, n):
        self.n = n
        with open(log, "a+", encoding="utf-8") as fh:
            fh.seek(0)
            before = [int(line.split()[0]) for line in fh.read().splitlines() if line]
            self.index = len(before)
            self.previous_alive = bool(before) and _alive(before[-1])
            fh.write(f"{os.getpid()} {int(self.previous_alive)}\n")

    def run_once(self):
        from nqprof.problem import known_count

        return Measurement(
            count=known_count(self.n), wall_s=0.002, gpu_s=0.001 * (1 + unit_step() * self.index)
        )

    def info(self):
        return {"index": self.index, "previous_alive": self.previous_alive, "pid": os.getpid()}


def unit_step() -> float:
    """How far apart the sessions' times are (relative): 0.15, or $NQPROF_TEST_UNIT_STEP."""
    return float(os.environ.get("NQPROF_TEST_UNIT_STEP") or 0.15)


def _alive(pid):
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    return True


class ProcessBound(Strategy):
    name = "process-bound"
    title = "test double: a GPU case whose time depends on its process"
    device = "gpu"

    def open(self, n, params):
        return _ProcessBound(os.environ["NQPROF_TEST_PID_LOG"], n)


STRATEGY = ProcessBound()
