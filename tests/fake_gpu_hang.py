"""A GPU-like strategy whose round never ends, as a long kernel (imported by spawned workers):
what Ctrl-C and a killed parent must end."""

import time

from nqprof.strategies.base import Session, Strategy


class _Forever(Session):
    def run_once(self):
        time.sleep(3600)

    def info(self):
        return {}


class GpuHang(Strategy):
    name = "gpu-hang"
    title = "test double: a GPU case whose round never ends"
    device = "gpu"

    def open(self, n, params):
        return _Forever()


STRATEGY = GpuHang()
