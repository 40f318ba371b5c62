"""dpswap: DP-SWAP of Plauth et al., shared-memory swapping.

DP-3's idea with shared memory as a block-wide buffer for child boards: threads append the
boards they reach (atomic index into the buffer, structures of arrays for coalescing). When
the buffer passes a threshold (capacity minus the worst case of every thread dumping its
whole stack), every thread stops, dumps its remaining stack states (each state carries a
"visited" mask so work is not repeated) into the buffer, and the block copies the buffer to
one device allocation together and launches ONE child grid per block (not per thread).
Depth cannot adapt (children start at mixed depths), and nesting depth is not bounded in
theory. Their finding: no faster than DP-3, slower for N >= 13.

Here each thread searches ``search`` rows below its state; the buffer holds ``capacity``
states per block (20 B each, in dynamic shared memory beside the stacks); the threshold is
capacity - blockDim * (search + 1): every thread may append one board in the step that
crosses it and then dump at most ``search`` stack levels. A block whose threads finish
before the threshold hands over what its buffer holds. The nesting depth is bounded by the
CDP runtime: a launch past it fails and the run reports it (kernels/dpswap.cu).

The defaults keep a device-launched block (child_block 32, search 6, capacity 2200) within
48 KiB of shared memory; larger buffers need the opt-in attribute the host sets on the kernel.
"""

from __future__ import annotations

from ..errors import InputError
from .base import Param, block_param, depth_param
from .cdp.model import SWAP_STATE_BYTES
from .cdp.params import child_block_param, search_param
from .cdp.recursions import dpswap_recursion
from .cdp.session import CdpSession, root_and_child
from .cdp.stacks import STACK_LIMIT, stack_bytes
from .cdp.strategy import CdpStrategy


def default_search(n: int) -> int:
    """(N-1)//2, <= 6"""
    # min(6, (N-1)//2), >= 1
    return max(1, min(6, (n - 1) // 2))


def default_depth(n: int) -> int:
    """N-2*search"""
    # N - 2*search, >= 1
    return max(1, n - 2 * default_search(n))


def shared_bytes(search: int, capacity: int, threads: int) -> int:
    """A block's dynamic shared memory: its DFS stacks and its buffer of states."""
    return stack_bytes(search, threads) + SWAP_STATE_BYTES * capacity


class DpSwapSession(CdpSession):
    source, root_kernel, child_kernels = root_and_child("dpswap")

    def prepare(self):
        p = self.params
        self.allow_root_shared(shared_bytes(p["search"], p["capacity"], p["block"]))
        self.allow_dynamic_shared(
            self.child_kernels[0], shared_bytes(p["search"], p["capacity"], p["child_block"])
        )

    def launch_root(self):
        import numpy as np

        p = self.params
        self.launch_host_grid(
            np.int32(p["search"]), np.int32(p["capacity"]), np.int32(p["child_block"]), self.acct
        )


class DpSwap(CdpStrategy):
    name = "dpswap"
    order = 70
    title = "DP-SWAP: a block-wide shared-memory buffer of states, one child grid per block"
    reference = "Plauth et al. (DP-SWAP)"
    session = DpSwapSession
    paper_params = (
        depth_param(default_depth, "host rows, a thread per board"),
        search_param(default_search),
        Param(
            "capacity",
            "buffer states per block (20 B)",
            default=2200,
            lo=1,
            hi=STACK_LIMIT // SWAP_STATE_BYTES,
        ),
        block_param(128, help="threads per block, host grid"),
        child_block_param(32),
    )
    runtime = ("pending", "launch", "timeline", "heap", "chunk")  # the plan's config= not offered

    def check(self, n, params):
        search, capacity = params["search"], params["capacity"]
        for key in ("block", "child_block"):
            threads = params[key]
            least = threads * (search + 1) + 1
            if capacity < least:
                raise InputError(
                    f"dpswap: capacity={capacity} leaves no room before the threshold with "
                    f"{key}={threads} and search={search} (every thread may "
                    f"dump {search + 1} states): capacity must be >= {least}"
                )
            need = shared_bytes(search, capacity, threads)
            if need > STACK_LIMIT:
                most = (STACK_LIMIT - stack_bytes(search, threads)) // SWAP_STATE_BYTES
                raise InputError(
                    f"dpswap: capacity={capacity} with {key}={threads}, search={search} needs "
                    f"{need} B of shared memory per block, over "
                    f"{STACK_LIMIT}: capacity must be in {least}..{most}"
                )

    def recursion(self, n, params, host_boards):
        return dpswap_recursion(self.name, n, params, host_boards)


STRATEGY = DpSwap()
