"""cdp-bp: CDP-BP of Carneiro et al., block-parallel child launches without device allocation.

The host computes and allocates up front the memory for the child generation: the host grid
(one thread per board expanded on the host to ``depth``) searches down to the second depth
``depth2``, and each block writes the boards it reaches there into its own region of a
buffer the host preallocated, sized by the plan (the paper's bound per block,
``block * maxnodes(depth2) / maxnodes(depth)``, capped by nqprof's model). After a barrier
the block launches ONE child grid over all the boards it found (``child_block`` threads per
block); a child thread finishes its board with the bitmask DFS. Two generations; nothing is
allocated on the device, and a board past a region's end is reported, never dropped.

Defaults: Carneiro et al.'s best on their K40m (block 128, child block 64, depths 5 and 7).
On an H200 host depth 4 was 2-5% faster at N=16..18 and the rest best as they are
(docs/results/carneiro-tune-h200.log); the defaults stay the paper's. Kernels in
kernels/cdp_bp.cu and block_launch.cuh.
"""

from __future__ import annotations

from ..errors import InputError
from .base import Param, block_param, depth_param, rows_default
from .cdp.params import child_block_param
from .cdp.recursions import cdp_bp_recursion
from .cdp.session import CdpSession, root_and_child
from .cdp.stacks import STACK_LIMIT, STATE_BYTES, stack_bytes
from .cdp.strategy import CdpStrategy


def default_depth2(n: int, earlier) -> int:
    """min(7, N-1)"""
    # min(7, N-1), > depth
    return min(n, max(earlier["depth"] + 1, min(7, n - 1)))


def child_levels(n: int, depth2: int) -> int:
    """Rows of DFS stack a child thread needs: the rows left below the second depth."""
    return max(1, n - depth2)


class CdpBpSession(CdpSession):
    source, root_kernel, child_kernels = root_and_child("cdp_bp")

    def prepare(self):
        p = self.params
        self.search = p["depth2"] - p["depth"]
        self.levels = child_levels(self.n, p["depth2"])
        self.allow_root_shared(stack_bytes(self.search, p["block"]))
        self.allow_dynamic_shared(
            self.child_kernels[0], STATE_BYTES * self.levels * p["child_block"]
        )
        self.preallocate_regions(
            p["depth2"] if p["depth2"] < self.n else None
        )  # the child generation's boards

    def launch_root(self):
        self.launch_into_regions(self.search, self.levels)


class CdpBp(CdpStrategy):
    name = "cdp-bp"
    order = 72
    title = "CDP-BP: a child grid per block over its boards, preallocated by the host"
    reference = "Carneiro et al. (CDP-BP)"
    session = CdpBpSession
    paper_params = (
        depth_param(rows_default(5, 3), "host rows (the paper's 1st depth)"),
        # the row the host grid searches down to (the paper's second depth; N: no child grids)
        Param(
            "depth2",
            "2nd depth (N: no child grids)",
            default=default_depth2,
            lo=2,
            hi=lambda n: n,
            range_text="depth+1..N",
            derived=True,
        ),
        block_param(128, help="threads per block, host grid"),
        child_block_param(64),
    )
    runtime = ("pending", "launch", "chunk", "config")  # no device malloc, no device timeline

    def check(self, n, params):
        depth, depth2 = params["depth"], params["depth2"]
        if depth2 <= depth:
            raise InputError(
                f"cdp-bp: depth2 must be in {depth + 1}..{n} (below depth={depth}), got {depth2}"
            )
        need = stack_bytes(depth2 - depth, params["block"])
        if need > STACK_LIMIT:
            raise InputError(
                f"cdp-bp: depth2-depth={depth2 - depth} rows with block={params['block']} need "
                f"{need} B of shared memory for the DFS stacks, "
                f"over {STACK_LIMIT}: use a smaller block or depth2"
            )
        child = STATE_BYTES * child_levels(n, depth2) * params["child_block"]
        if child > STACK_LIMIT:
            raise InputError(
                f"cdp-bp: child_block={params['child_block']} needs {child} B of shared memory for "
                f"{child_levels(n, depth2)} rows of stack, over {STACK_LIMIT}: use child_block <= "
                f"{STACK_LIMIT // (STATE_BYTES * child_levels(n, depth2))}"
            )

    def recursion(self, n, params, host_boards):
        return cdp_bp_recursion(self.name, n, params, host_boards)


STRATEGY = CdpBp()
