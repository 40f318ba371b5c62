"""A GPU-like strategy whose close takes a second, as a context's teardown (imported by
spawned workers): the parent goes on meanwhile, the next worker waits for it to be gone."""

import os
import time

from fake_process_bound import _alive
from nqprof.result import Measurement
from nqprof.strategies.base import Session, Strategy


class _SlowClose(Session):
    def __init__(self, log, n):
        self.n = n
        with open(log, "a+", encoding="utf-8") as fh:
            fh.seek(0)
            before = [int(p) for p in fh.read().split()]
            fh.write(f"{os.getpid()}\n")
        self.previous_alive = bool(before) and _alive(before[-1])

    def run_once(self):
        from nqprof.problem import known_count

        return Measurement(count=known_count(self.n), wall_s=0.001, gpu_s=0.001)

    def info(self):
        return {"previous_alive": self.previous_alive}

    def close(self):
        time.sleep(1.0)


class SlowClose(Strategy):
    name = "slow-close"
    title = "test double: a GPU case whose close takes a second"
    device = "gpu"

    def open(self, n, params):
        return _SlowClose(os.environ["NQPROF_TEST_PID_LOG"], n)


STRATEGY = SlowClose()
