"""dp3: DP-3 of Plauth et al., the condensed kernel with a dynamic search depth.

DP-2, but the search depth doubles with each child generation, capped by what shared memory
holds: depth_max = shared_bytes / (state_bytes * threads_per_block) - 1 (8 for 256 threads
and 48 KiB on their GPU). Doubling worked best for N-Queens because branching shrinks with
depth. Their Table 3 gives the child boards per child grid for N=12, static vs dynamic.

Here ``smem_kib`` is the shared memory a block may give its DFS stacks (default 48 KiB, the
paper's), state_bytes is 16 (free squares, columns, two diagonals) and threads_per_block is
the child grids' block size, so depth_max = smem_kib * 1024 / (16 * child_block) - 1. The
host grid's own search depth must fit the same budget with its block size.
"""

from __future__ import annotations

from ..errors import InputError
from .base import Param, block_param, depth_param
from .cdp.limits import check_nesting
from .cdp.model import condensed_schedule
from .cdp.params import child_block_param, search_param
from .cdp.recursions import condensed_recursion
from .cdp.session import root_and_child
from .cdp.stacks import STACK_LIMIT, STATE_BYTES, stack_bytes
from .cdp.strategy import CdpStrategy
from .dp2 import Dp2Session


def default_depth(n: int) -> int:
    """3; 4 from N=18"""
    # min(3, N-3), >= 1; 4 from N=18
    # At N=18 the estimate for depth 3 does not fit in an H200's memory; depth 4 runs
    # (docs/results/dp3-tune-h200.log, defaults-h200.md).
    return 4 if n >= 18 else max(1, min(3, n - 3))


def default_search(n: int, earlier) -> int:
    """2"""
    # Doubling from 2 was the fastest start at N=16 on an H200 (against ceil((N-depth)/3) = 5:
    # docs/results/defaults-h200.md), and it is the paper's dynamic setting in its Table 3.
    return max(1, min(2, n - earlier["depth"] - 1))


def depth_max(smem_kib: int, threads: int) -> int:
    """The deepest search whose stacks fit the shared-memory budget (the paper's formula)."""
    return smem_kib * 1024 // (STATE_BYTES * threads) - 1


def condensed_params(child_block: int) -> tuple[Param, ...]:
    """The parameters of dp3's search (dp3, cdp-dp3): host rows, the doubling search, the
    host grid's and the children's blocks (``child_block`` threads by default), the stacks'
    shared memory."""
    return (
        depth_param(default_depth, "host rows, a thread per board"),
        search_param(default_search, "host grid's search, then doubled", derived=True),
        block_param(128, help="threads per block, host grid"),
        child_block_param(child_block),
        Param(
            "smem_kib",
            "KiB of stacks per block (the cap)",
            default=48,
            lo=1,
            hi=STACK_LIMIT // 1024,
        ),
    )


def check_condensed_stacks(name: str, n: int, params: dict) -> None:
    """The shared-memory stacks of dp3's search (dp3, cdp-dp3): the root's ``search`` levels
    for ``block`` threads and at least one level for ``child_block`` fit ``smem_kib``, and the
    generations the schedule needs nest within CDP2's limit; else a one-line InputError."""
    search, smem = params["search"], params["smem_kib"]
    root_max = depth_max(smem, params["block"])
    if search > root_max:
        raise InputError(
            f"{name}: search={search} with block={params['block']} does not fit smem_kib={smem} "
            f"({stack_bytes(search, params['block'])} B of stacks): search must be in "
            f"1..{max(root_max, 0)} (or raise smem_kib, or lower block)"
        )
    cap = depth_max(smem, params["child_block"])
    if cap < 1:
        raise InputError(
            f"{name}: smem_kib={smem} holds no stack for child_block={params['child_block']}: "
            f"child_block must be in 1..{smem * 1024 // (2 * STATE_BYTES)}"
        )
    check_nesting(
        f"{name} N={n} with depth={params['depth']}, search={search}",
        len(condensed_schedule(n, params["depth"], search, True, cap)) - 1,
        "use a larger search, depth or smem_kib",
    )


class Dp3Session(Dp2Session):
    source, root_kernel, child_kernels = root_and_child("dp3")
    doubling = True

    def max_search(self) -> int:
        return depth_max(self.params["smem_kib"], self.params["child_block"])


class Dp3(CdpStrategy):
    name = "dp3"
    order = 60
    title = "DP-3 condensed kernel: search depth doubling per generation, shared-memory cap"
    reference = "Plauth et al. (DP-3)"
    session = Dp3Session
    # 256: the block size of the paper's depth_max example. It is also the device allocation
    # granularity, and the CUDA device allocator slows down with the blocks held at once: the
    # fastest of 32, 128 and 256 at N=17 on an H200 (docs/results/child-block-h200.log).
    paper_params = condensed_params(child_block=256)

    def check(self, n, params):
        check_condensed_stacks(self.name, n, params)

    def recursion(self, n, params, host_boards):
        cap = depth_max(params["smem_kib"], params["child_block"])
        return condensed_recursion(self.name, n, params, host_boards, True, cap)


STRATEGY = Dp3()
