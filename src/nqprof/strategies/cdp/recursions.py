"""What each CDP strategy family tells the plan (:class:`.plan.Recursion`): its generations
from its next-depth function, and per chunk of host boards its demand on the runtime and the
memory the host allocates for it. Pure; the strategies' ``recursion`` methods call these."""

from __future__ import annotations

import math
from typing import Any

from .model import (
    ALLOC_OVERHEAD,
    BOARD_BYTES,
    Demand,
    _widest_pair,
    condensed_demand,
    condensed_schedule,
    dp1_demand,
    dpswap_demand,
)
from .plan import (
    Recursion,
    _live,
    block_generations,
    chunk_share,
    dp1_generations,
    growth_bound,
    scaled,
    thread_generations,
)


def _share(n: int, depth: int, host_boards: int):
    return lambda c: chunk_share(n, depth, host_boards, c)


def dp1_recursion(name: str, n: int, p: dict[str, Any], host_boards: int) -> Recursion:
    slots = 2 if p["stream"] == "own" else 1
    whole = dp1_demand(n, host_boards, p["depth"], p["z"], slots)
    share = _share(n, p["depth"], host_boards)
    return Recursion(
        name,
        n,
        host_boards,
        dp1_generations(n, host_boards, p["depth"], p["z"]),
        demand=lambda c: scaled(whole, share(c)),
        uses_heap=False,
    )


def condensed_recursion(
    name: str, n: int, p: dict[str, Any], host_boards: int, doubling: bool, max_search: int
) -> Recursion:
    schedule = condensed_schedule(n, p["depth"], p["search"], doubling, max_search)
    whole = condensed_demand(
        n, host_boards, p["depth"], p["search"], doubling, max_search, p["child_block"]
    )
    share = _share(n, p["depth"], host_boards)
    return Recursion(
        name,
        n,
        host_boards,
        thread_generations(n, host_boards, schedule),
        demand=lambda c: scaled(whole, share(c)),
    )


def dpswap_recursion(name: str, n: int, p: dict[str, Any], host_boards: int) -> Recursion:
    schedule = condensed_schedule(n, p["depth"], p["search"], False, None)
    whole = dpswap_demand(
        n, host_boards, p["depth"], p["search"], p["capacity"], p["block"], p["child_block"]
    )
    share = _share(n, p["depth"], host_boards)
    return Recursion(
        name,
        n,
        host_boards,
        thread_generations(n, host_boards, schedule, note="nominal"),
        demand=lambda c: scaled(whole, share(c)),
        notes=(
            "DP-SWAP's generations depend on timing (children start at mixed rows): the rows "
            "shown are nominal, the demand is an estimate calibrated on a CPU simulation",
        ),
    )


# --- block-level launches (Carneiro et al.'s CDP-BP and CDP-DP3) -----------------------------


def region_boards(n: int, depth: int, row: int, block: int) -> int:
    """The boards one block of ``block`` threads at ``depth`` can reach at ``row``: the
    paper's bound per block, capped by all the boards the model has at that row (for odd N
    at depth 1 the middle-column boards start, and so end, one row lower)."""
    bound = block * growth_bound(n, depth, min(row, n))
    rows = [row, row + 1] if n % 2 and depth == 1 else [row]
    known = [_live(n, r) if r < n else 0 for r in rows if r <= n]
    if known and all(k is not None for k in known):
        bound = min(bound, sum(known))
    return max(1, bound)


def block_schedule_bp(n: int, depth: int, depth2: int) -> list[tuple[int, int]]:
    """CDP-BP: the host grid searches from ``depth`` to ``depth2``; its children finish."""
    if depth2 >= n:
        return [(depth, n - depth)]
    return [(depth, depth2 - depth), (depth2, n - depth2)]


def cdp_bp_recursion(name: str, n: int, p: dict[str, Any], host_boards: int) -> Recursion:
    block, depth, depth2 = p["block"], p["depth"], p["depth2"]
    schedule = block_schedule_bp(n, depth, depth2)
    region = region_boards(n, depth, depth2, block) if len(schedule) > 1 else 0

    def demand(c: int) -> Demand:
        blocks = -(-c // block) if len(schedule) > 1 else 0
        return Demand(
            pending=blocks,
            heap_bytes=None,
            launches=blocks,
            basis="one child grid per block of the host grid (exact)",
            advice="a larger block gives fewer child grids",
        )

    return Recursion(
        name,
        n,
        host_boards,
        block_generations(n, host_boards, block, p["child_block"], schedule),
        demand=demand,
        host_bytes=lambda c: -(-c // block) * region * BOARD_BYTES,
        uses_heap=False,
        notes=(
            f"child boards preallocated by the host: {region:,} per block of the host grid (the "
            "paper's bound per block, capped by the model where it has numbers, N <= 18)",
        )
        if region
        else (),
    )


def cdp_dp3_recursion(
    name: str, n: int, p: dict[str, Any], host_boards: int, max_search: int
) -> Recursion:
    block, child_block, depth = p["block"], p["child_block"], p["depth"]
    schedule = condensed_schedule(n, depth, p["search"], True, max_search)
    gens = block_generations(n, host_boards, block, child_block, schedule)
    region = region_boards(n, depth, schedule[1][0], block) if len(schedule) > 1 else 0
    share = _share(n, depth, host_boards)
    # generations 2.. hold their boards in device allocations, one per block of the generation
    # before
    later = gens[2:]
    known = all(g.model_boards is not None for g in later)

    def demand(c: int) -> Demand | None:
        first = -(-c // block) if len(schedule) > 1 else 0
        if not known:
            return None
        held = [
            g.model_boards * BOARD_BYTES + g.model_grids * (BOARD_BYTES + ALLOC_OVERHEAD)
            for g in later
        ]
        s = share(c)
        rest = sum(g.model_grids for g in later)
        return Demand(
            pending=first + math.ceil(rest * s),
            heap_bytes=math.ceil(_widest_pair(held) * s),
            launches=first + math.ceil(rest * s),
            basis=(
                f"generation rows {[row for row, _ in schedule]}: one child grid per block; "
                f"generations 2.. at most {[g.model_grids for g in later]} grids over "
                f"{[g.model_boards for g in later]} device-allocated "
                "boards; heap = the widest two consecutive"
            ),
            advice="a larger child block gives fewer child "
            "grids; a larger search depth fewer generations",
        )

    return Recursion(
        name,
        n,
        host_boards,
        gens,
        demand=demand,
        host_bytes=lambda c: -(-c // block) * region * BOARD_BYTES,
        notes=(
            "generation 1's boards preallocated by the "
            f"host: {region:,} per block of the host grid",
        )
        if region
        else (),
    )
