"""serial: Somers' iterative bitmask search with an explicit stack, mirror symmetry.

The single-thread reference the papers compare against (kernels/cpu/nqueens_cpu.c).
"""

from __future__ import annotations

from .base import Strategy
from .cpu_common import BoardsCall, TimedCall, cpu_module


class Serial(Strategy):
    name = "serial"
    order = 10
    bench_max_n = 14  # N=15 is past the suite's rule: its rounds are not well under a second
    title = "iterative bitmask DFS, explicit stack, mirror symmetry (one CPU thread)"
    reference = "Somers; the single-thread reference of Plauth et al. and Carneiro et al."

    def open(self, n, params):
        cpu = cpu_module()
        return TimedCall(lambda: cpu.serial(n), {"notes": ["one CPU thread"]})

    def open_part(self, n, params):
        return BoardsCall(n, 1, {"notes": ["one CPU thread"]})


STRATEGY = Serial()
