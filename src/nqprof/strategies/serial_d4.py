"""serial-d4: full D4 symmetry (Takaken's BOUND1/BOUND2/SIDEMASK/LASTMASK), one CPU thread.

Each class of boards under rotation and reflection is counted once and weighted 2, 4 or 8
(kernels/cpu/d4.c). The host expansion and the search are the ones the GPU strategy
``fast`` runs, so this is also its CPU oracle.
"""

from __future__ import annotations

from .base import Strategy
from .cpu_common import TimedCall, cpu_module


class SerialD4(Strategy):
    name = "serial-d4"
    order = 25
    title = "iterative bitmask DFS, full D4 symmetry (Takaken), one CPU thread"
    reference = "Takaken's N-Queens algorithm (BOUND1/BOUND2/SIDEMASK/LASTMASK)"

    def open(self, n, params):
        cpu = cpu_module()
        return TimedCall(lambda: cpu.serial_d4(n), {"notes": ["one CPU thread, D4 symmetry"]})


STRATEGY = SerialD4()
