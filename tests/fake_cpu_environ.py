"""A CPU strategy that reports its worker process (its pid and parent's) and what it sees of
$NQPROF_TEST_SEEN (imported by workers)."""

import os

from nqprof.result import Measurement
from nqprof.strategies.base import Session, Strategy


class _Environ(Session):
    def __init__(self, n):
        self.n = n

    def run_once(self):
        from nqprof.problem import known_count

        return Measurement(count=known_count(self.n), wall_s=0.001)

    def info(self):
        return {
            "pid": os.getpid(),
            "ppid": os.getppid(),
            "seen": os.environ.get("NQPROF_TEST_SEEN"),
        }


class Environ(Strategy):
    name = "cpu-environ"
    title = "test double: a CPU case that reports its process and environment"

    def open(self, n, params):
        return _Environ(n)


STRATEGY = Environ()
