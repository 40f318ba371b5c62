"""serial-d4: full D4 symmetry through start constellations, one CPU thread.

The board's frame (its queens on the first and last row and column) is enumerated on the
host; one frame per D4 class is searched, weighted by its orbit size (2, 4 or 8; 1 at
N=1), with a plain bitmask search over the free rows, no symmetry test per node
(kernels/cpu/constellations.c and constellations.h). The generator is the one the GPU
strategy ``fast`` uses; the per-task search walks the same tree breadth-first in chunks,
one candidate of every node of a level per pass, so that no branch hangs on a candidate
(``nq_cst_search``; the tests check the step search the GPU runs against it). As for
``fast``, the tasks are made once when the session opens (their time is in the record's
notes); a round is the search.
"""

from __future__ import annotations

from ..textfmt import plural
from .base import Strategy
from .cpu_common import constellation_call


class SerialD4(Strategy):
    name = "serial-d4"
    order = 25
    bench_max_n = 15  # N=16 is past the suite's rule: its rounds are not well under a second
    title = "bitmask DFS over start constellations (D4 classes of frames), one CPU thread"
    reference = "start constellations (Preusser's Q27, NQueensFAF)"

    def open(self, n, params):
        return constellation_call(
            n,
            0,
            1,
            lambda count: f"one CPU thread, {plural(count, 'D4 class', 'D4 classes')} of frames",
        )


STRATEGY = SerialD4()
