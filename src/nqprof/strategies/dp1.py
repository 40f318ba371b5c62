"""dp1: DP-1 of Plauth et al., thread swarming.

A very fine-grained breadth-first expansion. First version: a grid per row with one thread
per column of that row; a thread that places its queen validly launches the next row's grid;
a thread that places the last queen increments a global counter. Thread count per grid is N,
below the warp size. Improved version: each grid has N^z threads, thread index decoded in
base N into the columns of the next z rows; a thread whose z placements are all valid
launches a new grid of N^z threads for the following rows; solutions found before the end of
the z rows are counted directly. z = 3 was best. Each thread either launches into the
default stream or creates its own non-blocking stream (their Table 2).

Here: ``z = 1`` is the first version, ``z >= 2`` the improved one; the board reaches each
grid by value as kernel arguments; the host expands the first ``depth`` rows with the mirror
symmetry and one host grid launches every host board's first swarm grid. ``stream`` is
``default`` (the block's NULL stream), ``own`` (a non-blocking stream per thread) or
``fire-and-forget``. Every device launch is checked and accounted (kernels/cdp.cuh).
"""

from __future__ import annotations

from ..errors import InputError
from .base import Param, block_param, choice_param, depth_param
from .cdp.accounting import STREAM_KINDS
from .cdp.limits import check_nesting
from .cdp.model import MAX_NESTING, dp1_deepest_generation
from .cdp.recursions import dp1_recursion
from .cdp.session import CdpSession
from .cdp.strategy import CdpStrategy


def default_depth(n: int) -> int:
    """N-12, >= 1"""
    # 1 up to N=13, then N-12: the shallowest host expansion whose plan fits the runtime's
    # cap of 599,186 pending launches (measured on an H200) with the default z, chunked
    # (N=14: 2, 15: 3, 16: 4; with depth 1 the plan does not fit from N=14 on).
    return max(1, n - 12)


#: Threads of a swarm grid (N^z) must fit a 1-D grid index.
MAX_THREADS = 2**31 - 1


def _max_z(n: int) -> int:
    z = 1
    while n ** (z + 1) <= MAX_THREADS:
        z += 1
    return z


class Dp1Session(CdpSession):
    source = "dp1.cu"
    root_kernel = "dp1_root"
    child_kernels = ("dp1_swarm",)

    def launch_root(self):
        import numpy as np

        p = self.params
        # One thread per host board, each launching its board's first swarm grid.
        self.launch_host_grid(
            np.int32(p["z"]), np.int32(p["block"]), np.int32(STREAM_KINDS[p["stream"]]), self.acct
        )


class Dp1(CdpStrategy):
    name = "dp1"
    order = 40
    title = "DP-1 thread swarming: N^z threads per board, a child grid per valid placement"
    reference = "Plauth et al. (DP-1)"
    bench_max_n = 12  # measured on an H200: the next N takes seconds per round
    session = Dp1Session
    paper_params = (
        # z=1: the first version, one thread per column
        Param("z", "rows per swarm grid: N^z threads", default=3, lo=1, hi=8),
        # the stream a thread launches its child grid into
        choice_param("stream", "default, own or fire-and-forget", "own", STREAM_KINDS, "streams"),
        depth_param(default_depth, "host rows (mirror symmetry)"),
        # of the host grid, and of swarm grids wider than this
        block_param(128, help="threads per block (host, swarms)"),
    )
    runtime = ("pending", "launch", "chunk")  # no device malloc, no device timeline

    def check(self, n, params):
        z, depth = params["z"], params["depth"]
        if z > _max_z(n):
            raise InputError(
                f"parameter z must be in 1..{_max_z(n)} for N={n} (N^z threads per grid), got {z}"
            )
        check_nesting(
            f"dp1 N={n} with depth={depth}, z={z}",
            dp1_deepest_generation(n, depth, z),
            f"use z >= {-(-(n - depth) // MAX_NESTING)} or depth >= {n - MAX_NESTING * z}",
        )

    def recursion(self, n, params, host_boards):
        return dp1_recursion(self.name, n, params, host_boards)


STRATEGY = Dp1()
