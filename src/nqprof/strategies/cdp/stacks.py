"""The DFS stacks the CDP kernels keep in shared memory (kernels/cdp.cuh): what a level and a
block's stacks take, and what a block may use. Shared by every CDP strategy whose threads
search a few rows before handing over (dp2, dp3, dpswap, cdp-bp, cdp-dp3)."""

from __future__ import annotations

from ..gpu_common import DYNAMIC_SHARED_LIMIT_SM90

#: Bytes of one DFS stack level (free squares, columns, two diagonals: kernels/cdp.cuh).
STATE_BYTES = 16
#: Dynamic shared memory a block may use (the linked CDP kernels declare ~1.3 KiB statically).
STACK_LIMIT = DYNAMIC_SHARED_LIMIT_SM90 - 2048


def stack_bytes(search: int, threads: int) -> int:
    """Shared memory of a block's DFS stacks: search + 1 levels per thread."""
    return STATE_BYTES * (search + 1) * threads
