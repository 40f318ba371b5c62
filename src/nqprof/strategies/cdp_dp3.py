"""cdp-dp3: CDP-DP3 of Carneiro et al., CDP-BP combined with DP-3's depth doubling.

Every generation launches ONE child grid per block over all the boards the block's threads
reached (fewer launches than DP-3's one per thread), and the search depth doubles with each
child generation, capped by the shared memory a block gives its DFS stacks (DP-3's
``depth_max = smem_kib * 1024 / (16 * child_block) - 1``). The host grid's blocks write
into regions the host preallocated (sized by the plan), so the first CDP generation needs no
device allocation; from the second on, each block counts the boards it will hand on, makes
ONE device allocation of exactly that size, fills it and launches its child grid, whose last
block frees it.

Defaults: Carneiro et al.'s block 128 and child block 64; the host depth, initial search and
shared-memory budget of dp3. Kernels in kernels/cdp_dp3.cu and block_launch.cuh.
"""

from __future__ import annotations

from .cdp.model import condensed_schedule
from .cdp.recursions import cdp_dp3_recursion
from .cdp.session import CdpSession, root_and_child
from .cdp.stacks import stack_bytes
from .cdp.strategy import CdpStrategy
from .dp3 import check_condensed_stacks, condensed_params, depth_max


class CdpDp3Session(CdpSession):
    source, root_kernel, child_kernels = root_and_child("cdp_dp3")

    def prepare(self):
        p = self.params
        self.max_search = depth_max(p["smem_kib"], p["child_block"])
        schedule = condensed_schedule(self.n, p["depth"], p["search"], True, self.max_search)
        self.allow_root_shared(stack_bytes(p["search"], p["block"]))
        deepest = max([s for _, s in schedule[1:]], default=p["search"])
        self.allow_dynamic_shared(self.child_kernels[0], stack_bytes(deepest, p["child_block"]))
        self.preallocate_regions(schedule[1][0] if len(schedule) > 1 else None)

    def launch_root(self):
        self.launch_into_regions(self.params["search"], self.max_search)


class CdpDp3(CdpStrategy):
    name = "cdp-dp3"
    order = 74
    title = "CDP-DP3: a child grid per block, doubling search, device malloc from gen. 2"
    reference = "Carneiro et al. (CDP-DP3)"
    session = CdpDp3Session
    paper_params = condensed_params(child_block=64)
    runtime = ("pending", "heap", "launch", "chunk", "config")  # no device timeline

    def check(self, n, params):
        check_condensed_stacks(self.name, n, params)

    def recursion(self, n, params, host_boards):
        cap = depth_max(params["smem_kib"], params["child_block"])
        return cdp_dp3_recursion(self.name, n, params, host_boards, cap)


STRATEGY = CdpDp3()
