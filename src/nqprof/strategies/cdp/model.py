"""A host-side model of the CDP strategies: what their kernels will launch, worked out on the CPU.

Two parts:

* **Exact generation structure of DP-2 and DP-3** (:func:`condensed_generations`). A
  condensed-kernel thread searches a fixed number of rows below its board and hands every
  board it reaches there whose next row has a free square to one child grid, so the
  generations are deterministic: per generation, the number of child grids and the boards
  per grid (min, max, mean) -- the paper's Table 3 -- and, summed over the leaves, the count.
  The GPU's accounting (kernels/cdp.cuh) must match it exactly. Vectorised with numpy;
  meant for N up to about 14.

* **Estimates for sizing the CDP runtime before a run** (:func:`dp1_demand`,
  :func:`condensed_demand`, :func:`dpswap_demand`): how many device launches may be pending
  at once and how much device heap the boards handed to children may hold, from the number
  of boards at each row of the search tree (:data:`ROW_BOARDS`, :data:`ROW_LIVE`; N <= 18).
  They assume, as a breadth-first unfolding would, that two consecutive generations can be
  outstanding together; they are estimates, and a run past the limits fails loudly (every
  device launch and malloc is checked), never silently.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from itertools import pairwise

from ...problem import full_mask
from ...subproblems import expand, place_row

#: Deepest generation the CDP runtime can launch (the host grid is generation 0). The
#: hardware nests at most 24 levels; one is kept in reserve.
MAX_NESTING = 23

#: Bytes of a board handed to a condensed child (kernels/cdp.cuh: nq_board).
BOARD_BYTES = 16
#: Bytes of a state handed to a dpswap child (cols, ld, rd, avail, row).
SWAP_STATE_BYTES = 20
#: Assumed bookkeeping of the device allocator per malloc (alignment, header).
ALLOC_OVERHEAD = 64

# Boards at each row of the mirror-reduced N-Queens tree, as the host expansion produces it
# (first queen in the left half; for odd N also the middle column, with the second queen in
# the left half): ROW_BOARDS[n][r - 1] is the number of valid boards with r queens placed.
# ROW_LIVE[n][r - 1] counts those whose next row still has a free square (0 for r = N).
# Computed with an exhaustive bitmask search; tests check them against the expansion. They
# are data, kept in row_counts.json beside this module.


def _row_tables() -> tuple[dict[int, tuple[int, ...]], dict[int, tuple[int, ...]]]:
    """ROW_BOARDS and ROW_LIVE from row_counts.json."""
    import json
    from importlib.resources import files

    data = json.loads(files(__package__).joinpath("row_counts.json").read_text())
    boards, live = (
        {int(n): tuple(v) for n, v in data[key].items()} for key in ("row_boards", "row_live")
    )
    return boards, live


ROW_BOARDS, ROW_LIVE = _row_tables()
MAX_TABLE_N = max(ROW_BOARDS)


# --- the exact model of DP-2 and DP-3 ------------------------------------------------------


@dataclass(frozen=True)
class GenerationStats:
    """One generation of grids: how many, and how many boards they were handed."""

    generation: int
    grids: int
    boards: int
    min: int
    max: int

    @property
    def mean(self) -> float:
        return self.boards / self.grids if self.grids else 0.0

    def as_dict(self) -> dict:
        return {**asdict(self), "mean": round(self.mean, 2)}


@dataclass(frozen=True)
class CondensedModel:
    n: int
    generations: list[GenerationStats]
    #: The count the leaves add up to (mirror factor applied): must be the known count.
    count: int

    @property
    def launches(self) -> int:
        """Device launches of the run (every grid but the host's)."""
        return sum(g.grids for g in self.generations[1:])


def next_search(search: int, doubling: bool, max_search: int | None) -> int:
    """A child grid's search depth: the same (DP-2) or doubled, capped (DP-3)."""
    if not doubling:
        return search
    return min(2 * search, max_search) if max_search else 2 * search


def _completions(n: int, cols, ld, rd, row) -> int:
    """Solutions below the given boards (breadth-first; for the model's small N)."""
    import numpy as np

    total = 0
    parent = np.zeros(len(cols), dtype=np.int64)
    while len(cols):
        done = row >= n
        total += int(done.sum())
        keep = ~done
        cols, ld, rd, row, parent = place_row(
            n, cols[keep], ld[keep], rd[keep], row[keep], parent[keep]
        )
    return total


def condensed_generations(
    n: int, depth: int, search: int, doubling: bool = False, max_search: int | None = None
) -> CondensedModel:
    """The generations DP-2 (``doubling=False``) or DP-3 produce from the host expansion at
    ``depth`` with initial search depth ``search``: generation 0 is the host grid (one grid
    over every host board); generation g+1 has one grid per thread of generation g that
    reached at least one board with a free next row, ``search`` rows below its own."""
    import numpy as np

    host = expand(n, depth)
    cols, ld, rd = host.cols.copy(), host.ld.copy(), host.rd.copy()
    row = host.row.astype(np.int64)
    gens = [GenerationStats(0, 1, len(host), len(host), len(host))]
    solutions = 0
    s = search
    while len(cols):
        finish = row + s >= n  # these threads search to the last row and count
        if finish.any():
            solutions += _completions(n, cols[finish], ld[finish], rd[finish], row[finish])
        keep = ~finish
        c, dl, dr, w = cols[keep], ld[keep], rd[keep], row[keep]
        parent = np.arange(len(c), dtype=np.int64)
        for _ in range(s):
            c, dl, dr, w, parent = place_row(n, c, dl, dr, w, parent)
        full = np.uint32(full_mask(n))
        live = (~(c | dl | dr) & full) != 0
        c, dl, dr, w, parent = c[live], dl[live], dr[live], w[live], parent[live]
        if not len(c):
            break
        per_grid = np.bincount(parent)
        per_grid = per_grid[per_grid > 0]
        gens.append(
            GenerationStats(
                len(gens),
                len(per_grid),
                int(per_grid.sum()),
                int(per_grid.min()),
                int(per_grid.max()),
            )
        )
        cols, ld, rd, row = c, dl, dr, w
        s = next_search(s, doubling, max_search)
    return CondensedModel(n=n, generations=gens, count=solutions * host.multiplier)


# --- schedules: which rows each generation works on -----------------------------------------


def condensed_schedule(
    n: int, depth: int, search: int, doubling: bool, max_search: int | None
) -> list[tuple[int, int]]:
    """(row, search depth) of each generation of a condensed strategy whose threads start
    from boards at ``depth`` (generation 0, the host grid) until a generation reaches the
    last row. For odd N at depth 1 the middle-column boards start one row lower; the rows
    here are those of the others."""
    gens = [(depth, search)]
    row, s = depth, search
    while row + s < n:
        row, s = row + s, next_search(s, doubling, max_search)
        gens.append((row, s))
    return gens


def dp1_deepest_generation(n: int, depth: int, z: int) -> int:
    """DP-1's deepest generation: the host grid is 0, the first swarm grids (rows
    ``depth``..) are 1, each further generation covers the next z rows."""
    return max(1, math.ceil((n - depth) / z))


# --- estimates for sizing the CDP runtime ----------------------------------------------------


@dataclass(frozen=True)
class Demand:
    """What a run may need from the CDP runtime at once."""

    #: Device launches that may be pending (launched, not yet begun) together.
    pending: int
    #: Device heap the boards handed to children may hold together (None: no device malloc).
    heap_bytes: int | None
    #: Device launches of the whole run.
    launches: int
    #: How the numbers were estimated (for the run's notes and for errors).
    basis: str
    #: What to change when they do not fit.
    advice: str


def _rows(n: int):
    if n not in ROW_BOARDS:
        return None, None
    return ROW_BOARDS[n], ROW_LIVE[n]


def _widest_pair(values: list[int]) -> int:
    """The most of two consecutive entries (one entry: itself)."""
    if not values:
        return 0
    if len(values) == 1:
        return values[0]
    return max(a + b for a, b in pairwise(values))


def dp1_demand(
    n: int, host_boards: int, depth: int, z: int, slots_per_launch: int = 1
) -> Demand | None:
    """DP-1 launches one swarm grid per host board, then one per valid board at rows
    depth + z, depth + 2z, ... below the last; nothing is allocated on the device.
    ``slots_per_launch``: pending-launch slots each launch takes (2 when every launching
    thread also creates its own stream: measured on an H200, launches failed with the
    limit above the launch count)."""
    boards, _ = _rows(n)
    if boards is None:
        return None
    launches = [host_boards] + [boards[r - 1] for r in range(depth + z, n, z)]
    return Demand(
        # Launches into non-blocking streams from several generations can wait at once:
        # only the total is a bound.
        pending=sum(launches) * slots_per_launch,
        heap_bytes=None,
        launches=sum(launches),
        basis=(
            f"launches per generation {launches}; pending = all launches (the only bound)"
            + (f" x {slots_per_launch} slots each (own streams)" if slots_per_launch > 1 else "")
        ),
        advice="a larger z or a larger host depth gives fewer, wider grids",
    )


def _condensed_widths(
    live, host_boards: int, schedule: list[tuple[int, int]]
) -> tuple[list[int], list[int]]:
    """Per generation of a condensed strategy: its threads (the host boards, then the live
    boards at each device generation's row) and, for device generations 1.., the most child
    grids it can have (one per thread of the generation before, at most one per board)."""
    threads = [host_boards] + [live[row - 1] for row, _ in schedule[1:]]
    return threads, [min(a, b) for a, b in pairwise(threads)]


def condensed_demand(
    n: int,
    host_boards: int,
    depth: int,
    search: int,
    doubling: bool,
    max_search: int | None,
    child_block: int,
) -> Demand | None:
    """DP-2/DP-3: generation g+1 has at most one grid per thread of generation g and holds
    the live boards of its row in device-allocated blocks of ``child_block`` boards."""
    _, live = _rows(n)
    if live is None:
        return None
    schedule = condensed_schedule(n, depth, search, doubling, max_search)
    threads, grids = _condensed_widths(live, host_boards, schedule)

    def heap(boards: int, grids: int) -> int:
        blocks = -(-boards // child_block) + grids
        return (
            blocks * (child_block * BOARD_BYTES + ALLOC_OVERHEAD)  # the blocks of boards
            + blocks * 2 * 8  # pointer arrays (grown by doubling)
            + grids * 2 * (4 + ALLOC_OVERHEAD)  # pointer-array and counter allocations
        )

    held = [heap(b, g) for b, g in zip(threads[1:], grids, strict=True)]
    return Demand(
        pending=sum(grids),  # the only bound: grids of several generations can wait at once
        heap_bytes=_widest_pair(held),
        launches=sum(grids),
        basis=(
            f"generation rows {[row for row, _ in schedule]}, at most {grids} child grids over "
            f"{threads[1:]} boards; pending = all child grids, "
            "heap = the widest two consecutive generations"
        ),
        advice="a larger search depth (or host depth) gives "
        "fewer generations, and fewer boards in the widest",
    )


def condensed_child_block(n: int, depth: int, search: int, lo: int = 32, hi: int = 1024) -> int:
    """DP-2's allocation granularity: the mean number of boards a child grid is handed in
    its widest generation, rounded up to a power of two in ``lo..hi`` (``hi`` beyond the
    tables). A thread then makes one or a few device allocations. The CUDA device allocator
    slows down with the allocations held at once (tools/malloc_probe.py), and a DP-2 thread
    holds all its blocks until its subtree is exhausted, so the granularity of 32 boards
    (Carneiro et al.'s child block) made DP-2 orders of magnitude slower than 1,024
    (docs/results/defaults-h200.md)."""
    boards, live = _rows(n)
    if live is None:
        return hi
    threads, grids = _condensed_widths(
        live, boards[depth - 1], condensed_schedule(n, depth, search, False, None)
    )
    mean = max((b / max(1, g) for b, g in zip(threads[1:], grids, strict=True)), default=lo)
    size = lo
    while size < mean and size < hi:
        size *= 2
    return size


def dpswap_demand(
    n: int, host_boards: int, depth: int, search: int, capacity: int, block: int, child_block: int
) -> Demand | None:
    """DP-SWAP's generations depend on timing (when a block's buffer fills), so the estimate
    is coarser, calibrated on a CPU simulation of the algorithm (N=16..18, the defaults and
    other buffers): the widest generation held at most 1.5 / search of the live boards of the
    widest row below the host depth (2 / search here), in grids of more than half the
    threshold on average (blocks that finish early hand over fewer states)."""
    _, live = _rows(n)
    if live is None:
        return None
    below = [live[r - 1] for r in range(depth + 1, n)] or [0]
    per_grid = max(1, (capacity - child_block * (search + 1)) // 2)
    states = max(host_boards, 2 * max(below) // max(1, search))
    grids = max(1, states // per_grid)
    return Demand(
        pending=2 * grids,
        heap_bytes=2 * (states * SWAP_STATE_BYTES + grids * (16 + ALLOC_OVERHEAD)),
        launches=max(grids, 2 * sum(below) // max(1, search) // per_grid),
        basis=(
            f"about {states} states in the widest generation, in about {grids} child grids;"
            " pending and heap = twice the widest generation"
        ),
        advice="a larger buffer (capacity) or a larger "
        "search depth gives fewer, fuller child grids",
    )


def block_first_generation(n: int, depth: int, search: int, block: int) -> GenerationStats | None:
    """The first child generation of a strategy that launches ONE child grid per block of the
    host grid (CDP-BP, CDP-DP3): host thread i belongs to block i // ``block`` and hands on
    the boards ``search`` rows below its board whose next row has a free square; a block
    that found any launches one grid over all of them. Exact (the grids later generations
    form depend on the order of the device's atomic appends; their boards are those of
    :func:`condensed_generations`). None when no block hands anything on."""
    import numpy as np

    host = expand(n, depth)
    cols, ld, rd, row = host.cols, host.ld, host.rd, host.row.astype(np.int64)
    owner = np.arange(len(host), dtype=np.int64) // block
    target = row + search
    full = np.uint32(full_mask(n))
    found = []
    while len(cols):
        at = (row == target) & (row < n)
        live = at & ((~(cols | ld | rd) & full) != 0)
        found.append(owner[live])
        keep = ~at & (row < n)
        cols, ld, rd, row, owner, target = place_row(
            n, cols[keep], ld[keep], rd[keep], row[keep], owner[keep], target[keep]
        )
    per_block = np.bincount(np.concatenate(found)) if found else np.zeros(0, dtype=np.int64)
    per_block = per_block[per_block > 0]
    if not len(per_block):
        return None
    return GenerationStats(
        1, len(per_block), int(per_block.sum()), int(per_block.min()), int(per_block.max())
    )
