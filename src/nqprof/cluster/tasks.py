"""Cutting the host expansion into tasks.

The boards of ``subproblems.expand(n, depth)`` are cut into ``T`` interleaved slices:
task ``i`` holds boards ``i, i+T, i+2T, ...``. The expansion is ordered by the first
queens' columns, and subtrees near the board's edge and centre differ in size, so
contiguous slices would differ in work; interleaved slices each take the same mix, so
their work is nearly equal and a few tasks per worker balance the load (a GPU task then
pays its kernel's tail once, not once per small slice). Each task's partial count, times
the expansion's multiplier, sums to the total.

A plan is deterministic: every worker recomputes the same expansion (cached per process)
and takes its slice by index, so a task travels as four integers, and its hash identifies
the plan in a checkpoint.
"""

from __future__ import annotations

import functools
import hashlib
import json
from dataclasses import dataclass
from typing import Any

from ..errors import InputError
from ..subproblems import Subproblems, expand

#: Rows the host expands for a strategy without its own ``depth`` parameter.
DEFAULT_DEPTH_CAP = 4
#: Tasks per worker when --tasks is not given. Interleaved tasks carry nearly equal work,
#: so a few per worker balance the load; more give finer checkpoints and progress, but on a
#: GPU each task pays its kernel's tail (its longest subtree) once.
TASKS_PER_WORKER = 4


@dataclass(frozen=True)
class Task:
    """Boards ``index, index + of, ...`` of ``expand(n, depth)``: ``boards`` of them."""

    index: int
    of: int
    boards: int


def split_depth(strategy, n: int, params: dict[str, Any], given: int | None = None) -> int:
    """The rows expanded on the host: the strategy's ``depth`` parameter where it has one
    (its boards are the ones it would expand itself), else ``given`` or min(4, N-1)."""
    if "depth" in params:
        if given is not None and given != params["depth"]:
            raise InputError(
                f"{strategy.name} expands its own depth ({params['depth']}): "
                f"set it with -p depth={given} instead of --split-depth"
            )
        return int(params["depth"])
    if given is None:
        return max(1, min(DEFAULT_DEPTH_CAP, n - 1))
    if not 1 <= given <= n:
        raise InputError(f"--split-depth must be in 1..{n} for N={n}, got {given}")
    return int(given)


@functools.lru_cache(maxsize=1)
def expansion(n: int, depth: int, strategy: str | None = None):
    """What the tasks are cut from: ``strategy``'s own work items where it has them
    (:meth:`Strategy.part_items`, e.g. fast's D4 tasks), else ``expand(n, depth)``; kept for
    the next task of the same run (one per process)."""
    if strategy is not None:
        from ..strategies import get

        items = get(strategy).part_items(n, depth)
        if items is not None:
            return items
    return expand(n, depth)


def multiplier(items) -> int:
    """What the summed partial counts are multiplied by: the expansion's symmetry factor (a
    strategy's own items carry their weights, 1)."""
    return getattr(items, "multiplier", 1)


def plan(total_boards: int, tasks: int) -> list[Task]:
    """``tasks`` interleaved slices of ``total_boards`` boards (fewer if there are fewer
    boards); every slice is non-empty."""
    if tasks < 1:
        raise InputError(f"the number of tasks must be >= 1, got {tasks}")
    of = max(1, min(tasks, total_boards))
    return [Task(i, of, len(range(i, total_boards, of))) for i in range(of)]


def take(boards, task: Task):
    """The task's boards (or a strategy's own items: rows of an array), contiguous in memory."""
    import numpy as np

    sl = slice(task.index, None, task.of)
    if not isinstance(boards, Subproblems):
        return np.ascontiguousarray(boards[sl])
    return Subproblems(
        n=boards.n,
        depth=boards.depth,
        cols=np.ascontiguousarray(boards.cols[sl]),
        ld=np.ascontiguousarray(boards.ld[sl]),
        rd=np.ascontiguousarray(boards.rd[sl]),
        row=np.ascontiguousarray(boards.row[sl]),
        multiplier=boards.multiplier,
    )


def plan_hash(n: int, depth: int, total_boards: int, tasks: list[Task]) -> str:
    """A short hash of the plan: N, depth, the expansion's size and every task's slice."""
    text = json.dumps(
        {
            "n": n,
            "depth": depth,
            "boards": total_boards,
            "slicing": "interleaved",
            "tasks": [[t.index, t.of, t.boards] for t in tasks],
        },
        sort_keys=True,
    )
    return hashlib.sha256(text.encode()).hexdigest()[:16]
