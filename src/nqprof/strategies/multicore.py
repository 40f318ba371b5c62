"""multicore: the serial search over host-expanded subtrees on every CPU core.

The host expands the first ``depth`` rows (mirror symmetry); a pool of threads takes the
next subtree whenever it finishes one (dynamic load balancing), GIL released.
"""

from __future__ import annotations

from ..subproblems import expand
from .base import Param, Strategy, depth_param
from .cpu_common import BoardsCall, TimedCall, cpu_module


def _default_depth(n: int) -> int:
    """min(4, N-1)"""
    return max(1, min(4, n - 1))


class Multicore(Strategy):
    name = "multicore"
    order = 20
    title = "serial DFS over host-expanded subtrees, thread pool with dynamic hand-out"
    reference = "Carneiro et al. (multicore baseline)"
    min_n = 2
    params = (
        depth_param(_default_depth, "rows expanded on the host"),
        Param("threads", "worker threads (0: every CPU)", default=0, lo=0, hi=1024),
    )

    def open(self, n, params):
        cpu = cpu_module()
        boards = expand(n, params["depth"])
        threads = params["threads"] or cpu.cpu_count()

        def count() -> int:
            return boards.multiplier * cpu.count_boards(
                n, boards.cols, boards.ld, boards.rd, boards.row, threads
            )

        return TimedCall(count, {"notes": [f"{len(boards)} subtrees on {threads} threads"]})

    def open_part(self, n, params):
        threads = params["threads"] or cpu_module().cpu_count()
        return BoardsCall(n, threads, {"notes": [f"{threads} threads"]})


STRATEGY = Multicore()
