"""serial-d4: full D4 symmetry through start constellations, one CPU thread.

The board's frame (its queens on the first and last row and column) is enumerated on the
host; one frame per D4 class is searched, weighted by its orbit size (2, 4 or 8; 1 at
N=1), with a plain bitmask DFS over the free rows (kernels/cpu/constellations.c and
constellations.h). The generator and the per-task search are the ones the GPU strategy
``fast`` runs, so this is also its CPU oracle.
"""

from __future__ import annotations

from .base import Strategy
from .cpu_common import TimedCall, cpu_module


class SerialD4(Strategy):
    name = "serial-d4"
    order = 25
    title = "bitmask DFS over start constellations (D4 classes of frames), one CPU thread"
    reference = "start constellations (Preusser's Q27, NQueensFAF)"

    def open(self, n, params):
        cpu = cpu_module()
        return TimedCall(lambda: cpu.cst_serial(n), {"notes": ["one CPU thread, D4 classes of frames"]})


STRATEGY = SerialD4()
