"""A strategy that says it needs a GPU but counts on the CPU (the C extension's serial
search, its time standing in for CUDA events), to test what a GPU run records and says on a
machine without a GPU (imported by its spawned worker processes)."""

import time

from nqprof.result import Measurement
from nqprof.strategies.base import Session, Strategy


class _Serial(Session):
    def __init__(self, n):
        self.n = n

    def run_once(self):
        from nqprof import _cpu

        t0 = time.perf_counter()
        count = _cpu.serial(self.n)
        took = time.perf_counter() - t0
        return Measurement(count=count, wall_s=took, gpu_s=took)

    def info(self):
        return {"notes": ["test double"]}


class FakeGpuSerial(Strategy):
    name = "fakegpuserial"
    title = "test double (a GPU strategy counted on the CPU)"
    device = "gpu"

    def open(self, n, params):
        return _Serial(n)


STRATEGY = FakeGpuSerial()
