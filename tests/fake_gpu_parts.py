"""A strategy that says it needs a GPU but counts its parts on the CPU, to test the GPU path
of a cluster run without a GPU (imported by Dask workers and their watchdog processes)."""

import os
import time

from nqprof.strategies.base import Param, Strategy
from nqprof.strategies.cpu_common import BoardsCall

#: With fault=hang-once, the first count hangs unless this file exists, and creates it.
MARKER_ENV = "NQPROF_TEST_HANG_MARKER"


class _Parts(BoardsCall):
    def __init__(self, n, fault):
        super().__init__(n, 1, {"notes": ["test double"]})
        self.fault = fault

    def count_part(self, boards):
        marker = os.environ.get(MARKER_ENV)
        if self.fault == "hang-once" and marker and not os.path.exists(marker):
            open(marker, "w").close()
            time.sleep(3600)
        m = super().count_part(boards)
        m.gpu_s = m.wall_s
        return m


class FakeGpuParts(Strategy):
    name = "fakegpuparts"
    title = "test double (GPU part sessions counted on the CPU)"
    device = "gpu"
    params = (Param("fault", "what goes wrong", default="none", choices=("none", "hang-once")),)

    def open_part(self, n, params):
        return _Parts(n, params["fault"])


STRATEGY = FakeGpuParts()


def register() -> None:
    """Make the strategy known to this process's registry (run on each worker)."""
    from nqprof import strategies

    strategies._table().setdefault(STRATEGY.name, "unused")
    strategies._cache[STRATEGY.name] = STRATEGY
