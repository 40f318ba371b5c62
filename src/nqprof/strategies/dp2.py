"""dp2: DP-2 of Plauth et al., the condensed kernel with a static search depth.

Each thread takes one partial board and runs the bitmask DFS only down to ``search`` more
rows. The boards it reaches at that depth (not yet complete) are saved for a child grid;
complete boards found earlier are counted. When the thread has exhausted its subtree it
launches one child grid over the boards it saved, on its own non-blocking stream. Per-thread
stacks live in shared memory (search + 1 entries per thread). Boards are handed to children
through global memory allocated on the device with a per-block scheme: the thread allocates
its boards in blocks of blockDim entries (a new block only when the current one is full),
plus an array of pointers to those blocks, so that child thread (blockIdx, threadIdx) finds
its board at blocks[blockIdx][threadIdx]; memory is only allocated once a thread has found a
board; the child's thread 0 of each block frees that block after a barrier, and the last
child block to finish (an atomic counter, itself device-allocated) frees the pointer array
and the counter. Tunables: initial host depth, search depth, block size (and the child
grids' block size, the allocation granularity). Their finding: load becomes unbalanced
because grids launched deep in the tree get few boards (Table 3).

Kernels in kernels/dp2.cu and condensed.cuh; a board is saved only if its next row has a
free square (which reproduces the paper's Table 3 exactly, see nqprof.strategies.cdp.model).

Defaults: the search depth takes the boards to the child grids in one step (two
generations). The child block is also the allocation granularity, and the CUDA device
allocator slows down with the blocks held at once (tools/malloc_probe.py), so it defaults to
the mean number of boards a child grid is handed (a power of two in 32..1024,
:func:`~nqprof.strategies.cdp.model.condensed_child_block`): each thread then makes one or a few
allocations; Carneiro et al.'s 32 was orders of magnitude slower (docs/results/defaults-h200.md).
"""

from __future__ import annotations

import math

from ..errors import InputError
from .base import block_param, depth_param
from .cdp.limits import check_nesting
from .cdp.model import MAX_NESTING, condensed_child_block, condensed_schedule
from .cdp.params import child_block_param, search_param
from .cdp.recursions import condensed_recursion
from .cdp.session import CdpSession, root_and_child
from .cdp.stacks import STACK_LIMIT, stack_bytes
from .cdp.strategy import CdpStrategy


def default_depth(n: int) -> int:
    """3; 4 from N=14"""
    # min(3, N-3), >= 1; 4 from N=14: chosen by the sweep in docs/results/dp2-tune-h200.log
    return 4 if n >= 14 else max(1, min(3, n - 3))


def default_search(n: int, earlier) -> int:
    """(N-depth+1)//2"""
    # ceil((N-depth)/2): two generations
    return max(1, math.ceil((n - earlier["depth"]) / 2))


def default_child_block(n: int, earlier) -> int:
    """mean, 32..1024"""
    # the mean number of boards per child grid, a power of 2 in 32..1024
    fits = 1024
    while fits > 32 and stack_bytes(earlier["search"], fits) > STACK_LIMIT:
        fits //= 2
    return condensed_child_block(n, earlier["depth"], earlier["search"], hi=fits)


class Dp2Session(CdpSession):
    """The host side of the condensed kernel (DP-3 reuses it with ``doubling``)."""

    source, root_kernel, child_kernels = root_and_child("dp2")
    doubling = False

    def max_search(self) -> int:
        """The cap on a child grid's search depth (DP-3); DP-2 keeps its depth."""
        return self.params["search"]

    def prepare(self):
        p = self.params
        self.allow_root_shared(stack_bytes(p["search"], p["block"]))
        # The deepest search a child grid gets (the generations' searches are the same for
        # every board; odd N's middle-column boards only finish sooner).
        schedule = condensed_schedule(
            self.n, p["depth"], p["search"], self.doubling, self.max_search()
        )
        deepest = max([s for _, s in schedule[1:]], default=p["search"])
        self.allow_dynamic_shared(self.child_kernels[0], stack_bytes(deepest, p["child_block"]))

    def launch_root(self):
        import numpy as np

        p = self.params
        self.launch_host_grid(
            np.int32(p["search"]),
            np.int32(p["child_block"]),
            np.int32(self.max_search()),
            self.acct,
        )


class Dp2(CdpStrategy):
    name = "dp2"
    order = 50
    title = "DP-2 condensed kernel: static search depth, per-block device allocation"
    reference = "Plauth et al. (DP-2)"
    session = Dp2Session
    paper_params = (
        depth_param(default_depth, "host rows, a thread per board"),
        search_param(default_search, derived=True),
        block_param(128, help="threads per block, host grid"),
        child_block_param(default_child_block, derived=True),
    )

    def check(self, n, params):
        search = params["search"]
        for key in ("block", "child_block"):
            if stack_bytes(search, params[key]) > STACK_LIMIT:
                raise InputError(
                    f"dp2: search={search} with {key}={params[key]} needs "
                    f"{stack_bytes(search, params[key])} B of shared memory per block for the DFS "
                    f"stacks, over {STACK_LIMIT}: use search <= "
                    f"{STACK_LIMIT // stack_bytes(0, params[key]) - 1} or a smaller {key}"
                )
        check_nesting(
            f"dp2 N={n} with depth={params['depth']}, search={search}",
            len(condensed_schedule(n, params["depth"], search, False, None)) - 1,
            f"use search >= {math.ceil((n - params['depth']) / (MAX_NESTING + 1))}",
        )

    def recursion(self, n, params, host_boards):
        return condensed_recursion(self.name, n, params, host_boards, False, params["search"])


STRATEGY = Dp2()
