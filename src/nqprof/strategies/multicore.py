"""multicore: the count through start constellations on every CPU core.

The host makes the constellation tasks once when the session opens (``nqprof._cpu.cst_tasks``:
one frame per D4 class of the board's outer-line queens, weighted by its orbit size, with
``depth`` more queens placed; the tasks serial-d4 and fast count, their time in the
record's notes); a round spreads them over a pthread pool (``nqprof._cpu.cst_count``), each
thread taking the next task whenever it finishes one (dynamic load balancing), GIL released,
each task searched by the host's breadth-first search (kernels/cpu/constellations.c), in a
work space each thread allocates once.
"""

from __future__ import annotations

from ..textfmt import plural
from .base import Param, Strategy
from .cpu_common import TasksCall, constellation_call, constellation_tasks, cpu_module


def _default_depth(n: int) -> int:
    """min(1, N-3)"""
    # 3,657 tasks at N=12, 41,234 at N=17, 160,760 at N=21: thousands per thread for 16
    # threads; depth 2 (7x the tasks) was 3% slower at N=17 on two cores
    # (docs/results/defaults-h200.md)
    return max(0, min(1, n - 3))


def _max_depth(n: int) -> int:
    return max(0, n - 3)


class Multicore(Strategy):
    name = "multicore"
    order = 20
    title = "start constellations (D4 classes of frames) on a thread pool with dynamic hand-out"
    reference = "Carneiro et al. (multicore baseline); start constellations as in Preusser's Q27"
    #: Two back-to-back runs of the default suite on an H200 host (16 cores) moved multicore
    #: at N=11 and 12 by 13 to 16% with each run's three processes agreeing: a round of a
    #: few hundred microseconds on 16 threads moves with where the threads land and what
    #: else the host runs. What compare calls for it is at least this.
    min_effect = 0.20
    params = (
        Param(
            "depth",
            "queens placed past the frame",
            default=_default_depth,
            lo=0,
            hi=_max_depth,
            range_text="0..N-3",
        ),
        Param("threads", "worker threads (0: every CPU)", default=0, lo=0, hi=1024),
    )

    def open(self, n, params):
        threads = params["threads"] or cpu_module().cpu_count()
        return constellation_call(
            n,
            params["depth"],
            threads,
            lambda count: f"{plural(count, 'constellation task')} on {plural(threads, 'thread')}",
        )

    part_unit = "constellation tasks"

    def part_items(self, n, depth):
        """The constellation tasks (one row each, its weight inside): a cluster cuts these."""
        return constellation_tasks(n, depth)

    def open_part(self, n, params):
        threads = params["threads"] or cpu_module().cpu_count()
        return TasksCall(n, threads, {"notes": [plural(threads, "thread")]})


STRATEGY = Multicore()
